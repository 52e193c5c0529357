package posix_test

import (
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
	"github.com/ferrygrid/ferry/dsi/posix"
)

func TestConformance(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		fsys, err := posix.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fsys.Close() })
		return fsys
	})
}
