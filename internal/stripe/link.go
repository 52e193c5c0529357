package stripe

// A link is one authenticated frontend–mover connection: framed messages,
// a reader goroutine that hands them over (and drops heartbeats), and a
// pinger. A peer silent for the heartbeat timeout, or any read or write
// error, kills the link; Err then says why, naming the peer.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// heartbeat is how often a link pings and how long it waits for its peer.
type heartbeat struct {
	interval, timeout time.Duration
}

func (h heartbeat) withDefaults() heartbeat {
	if h.interval <= 0 {
		h.interval = 2 * time.Second
	}
	if h.timeout <= 0 {
		h.timeout = 5 * h.interval
	}
	return h
}

type link struct {
	name string // "mover 10.0.0.2:7000" or "frontend 10.0.0.1:51234"
	conn net.Conn
	hb   heartbeat
	keys *linkKeys // keys.recv is the reader goroutine's

	wmu  sync.Mutex // serialises writes and guards keys.send
	wbuf []byte

	in   chan *Msg
	dead chan struct{} // closed when the link died; err is set before
	once sync.Once
	err  error
	wg   sync.WaitGroup
}

func newLink(conn net.Conn, name string, hb heartbeat, keys *linkKeys) *link {
	l := &link{name: name, conn: conn, hb: hb, keys: keys, in: make(chan *Msg, 64), dead: make(chan struct{})}
	l.wg.Go(l.read)
	l.wg.Go(l.ping)
	return l
}

// fail kills the link with err (the first cause wins).
func (l *link) fail(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.dead)
		l.conn.Close()
	})
}

// close kills the link and waits for its goroutines.
func (l *link) close() {
	l.fail(fmt.Errorf("%s: link closed", l.name))
	l.wg.Wait()
}

// Err is why the link died, or nil while it lives.
func (l *link) Err() error {
	select {
	case <-l.dead:
		return l.err
	default:
		return nil
	}
}

func (l *link) read() {
	for {
		l.conn.SetReadDeadline(time.Now().Add(l.hb.timeout))
		m, err := l.readSealed()
		if err != nil {
			switch {
			case errors.Is(err, ErrTampered), errors.Is(err, ErrReplay):
				err = fmt.Errorf("%s: %w; dropping the link", l.name, err)
			case errors.Is(err, os.ErrDeadlineExceeded):
				err = fmt.Errorf("%s: no heartbeat for %v (hung or unreachable)", l.name, l.hb.timeout)
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				err = fmt.Errorf("%s closed the connection", l.name)
			default:
				err = fmt.Errorf("%s: %w", l.name, err)
			}
			l.fail(err)
			return
		}
		if m.Type == TypePing {
			continue
		}
		select {
		case l.in <- m:
		case <-l.dead:
			return
		}
	}
}

func (l *link) ping() {
	t := time.NewTicker(l.hb.interval)
	defer t.Stop()
	for {
		select {
		case <-l.dead:
			return
		case <-t.C:
			if err := l.send(&Msg{Type: TypePing}); err != nil {
				return
			}
		}
	}
}

// send writes m; a write that takes longer than the heartbeat timeout
// kills the link.
func (l *link) send(m *Msg) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.Err(); err != nil {
		return err
	}
	b, err := l.keys.send.seal(l.wbuf[:0], m)
	if err != nil {
		return err
	}
	if cap(b) <= 64<<10 {
		l.wbuf = b
	}
	l.conn.SetWriteDeadline(time.Now().Add(l.hb.timeout))
	if _, err := l.conn.Write(b); err != nil {
		err = fmt.Errorf("%s: send: %w", l.name, err)
		l.fail(err)
		return err
	}
	return nil
}

// recv returns the next message, or why none will come.
func (l *link) recv(ctx context.Context) (*Msg, error) {
	select {
	case m := <-l.in:
		return m, nil
	case <-l.dead:
		// Messages that arrived before the link died still count.
		select {
		case m := <-l.in:
			return m, nil
		default:
		}
		return nil, l.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// readSealed reads and opens the next sealed frame.
func (l *link) readSealed() (*Msg, error) {
	var h [4]byte
	if _, err := io.ReadFull(l.conn, h[:]); err != nil {
		return nil, err
	}
	n, err := parseSealedHeader(h[:])
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 4+n)
	copy(frame, h[:])
	if _, err := io.ReadFull(l.conn, frame[4:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return l.keys.recv.open(frame)
}

// readHandshake reads one plain frame (handshake) from r; its body is at most
// maxHandshakeFrame bytes, checked before anything is allocated for it.
func readHandshake(r io.Reader) (*Msg, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n, t, err := parseHeader(h[:], maxHandshakeFrame)
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return ParseBody(t, body)
}

func writeHandshake(w io.Writer, m *Msg) error {
	b, err := AppendFrame(nil, m)
	if err != nil {
		return err
	}
	if len(b) > headerSize+maxHandshakeFrame {
		return fmt.Errorf("stripe: %v message of %d bytes is too long for a handshake", m.Type, len(b)-headerSize)
	}
	_, err = w.Write(b)
	return err
}

// ErrAuth reports a failed authentication, by either side.
var ErrAuth = errors.New("stripe: authentication failed")

func newNonce() []byte {
	b := make([]byte, nonceSize)
	rand.Read(b)
	return b
}

// bound limits a handshake on conn to timeout and to ctx: the returned
// function, deferred, lifts the deadline and, when ctx ended the
// handshake, makes *err say so.
func bound(ctx context.Context, conn net.Conn, timeout time.Duration, err *error) func() {
	conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	return func() {
		if !stop() { // ctx ended: whatever the outcome, the link is not wanted
			if *err == nil {
				*err = context.Cause(ctx)
			} else {
				*err = fmt.Errorf("%w (%w)", context.Cause(ctx), *err)
			}
		}
		conn.SetDeadline(time.Time{})
	}
}

// frontendHandshake authenticates a new connection to a mover: it proves
// the secret and checks the mover's proof, then derives the link's keys.
// The mover speaks second, after seeing our nonce, so its proof cannot be
// replayed.
func frontendHandshake(ctx context.Context, conn net.Conn, secret []byte, timeout time.Duration) (keys *linkKeys, err error) {
	defer bound(ctx, conn, timeout, &err)()
	own := newNonce()
	if err := writeHandshake(conn, &Msg{Type: TypeHello, Version: Version, Role: roleFrontend, Nonce: own}); err != nil {
		return nil, err
	}
	m, err := readHandshake(conn)
	if err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	switch {
	case m.Type == TypeError:
		return nil, fmt.Errorf("%w: the mover refused: %s", ErrAuth, m.Text)
	case m.Type != TypeHello:
		return nil, fmt.Errorf("%w: the peer sent %v instead of hello", ErrAuth, m.Type)
	case m.Version != Version:
		return nil, fmt.Errorf("stripe: protocol version mismatch: the mover speaks %d, this frontend %d; run the same Ferry version on both", m.Version, Version)
	case m.Role != roleMover:
		return nil, fmt.Errorf("%w: the peer is a %q, not a mover", ErrAuth, m.Role)
	case !checkProof(secret, roleMover, m.Nonce, own, m.Proof):
		return nil, fmt.Errorf("%w: the mover does not know the shared secret", ErrAuth)
	}
	moverNonce := m.Nonce
	if err := writeHandshake(conn, &Msg{Type: TypeAuth, Proof: proof(secret, roleFrontend, own, moverNonce)}); err != nil {
		return nil, err
	}
	m, err = readHandshake(conn)
	if err != nil {
		return nil, fmt.Errorf("%w: no welcome (%w)", ErrAuth, err)
	}
	switch m.Type {
	case TypeWelcome:
		return deriveKeys(secret, own, moverNonce, true)
	case TypeError:
		return nil, fmt.Errorf("%w: the mover refused: %s", ErrAuth, m.Text)
	}
	return nil, fmt.Errorf("%w: the mover sent %v instead of welcome", ErrAuth, m.Type)
}

// moverHandshake authenticates a connecting frontend and derives the
// link's keys; a refusal is explained to the peer before the connection
// closes.
func moverHandshake(ctx context.Context, conn net.Conn, secret []byte, timeout time.Duration) (keys *linkKeys, err error) {
	return acceptHandshake(ctx, conn, secret, timeout, timeout, nil)
}

// acceptHandshake is moverHandshake with the mover's limits on strangers:
// the first frame must come within hello (a frontend sends it at once;
// a stranger that holds a slot silently is let go early), and once the
// frontend's proof checks out, proved (if not nil) frees its handshake
// slot, or says it is lost already, which ends the handshake.
func acceptHandshake(ctx context.Context, conn net.Conn, secret []byte, timeout, hello time.Duration, proved func() bool) (keys *linkKeys, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if hello < timeout {
		late := time.AfterFunc(hello, func() { cancel(fmt.Errorf("%w: no hello within %v", ErrAuth, hello)) })
		defer late.Stop()
	}
	defer bound(ctx, conn, timeout, &err)() // runs first: before cancel(nil)
	refuse := func(err error, text string) (*linkKeys, error) {
		writeHandshake(conn, &Msg{Type: TypeError, Text: text})
		return nil, err
	}
	m, err := readHandshake(conn)
	if err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	if ctx.Err() != nil { // the hello came just too late
		return nil, context.Cause(ctx)
	}
	switch {
	case m.Type != TypeHello:
		return refuse(fmt.Errorf("%w: the peer sent %v instead of hello", ErrAuth, m.Type), "expected hello")
	case m.Version != Version:
		text := fmt.Sprintf("protocol version mismatch: this mover speaks %d, the frontend %d; run the same Ferry version on both", Version, m.Version)
		return refuse(errors.New("stripe: "+text), text)
	case m.Role != roleFrontend:
		return refuse(fmt.Errorf("%w: the peer is a %q, not a frontend", ErrAuth, m.Role), "expected a frontend")
	}
	peer := m.Nonce
	own := newNonce()
	if err := writeHandshake(conn, &Msg{Type: TypeHello, Version: Version, Role: roleMover, Nonce: own, Proof: proof(secret, roleMover, own, peer)}); err != nil {
		return nil, err
	}
	m, err = readHandshake(conn)
	if err != nil {
		return nil, fmt.Errorf("%w: no proof from the frontend (%v)", ErrAuth, err)
	}
	if m.Type != TypeAuth || !checkProof(secret, roleFrontend, peer, own, m.Proof) {
		return refuse(fmt.Errorf("%w: the frontend does not know the shared secret", ErrAuth), "authentication failed: wrong shared secret")
	}
	if proved != nil && !proved() {
		return nil, errEvicted
	}
	if err := writeHandshake(conn, &Msg{Type: TypeWelcome}); err != nil {
		return nil, err
	}
	return deriveKeys(secret, peer, own, false)
}
