package stripe_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/stripe"
	"github.com/ferrygrid/ferry/internal/testutil/leak"
	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
	"github.com/ferrygrid/ferry/server"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := leak.Check("github.com/ferrygrid/ferry/internal/stripe"); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

var secret = []byte("test-secret-0123456789abcdef")

// Short heartbeats make dead and hung movers show quickly.
const (
	heartbeat = 50 * time.Millisecond
	hbTimeout = time.Second
)

// moverProc is an in-process mover on its own loopback address.
type moverProc struct {
	addr string
	m    *stripe.Mover
	done chan error
}

func startMover(t *testing.T, addr string, st dsi.Storage, sec []byte, opts ...func(*stripe.Mover)) *moverProc {
	t.Helper()
	var l net.Listener
	var err error
	for range 50 { // a just-closed listener's port may take a moment
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	mp := &moverProc{addr: l.Addr().String(), done: make(chan error, 1),
		m: &stripe.Mover{Storage: st, Secret: sec, Heartbeat: heartbeat, HeartbeatTimeout: hbTimeout}}
	for _, o := range opts {
		o(mp.m)
	}
	go func() { mp.done <- mp.m.Serve(l) }()
	t.Cleanup(mp.kill)
	return mp
}

// kill stops the mover at once, as a crash would (its links drop).
func (mp *moverProc) kill() {
	mp.m.Close()
	<-mp.done
	mp.done <- stripe.ErrMoverClosed // later kills return at once
}

type cluster struct {
	root   string
	srv    *server.Server
	addr   string
	movers []*moverProc
}

// newRoot is a served tree and its posix storage.
func newRoot(t *testing.T) (string, dsi.Storage) {
	root := t.TempDir()
	st, err := posix.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, st
}

// startCluster runs a striped server over a new root with n movers on
// 127.0.0.2, 127.0.0.3, ...
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	root, st := newRoot(t)
	var movers []*moverProc
	var addrs []string
	for i := range n {
		mp := startMover(t, net.JoinHostPort("127.0.0."+string(rune('2'+i)), "0"), st, secret)
		movers = append(movers, mp)
		addrs = append(addrs, mp.addr)
	}
	c := startFrontend(t, root, st, addrs)
	c.movers = movers
	return c
}

// startFrontend runs a striped server over root using the movers at addrs;
// opts change its configuration.
func startFrontend(t *testing.T, root string, st dsi.Storage, addrs []string, opts ...func(*server.Config)) *cluster {
	t.Helper()
	return startFrontendAt(t, "127.0.0.1:0", root, st, addrs, opts...)
}

func startFrontendAt(t *testing.T, listen, root string, st dsi.Storage, addrs []string, opts ...func(*server.Config)) *cluster {
	t.Helper()
	c := &cluster{root: root}
	cfg := server.Config{
		Storage: st, Anonymous: true, AnonymousWrite: true, AllowForeignDataAddress: true,
		Movers: addrs, MoverSecret: secret, MoverHeartbeat: heartbeat, MoverTimeout: hbTimeout,
	}
	for _, o := range opts {
		o(&cfg)
	}
	var err error
	c.srv, err = server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	for range 50 {
		if l, err = net.Listen("tcp", listen); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.addr = l.Addr().String()
	served := make(chan struct{})
	go func() { c.srv.Serve(l); close(served) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-served
	})
	return c
}

// waitUp waits until n movers are up (bounded).
func (c *cluster) waitUp(t *testing.T, n int) {
	t.Helper()
	for range 200 {
		up := 0
		for _, l := range c.srv.MoverStatus() {
			if strings.Contains(l, " up since") {
				up++
			}
		}
		if up == n {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("movers not up: %q", c.srv.MoverStatus())
}

func (c *cluster) dial(ctx context.Context) (*client.Conn, error) {
	conn, err := client.Dial(ctx, c.addr, &client.Config{StripedServer: true, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	if err := conn.Login(ctx, "anonymous", "x"); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func randomFile(t *testing.T, name string, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	rand.Read(b)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStripedRoundTrip: MODE E downloads through three movers (each sends
// its stripes: blocked and partitioned), uploads through the first, and a
// listing; the bytes are identical.
func TestStripedRoundTrip(t *testing.T) {
	c := startCluster(t, 3)
	c.waitUp(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := randomFile(t, filepath.Join(c.root, "src.bin"), 5<<20+7)
	conn, err := c.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, opts := range []string{"StripeLayout=Blocked;BlockSize=65536;", "StripeLayout=Partitioned;"} {
		if r, err := conn.Do(ctx, "OPTS RETR %s", opts); err != nil || r.Code != 200 {
			t.Fatalf("OPTS RETR %s: %v %v", opts, r, err)
		}
		var stripes sync.Map
		var last client.Progress
		out := filepath.Join(t.TempDir(), "down.bin")
		f, _ := os.Create(out)
		_, err := conn.RetrieveAt(ctx, "/src.bin", f, &client.RetrieveOptions{Parallel: 2, Progress: func(p client.Progress) {
			for i, n := range p.Streams {
				if n > 0 {
					stripes.Store(i, true)
				}
			}
			last = p
		}})
		f.Close()
		if err != nil {
			t.Fatalf("download (%s): %v", opts, err)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
			t.Fatalf("download (%s): contents differ", opts)
		}
		// The movers close their connections (CLOSE): what the client
		// read of each before closing it stands in the last report.
		checkConns(t, "download "+opts, last, 6, int64(len(want)))
	}
	for _, striped := range []bool{false, true} {
		var last client.Progress
		if _, err := conn.StoreAt(ctx, "/up.bin", bytes.NewReader(want), int64(len(want)), &client.StoreOptions{
			Parallel: 2, Striped: striped, Progress: func(p client.Progress) { last = p },
		}); err != nil {
			t.Fatalf("upload (striped %v): %v", striped, err)
		}
		if got, _ := os.ReadFile(filepath.Join(c.root, "up.bin")); !bytes.Equal(got, want) {
			t.Fatalf("upload (striped %v): contents differ", striped)
		}
		conns := 2
		if striped {
			conns = 6
		}
		checkConns(t, fmt.Sprintf("upload (striped %v)", striped), last, conns, int64(len(want)))
	}
	r, err := conn.Do(ctx, "SITE STRIPES")
	if err != nil || r.Code != 200 || strings.Count(r.Text(), " up since") != 3 || strings.Contains(r.Text(), "127.0.0.1:") {
		t.Errorf("SITE STRIPES (anonymous: health without addresses): %v %v", r, err)
	}
	names, err := conn.NameList(ctx, "/")
	if err != nil || len(names) != 2 {
		t.Errorf("listing through the first mover: %q %v", names, err)
	}
}

// checkConns checks that the last Progress p of a transfer of size bytes
// reports the kernel's view of its n data connections (Linux only).
func checkConns(t *testing.T, what string, p client.Progress, n int, size int64) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	if len(p.Streams) != n || len(p.Conns) != n {
		t.Fatalf("%s: %d streams and %d conns, want %d", what, len(p.Streams), len(p.Conns), n)
	}
	var sum int64
	for i, cs := range p.Conns {
		if cs.Bytes != p.Streams[i] || cs.RTT <= 0 || cs.MSS <= 0 || cs.SndBuf <= 0 || cs.RcvBuf <= 0 {
			t.Errorf("%s: conn %d (stream %d bytes): %+v", what, i, p.Streams[i], cs)
		}
		sum += cs.Bytes
	}
	if sum != size {
		t.Errorf("%s: conns moved %d bytes, want %d", what, sum, size)
	}
}

// gated is a storage whose readers block at Limit until Open closes.
type gated struct {
	dsi.Storage
	limit   int64
	reached chan struct{} // closed when a read blocks
	open    chan struct{} // closing it lets reads go on
	once    sync.Once
}

func newGated(st dsi.Storage, limit int64) *gated {
	return &gated{Storage: st, limit: limit, reached: make(chan struct{}), open: make(chan struct{})}
}

func (g *gated) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *gated) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := g.Storage.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return gatedReader{Reader: r, g: g}, nil
}

// gatedReader embeds only dsi.Reader: no zero-copy path around the gate.
type gatedReader struct {
	dsi.Reader
	g *gated
}

func (r gatedReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.g.limit {
		r.g.once.Do(func() { close(r.g.reached) })
		<-r.g.open
	}
	return r.Reader.ReadAt(p, off)
}

// TestMoverKilledMidTransfer: a mover that dies during a download fails
// it with a reply naming the mover; when the mover is back, a resumed
// download (REST of what arrived) gives identical contents.
func TestMoverKilledMidTransfer(t *testing.T) {
	root, st := newRoot(t)
	g := newGated(st, 1<<20)
	defer g.release()
	m0 := startMover(t, "127.0.0.2:0", st, secret)
	m1 := startMover(t, "127.0.0.3:0", g, secret)
	c := startFrontend(t, root, st, []string{m0.addr, m1.addr})
	c.waitUp(t, 2)
	want := randomFile(t, filepath.Join(root, "src.bin"), 6<<20+11)
	go func() {
		select {
		case <-g.reached:
			m1.kill()
			g.release()
		case <-time.After(20 * time.Second):
		}
	}()
	resumeDownload(t, c, want, m1.addr, func() {
		startMover(t, m1.addr, st, secret)
	})
}

// resumeDownload downloads src.bin with retries: the first attempt must
// fail naming the mover at moverAddr; back() brings the mover back.
func resumeDownload(t *testing.T, c *cluster, want []byte, moverAddr string, back func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var firstErr error
	var once sync.Once
	s := &client.Session{Dial: c.dial, Retry: client.RetryPolicy{Retries: 20, Interval: 100 * time.Millisecond, MaxInterval: 500 * time.Millisecond,
		OnRetry: func(attempt int, err error, wait time.Duration) {
			once.Do(func() {
				firstErr = err
				back()
			})
		}}}
	defer s.Close(ctx)
	out := filepath.Join(t.TempDir(), "down.bin")
	f, _ := os.Create(out)
	defer f.Close()
	start := time.Now()
	if _, err := s.Download(ctx, "/src.bin", f, &client.RetrieveOptions{Parallel: 2}); err != nil {
		t.Fatalf("download with resume: %v (first error %v)", err, firstErr)
	}
	if firstErr == nil || !strings.Contains(firstErr.Error(), moverAddr) {
		t.Errorf("the failed attempt's error does not name mover %s: %v", moverAddr, firstErr)
	}
	t.Logf("first attempt: %v; done after %v", firstErr, time.Since(start).Round(time.Millisecond))
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("resumed download: contents differ")
	}
}

// TestFrontendRestartMidTransfer: the frontend dies during a download
// (its movers stop their parts when the links drop); a new frontend on
// the same address serves the resumed download to identical contents.
func TestFrontendRestartMidTransfer(t *testing.T) {
	root, st := newRoot(t)
	g := newGated(st, 1<<20)
	defer g.release()
	m0 := startMover(t, "127.0.0.2:0", st, secret)
	m1 := startMover(t, "127.0.0.3:0", g, secret)
	movers := []string{m0.addr, m1.addr}
	c := startFrontend(t, root, st, movers)
	c.waitUp(t, 2)
	want := randomFile(t, filepath.Join(root, "src.bin"), 6<<20+11)
	first := c.srv
	go func() {
		select {
		case <-g.reached:
			first.Close()
			g.release()
		case <-time.After(20 * time.Second):
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var firstErr error
	var once sync.Once
	s := &client.Session{Dial: func(ctx context.Context) (*client.Conn, error) { return c.dial(ctx) },
		Retry: client.RetryPolicy{Retries: 20, Interval: 100 * time.Millisecond, MaxInterval: 500 * time.Millisecond,
			OnRetry: func(attempt int, err error, wait time.Duration) {
				once.Do(func() {
					firstErr = err
					next := startFrontendAt(t, c.addr, root, st, movers)
					next.waitUp(t, 2)
				})
			}}}
	defer s.Close(ctx)
	out := filepath.Join(t.TempDir(), "down.bin")
	f, _ := os.Create(out)
	defer f.Close()
	if _, err := s.Download(ctx, "/src.bin", f, &client.RetrieveOptions{Parallel: 2}); err != nil {
		t.Fatalf("download with resume: %v (first error %v)", err, firstErr)
	}
	if firstErr == nil {
		t.Error("the download never failed")
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("resumed download: contents differ")
	}
}

// freezer is a TCP proxy in front of a mover that can stop forwarding
// without closing anything: the mover looks hung (as under SIGSTOP).
type freezer struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	frozen chan struct{} // closed while frozen... replaced on thaw
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newFreezer(t *testing.T, target func() string) *freezer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fz := &freezer{l: l}
	fz.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			m, err := net.Dial("tcp", target())
			if err != nil {
				c.Close()
				continue
			}
			fz.mu.Lock()
			fz.conns = append(fz.conns, c, m)
			fz.mu.Unlock()
			fz.wg.Go(func() { fz.pipe(m, c) })
			fz.wg.Go(func() { fz.pipe(c, m) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		fz.thaw()
		fz.mu.Lock()
		for _, c := range fz.conns {
			c.Close()
		}
		fz.mu.Unlock()
		fz.wg.Wait()
	})
	return fz
}

func (fz *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		fz.mu.Lock()
		fr := fz.frozen
		fz.mu.Unlock()
		if fr != nil {
			<-fr // hold the bytes while frozen
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (fz *freezer) freeze() {
	fz.mu.Lock()
	defer fz.mu.Unlock()
	if fz.frozen == nil {
		fz.frozen = make(chan struct{})
	}
}

func (fz *freezer) thaw() {
	fz.mu.Lock()
	defer fz.mu.Unlock()
	if fz.frozen != nil {
		close(fz.frozen)
		fz.frozen = nil
	}
}

// TestMoverHangsMidTransfer: a mover that stops answering (its link goes
// silent) fails the transfer within the heartbeat timeout with a reply
// naming it, never a hung session; once it answers again the download
// resumes to identical contents.
func TestMoverHangsMidTransfer(t *testing.T) {
	root, st := newRoot(t)
	g := newGated(st, 1<<20)
	defer g.release()
	m0 := startMover(t, "127.0.0.2:0", st, secret)
	m1 := startMover(t, "127.0.0.3:0", g, secret)
	fz := newFreezer(t, func() string { return m1.addr })
	proxied := fz.l.Addr().String()
	c := startFrontend(t, root, st, []string{m0.addr, proxied})
	c.waitUp(t, 2)
	want := randomFile(t, filepath.Join(root, "src.bin"), 6<<20+11)
	go func() {
		select {
		case <-g.reached:
			fz.freeze()
		case <-time.After(20 * time.Second):
		}
	}()
	resumeDownload(t, c, want, proxied, func() {
		fz.thaw()
		g.release()
	})
}

// TestWrongSecret: a mover with another secret is never used: the
// frontend reports it down with the reason, transfers stripe over the
// other mover, and with MinMovers 2 a transfer fails with a 4xx reply
// naming it; the mover logs its refusal.
func TestWrongSecret(t *testing.T) {
	root, st := newRoot(t)
	var log syncbuf.Buffer
	good := startMover(t, "127.0.0.2:0", st, secret)
	bad := startMover(t, "127.0.0.3:0", st, []byte("another-secret-0123456789"), func(m *stripe.Mover) {
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	c := startFrontend(t, root, st, []string{good.addr, bad.addr}, func(cfg *server.Config) { cfg.MinMovers = 2 })
	lenient := startFrontend(t, root, st, []string{good.addr, bad.addr})
	lenient.waitUp(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var status []string
	for range 200 {
		status = c.srv.MoverStatus()
		if strings.Contains(status[1], "shared secret") {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !strings.Contains(status[1], "down") || !strings.Contains(status[1], "does not know the shared secret") {
		t.Errorf("status of the mover with the wrong secret: %q", status)
	}
	conn, err := c.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := conn.Do(ctx, "SPAS")
	if err != nil || r.Code/100 != 4 || !strings.Contains(r.Text(), bad.addr) || !strings.Contains(r.Text(), "shared secret") {
		t.Errorf("SPAS with MinMovers 2 and a mover that failed authentication: %v %v", r, err)
	}
	want := randomFile(t, filepath.Join(root, "f"), 3<<20+5)
	lconn, err := lenient.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lconn.Close()
	if r, err := lconn.Do(ctx, "SPAS"); err != nil || r.Code != 229 || len(r.Lines) != 3 || !strings.Contains(r.Text(), "127,0,0,2,") {
		t.Errorf("SPAS with one good mover: %v %v, want the good mover's address alone", r, err)
	}
	out := filepath.Join(t.TempDir(), "f")
	f, _ := os.Create(out)
	_, err = lconn.RetrieveAt(ctx, "/f", f, &client.RetrieveOptions{Parallel: 2})
	f.Close()
	if got, _ := os.ReadFile(out); err != nil || !bytes.Equal(got, want) {
		t.Errorf("download over the good mover alone: %v (contents equal: %v)", err, bytes.Equal(got, want))
	}
	if !strings.Contains(log.String(), "refused a frontend") {
		t.Errorf("the mover did not log the refusal:\n%s", log.String())
	}
}

// stuck is a storage whose readers block until released, ignoring their
// context, as a hung file system does.
type stuck struct {
	dsi.Storage
	opened, released chan struct{}
	once, relOnce    sync.Once
}

func newStuck(st dsi.Storage) *stuck {
	return &stuck{Storage: st, opened: make(chan struct{}), released: make(chan struct{})}
}

func (s *stuck) release() { s.relOnce.Do(func() { close(s.released) }) }

func (s *stuck) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := s.Storage.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return stuckReader{r, s}, nil
}

type stuckReader struct {
	dsi.Reader
	s *stuck
}

func (r stuckReader) ReadAt(p []byte, off int64) (int, error) {
	// opened says a reader is blocked here, not merely open: an ABOR
	// that came between the open and the first read would find the
	// mover not stuck at all.
	r.s.once.Do(func() { close(r.s.opened) })
	<-r.s.released
	return r.Reader.ReadAt(p, off)
}

// TestStuckMoverFailsRequests: a mover whose storage hangs (while its
// link still heartbeats) cannot hang the control session: after the
// client aborts a transfer on it, SPAS gets a prompt 425 naming the mover.
func TestStuckMoverFailsRequests(t *testing.T) {
	root, st := newRoot(t)
	randomFile(t, filepath.Join(root, "f"), 1<<20)
	hung := newStuck(st)
	defer hung.release()
	m0 := startMover(t, "127.0.0.2:0", hung, secret)
	c := startFrontend(t, root, st, []string{m0.addr})
	c.waitUp(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := c.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ports []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				d, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { defer d.Close(); io.Copy(io.Discard, d) }()
			}
		}()
		p := ln.Addr().(*net.TCPAddr).Port
		ports = append(ports, fmt.Sprintf("127,0,0,1,%d,%d", p>>8, p&255))
	}
	for _, cmd := range []string{"TYPE I", "MODE E", "SPOR " + strings.Join(ports, " ")} {
		if r, err := conn.Do(ctx, "%s", cmd); err != nil || r.Code/100 != 2 {
			t.Fatalf("%s: %v %v", cmd, r, err)
		}
	}
	r, err := conn.Do(ctx, "RETR /f")
	if err != nil || r.Code/100 != 1 {
		t.Fatalf("RETR: %v %v", r, err)
	}
	select {
	case <-hung.opened:
	case <-time.After(5 * time.Second):
		t.Fatal("the mover never started reading the file")
	}
	r, err = conn.Do(ctx, "ABOR")
	for err == nil && r.Code/100 != 2 {
		r, err = conn.ReadReply(ctx)
	}
	if err != nil {
		t.Fatalf("ABOR of the transfer on a stuck mover: %v", err)
	}
	start := time.Now()
	sctx, scancel := context.WithTimeout(ctx, 3*hbTimeout)
	defer scancel()
	r, err = conn.Do(sctx, "SPAS")
	if err != nil {
		t.Fatalf("SPAS after aborting a stuck mover: no reply after %v: %v", time.Since(start), err)
	}
	if r.Code != 425 || !strings.Contains(r.Text(), m0.addr) {
		t.Errorf("SPAS with the mover stuck: %v, want 425 naming %s", r, m0.addr)
	}
	hung.release()
	if r, err := conn.Do(ctx, "NOOP"); err != nil || r.Code != 200 {
		t.Errorf("session after the stuck mover: %v %v", r, err)
	}
}

// TestMoversJoinAndLeave: a mover that dies leaves the stripes of later
// transfers (they go on over the others, no error); SetMovers adds a new
// mover, which then carries stripes, and drops another; a mover dropped
// during a transfer finishes its part first.
func TestMoversJoinAndLeave(t *testing.T) {
	root, st := newRoot(t)
	c0, c1 := &counted{Storage: st}, &counted{Storage: st}
	m0 := startMover(t, "127.0.0.2:0", c0, secret)
	m1 := startMover(t, "127.0.0.3:0", c1, secret)
	c := startFrontend(t, root, st, []string{m0.addr, m1.addr})
	c.waitUp(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	small := randomFile(t, filepath.Join(root, "small"), 768<<10+3)
	big := randomFile(t, filepath.Join(root, "big"), 6<<20+1)
	conn, err := c.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if r, err := conn.Do(ctx, "OPTS RETR StripeLayout=Blocked;BlockSize=65536;"); err != nil || r.Code != 200 {
		t.Fatalf("OPTS RETR: %v %v", r, err)
	}
	// spas checks that SPAS offers exactly the movers on hosts.
	spas := func(hosts ...string) {
		t.Helper()
		r, err := conn.Do(ctx, "SPAS")
		if err != nil || r.Code != 229 || len(r.Lines) != len(hosts)+2 {
			t.Fatalf("SPAS: %v %v, want the movers on %q", r, err, hosts)
		}
		for k, h := range hosts {
			if !strings.HasPrefix(strings.TrimSpace(r.Lines[k+1]), strings.ReplaceAll(h, ".", ",")+",") {
				t.Errorf("SPAS stripe %d: %q, want the mover on %s", k, r.Lines[k+1], h)
			}
		}
	}
	// download fetches name and checks which movers read bytes for it.
	download := func(name string, want []byte, by ...*counted) {
		t.Helper()
		before := make([]int64, len(by))
		for k, c := range by {
			before[k] = c.n.Load()
		}
		out := filepath.Join(t.TempDir(), name)
		f, _ := os.Create(out)
		_, err := conn.RetrieveAt(ctx, "/"+name, f, &client.RetrieveOptions{Parallel: 2})
		f.Close()
		if err != nil {
			t.Fatalf("download %s: %v", name, err)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
			t.Fatalf("download %s: contents differ", name)
		}
		var sum int64
		for k, c := range by {
			d := c.n.Load() - before[k]
			if d == 0 {
				t.Errorf("download %s: mover %d of %d read nothing", name, k+1, len(by))
			}
			sum += d
		}
		if sum != int64(len(want)) {
			t.Errorf("download %s: the movers read %d bytes, want %d", name, sum, len(want))
		}
	}
	spas("127.0.0.2", "127.0.0.3")

	m1.kill()
	c.waitUp(t, 1)
	spas("127.0.0.2")
	download("small", small, c0)

	g := newGated(st, 1<<20)
	defer g.release()
	c2 := &counted{Storage: g}
	m2 := startMover(t, "127.0.0.4:0", c2, secret)
	if _, _, err := c.srv.SetMovers([]string{m0.addr, m0.addr}); err == nil {
		t.Error("SetMovers took a mover twice")
	}
	if _, _, err := c.srv.SetMovers(nil); err == nil {
		t.Error("SetMovers took no movers")
	}
	joined, left, err := c.srv.SetMovers([]string{m0.addr, m2.addr})
	if err != nil || !slices.Equal(joined, []string{m2.addr}) || !slices.Equal(left, []string{m1.addr}) {
		t.Fatalf("SetMovers: joined %q, left %q, %v", joined, left, err)
	}
	c.waitUp(t, 2)
	if st := c.srv.MoverStatus(); len(st) != 2 || !strings.Contains(st[1], m2.addr) {
		t.Errorf("status after the change: %q", st)
	}
	spas("127.0.0.2", "127.0.0.4")
	download("small", small, c0, c2)

	// m2 leaves while it serves a transfer (blocked in its storage).
	go func() {
		select {
		case <-g.reached:
			if _, left, err := c.srv.SetMovers([]string{m0.addr}); err != nil || !slices.Equal(left, []string{m2.addr}) {
				t.Errorf("SetMovers during a transfer: left %q, %v", left, err)
			}
			g.release()
		case <-time.After(20 * time.Second):
			t.Error("the transfer never reached the gate")
			g.release()
		}
	}()
	download("big", big, c0, c2)
	spas("127.0.0.2")
	if st := c.srv.MoverStatus(); len(st) != 1 {
		t.Errorf("status after m2 left: %q", st)
	}
}

// counted is a storage that counts the bytes its readers read. Its
// readers embed only dsi.Reader: no zero-copy path around the count.
type counted struct {
	dsi.Storage
	n atomic.Int64
}

func (c *counted) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := c.Storage.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return countedReader{Reader: r, c: c}, nil
}

type countedReader struct {
	dsi.Reader
	c *counted
}

func (r countedReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.Reader.ReadAt(p, off)
	r.c.n.Add(int64(n))
	return n, err
}
