package replica

import (
	"sync"
	"time"
)

// Span is the byte range [Off, Off+Len) of a file.
type Span struct{ Off, Len int64 }

// Splitter hands out the byte ranges of a file still to fetch to the
// readers of a multi-source download: each takes a span sized by its
// own measured rate (ChunkFor), so a fast replica takes more of the
// file and a slow one less, re-balanced with every span; a span that
// failed is given back for another reader. It is safe for concurrent
// use; it does no I/O.
type Splitter struct {
	mu   sync.Mutex
	left []Span // in file order, disjoint; guarded by mu
}

// NewSplitter is the Splitter of a file of size bytes.
func NewSplitter(size int64) *Splitter {
	s := &Splitter{}
	if size > 0 {
		s.left = []Span{{0, size}}
	}
	return s
}

// Take returns the next span of at most max bytes (max > 0), from the
// start of the first range left; ok is false when none is left.
func (s *Splitter) Take(max int64) (sp Span, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.left) == 0 {
		return Span{}, false
	}
	first := &s.left[0]
	sp = Span{first.Off, min(first.Len, max)}
	first.Off += sp.Len
	first.Len -= sp.Len
	if first.Len == 0 {
		s.left = s.left[1:]
	}
	return sp, true
}

// Return gives back a span taken and not fetched (whole, or its tail).
func (s *Splitter) Return(sp Span) {
	if sp.Len <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.left) && s.left[i].Off < sp.Off {
		i++
	}
	s.left = append(s.left, Span{})
	copy(s.left[i+1:], s.left[i:])
	s.left[i] = sp
}

// Left is the number of bytes not yet taken (or given back).
func (s *Splitter) Left() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, sp := range s.left {
		n += sp.Len
	}
	return n
}

// Chunk bounds of ChunkFor.
const (
	MinChunk = 1 << 20
	MaxChunk = 64 << 20
)

// ChunkFor is the span a reader measured at rate bytes a second should
// take next: what it moves in about target, within [MinChunk,
// MaxChunk]; first (a rate not yet measured) is the size of a first
// span, the same for every reader.
func ChunkFor(rate float64, target time.Duration, first int64) int64 {
	if rate <= 0 {
		return max(first, MinChunk)
	}
	n := int64(rate * target.Seconds())
	return min(max(n, MinChunk), MaxChunk)
}

// TailShare is the most a reader measured at rate bytes a second should
// take of the left bytes not yet taken, when the rates of the readers
// still running (its own included) sum to total and active of them are
// busy: its share in proportion to its rate, so that all finish at about
// the same time, or an even share while its rate is not known; never
// less than MinChunk.
func TailShare(left int64, rate, total float64, active int) int64 {
	share := left / int64(max(active, 1))
	if rate > 0 && total >= rate {
		share = int64(float64(left) * (rate / total))
	}
	return max(share, MinChunk)
}

// Written records the byte ranges of a span a reader has written, so
// that a span that fails is given back without what arrived: a reader
// that dies costs the others at most the blocks it had in flight. It is
// safe for concurrent use (the streams of a MODE E transfer write at
// once).
type Written struct {
	mu    sync.Mutex
	spans []Span // in file order, disjoint, merged; guarded by mu
}

// Add records that n bytes at off were written.
func (w *Written) Add(off, n int64) {
	if n <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lo, hi := off, off+n
	out := w.spans[:0:0]
	for _, s := range w.spans {
		switch {
		case s.Off+s.Len < lo || s.Off > hi: // apart
			out = append(out, s)
		default: // touching or overlapping: merged into [lo, hi)
			lo, hi = min(lo, s.Off), max(hi, s.Off+s.Len)
		}
	}
	i := 0
	for i < len(out) && out[i].Off < lo {
		i++
	}
	out = append(out, Span{})
	copy(out[i+1:], out[i:])
	out[i] = Span{lo, hi - lo}
	w.spans = out
}

// Missing returns the parts of sp not written, in file order.
func (w *Written) Missing(sp Span) []Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Span
	at, end := sp.Off, sp.Off+sp.Len
	for _, s := range w.spans {
		if s.Off+s.Len <= at || s.Off >= end {
			continue
		}
		if s.Off > at {
			out = append(out, Span{at, s.Off - at})
		}
		at = max(at, s.Off+s.Len)
	}
	if at < end {
		out = append(out, Span{at, end - at})
	}
	return out
}
