package posix_test

import (
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// TestHomes: dsi.Sub over posix confines symbolic links to the home, not
// only names.
func TestHomes(t *testing.T) {
	dsitest.RunHomes(t, func(t *testing.T, root string) dsi.Storage {
		fsys, err := posix.New(root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fsys.Close() })
		return fsys
	})
}

// TestSubConformance runs the DSI suite on a home of a posix back-end.
func TestSubConformance(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		root := t.TempDir()
		fsys, err := posix.New(root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fsys.Close() })
		if err := fsys.Mkdir(t.Context(), "/home", 0o755); err != nil {
			t.Fatal(err)
		}
		sub, err := dsi.Sub(fsys, "/home")
		if err != nil {
			t.Fatal(err)
		}
		return sub
	})
}
