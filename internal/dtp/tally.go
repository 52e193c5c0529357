package dtp

import (
	"net"
	"sync"

	"github.com/ferrygrid/ferry/internal/netopt"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// tally measures a transfer's data connections for its xfer.EventConns:
// how many it used and opened, and the TCP segments they retransmitted
// while it ran. It reads each socket's TCP_INFO at most twice per
// transfer (a cached connection at the start, every one at its end),
// never per block.
type tally struct {
	mu      sync.Mutex
	base    map[net.Conn]connBase // connections not yet read at their end
	streams int
	opened  int
	retrans int64
	known   bool // some connection's count was read
}

// connBase is a connection's state as the transfer took it.
type connBase struct {
	retrans int64 // retransmissions before the transfer
	cached  bool
}

func newTally() *tally { return &tally{base: map[net.Conn]connBase{}} }

// add notes a connection of the transfer; a cached one has retransmitted
// before, in earlier transfers, which are not this one's.
func (t *tally) add(c net.Conn, cached bool) {
	var b int64
	if cached {
		if n, ok := netopt.ReadRetransmits(socket(c)); ok {
			b = n
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.base[c]; seen {
		return
	}
	t.base[c] = connBase{retrans: b, cached: cached}
	t.streams++
	if !cached {
		t.opened++
	}
}

// drop forgets a connection add noted that the transfer did not take.
func (t *tally) drop(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, found := t.base[c]; found {
		delete(t.base, c)
		t.streams--
		if !b.cached {
			t.opened--
		}
	}
}

// addAll notes every connection of stripes.
func (t *tally) addAll(stripes [][]net.Conn, cached bool) {
	for _, s := range stripes {
		for _, c := range s {
			t.add(c, cached)
		}
	}
}

// closing reads c's count before it is closed (eblock's BeforeClose); a
// connection the transfer did not add is ignored.
func (t *tally) closing(c net.Conn) {
	retrans, ok := netopt.ReadRetransmits(socket(c))
	t.mu.Lock()
	defer t.mu.Unlock()
	b, found := t.base[c]
	if !found {
		return
	}
	delete(t.base, c)
	if ok {
		t.retrans += max(retrans-b.retrans, 0)
		t.known = true
	}
}

// event reads the connections still open and returns the transfer's
// EventConns, over stripes stripes.
func (t *tally) event(stripes int) xfer.Event {
	t.mu.Lock()
	open := make([]net.Conn, 0, len(t.base))
	for c := range t.base {
		open = append(open, c)
	}
	t.mu.Unlock()
	for _, c := range open {
		t.closing(c)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := xfer.Event{Kind: xfer.EventConns, Stripes: stripes, Streams: t.streams, Opened: t.opened, Retransmits: -1}
	if t.known {
		ev.Retransmits = t.retrans
	}
	return ev
}

// socket is the TCP connection under c (a TLS connection's, for secured
// data channels).
func socket(c net.Conn) net.Conn {
	for {
		u, wraps := c.(interface{ NetConn() net.Conn })
		if !wraps {
			return c
		}
		c = u.NetConn()
	}
}
