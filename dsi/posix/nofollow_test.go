package posix_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// TestCreateNoFollow: a name the server chose itself is never written
// through a symbolic link planted there, whether the link points inside
// the tree or not.
func TestCreateNoFollow(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "precious"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("precious", filepath.Join(root, ".x.ferry-part")); err != nil {
		t.Fatal(err)
	}
	fsys, err := posix.New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, trunc := range []bool{false, true} {
		w, err := fsys.Create(context.Background(), "/.x.ferry-part", dsi.CreateOptions{Truncate: trunc, Size: -1, NoFollow: true})
		if err == nil {
			w.Close()
			t.Fatalf("Create through a link (truncate %v) succeeded", trunc)
		}
		if !errors.Is(err, dsi.ErrInvalid) {
			t.Errorf("Create through a link: %v, want ErrInvalid", err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "precious")); string(b) != "keep" {
		t.Errorf("the link's target holds %q", b)
	}
	// Without NoFollow the link is followed, as for names clients give.
	w, err := fsys.Create(context.Background(), "/.x.ferry-part", dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}
