// Package gss is GSI's GSSAPI mechanism as GridFTP uses it on the control
// channel (RFC 2228 AUTH GSSAPI / ADAT / ENC, gsi.md §3–§5): a TLS
// connection whose records travel inside base64 ADAT tokens instead of on a
// socket, followed by GSI's delegation exchange.
//
// Each token is a whole TLS flight: the engine runs crypto/tls over an
// in-memory connection and returns what TLS wrote once TLS wants to read
// again. After the handshake:
//
//	acceptor                              initiator
//	   (TLS 1.3: app record 0x00) ───▶
//	                              ◀─── app record 'D' (delegate) or '0'
//	   app record: DER PKCS#10 request ─▶          (only after 'D')
//	                              ◀─── app record: DER proxy certificate
//
// Then every control-channel line is one TLS application record (Wrap,
// Unwrap), base64-encoded by the caller into ENC commands and 632 replies.
package gss

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// ErrProtocol reports a peer that broke the token exchange.
var ErrProtocol = errors.New("gss: protocol violation")

// maxToken bounds one token (a TLS flight with certificate chains).
const maxToken = 1 << 20

// tokenConn is the in-memory net.Conn under crypto/tls: reads drain the
// bytes of the peer's tokens, writes collect the next outgoing token. When
// TLS reads with nothing left to read, its flight is complete: tokenConn
// signals need, and the engine hands the collected bytes out.
type tokenConn struct {
	need chan struct{} // one signal each time a reader blocks for input

	mu     sync.Mutex
	cond   *sync.Cond
	in     []byte // peer bytes not yet read; guarded by mu
	out    []byte // bytes written, not yet handed out; guarded by mu
	closed bool   // guarded by mu
	// noWait makes a read with no input fail instead of waiting: after the
	// exchange, every token must hold whole records. Guarded by mu.
	noWait bool
}

// errNoInput is what TLS sees when it reads past the end of the tokens
// after the exchange: a temporary net.Error, which crypto/tls does not
// treat as fatal, so the next token can continue the stream.
var errNoInput net.Error = noInputError{}

type noInputError struct{}

func (noInputError) Error() string   { return "gss: no more token bytes" }
func (noInputError) Timeout() bool   { return true }
func (noInputError) Temporary() bool { return true }

func newTokenConn() *tokenConn {
	c := &tokenConn{need: make(chan struct{}, 1)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *tokenConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.in) == 0 && c.noWait {
		return 0, errNoInput
	}
	if len(c.in) == 0 && !c.closed {
		select {
		case c.need <- struct{}{}:
		default:
		}
		for len(c.in) == 0 && !c.closed {
			c.cond.Wait()
		}
	}
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *tokenConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if len(c.out)+len(p) > maxToken {
		return 0, fmt.Errorf("%w: token over %d bytes", ErrProtocol, maxToken)
	}
	c.out = append(c.out, p...)
	return len(p), nil
}

// feed adds a peer token. A need signal still queued is stale: it was sent
// while waiting for this very input (Read signals only under mu with no
// input), so it is dropped here, under mu, before the input arrives.
func (c *tokenConn) feed(tok []byte) {
	c.mu.Lock()
	select {
	case <-c.need:
	default:
	}
	c.in = append(c.in, tok...)
	c.cond.Broadcast()
	c.mu.Unlock()
}

// pending reports unread peer bytes.
func (c *tokenConn) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.in)
}

// take returns and clears the collected output.
func (c *tokenConn) take() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.out
	c.out = nil
	return out
}

func (c *tokenConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}

func (c *tokenConn) LocalAddr() net.Addr                { return tokenAddr{} }
func (c *tokenConn) RemoteAddr() net.Addr               { return tokenAddr{} }
func (c *tokenConn) SetDeadline(t time.Time) error      { return nil }
func (c *tokenConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *tokenConn) SetWriteDeadline(t time.Time) error { return nil }

type tokenAddr struct{}

func (tokenAddr) Network() string { return "gss" }
func (tokenAddr) String() string  { return "gss-token" }

// exchange runs one side's whole protocol (handshake and delegation) in a
// goroutine and steps it one token at a time; afterwards it wraps and
// unwraps messages.
type exchange struct {
	conn  *tokenConn
	tls   *tls.Conn
	done  chan struct{} // the protocol goroutine ended
	err   error         // its outcome; set before done closes
	mu    sync.Mutex    // serialises Step, Wrap, Unwrap
	ended bool          // guarded by mu
}

func newExchange(tc *tls.Conn, conn *tokenConn, run func() error) *exchange {
	e := &exchange{conn: conn, tls: tc, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.err = run()
	}()
	return e
}

// Step feeds the peer's token (nil for the initiator's first call) and
// returns the token to send back (may be empty) and whether this side's
// part of the exchange is complete.
func (e *exchange) Step(ctx context.Context, token []byte) (out []byte, complete bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil, true, fmt.Errorf("%w: token after the exchange ended", ErrProtocol)
	}
	if len(token) > maxToken {
		e.fail()
		return nil, true, fmt.Errorf("%w: token over %d bytes", ErrProtocol, maxToken)
	}
	if token != nil {
		e.conn.feed(token)
	}
	select {
	case <-e.conn.need:
		out := e.conn.take()
		if len(out) == 0 && token != nil {
			// Every GSI token is a whole flight that calls for an answer;
			// one that leaves TLS waiting is truncated.
			e.fail()
			return nil, true, fmt.Errorf("%w: incomplete token", ErrProtocol)
		}
		return out, false, nil
	case <-e.done:
		e.ended = true
		if e.err != nil {
			e.conn.Close()
			return nil, true, e.err
		}
		e.conn.mu.Lock()
		e.conn.noWait = true
		e.conn.mu.Unlock()
		return e.conn.take(), true, nil
	case <-ctx.Done():
		e.fail()
		return nil, true, context.Cause(ctx)
	}
}

// fail ends the exchange; the caller holds mu.
func (e *exchange) fail() {
	e.ended = true
	e.conn.Close()
	<-e.done
	if e.err == nil {
		e.err = ErrProtocol
	}
}

// Wrap seals one control-channel message into a token (one TLS record).
func (e *exchange) Wrap(plaintext []byte) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ended || e.err != nil {
		return nil, errors.New("gss: context not established")
	}
	if _, err := e.tls.Write(plaintext); err != nil {
		return nil, err
	}
	return e.conn.take(), nil
}

// Unwrap opens a token from the peer and returns its plaintext.
func (e *exchange) Unwrap(token []byte) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ended || e.err != nil {
		return nil, errors.New("gss: context not established")
	}
	if len(token) > maxToken {
		return nil, fmt.Errorf("%w: token over %d bytes", ErrProtocol, maxToken)
	}
	e.conn.feed(token)
	var plain []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := e.tls.Read(buf)
		plain = append(plain, buf[:n]...)
		switch {
		case errors.Is(err, errNoInput) && len(plain) > 0 && e.conn.pending() == 0:
			return plain, nil
		case errors.Is(err, errNoInput):
			return nil, fmt.Errorf("%w: token holds no complete TLS record", ErrProtocol)
		case err != nil:
			return nil, fmt.Errorf("gss: unwrap: %w", err)
		}
		if len(plain) > maxToken {
			return nil, fmt.Errorf("%w: message over %d bytes", ErrProtocol, maxToken)
		}
	}
}

// ConnectionState reports the TLS session underneath.
func (e *exchange) ConnectionState() tls.ConnectionState { return e.tls.ConnectionState() }

// PeerChain returns the peer's certificates, leaf first, once the exchange
// has completed without error, and nil before that: a certificate seen
// during the handshake proves nothing until the peer's signature with its
// key has been checked, which only a completed handshake guarantees.
func (e *exchange) PeerChain() []*x509.Certificate {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.established() {
		return nil
	}
	return e.tls.ConnectionState().PeerCertificates
}

// Established reports whether the exchange completed without error.
func (e *exchange) Established() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.established()
}

// established is Established for a caller holding mu.
func (e *exchange) established() bool {
	if !e.ended {
		return false
	}
	select {
	case <-e.done:
		return e.err == nil
	default:
		return false
	}
}

// Close ends the exchange and its goroutine.
func (e *exchange) Close() error {
	e.conn.Close()
	<-e.done
	return nil
}

// maxDER bounds a delegation request or certificate.
const maxDER = 64 << 10

// readDER reads one DER object (a SEQUENCE) that may span several records.
func readDER(r io.Reader) ([]byte, error) {
	var b []byte
	buf := make([]byte, 16<<10)
	for {
		if need, ok := derLen(b); ok && len(b) >= need {
			if len(b) > need {
				return nil, fmt.Errorf("%w: %d bytes after the DER object", ErrProtocol, len(b)-need)
			}
			return b, nil
		}
		if len(b) > maxDER {
			return nil, fmt.Errorf("%w: DER object over %d bytes", ErrProtocol, maxDER)
		}
		n, err := r.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return nil, err
		}
	}
}

// derLen returns the total length of the DER SEQUENCE starting b, once its
// header is complete.
func derLen(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	if b[0] != 0x30 {
		return maxDER + 1, true // not a SEQUENCE: fail on the length check
	}
	l := int(b[1])
	if l < 0x80 {
		return 2 + l, true
	}
	n := l & 0x7f
	if n == 0 || n > 3 {
		return maxDER + 1, true
	}
	if len(b) < 2+n {
		return 0, false
	}
	l = 0
	for _, c := range b[2 : 2+n] {
		l = l<<8 | int(c)
	}
	return 2 + n + l, true
}
