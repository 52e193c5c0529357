package dtp

import (
	"net"
	"testing"
)

// TestTallyRetransmits: a transfer over real sockets knows its
// retransmissions (0 on an idle loopback), cached and new alike; over a
// connection without a socket it does not (-1).
func TestTallyRetransmits(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
