//go:build unix

package posix

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// A regular file swapped for a FIFO between the look at its type and the
// open must not block the open (it would hold the session and its thread
// until a writer came): both the openat2 path and the os.Root path open
// without blocking and refuse what is not a regular file.
func TestFIFOSwappedBeforeOpen(t *testing.T) {
	for _, op := range []string{"open", "create"} {
		for _, fast := range []bool{true, false} {
			dir := t.TempDir()
			fsys, err := New(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			name := "f"
			if !fast {
				// A symbolic link on the way sends the open down the
				// os.Root path.
				if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("real", filepath.Join(dir, "via")); err != nil {
					t.Fatal(err)
				}
				name = "via/f"
			}
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte("regular"), 0o644); err != nil {
				t.Fatal(err)
			}
			swapped := false
			betweenCheckAndOpen = func(string) {
				if swapped {
					return
				}
				swapped = true
				os.Remove(p)
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Error(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				var err error
				if op == "open" {
					var r dsi.Reader
					if r, err = fsys.Open(context.Background(), "/"+name); err == nil {
						r.Close()
					}
				} else {
					var w dsi.Writer
					if w, err = fsys.Create(context.Background(), "/"+name, dsi.CreateOptions{}); err == nil {
						w.Close()
					}
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !swapped {
					t.Errorf("%s fast=%v: the hook did not run", op, fast)
				}
				if err == nil {
					t.Errorf("%s fast=%v: a FIFO was opened", op, fast)
				} else if !errors.Is(err, dsi.ErrInvalid) && !errors.Is(err, dsi.ErrPermission) && !errors.Is(err, dsi.ErrNotExist) {
					t.Logf("%s fast=%v: %v", op, fast, err)
				}
			case <-time.After(30 * time.Second):
				// Unblock the open so the goroutine ends.
				if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
					f.Close()
				}
				t.Fatalf("%s fast=%v: the open blocked on a FIFO swapped in", op, fast)
			}
			betweenCheckAndOpen = func(string) {}
		}
	}
}
