package reorder

import (
	"errors"
	"io"
	"testing"
)

// Overlapping writes that each start at a new offset beyond the window
// must not grow the spill file past what non-overlapping data could
// take (the limit): a peer would otherwise fill the disk.
func TestOverlapsBoundSpill(t *testing.T) {
	const limit = 1 << 20
	b := New(Config{Window: 64 << 10, Limit: limit, Dir: t.TempDir()})
	defer b.CloseRead(nil)
	p := make([]byte, 64<<10)
	var err error
	for i := int64(0); i < 64 && err == nil; i++ {
		_, err = b.WriteAt(p, 512<<10+i)
	}
	if !errors.Is(err, ErrOverlap) {
		t.Errorf("64 overlapping writes: err %v, want ErrOverlap", err)
	}
	if s := b.Spilled(); s > limit {
		t.Errorf("spilled %d bytes, more than the %d-byte limit", s, limit)
	}
}

// Tiny blocks at scattered offsets ahead of the front: the number of
// pieces kept (each costs memory) stays bounded.
func TestTinyBlocksBounded(t *testing.T) {
	b := New(Config{Window: 64 << 10, Limit: 64 << 30, Dir: t.TempDir()})
	defer b.CloseRead(nil)
	p := []byte{1}
	var err error
	i := int64(0)
	for ; i < 2*basePieces && err == nil; i++ {
		_, err = b.WriteAt(p, 1<<20+2*i)
	}
	if !errors.Is(err, ErrFragmented) {
		t.Fatalf("%d one-byte blocks ahead of the front: %v, want ErrFragmented", i, err)
	}
	b.mu.Lock()
	n := len(b.pieces)
	b.mu.Unlock()
	if n > basePieces+16 {
		t.Errorf("%d pieces kept, more than %d", n, basePieces+16)
	}
}

// Small blocks in order beyond the window (a stalled first stream) keep
// one spilled piece, and read back whole.
func TestSpilledSmallBlocksCoalesce(t *testing.T) {
	b := New(Config{Window: 64 << 10, Dir: t.TempDir()})
	defer b.CloseRead(nil)
	const n = 3 * basePieces
	for i := int64(0); i < n; i++ {
		if _, err := b.WriteAt([]byte{byte(i)}, 1<<20+i); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	b.mu.Lock()
	pieces := len(b.pieces)
	b.mu.Unlock()
	if pieces != 1 {
		t.Errorf("%d one-byte blocks in order spilled as %d pieces, want 1", n, pieces)
	}
	if _, err := b.WriteAt(make([]byte, 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	b.Close()
	got, err := io.ReadAll(b)
	if err != nil || len(got) != 1<<20+n {
		t.Fatalf("read %d bytes, %v; want %d", len(got), err, 1<<20+n)
	}
	for i := int64(0); i < n; i++ {
		if got[1<<20+i] != byte(i) {
			t.Fatalf("byte %d is %d, want %d", 1<<20+i, got[1<<20+i], byte(i))
		}
	}
}
