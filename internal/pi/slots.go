package pi

import (
	"net/netip"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// Slots bounds work in progress: in all, and per source (one IPv4 address
// or one IPv6 /64), so that one host cannot take every slot. Acquiring
// never waits. The zero value and nil bound nothing.
type Slots struct {
	all, perSource int

	mu     sync.Mutex
	inUse  int                  // guarded by mu
	bySrcs map[netip.Prefix]int // guarded by mu
}

// NewSlots returns Slots for at most all at once, at most perSource of
// them for one source.
func NewSlots(all, perSource int) *Slots {
	return &Slots{all: max(all, 1), perSource: max(perSource, 1), bySrcs: map[netip.Prefix]int{}}
}

// TryAcquire takes a slot for src if one is free; release (idempotent)
// gives it back.
func (l *Slots) TryAcquire(src netip.Addr) (release func(), ok bool) {
	if l == nil || l.all == 0 {
		return func() {}, true
	}
	key := xfer.Source(src)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inUse >= l.all || l.bySrcs[key] >= l.perSource {
		return nil, false
	}
	l.inUse++
	l.bySrcs[key]++
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.inUse--
		if l.bySrcs[key]--; l.bySrcs[key] == 0 {
			delete(l.bySrcs, key)
		}
	}), true
}

// Rate bounds how often each source may start something (a token bucket
// per source: burst at once, then perSecond). Nil allows everything.
type Rate struct {
	burst, perSecond float64

	mu      sync.Mutex
	buckets map[netip.Prefix]*bucket // guarded by mu
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the sources a Rate remembers; full buckets are
// forgotten first, as they allow what a new one would.
const maxBuckets = 1 << 14

// NewRate returns a Rate allowing burst events at once per source, then
// perSecond.
func NewRate(burst, perSecond float64) *Rate {
	return &Rate{burst: max(burst, 1), perSecond: perSecond, buckets: map[netip.Prefix]*bucket{}}
}

// Allow takes one event of src's bucket, if there is one.
func (r *Rate) Allow(src netip.Addr) bool {
	if r == nil {
		return true
	}
	now := time.Now()
	key := xfer.Source(src)
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[key]
	if b == nil {
		if len(r.buckets) >= maxBuckets {
			r.pruneLocked(now)
		}
		b = &bucket{tokens: r.burst, last: now}
		r.buckets[key] = b
	}
	b.tokens = min(r.burst, b.tokens+now.Sub(b.last).Seconds()*r.perSecond)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// pruneLocked forgets the buckets that have refilled; if none has, the
// whole map (a flood of new sources: each gets a fresh burst, as before
// it was remembered).
func (r *Rate) pruneLocked(now time.Time) {
	for k, b := range r.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*r.perSecond >= r.burst {
			delete(r.buckets, k)
		}
	}
	if len(r.buckets) >= maxBuckets {
		clear(r.buckets)
	}
}
