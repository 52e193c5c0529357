package transfer

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestDownloadFsync: a large MODE E download written in place syncs its
// file only with Options.Fsync (as cp and globus-url-copy, the default
// leaves the bytes in the page cache); both give the same bytes and no
// state file.
func TestDownloadFsync(t *testing.T) {
	s := startServer(t)
	const size = 64<<20 + 4096 // past the temporary-file limit: written in place
	data := randomData(t, size)
	writeFile(t, filepath.Join(s.dir, "big"), data)
	local := t.TempDir()
	dst := filepath.Join(local, "big")

	var syncs atomic.Int64
	old := syncFile
	syncFile = func(f *os.File) error {
		if f.Name() == dst {
			syncs.Add(1)
		}
		return old(f)
	}
	t.Cleanup(func() { syncFile = old })

	e := &Engine{Tool: "test"}
	for _, fsync := range []bool{false, true} {
		os.Remove(dst)
		syncs.Store(0)
		o := Options{Length: -1, Parallel: 2, Fsync: fsync}
		if _, err := e.Copy(t.Context(), Request{Src: s.loc("big"), Dst: LocalLocation(dst), Options: o}, nil); err != nil {
			t.Fatalf("fsync %v: %v", fsync, err)
		}
		if got := mustReadFile(t, dst); !bytes.Equal(got, data) {
			t.Fatalf("fsync %v: the download differs", fsync)
		}
		if _, err := os.Stat(dst + RangesSuffix); err == nil {
			t.Errorf("fsync %v: %s left behind", fsync, dst+RangesSuffix)
		}
		switch n := syncs.Load(); {
		case fsync && n == 0:
			t.Error("with Fsync the download was never synced")
		case !fsync && n != 0:
			t.Errorf("without Fsync the download was synced %d times", n)
		}
	}
}
