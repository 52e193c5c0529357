package replica

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestChunkFor(t *testing.T) {
	tests := []struct {
		rate  float64
		first int64
		want  int64
	}{
		{0, 4 << 20, 4 << 20},
		{0, 10, MinChunk},
		{100e3, 0, MinChunk},
		{16 << 20, 0, 32 << 20},
		{1e12, 0, MaxChunk},
	}
	for _, tt := range tests {
		if got := ChunkFor(tt.rate, 2*time.Second, tt.first); got != tt.want {
			t.Errorf("ChunkFor(%v, 2s, %d) = %d, want %d", tt.rate, tt.first, got, tt.want)
		}
	}
}

func TestTailShare(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name   string
		left   int64
		rate   float64
		total  float64
		active int
		want   int64
	}{
		{"rate unknown: an even share", 90 * mib, 0, 0, 3, 30 * mib},
		{"rate unknown, others measured", 90 * mib, 0, 50e6, 3, 30 * mib},
		{"a seventh of the rate, a seventh of the rest", 70 * mib, 100, 700, 3, 10 * mib},
		{"four sevenths", 70 * mib, 400, 700, 3, 40 * mib},
		{"alone", 70 * mib, 400, 400, 1, 70 * mib},
		{"never under MinChunk", 2 * mib, 100, 700, 3, MinChunk},
		{"total not counting the reader: an even share", 60 * mib, 400, 100, 2, 30 * mib},
		{"nothing left", 0, 100, 700, 3, MinChunk},
	}
	for _, tt := range tests {
		if got := TailShare(tt.left, tt.rate, tt.total, tt.active); got != tt.want {
			t.Errorf("%s: TailShare(%d, %v, %v, %d) = %d, want %d", tt.name, tt.left, tt.rate, tt.total, tt.active, got, tt.want)
		}
	}
}

// TestSplitter takes spans of different sizes from several goroutines,
// gives some back, and checks that every byte is handed out exactly
// once in the end.
func TestSplitter(t *testing.T) {
	const size = 10<<20 + 123
	s := NewSplitter(size)
	var mu sync.Mutex
	got := make([]int, size)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				sp, ok := s.Take(int64(1+w) * 300_000)
				if !ok {
					return
				}
				if n%3 == 1 && w == 0 {
					// A failure half-way: the tail goes back.
					half := sp.Len / 2
					s.Return(Span{sp.Off + half, sp.Len - half})
					sp.Len = half
				}
				mu.Lock()
				for i := sp.Off; i < sp.Off+sp.Len; i++ {
					got[i]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if s.Left() != 0 {
		t.Fatalf("%d bytes left", s.Left())
	}
	for i, n := range got {
		if n != 1 {
			t.Fatalf("byte %d handed out %d times", i, n)
		}
	}
	if _, ok := NewSplitter(0).Take(1); ok {
		t.Error("an empty file has a span")
	}
}

func TestWrittenMissing(t *testing.T) {
	var w Written
	sp := Span{100, 100} // [100, 200)
	if got := w.Missing(sp); !slices.Equal(got, []Span{sp}) {
		t.Fatalf("nothing written: %v", got)
	}
	// Blocks of two streams, out of order, one overlapping, one outside.
	w.Add(150, 10)
	w.Add(110, 10)
	w.Add(120, 5)
	w.Add(158, 4)
	w.Add(300, 50)
	want := []Span{{100, 10}, {125, 25}, {162, 38}}
	if got := w.Missing(sp); !slices.Equal(got, want) {
		t.Errorf("missing %v, want %v", got, want)
	}
	w.Add(100, 100)
	if got := w.Missing(sp); len(got) != 0 {
		t.Errorf("all written: missing %v", got)
	}
	if got := w.Missing(Span{200, 100}); !slices.Equal(got, []Span{{200, 100}}) {
		t.Errorf("after it: %v", got)
	}
}
