package reorder

import (
	"errors"
	"testing"
)

// Overlapping writes that each start at a new offset beyond the window
// must not grow the spill file past what non-overlapping data could
// take (the limit): a peer would otherwise fill the disk.
func TestRVOverlapsBoundSpill(t *testing.T) {
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
