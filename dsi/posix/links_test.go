//go:build unix

package posix_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// TestHardLinkRefused: a regular file with a second hard link is
// neither written in place nor truncated nor chmodded through either
// name (the other may be outside the tree); a file with one link, and a
// symbolic link to it, are.
func TestHardLinkRefused(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	orig := []byte("do not change me")
	if err := os.WriteFile(outside, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(root, "linked")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "single"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ name, target string }{{"tolinked", "linked"}, {"tosingle", "single"}} {
		if err := os.Symlink(l.target, filepath.Join(root, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := posix.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	ctx := t.Context()

	for _, name := range []string{"/linked", "/tolinked"} {
		for _, trunc := range []bool{false, true} {
			w, err := fsys.Create(ctx, name, dsi.CreateOptions{Truncate: trunc, Size: -1})
			if err == nil {
				w.Close()
				t.Errorf("Create(%s, Truncate %v) of a hard-linked file succeeded", name, trunc)
			} else if !errors.Is(err, dsi.ErrPermission) {
				t.Errorf("Create(%s, Truncate %v) = %v; want ErrPermission", name, trunc, err)
			}
		}
		if err := fsys.Chmod(ctx, name, 0o600); !errors.Is(err, dsi.ErrPermission) {
			t.Errorf("Chmod(%s) of a hard-linked file = %v; want ErrPermission", name, err)
		}
	}
	if got, _ := os.ReadFile(outside); !bytes.Equal(got, orig) {
		t.Errorf("the linked file changed: %q", got)
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o644 {
		t.Errorf("the linked file's mode changed: %v", fi.Mode())
	}

	// One link: written (appended at an offset, then truncated) and
	// chmodded as before, through its name and through a symbolic link.
	w, err := fsys.Create(ctx, "/single", dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("!"), 4); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "single")); string(got) != "mine!" {
		t.Errorf("in place: %q, want %q", got, "mine!")
	}
	for _, c := range []struct {
		name string
		mode os.FileMode
	}{{"/single", 0o600}, {"/tosingle", 0o640}} {
		if err := fsys.Chmod(ctx, c.name, c.mode); err != nil {
			t.Fatalf("Chmod(%s): %v", c.name, err)
		}
		if fi, _ := os.Stat(filepath.Join(root, "single")); fi.Mode().Perm() != c.mode {
			t.Errorf("Chmod(%s): mode %v, want %v", c.name, fi.Mode().Perm(), c.mode)
		}
	}
	if err := fsys.Chmod(ctx, "/", 0o755); err != nil {
		t.Errorf("Chmod(/): %v", err)
	}
	w, err = fsys.Create(ctx, "/tosingle", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if fi, _ := os.Stat(filepath.Join(root, "single")); fi.Size() != 0 {
		t.Errorf("truncating Create left %d bytes", fi.Size())
	}
}
