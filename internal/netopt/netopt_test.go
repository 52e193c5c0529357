package netopt

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/tcppair"
)

func TestBufferControl(t *testing.T) {
	if BufferControl(0) != nil {
		t.Fatal("size 0 should leave autotuning alone")
	}
	lc := net.ListenConfig{Control: BufferControl(1 << 20)}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	raw, _ := l.(*net.TCPListener).SyscallConn()
	var got int
	raw.Control(func(fd uintptr) { got, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	// Linux caps the request at rmem_max, then doubles it for bookkeeping.
	want := 1 << 20
	if b, err := os.ReadFile("/proc/sys/net/core/rmem_max"); err == nil {
		if m, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && m < want {
			want = m
		}
	}
	if got < want {
		t.Fatalf("SO_RCVBUF = %d after asking for 1 MiB (cap %d)", got, want)
	}
}

func TestMoved(t *testing.T) {
	c, s := tcppair.New(t)
	before, ok := Moved(s)
	if !ok {
		t.Fatal("no TCP_INFO counters")
	}
	c.Write(make([]byte, 10000))
	buf := make([]byte, 10000)
	for got := 0; got < len(buf); {
		n, err := s.Read(buf[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	after, _ := Moved(s)
	if after-before < 10000 {
		t.Fatalf("moved %d -> %d after receiving 10000 bytes", before, after)
	}
}
