package netopt

import (
	"io"
	"net"
	"testing"
	"time"

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

// TestSetRcvLowat: the mark is set on a TCP socket, and a stream read to
// its end still ends with fewer bytes than the mark.
func TestSetRcvLowat(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("short"))
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !SetRcvLowat(c, 256<<10) {
		t.Fatal("SetRcvLowat failed on a TCP socket")
	}
	var v int
	control(c, func(fd int) bool {
		v, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT)
		return true
	})
	if err != nil || v != 256<<10 {
		t.Errorf("SO_RCVLOWAT = %d, %v; want %d", v, err, 256<<10)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "short" {
		t.Errorf("read %q, %v", got, err)
	}
}
