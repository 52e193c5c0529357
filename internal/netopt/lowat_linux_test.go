package netopt

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSetNotSentLowat: the mark is set on a TCP socket and refused on a
// connection without one.
func TestSetNotSentLowat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !SetNotSentLowat(c, 1<<20) {
		t.Fatal("refused on a TCP connection")
	}
	var got int
	control(c, func(fd int) bool {
		got, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
		return err == nil
	})
	if got != 1<<20 {
		t.Fatalf("TCP_NOTSENT_LOWAT %d (%v), want %d", got, err, 1<<20)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if SetNotSentLowat(a, 1<<20) {
		t.Fatal("set on a connection without a socket")
	}
}
