package dsi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
	"github.com/ferrygrid/ferry/dsi/memory"
)

func TestSubConformance(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		m := memory.New()
		if err := m.Mkdir(context.Background(), "/home", 0o755); err != nil {
			t.Fatal(err)
		}
		sub, err := dsi.Sub(m, "/home")
		if err != nil {
			t.Fatal(err)
		}
		return sub
	})
}

func TestSubConfines(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	m.Mkdir(ctx, "/home", 0o755)
	w, _ := m.Create(ctx, "/secret", dsi.CreateOptions{Truncate: true})
	w.Close()
	sub, err := dsi.Sub(m, "/home")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"/secret", "/../secret", "../secret", "/home/../../secret"} {
		if _, err := sub.Stat(ctx, name); !errors.Is(err, dsi.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want ErrNotExist", name, err)
		}
	}
	if fi, err := sub.Stat(ctx, "/"); err != nil || fi.Name != "/" || !fi.IsDir() {
		t.Errorf("Stat(/) = %+v, %v", fi, err)
	}
}

// TestSubRefused: a home that is missing or not a directory cannot be a
// sub-tree; "/" is the storage itself.
func TestSubRefused(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	w, _ := m.Create(ctx, "/file", dsi.CreateOptions{Truncate: true})
	w.Close()
	for dir, want := range map[string]error{"/missing": dsi.ErrNotExist, "/file": dsi.ErrNotDir} {
		if s, err := dsi.Sub(m, dir); !errors.Is(err, want) {
			t.Errorf("Sub(%q) = %v, %v; want %v", dir, s, err, want)
		}
	}
	for _, dir := range []string{"", "/", "/.."} {
		if s, err := dsi.Sub(m, dir); err != nil || s != dsi.Storage(m) {
			t.Errorf("Sub(%q) = %v, %v; want the storage itself", dir, s, err)
		}
	}
}

// TestSubRootAttributes: the user of a sub-tree may change what is in it,
// not its root, which belongs to whoever set it up.
func TestSubRootAttributes(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	m.Mkdir(ctx, "/home", 0o755)
	m.Mkdir(ctx, "/home/d", 0o755)
	for _, s := range []dsi.Storage{m, dsi.ReadOnly(m)} {
		sub, err := dsi.Sub(s, "/home")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"/", "", "/..", "/."} {
			if c, ok := sub.(dsi.Chmoder); !ok {
				t.Error("sub-tree is not a Chmoder")
			} else if err := c.Chmod(ctx, name, 0o777); !errors.Is(err, dsi.ErrPermission) {
				t.Errorf("Chmod(%q): %v; want ErrPermission", name, err)
			}
			if c, ok := sub.(dsi.Chtimeser); !ok {
				t.Error("sub-tree is not a Chtimeser")
			} else if err := c.Chtimes(ctx, name, time.Now()); !errors.Is(err, dsi.ErrPermission) {
				t.Errorf("Chtimes(%q): %v; want ErrPermission", name, err)
			}
		}
		// A sub-tree of the sub-tree keeps the rule, and a read-only
		// storage stays read-only below.
		inner, err := dsi.Sub(sub, "/d")
		if err != nil {
			t.Fatal(err)
		}
		if err := inner.(dsi.Chmoder).Chmod(ctx, "/", 0o777); !errors.Is(err, dsi.ErrPermission) {
			t.Errorf("Chmod(/) of a nested sub-tree: %v", err)
		}
		if fi, err := m.Stat(ctx, "/home"); err != nil || fi.Mode.Perm() != 0o755 {
			t.Errorf("/home after the attempts: %v, %v", fi.Mode, err)
		}
	}
	sub, _ := dsi.Sub(m, "/home")
	if err := sub.(dsi.Chmoder).Chmod(ctx, "/d", 0o700); err != nil {
		t.Errorf("Chmod(/d): %v", err)
	}
	if fi, err := m.Stat(ctx, "/home/d"); err != nil || fi.Mode.Perm() != 0o700 {
		t.Errorf("/home/d after Chmod: %v, %v", fi.Mode, err)
	}
	ro, _ := dsi.Sub(dsi.ReadOnly(m), "/home")
	if err := ro.Mkdir(ctx, "/x", 0o755); !errors.Is(err, dsi.ErrReadOnly) {
		t.Errorf("Mkdir in a sub-tree of a read-only storage: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	w, _ := m.Create(ctx, "/f", dsi.CreateOptions{Truncate: true})
	w.Close()
	ro := dsi.ReadOnly(m)
	if _, err := ro.Stat(ctx, "/f"); err != nil {
		t.Fatal(err)
	}
	r, err := ro.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	checks := map[string]error{}
	_, checks["create"] = ro.Create(ctx, "/g", dsi.CreateOptions{})
	checks["mkdir"] = ro.Mkdir(ctx, "/d", 0o755)
	checks["remove"] = ro.Remove(ctx, "/f")
	checks["rmdir"] = ro.Rmdir(ctx, "/")
	checks["rename"] = ro.Rename(ctx, "/f", "/h")
	for op, err := range checks {
		if !errors.Is(err, dsi.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", op, err)
		}
	}
	if _, err := m.Stat(ctx, "/f"); err != nil {
		t.Fatal("read-only view changed the storage")
	}
}
