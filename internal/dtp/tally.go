package dtp

import (
	"net"
	"sync"
	"time"

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
	chrono  chrono
	read    int // connections whose chrono statistics were read
}

// chrono is a connection's sender-side time accounting (netopt.TCPStats).
type chrono struct{ busy, rwnd, sndbuf time.Duration }

func chronoOf(st netopt.TCPStats) chrono {
	return chrono{busy: st.Busy, rwnd: st.RwndLimited, sndbuf: st.SndbufLimited}
}

// connBase is a connection's state as the transfer took it.
type connBase struct {
	retrans int64 // retransmissions before the transfer
	chrono  chrono
	cached  bool
}

func newTally() *tally { return &tally{base: map[net.Conn]connBase{}} }

// add notes a connection of the transfer; a cached one has retransmitted
// before, in earlier transfers, which are not this one's.
func (t *tally) add(c net.Conn, cached bool) {
	var b int64
	var ch chrono
	if cached {
		if st, ok := netopt.ReadCounters(socket(c)); ok {
			b, ch = st.Retransmits, chronoOf(st)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.base[c]; seen {
		return
	}
	t.base[c] = connBase{retrans: b, chrono: ch, cached: cached}
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
	st, ok := netopt.ReadCounters(socket(c))
	t.mu.Lock()
	defer t.mu.Unlock()
	b, found := t.base[c]
	if !found {
		return
	}
	delete(t.base, c)
	if ok {
		t.retrans += max(st.Retransmits-b.retrans, 0)
		t.known = true
		t.chrono.busy += max(st.Busy-b.chrono.busy, 0)
		t.chrono.rwnd += max(st.RwndLimited-b.chrono.rwnd, 0)
		t.chrono.sndbuf += max(st.SndbufLimited-b.chrono.sndbuf, 0)
		t.read++
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
	ev.Busy, ev.RwndLimited, ev.SndbufLimited, ev.Measured = t.chrono.busy, t.chrono.rwnd, t.chrono.sndbuf, t.read
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
