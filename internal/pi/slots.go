package pi

import (
	"net/netip"
	"sync"
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

// Source is the unit per-source limits count by: the address for IPv4,
// its /64 for IPv6 (a host usually has a whole /64).
func Source(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if a.Is4() || !a.IsValid() {
		return netip.PrefixFrom(a, a.BitLen())
	}
	p, _ := a.Prefix(64)
	return p
}

// TryAcquire takes a slot for src if one is free; release (idempotent)
// gives it back.
func (l *Slots) TryAcquire(src netip.Addr) (release func(), ok bool) {
	if l == nil || l.all == 0 {
		return func() {}, true
	}
	key := Source(src)
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
