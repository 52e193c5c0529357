package dsi_test

import (
	"context"
	"errors"
	"testing"

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
		return dsi.Sub(m, "/home")
	})
}

func TestSubConfines(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	m.Mkdir(ctx, "/home", 0o755)
	w, _ := m.Create(ctx, "/secret", dsi.CreateOptions{Truncate: true})
	w.Close()
	sub := dsi.Sub(m, "/home")
	for _, name := range []string{"/secret", "/../secret", "../secret", "/home/../../secret"} {
		if _, err := sub.Stat(ctx, name); !errors.Is(err, dsi.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want ErrNotExist", name, err)
		}
	}
	if fi, err := sub.Stat(ctx, "/"); err != nil || fi.Name != "/" || !fi.IsDir() {
		t.Errorf("Stat(/) = %+v, %v", fi, err)
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
