package netopt

import (
	"crypto/tls"
	"net"
	"testing"
)

// TestReadRetransmits: the one-call read agrees with ReadTCPStats and
// refuses what it refuses.
func TestReadRetransmits(t *testing.T) {
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
	n, ok := ReadRetransmits(c)
	st, ok2 := ReadTCPStats(c)
	if !ok || !ok2 || n != st.Retransmits || n < 0 {
		t.Errorf("ReadRetransmits %d, %v; ReadTCPStats %d, %v", n, ok, st.Retransmits, ok2)
	}
	if _, ok := ReadRetransmits(tls.Client(s, &tls.Config{})); ok {
		t.Error("a TLS connection gave TCP_INFO without unwrapping")
	}
	s.Close()
	if _, ok := ReadRetransmits(s); ok {
		t.Error("a closed connection gave TCP_INFO")
	}
}
