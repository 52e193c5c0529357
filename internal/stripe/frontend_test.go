package stripe_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/stripe"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// newPool is a pool over the movers at addrs, closed with the test, once
// they are all up.
func newPool(t *testing.T, addrs ...string) *stripe.Pool {
	t.Helper()
	p, err := stripe.NewPool(stripe.PoolConfig{Movers: addrs, Secret: secret, Heartbeat: heartbeat, HeartbeatTimeout: hbTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for range 400 {
		if p.Up() == len(addrs) {
			return p
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("movers not up: %q", p.Status())
	return nil
}

// sink is a data channel receiver: what one connection sent, in full.
func sink(t *testing.T) (netip.AddrPort, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		got <- b
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort(), got
}

// shrunk is a listing that says it is longer than it turns out to be, as
// a directory that lost entries between its size and its reading.
type shrunk struct {
	*bytes.Reader
	size int64
}

func (s shrunk) Size() int64  { return s.size }
func (s shrunk) Close() error { return nil }

// TestListingShrankIsRefused: a listing shorter than its size is an
// error, never a 226 with trailing NUL bytes.
func TestListingShrankIsRefused(t *testing.T) {
	mp := startMover(t, "127.0.0.2:0", memory.New(), secret)
	f := newPool(t, mp.addr).NewFrontend(stripe.SessionConfig{AllowForeign: true})
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listing := "type=file;size=1; a\r\n"
	for _, size := range []int64{int64(len(listing)), int64(len(listing)) + 100} {
		addr, got := sink(t)
		if err := f.Active(ctx, []netip.AddrPort{addr}); err != nil {
			t.Fatal(err)
		}
		req := &xfer.Request{Path: "/", Mode: xfer.ModeStream, Type: xfer.TypeImage, Listing: true, Length: -1, Size: size}
		_, err := f.Send(ctx, req, shrunk{bytes.NewReader([]byte(listing)), size}, func(xfer.Event) {})
		if size == int64(len(listing)) {
			if err != nil {
				t.Fatalf("whole listing: %v", err)
			}
			if b := <-got; string(b) != listing {
				t.Fatalf("whole listing: got %q", b)
			}
			continue
		}
		if err == nil {
			t.Fatalf("a listing %d bytes short was sent as complete (%q)", size-int64(len(listing)), <-got)
		}
		if !strings.Contains(err.Error(), "listing") {
			t.Errorf("error does not say what went wrong: %v", err)
		}
	}
}
