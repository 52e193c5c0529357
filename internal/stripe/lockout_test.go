package stripe_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/stripe"
)

// strangers opens n connections from 127.0.0.1 (the frontend's own
// address here) to addr that never finish a hello: silent ones send
// nothing, partial ones the start of a hello frame. They stay open until
// the test ends, unless the mover closes them.
func strangers(t *testing.T, addr string, n int, partial bool) []net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
	var conns []net.Conn
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("stranger %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if partial {
			// A hello header announcing 200 bytes, then 10 of them.
			h := binary.BigEndian.AppendUint32(nil, 200)
			h = append(h, 1) // TypeHello
			h = append(h, `{"version"`...)
			c.Write(h)
		}
		conns = append(conns, c)
	}
	return conns
}

// stillOpen counts the connections the mover has not closed.
func stillOpen(conns []net.Conn) int {
	n := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			n++
		}
	}
	return n
}

// TestStrangersDoNotLockOutFrontend: connections that never prove the
// secret, from the frontend's own address, hold every handshake slot of
// both movers (and more wait behind them); new client sessions, one
// after another and at once, still transfer through the movers while the
// strangers stay connected.
func TestStrangersDoNotLockOutFrontend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		partial bool
	}{
		{"silent16", 16, false},
		{"silent64", 64, false},
		{"partialHello16", 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, st := newRoot(t)
			// Slow handshake deadlines: the strangers are not timed out
			// during the test, only a fix of the slots themselves helps.
			slow := func(m *stripe.Mover) { m.HandshakeTimeout, m.HelloTimeout = 60*time.Second, 60*time.Second }
			m0 := startMover(t, "127.0.0.2:0", st, secret, slow)
			m1 := startMover(t, "127.0.0.3:0", st, secret, slow)
			c := startFrontend(t, root, st, []string{m0.addr, m1.addr})
			c.waitUp(t, 2)
			want := randomFile(t, filepath.Join(root, "src.bin"), 1<<20+3)

			var held [][]net.Conn
			for _, mp := range []*moverProc{m0, m1} {
				held = append(held, strangers(t, mp.addr, tc.n, tc.partial))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			session := func(i int) error {
				conn, err := c.dial(ctx)
				if err != nil {
					return err
				}
				defer conn.Close()
				out := filepath.Join(t.TempDir(), fmt.Sprintf("down%d.bin", i))
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				_, err = conn.RetrieveAt(ctx, "/src.bin", f, &client.RetrieveOptions{Parallel: 2})
				f.Close()
				if err != nil {
					return fmt.Errorf("session %d: download: %w", i, err)
				}
				if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
					return fmt.Errorf("session %d: contents differ", i)
				}
				name := fmt.Sprintf("/up%d.bin", i)
				if _, err := conn.StoreAt(ctx, name, bytes.NewReader(want), int64(len(want)), &client.StoreOptions{Parallel: 2}); err != nil {
					return fmt.Errorf("session %d: upload: %w", i, err)
				}
				if got, _ := os.ReadFile(filepath.Join(root, name)); !bytes.Equal(got, want) {
					return fmt.Errorf("session %d: uploaded contents differ", i)
				}
				return nil
			}
			for i := range 4 { // one client session after another
				if err := session(i); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for k := range errs { // and several at once
				wg.Go(func() { errs[k] = session(4 + k) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			// The attack was on all along: strangers still hold slots.
			for i, conns := range held {
				open := stillOpen(conns)
				t.Logf("mover %d: %d of %d strangers still connected", i, open, len(conns))
				if open < 16/2 {
					t.Errorf("mover %d: only %d strangers still connected; the transfers did not run under attack", i, open)
				}
			}
		})
	}
}
