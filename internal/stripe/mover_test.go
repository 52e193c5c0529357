package stripe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// blocking is a storage whose readers block until released (ignoring
// their context, as a hung file system does); opened closes when the
// first reader has been opened.
type blocking struct {
	dsi.Storage
	opened   chan struct{}
	released chan struct{}
	once     sync.Once
	relOnce  sync.Once
}

func newBlocking(st dsi.Storage) *blocking {
	return &blocking{Storage: st, opened: make(chan struct{}), released: make(chan struct{})}
}

func (b *blocking) release() { b.relOnce.Do(func() { close(b.released) }) }

func (b *blocking) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := b.Storage.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	b.once.Do(func() { close(b.opened) })
	return blockingReader{r, b}, nil
}

type blockingReader struct {
	dsi.Reader
	b *blocking
}

func (r blockingReader) ReadAt(p []byte, off int64) (int, error) {
	<-r.b.released
	return r.Reader.ReadAt(p, off)
}

// fileStorage is a memory storage holding name with data.
func fileStorage(t *testing.T, name string, data []byte) dsi.Storage {
	t.Helper()
	st := memory.New()
	w, err := st.Create(t.Context(), name, dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}

var testSecret = []byte("0123456789abcdef-shared")

// serveMover runs m on a loopback listener until the test ends.
func serveMover(t *testing.T, m *Mover) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { m.Serve(ln); close(done) }()
	t.Cleanup(func() {
		m.Close()
		<-done
	})
	return ln.Addr().String()
}

// dialMover opens an authenticated link to the mover at addr.
func dialMover(t *testing.T, addr string) *link {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := frontendHandshake(t.Context(), c, testSecret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l := newLink(c, "mover "+addr, heartbeat{50 * time.Millisecond, 2 * time.Second}, keys)
	t.Cleanup(l.close)
	return l
}

// receiver accepts one data connection and returns all it sent.
func receiver(t *testing.T) (netip.AddrPort, <-chan []byte) {
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

// until returns the next message of type typ with sequence seq.
func until(t *testing.T, l *link, typ Type, seq uint64) *Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for {
		m, err := l.recv(ctx)
		if err != nil {
			t.Fatalf("waiting for %v %d: %v", typ, seq, err)
		}
		if m.Type == typ && m.Seq == seq {
			return m
		}
	}
}

// TestMoverRefusesSessionDuringTransfer: a new session description while
// a transfer runs is refused; the transfer keeps its DTP and ends well.
func TestMoverRefusesSessionDuringTransfer(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	st := newBlocking(fileStorage(t, "/f", data))
	defer st.release()
	addr := serveMover(t, &Mover{Storage: st, Secret: testSecret, Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 2 * time.Second})
	l := dialMover(t, addr)
	session := &Msg{Type: TypeSession, ControlPeer: netip.MustParseAddrPort("127.0.0.1:1"), AllowForeign: true}
	if err := l.send(session); err != nil {
		t.Fatal(err)
	}
	to, got := receiver(t)
	req := &xfer.Request{Path: "/f", Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1, Size: int64(len(data))}
	if err := l.send(&Msg{Type: TypeSend, Seq: 1, Addrs: []netip.AddrPort{to}, Job: jobOf(req, "/f")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.opened:
	case <-time.After(5 * time.Second):
		t.Fatal("the transfer never opened the file")
	}
	session.Seq = 2
	if err := l.send(session); err != nil {
		t.Fatal(err)
	}
	// The refusal comes while the transfer still waits for its storage.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	refused := false
	for !refused {
		m, err := l.recv(ctx)
		if err != nil {
			t.Errorf("no refusal of a session during a transfer: %v", err)
			break
		}
		refused = m.Type == TypeError && m.Seq == 2 && m.Text != ""
	}
	st.release()
	if done := until(t, l, TypeDone, 1); done.Text != "" || done.N != int64(len(data)) {
		t.Fatalf("transfer: %+v", done)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("received %d bytes, want %d", len(b), len(data))
	}
}

// closedWithin reports whether the peer closes c within d (reading and
// discarding what it sends, e.g. a refusal).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestMoverDropsHugeHandshakeFrame: a stranger announcing a frame
// larger than any handshake message is dropped at once; nothing waits for
// (or is allocated for) its body.
func TestMoverDropsHugeHandshakeFrame(t *testing.T) {
	addr := serveMover(t, &Mover{Storage: memory.New(), Secret: testSecret, HandshakeTimeout: 30 * time.Second})
	for _, n := range []uint32{maxHandshakeFrame + 1, 64 << 20, 1<<32 - 1} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		h := binary.BigEndian.AppendUint32(nil, n)
		if _, err := c.Write(append(h, byte(TypeHello))); err != nil {
			t.Fatal(err)
		}
		if !closedWithin(c, 2*time.Second) {
			t.Errorf("a %d-byte hello: the connection is still open", n)
		}
		c.Close()
	}
	// The handshake reader itself refuses before allocating for the body.
	big := binary.BigEndian.AppendUint32(nil, 16<<20)
	big = append(big, byte(TypeHello))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := readHandshake(bytes.NewReader(big)); err == nil {
			t.Fatal("an oversized handshake frame was read")
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing 10 oversized frames allocated %d bytes", n)
	}
}

// TestMoverBoundsHandshakes: connections that never finish their
// handshake hold at most MaxHandshakes slots; one more takes the place of
// the oldest, which is closed at once; the silent ones are closed when
// their hello is late; a frontend gets in all along.
func TestMoverBoundsHandshakes(t *testing.T) {
	const timeout = 2 * time.Second
	addr := serveMover(t, &Mover{Storage: memory.New(), Secret: testSecret, MaxHandshakes: 2, HandshakeTimeout: timeout})
	var silent []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	start := time.Now()
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if !closedWithin(silent[0], timeout/2) {
		t.Fatal("the oldest connection kept its slot when all were taken")
	}
	silent = append(silent[1:], extra)
	dialMover(t, addr) // takes the oldest stranger's slot in turn
	for i, c := range silent {
		if !closedWithin(c, timeout+3*time.Second-time.Since(start)) {
			t.Fatalf("silent connection %d outlived the handshake timeout", i)
		}
	}
	dialMover(t, addr) // the slots are free again
}

// dialFrom connects to addr from the loopback address from.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMoverEvictsFromBusiestSource: when strangers hold every handshake
// slot, a frontend from their address still gets in; the slot it takes
// is the oldest of the source holding the most, never that of a stranger
// on another address holding fewer (however old).
func TestMoverEvictsFromBusiestSource(t *testing.T) {
	addr := serveMover(t, &Mover{Storage: memory.New(), Secret: testSecret, MaxHandshakes: 4,
		HandshakeTimeout: 30 * time.Second, HelloTimeout: 30 * time.Second})
	other := dialFrom(t, "127.0.0.7", addr) // the oldest of all
	time.Sleep(20 * time.Millisecond)       // accepted in this order
	var busy []net.Conn
	for range 3 {
		busy = append(busy, dialFrom(t, "127.0.0.1", addr))
		time.Sleep(20 * time.Millisecond)
	}
	for round := range 3 {
		start := time.Now()
		dialMover(t, addr) // from 127.0.0.1: all slots are taken
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("a frontend got in after %v", d)
		}
		if !closedWithin(busy[0], 2*time.Second) {
			t.Fatalf("round %d: the oldest stranger of the busiest source kept its slot", round)
		}
		for i, c := range busy[1:] {
			if closedWithin(c, 50*time.Millisecond) {
				t.Fatalf("round %d: stranger %d lost its slot, not the oldest", round, i+1)
			}
		}
		if closedWithin(other, 50*time.Millisecond) {
			t.Fatalf("round %d: the stranger on another address lost its slot, though its source held fewer", round)
		}
		// The frontend proved the secret and freed its slot: fill it again.
		busy = append(busy[1:], dialFrom(t, "127.0.0.1", addr))
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMoverHelloTimeout: a stranger that sends no hello is let go after
// HelloTimeout, long before the handshake timeout; one that sends its
// hello in time gets the mover's.
func TestMoverHelloTimeout(t *testing.T) {
	addr := serveMover(t, &Mover{Storage: memory.New(), Secret: testSecret,
		HandshakeTimeout: 30 * time.Second, HelloTimeout: 300 * time.Millisecond})
	silent := dialFrom(t, "127.0.0.1", addr)
	start := time.Now()
	if !closedWithin(silent, 5*time.Second) {
		t.Fatal("a silent stranger outlived the hello timeout")
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 3*time.Second {
		t.Errorf("a silent stranger closed after %v, hello timeout 300ms", d)
	}
	c := dialFrom(t, "127.0.0.1", addr)
	if err := writeHandshake(c, &Msg{Type: TypeHello, Version: Version, Role: roleFrontend, Nonce: newNonce()}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if m, err := readHandshake(c); err != nil || m.Type != TypeHello {
		t.Fatalf("after a hello in time: %v %v", m, err)
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
	}
	return c, err
}

func (l *countingListener) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// TestSessionsReuseLinks: control sessions one after another use the
// links of those before them (and a spare the pool keeps), not a new
// handshake each; a session ended during a request does not pass its
// link on.
func TestSessionsReuseLinks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	m := &Mover{Storage: memory.New(), Secret: testSecret, Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 2 * time.Second}
	done := make(chan struct{})
	go func() { m.Serve(cl); close(done) }()
	t.Cleanup(func() { m.Close(); <-done })
	p, err := NewPool(PoolConfig{Movers: []string{ln.Addr().String()}, Secret: testSecret,
		Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitPoolUp(t, p, 1)
	waitFor(t, "a spare link", func() bool { return cl.accepted() == 2 })
	goroutines := 0
	for i := range 50 {
		f := p.NewFrontend(SessionConfig{ControlPeer: netip.MustParseAddrPort("127.0.0.1:1")})
		if _, err := f.Passive(t.Context(), true); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		f.Close()
		if i == 4 { // the pool has its links now
			time.Sleep(100 * time.Millisecond)
			goroutines = runtime.NumGoroutine()
		}
	}
	// The monitor, the spare, and the spare's replacement.
	if n := cl.accepted(); n > 3 {
		t.Errorf("50 sessions one after another made %d connections to the mover", n)
	}
	// Nothing piles up per session on a link that is passed on.
	waitFor(t, "goroutines back to where they were", func() bool { return runtime.NumGoroutine() <= goroutines+2 })
}

// TestCallDeadline: a mover that heartbeats but never answers a request
// fails it within the request timeout, with an error naming the mover.
func TestCallDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hb := heartbeat{50 * time.Millisecond, 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		var wg sync.WaitGroup
		defer wg.Wait()
		for { // the pool's monitor link, then the session's
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				keys, err := moverHandshake(context.Background(), c, testSecret, 5*time.Second)
				if err != nil {
					c.Close()
					return
				}
				l := newLink(c, "frontend", hb, keys)
				defer l.close()
				for { // reads every request, answers none
					if _, err := l.recv(context.Background()); err != nil {
						return
					}
				}
			})
		}
	}()
	p, err := NewPool(PoolConfig{Movers: []string{ln.Addr().String()}, Secret: testSecret,
		Heartbeat: hb.interval, HeartbeatTimeout: hb.timeout, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitPoolUp(t, p, 1)
	f := p.NewFrontend(SessionConfig{})
	defer f.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
	defer cancel()
	start := time.Now()
	_, err = f.Passive(ctx, true)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("PASV to a mover that does not answer: %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("PASV failed after %v, request timeout 300ms", d)
	}
	f.Close()
	p.Close()
	ln.Close()
	<-served
}

// waitPoolUp waits (bounded) until n of p's movers are up.
func waitPoolUp(t *testing.T, p *Pool, n int) {
	t.Helper()
	for range 400 {
		if p.Up() == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("movers not up: %q", p.Status())
}
