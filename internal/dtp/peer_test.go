package dtp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// A stranger is a data connection that is not the session's peer; it
// reaches the passive port before the peer does.
type stranger struct {
	name string
	from string // source address: 127.0.0.2 is a foreign host here
	// act is what it does once connected; it returns when done and must
	// end by itself within a few seconds.
	act func(t *testing.T, f *secFixture, c net.Conn)
}

func strangers(t *testing.T, f *secFixture) []stranger {
	bob := f.pki.Proxy(t, f.pki.User(t, "Bob Example"), false)
	garbage := func(t *testing.T, f *secFixture, c net.Conn) {
		c.Write(bytes.Repeat([]byte("GET / HTTP/1.0\r\n\r\n"), 64))
	}
	stall := func(t *testing.T, f *secFixture, c net.Conn) {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		c.Read(make([]byte, 1))
	}
	// A stranger with a valid certificate of the same CA that is not the
	// identity DCAU A wants: its handshake fails at VerifyPeer.
	wrongIdentity := func(t *testing.T, f *secFixture, c net.Conn) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if sc, err := dcsec.Secure(ctx, c, true, f.cfg(dcsec.Private, bob)); err == nil {
			sc.SetReadDeadline(time.Now().Add(3 * time.Second))
			sc.Read(make([]byte, 1))
		}
	}
	return []stranger{
		{"garbage-foreign", "127.0.0.2", garbage},
		{"stall-foreign", "127.0.0.2", stall},
		{"stall-samehost", "127.0.0.1", stall},
		{"wrong-identity-foreign", "127.0.0.2", wrongIdentity},
	}
}

// connectStranger connects s to ap and runs its act in the background; the
// returned function waits for it (the connection is closed by then).
func connectStranger(t *testing.T, f *secFixture, s stranger, ap netip.AddrPort) (wait func()) {
	t.Helper()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(s.from)}, Timeout: 5 * time.Second}
	c, err := dialer.Dial("tcp", ap.String())
	if err != nil {
		t.Errorf("stranger from %s: %v", s.from, err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.Close()
		s.act(t, f, c)
	}()
	return func() { <-done }
}

// runPeer runs the session's peer in the background; the returned function
// cancels ctx for it and waits until it has returned (peer must give up
// when ctx ends).
func runPeer(ctx context.Context, peer func(ctx context.Context)) (wait func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		peer(ctx)
	}()
	return func() { cancel(); <-done }
}

// peerSendStream is a stream-mode peer with DCAU A and PROT C connecting to ap
// and sending the fixture's file.
func peerSendStream(ctx context.Context, ap netip.AddrPort, f *secFixture) {
	c, err := dialSecure(ctx, ap, f.cfg(dcsec.Clear, f.alice))
	if err != nil {
		return
	}
	defer context.AfterFunc(ctx, func() { c.Close() })()
	defer c.Close()
	if _, err := c.Write(f.data); err == nil {
		dcsec.CloseWrite(c, dcsec.GSI)
	}
}

// peerSendStreamFrom is peerSendStream from the local address host.
func peerSendStreamFrom(ctx context.Context, ap netip.AddrPort, f *secFixture, host string) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(host)}}
	raw, err := d.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return
	}
	c, err := dcsec.Secure(ctx, raw, true, f.cfg(dcsec.Clear, f.alice))
	if err != nil {
		raw.Close()
		return
	}
	defer context.AfterFunc(ctx, func() { c.Close() })()
	defer c.Close()
	if _, err := c.Write(f.data); err == nil {
		dcsec.CloseWrite(c, dcsec.GSI)
	}
}

// waitQueued gives the kernel a moment to finish the stranger's connection
// before the peer's, so the stranger is first in the accept queue.
func waitQueued() { time.Sleep(50 * time.Millisecond) }

// TestStrangerFirstStream: with an authenticated data channel (GSI DCAU A)
// a stranger reaches the passive port first and sends garbage, stalls or
// fails authentication; the session's peer, connecting afterwards, still
// gets the file (RETR) or sends it (STOR), with no wait for the stranger.
func TestStrangerFirstStream(t *testing.T) {
	f := getSecFixture(t)
	for _, s := range strangers(t, f) {
		for _, level := range levels {
			t.Run(fmt.Sprintf("RETR-%s-%v", s.name, level), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				d := newSecDTP(t, f.cfg(level, f.server))
				ap, err := d.Passive(ctx, true)
				if err != nil {
					t.Fatal(err)
				}
				defer connectStranger(t, f, s, ap)()
				waitQueued()
				got := make(chan []byte, 1)
				defer runPeer(ctx, func(ctx context.Context) {
					c, err := dialSecure(ctx, ap, f.cfg(level, f.alice))
					if err != nil {
						got <- nil
						return
					}
					defer context.AfterFunc(ctx, func() { c.Close() })()
					defer c.Close()
					b, _ := io.ReadAll(c)
					got <- b
				})()
				start := time.Now()
				n, err := d.Send(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1}, f.open(t), func(xfer.Event) {})
				if err != nil || n != int64(len(f.data)) {
					t.Fatalf("Send with a stranger first: %d, %v", n, err)
				}
				if b := <-got; !bytes.Equal(b, f.data) {
					t.Fatalf("peer received %d bytes, want %d", len(b), len(f.data))
				}
				if el := time.Since(start); el > 2*time.Second {
					t.Errorf("the transfer waited %v for the stranger", el)
				}
			})
		}
		t.Run("STOR-"+s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			d := newSecDTP(t, f.cfg(dcsec.Clear, f.server))
			ap, err := d.Passive(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			defer connectStranger(t, f, s, ap)()
			waitQueued()
			defer runPeer(ctx, func(ctx context.Context) { peerSendStream(ctx, ap, f) })()
			w := &memWriter{}
			n, err := d.Receive(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1, Size: -1}, w, func(xfer.Event) {})
			if err != nil || n != int64(len(f.data)) || !bytes.Equal(w.b, f.data) {
				t.Fatalf("Receive with a stranger first: %d, %v", n, err)
			}
		})
	}
}

// TestStrangersFirstEBlock: MODE E upload over several connections with
// strangers connecting to the passive port first: the transfer completes
// on the peer's connections alone, and the strangers took none of the
// places (the cache holds exactly the peer's connections).
func TestStrangersFirstEBlock(t *testing.T) {
	f := getSecFixture(t)
	const p = 3
	for _, s := range strangers(t, f) {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			d := newSecDTP(t, f.cfg(dcsec.Clear, f.server))
			ap, err := d.Passive(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			// Two strangers first, and one between the peer's connections.
			defer connectStranger(t, f, s, ap)()
			defer connectStranger(t, f, s, ap)()
			waitQueued()
			sent := make(chan error, 1)
			defer runPeer(ctx, func(ctx context.Context) {
				conns := make([]net.Conn, p)
				errs := make([]error, p)
				var wg sync.WaitGroup
				for i := range p {
					if i == 1 {
						wg.Wait()
						defer connectStranger(t, f, s, ap)()
						waitQueued()
					}
					wg.Go(func() { conns[i], errs[i] = dialSecure(ctx, ap, f.cfg(dcsec.Clear, f.alice)) })
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					for _, c := range conns {
						if c != nil {
							c.Close()
						}
					}
					sent <- err
					return
				}
				defer context.AfterFunc(ctx, func() { closeAll(conns) })()
				_, err := eblock.Send(ctx, conns, bytes.NewReader(f.data), []xfer.Range{{Start: 0, End: int64(len(f.data))}}, eblock.SendConfig{BlockSize: 256 << 10})
				closeAll(conns)
				sent <- err
			})()
			w := &memWriter{}
			n, err := d.Receive(ctx, &xfer.Request{Mode: xfer.ModeEBlock, Type: xfer.TypeImage, Length: -1, Size: -1}, w, func(xfer.Event) {})
			if err != nil || n != int64(len(f.data)) || !bytes.Equal(w.b, f.data) {
				t.Fatalf("Receive with strangers: %d, %v", n, err)
			}
			if err := <-sent; err != nil {
				t.Fatalf("peer: %v", err)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.cache) != 1 || len(d.cache[0]) != p {
				t.Fatalf("cache %v, want the peer's %d connections", d.cache, p)
			}
		})
	}
}

// TestStrangerFlood: far more stalling strangers than one host may hold
// handshakes for do not keep the peer out: not when it is the control
// peer's host, nor when it is a third host (a third-party transfer), and
// what a flood holds stays bounded.
func TestStrangerFlood(t *testing.T) {
	f := getSecFixture(t)
	for _, peerHost := range []string{"127.0.0.1", "127.0.0.3"} {
		t.Run("peer on "+peerHost, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			sec := f.cfg(dcsec.Clear, f.server)
			sec.HandshakeTimeout = 20 * time.Second
			d := newSecDTP(t, sec)
			ap, err := d.Passive(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			stall := stranger{"stall", "127.0.0.2", func(t *testing.T, f *secFixture, c net.Conn) {
				c.SetReadDeadline(time.Now().Add(3 * time.Second))
				io.Copy(io.Discard, c)
			}}
			for range 2 * maxCandidatesPerSource {
				defer connectStranger(t, f, stall, ap)()
			}
			// And more than the listener runs in all, from five hosts.
			for i := range maxCandidates/maxCandidatesPerSource + 1 {
				from := stall
				from.from = fmt.Sprintf("127.0.0.%d", 20+i)
				for range maxCandidatesPerSource {
					defer connectStranger(t, f, from, ap)()
				}
			}
			waitQueued()
			defer runPeer(ctx, func(ctx context.Context) { peerSendStreamFrom(ctx, ap, f, peerHost) })()
			w := &memWriter{}
			start := time.Now()
			n, err := d.Receive(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1, Size: -1}, w, func(xfer.Event) {})
			if err != nil || !bytes.Equal(w.b, f.data) {
				t.Fatalf("Receive behind a flood: %d, %v", n, err)
			}
			// Not after the strangers' handshakes timed out (20 s).
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("served after %v, behind the flood", el)
			}
		})
	}
}

// bounceTarget is a listener standing for a service an attacker wants the
// server to talk to; it records whatever reaches it.
type bounceTarget struct {
	ln   net.Listener
	mu   sync.Mutex
	got  []byte
	hits int
	done chan struct{}
}

func newBounceTarget(t *testing.T, addr string) *bounceTarget {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b := &bounceTarget{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for range 100 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.hits++
			b.mu.Unlock()
			c.SetReadDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 64<<10)
			for range 10000 { // bounded: at most 640 MiB
				n, err := c.Read(buf)
				b.mu.Lock()
				b.got = append(b.got, buf[:n]...)
				b.mu.Unlock()
				if err != nil {
					break
				}
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-b.done })
	return b
}

func (b *bounceTarget) addr() netip.AddrPort { return b.ln.Addr().(*net.TCPAddr).AddrPort() }

// untouched checks, after a grace period, that nothing reached b.
func (b *bounceTarget) untouched(t *testing.T) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hits != 0 || len(b.got) != 0 {
		t.Errorf("the bounce target got %d connections and %d bytes", b.hits, len(b.got))
	}
}

// TestActiveBounceAfterDCAUOff is the bounce attack through a GSI session:
// PORT to a foreign host is accepted while DCAU authenticates the peer,
// then DCAU N turns authentication off and RETR would send the file in
// clear to that host. The DTP refuses at transfer time, in stream mode,
// MODE E and with SPOR's several addresses, and nothing reaches the target.
func TestActiveBounceAfterDCAUOff(t *testing.T) {
	f := getSecFixture(t)
	cases := []struct {
		name string
		mode xfer.Mode
		own  bool // add the control peer's own (allowed) address first, as SPOR
	}{
		{"stream", xfer.ModeStream, false},
		{"eblock", xfer.ModeEBlock, false},
		{"eblock-SPOR", xfer.ModeEBlock, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			target := newBounceTarget(t, "127.0.0.2:0")
			d := newSecDTP(t, f.cfg(dcsec.Clear, f.server))
			addrs := []netip.AddrPort{target.addr()}
			var own *bounceTarget
			if tc.own {
				own = newBounceTarget(t, "127.0.0.1:0")
				addrs = []netip.AddrPort{own.addr(), target.addr()}
			}
			if err := d.Active(ctx, addrs); err != nil {
				t.Fatal(err)
			}
			d.SetSecurity(nil) // DCAU N
			_, err := d.Send(ctx, &xfer.Request{Mode: tc.mode, Type: xfer.TypeImage, Length: -1, Parallelism: 2}, f.open(t), func(xfer.Event) {})
			var de *xfer.DataError
			if !errors.As(err, &de) || !de.Open || !errors.Is(err, ErrDataPeerRefused) {
				t.Errorf("Send to a foreign host after DCAU N: %v", err)
			}
			t.Log(err)
			target.untouched(t)
			if own != nil {
				own.untouched(t) // no stripe starts when one address is refused
			}
		})
	}
}

// TestActivePrivilegedPort: with a plain data channel, the control peer's
// own address with a privileged port is refused when the transfer starts,
// whatever the PI let through.
func TestActivePrivilegedPort(t *testing.T) {
	f := getSecFixture(t)
	for _, mode := range []xfer.Mode{xfer.ModeStream, xfer.ModeEBlock} {
		t.Run(string(rune(mode)), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// A privileged port of our own when we may listen on one (root);
			// otherwise a port nobody listens on, and the error must still
			// be the DTP's refusal, not a failed connect.
			addr := netip.MustParseAddrPort("127.0.0.1:1023")
			var target *bounceTarget
			if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
				ln.Close()
				if probe, err := net.Listen("tcp", "127.0.0.1:1023"); err == nil {
					probe.Close()
					target = newBounceTarget(t, "127.0.0.1:1023")
				}
			}
			d := newSecDTP(t, nil)
			if err := d.Active(ctx, []netip.AddrPort{addr}); err != nil {
				t.Fatal(err)
			}
			_, err := d.Send(ctx, &xfer.Request{Mode: mode, Type: xfer.TypeImage, Length: -1}, f.open(t), func(xfer.Event) {})
			var de *xfer.DataError
			if !errors.As(err, &de) || !de.Open || !errors.Is(err, ErrDataPeerRefused) {
				t.Errorf("Send to a privileged port: %v", err)
			}
			if target != nil {
				target.untouched(t)
			}
		})
	}
}

// TestManyStraysDoNotFail: a host that is not the client's connects to the
// passive port over and over, closing at once (each refused by the bounce
// rule); however many it makes, the client's own connection afterwards
// still carries the transfer.
func TestManyStraysDoNotFail(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := newSecDTP(t, nil)
	ap, err := d.Passive(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 1<<16)
	go func() {
		dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.5")}, Timeout: 5 * time.Second}
		for range 1500 {
			if c, err := dialer.DialContext(ctx, "tcp", ap.String()); err == nil {
				c.Close()
			}
		}
		c, err := net.DialTimeout("tcp", ap.String(), 5*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(data)
	}()
	w := &memWriter{}
	n, err := d.Receive(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1, Size: -1}, w, func(xfer.Event) {})
	if err != nil || !bytes.Equal(w.b, data) {
		t.Fatalf("Receive after 1500 strays: %d bytes, %v", n, err)
	}
}
