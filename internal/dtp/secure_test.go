package dtp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/dcsec/dcsectest"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// secFixture: the server DTP presents a proxy delegated by Alice, the test
// peer (standing in for the client) Alice's own proxy; both authorize
// "self" (DCAU A).
type secFixture struct {
	pki            *dcsectest.PKI
	alice, server  *gsi.Credential
	aliceDN        string
	fs             *posix.FS
	dir            string
	data           []byte
	dataName       string
	mu             sync.Mutex
	serialForNames int
}

var (
	secOnce sync.Once
	secFix  *secFixture
	secErr  error
)

func getSecFixture(t *testing.T) *secFixture {
	t.Helper()
	secOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dtp-sec-")
		if err != nil {
			secErr = err
			return
		}
		f := &secFixture{dir: dir}
		if f.pki, secErr = dcsectest.NewIn(dir); secErr != nil {
			return
		}
		eec := f.pki.User(t, "Alice Example")
		f.alice = f.pki.Proxy(t, eec, false)
		f.server = f.pki.Proxy(t, f.alice, true)
		f.aliceDN = eec.Identity()
		f.data = make([]byte, 5<<20+12345)
		rand.Read(f.data)
		f.dataName = "src.dat"
		if secErr = os.WriteFile(filepath.Join(dir, f.dataName), f.data, 0o644); secErr != nil {
			return
		}
		if f.fs, secErr = posix.New(dir); secErr != nil {
			return
		}
		secFix = f
	})
	if secErr != nil {
		t.Fatal(secErr)
	}
	return secFix
}

func (f *secFixture) cfg(level dcsec.Level, cred *gsi.Credential) *dcsec.Config {
	tc := cred.TLSCertificate()
	return &dcsec.Config{
		Style: dcsec.GSI, Level: level, Server: cred == f.server, Certificate: &tc,
		VerifyPeer:       dcsec.SelfAuthorization(f.pki.Trust, f.aliceDN),
		HandshakeTimeout: 10 * time.Second,
	}
}

func (f *secFixture) newName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.serialForNames++
	return fmt.Sprintf("dst-%d.dat", f.serialForNames)
}

func (f *secFixture) check(t *testing.T, name string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, f.data) {
		t.Fatalf("%s: %d bytes, want %d", name, len(got), len(f.data))
	}
}

func newSecDTP(t *testing.T, sec *dcsec.Config) *Local {
	t.Helper()
	d := New(Config{
		ListenIP:       netip.MustParseAddr("127.0.0.1"),
		ControlPeer:    netip.MustParseAddrPort("127.0.0.1:21"),
		ConnectTimeout: 10 * time.Second,
	})
	d.SetSecurity(sec)
	t.Cleanup(func() { d.Close() })
	return d
}

func (f *secFixture) open(t *testing.T) dsi.Reader {
	t.Helper()
	r, err := f.fs.Open(context.Background(), f.dataName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func (f *secFixture) create(t *testing.T, name string) dsi.Writer {
	t.Helper()
	w, err := f.fs.Create(context.Background(), name, dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// listen starts a peer listener and returns it with its address.
func listen(t *testing.T) (*net.TCPListener, netip.AddrPort) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, ln.Addr().(*net.TCPAddr).AddrPort()
}

func dialSecure(ctx context.Context, ap netip.AddrPort, cfg *dcsec.Config) (net.Conn, error) {
	c, err := net.Dial("tcp", ap.String())
	if err != nil {
		return nil, err
	}
	return dcsec.Secure(ctx, c, true, cfg)
}

func acceptSecure(ctx context.Context, ln *net.TCPListener, cfg *dcsec.Config) (net.Conn, error) {
	c, err := ln.Accept()
	if err != nil {
		return nil, err
	}
	return dcsec.Secure(ctx, c, false, cfg)
}

var levels = []dcsec.Level{dcsec.Clear, dcsec.Private}

func TestSecureStream(t *testing.T) {
	f := getSecFixture(t)
	ctx := context.Background()
	for _, level := range levels {
		t.Run(fmt.Sprintf("RETR-PASV-%v", level), func(t *testing.T) {
			d := newSecDTP(t, f.cfg(level, f.server))
			ap, err := d.Passive(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan []byte, 1)
			go func() {
				c, err := dialSecure(ctx, ap, f.cfg(level, f.alice))
				if err != nil {
					t.Error(err)
					got <- nil
					return
				}
				defer c.Close()
				b, err := io.ReadAll(c)
				if err != nil {
					t.Error(err)
				}
				got <- b
			}()
			var progress []int64
			n, err := d.Send(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1, PerfInterval: time.Hour},
				f.open(t), func(e xfer.Event) {
					if e.Kind == xfer.EventProgress {
						progress = append(progress, e.Bytes)
					}
				})
			if err != nil || n != int64(len(f.data)) {
				t.Fatalf("Send: %d, %v", n, err)
			}
			if b := <-got; !bytes.Equal(b, f.data) {
				t.Fatalf("peer received %d bytes, want %d", len(b), len(f.data))
			}
			if len(progress) == 0 || progress[len(progress)-1] != int64(len(f.data)) {
				t.Fatalf("progress markers %v", progress)
			}
		})
		t.Run(fmt.Sprintf("STOR-PORT-%v", level), func(t *testing.T) {
			d := newSecDTP(t, f.cfg(level, f.server))
			ln, ap := listen(t)
			if err := d.Active(ctx, []netip.AddrPort{ap}); err != nil {
				t.Fatal(err)
			}
			go func() {
				c, err := acceptSecure(ctx, ln, f.cfg(level, f.alice))
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				if _, err := c.Write(f.data); err != nil {
					t.Error(err)
				}
				dcsec.CloseWrite(c, dcsec.GSI)
			}()
			name := f.newName()
			w := f.create(t, name)
			n, err := d.Receive(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1, Size: -1}, w, func(xfer.Event) {})
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil || n != int64(len(f.data)) {
				t.Fatalf("Receive: %d, %v", n, err)
			}
			f.check(t, name)
		})
	}
}

// memWriter is a dsi.Writer in memory.
type memWriter struct {
	mu sync.Mutex
	b  []byte
}

func (w *memWriter) WriteAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if need := int(off) + len(p); need > len(w.b) {
		w.b = append(w.b, make([]byte, need-len(w.b))...)
	}
	return copy(w.b[off:], p), nil
}

func (w *memWriter) Close() error { return nil }

// secStreams is the number of MODE E data connections of TestSecureEBlock.
const secStreams = 4

func TestSecureEBlock(t *testing.T) {
	f := getSecFixture(t)
	for _, level := range levels {
		wantType := fmt.Sprintf("%T", &net.TCPConn{})
		if level != dcsec.Clear {
			wantType = fmt.Sprintf("%T", &tls.Conn{})
		}
		t.Run(fmt.Sprintf("RETR-PORT-%v", level), func(t *testing.T) {
			secureEBlockSend(t, f, level, wantType)
		})
		t.Run(fmt.Sprintf("STOR-PASV-%v", level), func(t *testing.T) {
			secureEBlockReceive(t, f, level, wantType)
		})
	}
}

// secureEBlockSend has an active DTP send twice in MODE E to a peer that
// accepts secStreams connections: the second transfer reuses the cached
// connections, and SetSecurity then drops them.
func secureEBlockSend(t *testing.T, f *secFixture, level dcsec.Level, wantType string) {
	ctx := context.Background()
	d := newSecDTP(t, f.cfg(level, f.server))
	ln, ap := listen(t)
	if err := d.Active(ctx, []netip.AddrPort{ap}); err != nil {
		t.Fatal(err)
	}
	conns := acceptSecureEach(t, ctx, ln, f, level)
	var rcv0 []net.Conn // the peer's connections of the last round
	for round, wantReused := range []bool{false, true} {
		rcv0 = secureSendRound(t, ctx, d, f, round, wantReused, conns, rcv0)
		checkSecureCache(t, d, wantType)
	}
	// SetSecurity drops the cache: the peer sees its connections end.
	d.SetSecurity(f.cfg(dcsec.Safe, f.server))
	d.mu.Lock()
	if len(d.cache) != 0 {
		t.Errorf("%d connections still cached after SetSecurity", len(d.cache))
	}
	d.mu.Unlock()
	for _, c := range rcv0 {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || os.IsTimeout(err) {
			t.Errorf("cached connection after SetSecurity: %d, %v", n, err)
		}
		c.Close()
	}
}

// acceptSecureEach has the peer accept secStreams connections on ln,
// each with its own handshake (as Alice, at level), and delivers them as
// they are secured.
func acceptSecureEach(t *testing.T, ctx context.Context, ln *net.TCPListener, f *secFixture, level dcsec.Level) <-chan net.Conn {
	conns := make(chan net.Conn, secStreams)
	go func() {
		for range secStreams {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				sc, err := dcsec.Secure(ctx, c, false, f.cfg(level, f.alice))
				if err != nil {
					t.Error(err)
					return
				}
				conns <- sc
			}()
		}
	}()
	return conns
}

// secureSendRound has d send the fixture's data to an eblock receiver on
// the peer's connections: those from conns in round 0, prev (the last
// round's) after. It checks that the data arrived and whether d reused
// its connections, and returns the peer's reusable connections.
func secureSendRound(t *testing.T, ctx context.Context, d *Local, f *secFixture, round int, wantReused bool, conns <-chan net.Conn, prev []net.Conn) []net.Conn {
	t.Helper()
	dst := &memWriter{}
	rcv := eblock.NewReceiver(dst, eblock.ReceiveConfig{Limit: -1})
	done := make(chan error, 1)
	go func() {
		if round == 0 {
			for range secStreams {
				rcv.Add(<-conns)
			}
		}
		// Later rounds: the cached connections carry the transfer.
		for _, c := range prev {
			if !rcv.Add(c) {
				t.Error("reused connection refused")
			}
		}
		_, err := rcv.Wait(ctx)
		done <- err
	}()
	var reused bool
	n, err := d.Send(ctx, &xfer.Request{Mode: xfer.ModeEBlock, Parallelism: secStreams, BlockSize: 256 << 10, Length: -1},
		f.open(t), func(e xfer.Event) {
			if e.Kind == xfer.EventStarted {
				reused = e.Reused
			}
		})
	if err != nil || n != int64(len(f.data)) {
		t.Fatalf("round %d Send: %d, %v", round, n, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("round %d peer: %v", round, err)
	}
	if !bytes.Equal(dst.b, f.data) {
		t.Fatalf("round %d: peer stored %d bytes, want %d", round, len(dst.b), len(f.data))
	}
	if reused != wantReused {
		t.Fatalf("round %d: reused %v", round, reused)
	}
	reusable := rcv.Reusable()
	if len(reusable) != secStreams {
		t.Fatalf("%d reusable connections", len(reusable))
	}
	return reusable
}

// secureEBlockReceive has a passive DTP receive in MODE E from a peer
// with secStreams secured connections, past a stray connection that
// never handshakes.
func secureEBlockReceive(t *testing.T, f *secFixture, level dcsec.Level, wantType string) {
	ctx := context.Background()
	d := newSecDTP(t, f.cfg(level, f.server))
	ap, err := d.Passive(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	// A stray that never handshakes must not hold up the others.
	stray, err := net.Dial("tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	sent := make(chan error, 1)
	go func() {
		conns := make([]net.Conn, secStreams)
		errs := make([]error, secStreams)
		var wg sync.WaitGroup
		for i := range secStreams {
			wg.Go(func() { conns[i], errs[i] = dialSecure(ctx, ap, f.cfg(level, f.alice)) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				sent <- err
				return
			}
		}
		_, err := eblock.Send(ctx, conns, f.open(t), []xfer.Range{{Start: 0, End: int64(len(f.data))}}, eblock.SendConfig{BlockSize: 256 << 10})
		sent <- err
	}()
	name := f.newName()
	w := f.create(t, name)
	n, err := d.Receive(ctx, &xfer.Request{Mode: xfer.ModeEBlock, Type: xfer.TypeImage, Length: -1, Size: -1}, w, func(xfer.Event) {})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil || n != int64(len(f.data)) {
		t.Fatalf("Receive: %d, %v", n, err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("peer: %v", err)
	}
	f.check(t, name)
	checkSecureCache(t, d, wantType)
}

// checkSecureCache checks that d caches one stripe of secStreams
// connections of type wantType.
func checkSecureCache(t *testing.T, d *Local, wantType string) {
	t.Helper()
	d.mu.Lock()
	if len(d.cache) != 1 || len(d.cache[0]) != secStreams || fmt.Sprintf("%T", d.cache[0][0]) != wantType {
		t.Errorf("cache %v, want 1 stripe of %d %s", d.cache, secStreams, wantType)
	}
	d.mu.Unlock()
}

// TestSecureHandshakeFailure: a peer with the wrong identity gets no data
// connection; the connection is dropped (it may be a stranger's) and the
// transfer fails at the connect timeout when none succeeds, saying why the
// last one was refused.
func TestSecureHandshakeFailure(t *testing.T) {
	f := getSecFixture(t)
	ctx := context.Background()
	bob := f.pki.Proxy(t, f.pki.User(t, "Bob Example"), false)
	for _, mode := range []xfer.Mode{xfer.ModeStream, xfer.ModeEBlock} {
		t.Run(string(rune(mode)), func(t *testing.T) {
			d := New(Config{
				ListenIP:       netip.MustParseAddr("127.0.0.1"),
				ControlPeer:    netip.MustParseAddrPort("127.0.0.1:21"),
				ConnectTimeout: time.Second,
			})
			defer d.Close()
			d.SetSecurity(f.cfg(dcsec.Private, f.server))
			ap, err := d.Passive(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				if c, err := dialSecure(ctx, ap, f.cfg(dcsec.Private, bob)); err == nil {
					c.Read(make([]byte, 1))
					c.Close()
				}
			}()
			start := time.Now()
			_, err = d.Receive(ctx, &xfer.Request{Mode: mode, Type: xfer.TypeImage, Length: -1, Size: -1}, &memWriter{}, func(xfer.Event) {})
			var de *xfer.DataError
			if !errors.As(err, &de) || !de.Open {
				t.Fatalf("Receive: %v", err)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			t.Log(err)
		})
	}
}

// TestSecureStall: the stall watchdog reads a TLS connection's socket
// counters: a slow peer keeps the transfer alive, a stopped one ends it.
func TestSecureStall(t *testing.T) {
	f := getSecFixture(t)
	ctx := context.Background()
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopped=%v", stop), func(t *testing.T) {
			d := New(Config{
				ListenIP:       netip.MustParseAddr("127.0.0.1"),
				ControlPeer:    netip.MustParseAddrPort("127.0.0.1:21"),
				ConnectTimeout: 10 * time.Second,
				StallTimeout:   400 * time.Millisecond,
			})
			defer d.Close()
			d.SetSecurity(f.cfg(dcsec.Private, f.server))
			d.SetBuffer(64 << 10)
			ap, err := d.Passive(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			peerDone := make(chan struct{})
			go func() {
				defer close(peerDone)
				c, err := dialSecure(ctx, ap, f.cfg(dcsec.Private, f.alice))
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				if stop {
					time.Sleep(3 * time.Second)
					return
				}
				buf := make([]byte, 256<<10)
				for {
					time.Sleep(100 * time.Millisecond)
					if _, err := io.ReadFull(c, buf); err != nil {
						if _, err := io.ReadAll(c); err != nil {
							t.Error(err)
						}
						return
					}
				}
			}()
			_, err = d.Send(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1}, f.open(t), func(xfer.Event) {})
			if stop {
				var de *xfer.DataError
				if !errors.As(err, &de) {
					t.Fatalf("Send to a stopped peer: %v", err)
				}
			} else if err != nil {
				t.Fatalf("Send to a slow peer: %v", err)
			}
			<-peerDone
		})
	}
}
