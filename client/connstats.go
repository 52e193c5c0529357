package client

import (
	"net"
	"slices"
	"sync"

	"github.com/ferrygrid/ferry/internal/netopt"
)

// connWatch keeps the kernel's view of a transfer's data connections for
// Progress.Conns. The connections are read when a Progress is taken
// (fill) and once more just before the transfer closes one (closing),
// whose reading then stands: the data path itself reads nothing. A nil
// connWatch (nobody asked for Progress) does nothing.
type connWatch struct {
	mu     sync.Mutex
	conns  []net.Conn  // guarded by mu; the data connections, by stream
	stats  []ConnStats // guarded by mu; the last reading of each
	have   []bool      // guarded by mu; stats[i] holds a reading
	closed []bool      // guarded by mu; conns[i] had its last reading
}

// newConnWatch returns a connWatch when fn (a Progress callback) is not
// nil, else nil.
func newConnWatch(fn func(Progress)) *connWatch {
	if fn == nil {
		return nil
	}
	return new(connWatch)
}

// set makes conns the connections watched, in stream order (w reads the
// slice from then on; it must not change); connections may have joined
// since the last call.
func (w *connWatch) set(conns []net.Conn) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conns = conns
}

// closing reads connection i, c, a last time before the transfer closes
// it; later snapshots keep that reading.
func (w *connWatch) closing(i int, c net.Conn) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.growLocked(i + 1)
	if !w.closed[i] {
		w.readLocked(i, c)
		w.closed[i] = true
	}
}

// fill reads the connections still open and sets p.Conns to match
// p.Streams: nil when no connection could be read.
func (w *connWatch) fill(p *Progress) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.growLocked(len(w.conns))
	for i, c := range w.conns {
		if c != nil && !w.closed[i] {
			w.readLocked(i, c)
		}
	}
	if !slices.Contains(w.have[:min(len(p.Streams), len(w.have))], true) {
		p.Conns = nil
		return
	}
	p.Conns = make([]ConnStats, len(p.Streams))
	for i, n := range p.Streams {
		if i < len(w.have) && w.have[i] {
			p.Conns[i] = w.stats[i]
		}
		p.Conns[i].Bytes = n
	}
}

func (w *connWatch) growLocked(n int) {
	for len(w.stats) < n {
		w.stats = append(w.stats, ConnStats{})
		w.have = append(w.have, false)
		w.closed = append(w.closed, false)
	}
}

// readLocked reads c's socket (under its TLS layer, if any) into
// stats[i]; a connection that cannot be read (closed, not TCP, another
// OS) keeps its last reading.
func (w *connWatch) readLocked(i int, c net.Conn) {
	tc := tcpOf(c)
	if tc == nil {
		return
	}
	s, ok := netopt.ReadTCPStats(tc)
	if !ok {
		return
	}
	w.stats[i] = ConnStats{
		RTT:          s.RTT,
		MinRTT:       s.MinRTT,
		RcvRTT:       s.RcvRTT,
		Retransmits:  s.Retransmits,
		SegsOut:      s.SegsOut,
		SegsIn:       s.SegsIn,
		ReorderSeen:  s.ReorderSeen,
		RcvOOO:       s.RcvOOO,
		Cwnd:         s.Cwnd,
		MSS:          s.MSS,
		DeliveryRate: s.DeliveryRate,
		SndBuf:       s.SndBuf,
		RcvBuf:       s.RcvBuf,

		Busy:          s.Busy,
		RwndLimited:   s.RwndLimited,
		SndbufLimited: s.SndbufLimited,
	}
	w.have[i] = true
}
