//go:build unix

package dpm

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// TestLayoutRefusesSpecialFile: ERET tar or cat of a FIFO named by the
// command is refused, as Pack refuses it, instead of sending an empty
// regular file under its name.
func TestLayoutRefusesSpecialFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "p"), 0o644); err != nil {
		t.Skip(err)
	}
	st, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ module, path, params string }{{"tar", "/p", ""}, {"cat", "/p", ""}, {"cat", "/", "p"}} {
		l, err := registry[tc.module].Layout(context.Background(), Env{Storage: st, Path: tc.path, Params: tc.params})
		if !errors.Is(err, dsi.ErrInvalid) {
			size := int64(-1)
			if l != nil {
				size = l.Size()
			}
			t.Errorf("%s of a FIFO (%s, %q): laid out %d bytes, %v; want dsi.ErrInvalid", tc.module, tc.path, tc.params, size, err)
		}
	}
}
