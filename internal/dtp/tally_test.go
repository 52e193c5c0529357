package dtp

import (
	"net"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/tcppair"
)

// TestTallyRetransmits: a transfer over real sockets knows its
// retransmissions (0 on an idle loopback), cached and new alike; over a
// connection without a socket it does not (-1).
func TestTallyRetransmits(t *testing.T) {
	c, s := tcppair.New(t)
	tl := newTally()
	tl.add(c, true)
	tl.add(s, false)
	ev := tl.event(1)
	if ev.Retransmits != 0 || ev.Streams != 2 || ev.Opened != 1 {
		t.Errorf("event %+v, want 0 retransmits over 2 streams, 1 opened", ev)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	tl = newTally()
	tl.add(a, true)
	if ev := tl.event(1); ev.Retransmits != -1 {
		t.Errorf("pipe: retransmits %d, want -1 (unknown)", ev.Retransmits)
	}
}
