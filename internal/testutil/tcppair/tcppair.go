// Package tcppair gives tests a connected pair of loopback TCP sockets.
package tcppair

import (
	"net"
	"testing"
)

// New returns the two ends of a new loopback TCP connection: c dialled,
// s accepted. Both are closed when the test ends.
func New(t testing.TB) (c, s net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}
