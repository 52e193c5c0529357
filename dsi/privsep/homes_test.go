//go:build linux

package privsep

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
)

// TestHomesInProcess: dsi.Sub over privsep confines symbolic links to the
// home, not only names (helper in this process).
func TestHomesInProcess(t *testing.T) {
	dsitest.RunHomes(t, func(t *testing.T, root string) dsi.Storage {
		return serveDir(t, root)
	})
}

// TestHomesAsUser is TestHomesInProcess with a helper running as the test
// account, which owns the whole tree: only the confinement stands between
// alice's home and bob's.
func TestHomesAsUser(t *testing.T) {
	uid, gid := account(t)
	dsitest.RunHomes(t, func(t *testing.T, root string) dsi.Storage {
		err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
		if err != nil {
			t.Fatal(err)
		}
		f, err := Start(t.Context(), testExe(t), root, testAccount)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	})
}

// subOf returns dsi.Sub(s, "/home") of a storage whose /home it makes.
func subOf(t *testing.T, s dsi.Storage) dsi.Storage {
	t.Helper()
	if err := s.Mkdir(t.Context(), "/home", 0o755); err != nil {
		t.Fatal(err)
	}
	sub, err := dsi.Sub(s, "/home")
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func TestSubConformanceInProcess(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		f, _ := inProcess(t)
		return subOf(t, f)
	})
}

func TestSubConformanceAsUser(t *testing.T) {
	account(t)
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		f, _ := startUser(t)
		return subOf(t, f)
	})
}

// TestSubReleased: the helper forgets a sub-root once its storage is
// garbage collected, and refuses requests naming a root it does not have.
func TestSubReleased(t *testing.T) {
	f, fh := newFake(t)
	got := make(chan uint32, 1)
	go func() {
		// The sub request: answer root 5.
		h, body := fh.nextBody()
		if h.op != opSub {
			t.Errorf("request op %d; want sub", h.op)
		}
		fh.reply(h, appendU32(nil, 5))
		// Then, after the collection, its release.
		h, body = fh.nextBody()
		d := decoder{b: body}
		if id := d.u32("root"); h.op == opRelease && d.end() == nil {
			got <- id
		} else {
			t.Errorf("after the collection: op %d body % x; want release of root 5", h.op, body)
			got <- 0
		}
	}()
	func() {
		s, err := f.Sub(t.Context(), "/home")
		if err != nil {
			t.Fatal(err)
		}
		if s.(*subFS).id != 5 {
			t.Errorf("sub-root %d; want 5", s.(*subFS).id)
		}
	}()
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case id := <-got:
			if id != 5 {
				t.Errorf("released root %d; want 5", id)
			}
			return
		case <-deadline:
			t.Fatal("the sub-root was not released after its storage was collected")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// nextBody reads one request.
func (fh *fakeHelper) nextBody() (header, []byte) {
	fh.t.Helper()
	buf := make([]byte, maxPacket)
	n, _, _, _, err := fh.conn.ReadMsgUnix(buf, nil)
	if err != nil {
		fh.t.Fatal(err)
	}
	h, body, err := parseHeader(buf[:n])
	if err != nil {
		fh.t.Fatal(err)
	}
	return h, body
}

// TestServeRoots: the helper resolves names in the root a request names,
// refuses roots it never opened or has released, and never releases the
// served directory.
func TestServeRoots(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "home", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := serveDir(t, dir)
	ctx := t.Context()
	s, err := f.Sub(ctx, "/home")
	if err != nil {
		t.Fatal(err)
	}
	id := s.(*subFS).id
	if _, err := s.Stat(ctx, "/f"); err != nil {
		t.Errorf("Stat(/f) in the sub-root: %v", err)
	}
	if _, err := f.Stat(ctx, "/f"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("Stat(/f) in the served root: %v; want ErrNotExist", err)
	}
	for _, bad := range []uint32{id + 1, 1 << 31} {
		if _, err := f.stat(ctx, bad, "/"); !errors.Is(err, dsi.ErrInvalid) {
			t.Errorf("Stat in unknown root %d: %v; want ErrInvalid", bad, err)
		}
	}
	if err := f.simple(ctx, opRelease, "/", appendU32(nil, baseRoot)); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("release of the served root: %v; want ErrInvalid", err)
	}
	if err := f.simple(ctx, opRelease, "/", appendU32(nil, id)); err != nil {
		t.Errorf("release: %v", err)
	}
	if _, err := f.stat(ctx, id, "/f"); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("Stat in a released root: %v; want ErrInvalid", err)
	}
	if _, err := f.Stat(ctx, "/home/f"); err != nil {
		t.Errorf("served root after the release: %v", err)
	}
	runtime.KeepAlive(s)
}
