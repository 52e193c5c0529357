package s3

import (
	"errors"
	"syscall"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
)

// Review 2026-11-28 #10: a Writer's spill file is bounded by the
// storage's MaxSpill (and a declared size), and what it held for a
// part is given back.
func TestAtk2SpillUnbounded(t *testing.T) {
	f := &FS{cfg: Config{PartSize: MinPartSize, MaxMemParts: 1, TempDir: t.TempDir(), MaxSpill: 4 * MinPartSize}}
	w := newWriter(t.Context(), f, "/x", nil)
	defer w.Abort()
	ps := w.ps
	b := make([]byte, ps-1)
	var err error
	var i int64
	for i = range int64(16) {
		b[0] = byte(i + 1)
		if _, err = w.WriteAt(b, i*ps+1); err != nil {
			break
		}
	}
	if !errors.Is(err, dsi.ErrNoSpace) {
		t.Fatalf("16 partial parts under a 4-part spill budget: part %d: %v; want ErrNoSpace", i, err)
	}
	w.mu.Lock()
	sp := w.spill
	w.mu.Unlock()
	fi, _ := sp.Stat()
	if st := fi.Sys().(*syscall.Stat_t); st.Blocks*512 > 5*MinPartSize {
		t.Errorf("spill %d bytes on disk", st.Blocks*512)
	}
	if got := f.spill.Load(); got > 4*MinPartSize {
		t.Errorf("the storage counts %d bytes spilled", got)
	}
	w.Abort()
	if got := f.spill.Load(); got != 0 {
		t.Errorf("after Abort the storage counts %d bytes spilled", got)
	}
}

// A Writer of declared size spills at most that much.
func TestAtk2SpillDeclared(t *testing.T) {
	f := &FS{cfg: Config{PartSize: MinPartSize, MaxMemParts: 1, TempDir: t.TempDir()}}
	w := newWriter(t.Context(), f, "/x", nil)
	defer w.Abort()
	w.limit = 3 * MinPartSize
	b := make([]byte, w.ps-1)
	var err error
	for i := range int64(3) {
		if _, err = w.WriteAt(b, i*w.ps+1); err != nil {
			break
		}
	}
	// One part in memory, two spilled: within the declared 3 parts.
	if err != nil {
		t.Fatalf("3 partial parts of a declared 3: %v", err)
	}
}
