package gss

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
)

// Context is one side of a GSI security context: first stepped through the
// ADAT exchange, then used to wrap and unwrap control-channel messages.
type Context struct {
	*exchange
	delegated bool
}

// AcceptorConfig configures the server side.
type AcceptorConfig struct {
	// TLS is the server configuration: the host credential, client
	// certificates requested and verified (GSI proxies need custom
	// verification), versions. Session tickets are turned off.
	TLS *tls.Config
	// Delegate is called when the initiator asks for delegation, with the
	// peer's verified chain. It returns a DER PKCS#10 request and a function
	// that takes the signed proxy certificate (DER). Nil refuses delegation.
	Delegate func(peer []*x509.Certificate) (request []byte, accept func(cert []byte) error, err error)
}

// Accept starts the acceptor side; feed it the initiator's tokens with Step.
func Accept(cfg *AcceptorConfig) *Context {
	conn := newTokenConn()
	tc := cfg.TLS.Clone()
	tc.SessionTicketsDisabled = true
	t := tls.Server(conn, tc)
	ctx := &Context{}
	ctx.exchange = newExchange(t, conn, func() error {
		if err := t.Handshake(); err != nil {
			return fmt.Errorf("gss: handshake: %w", err)
		}
		// GSI keeps the exchange in lockstep: when the handshake leaves the
		// acceptor nothing to send (TLS 1.3), it sends a single 0x00.
		conn.mu.Lock()
		idle := len(conn.out) == 0
		conn.mu.Unlock()
		if idle {
			if _, err := t.Write([]byte{0}); err != nil {
				return err
			}
		}
		flag := make([]byte, 1)
		if _, err := io.ReadFull(t, flag); err != nil {
			return fmt.Errorf("gss: reading the delegation flag: %w", err)
		}
		switch flag[0] {
		case '0':
			return nil
		case 'D':
		default:
			return fmt.Errorf("%w: delegation flag %#x", ErrProtocol, flag[0])
		}
		if cfg.Delegate == nil {
			return fmt.Errorf("%w: delegation asked for but not offered", ErrProtocol)
		}
		req, accept, err := cfg.Delegate(t.ConnectionState().PeerCertificates)
		if err != nil {
			return err
		}
		if _, err := t.Write(req); err != nil {
			return err
		}
		cert, err := readDER(t)
		if err != nil {
			return fmt.Errorf("gss: reading the delegated certificate: %w", err)
		}
		if err := accept(cert); err != nil {
			return err
		}
		ctx.delegated = true
		return nil
	})
	return ctx
}

// InitiatorConfig configures the client side.
type InitiatorConfig struct {
	// TLS is the client configuration: the user's proxy chain, and
	// verification of the server (host name, GSI trust).
	TLS *tls.Config
	// Sign, when set, delegates: it signs the acceptor's DER request and
	// returns the new proxy certificate (DER). Nil declines delegation.
	Sign func(request []byte) (cert []byte, err error)
}

// Initiate starts the initiator side; call Step(ctx, nil) for the first token.
func Initiate(cfg *InitiatorConfig) *Context {
	conn := newTokenConn()
	t := tls.Client(conn, cfg.TLS)
	ctx := &Context{}
	ctx.exchange = newExchange(t, conn, func() error {
		if err := t.Handshake(); err != nil {
			return fmt.Errorf("gss: handshake: %w", err)
		}
		if t.ConnectionState().Version >= tls.VersionTLS13 {
			// The acceptor's keep-going byte; its value carries nothing.
			if _, err := io.ReadFull(t, make([]byte, 1)); err != nil {
				return fmt.Errorf("gss: reading the acceptor's flag: %w", err)
			}
		}
		if cfg.Sign == nil {
			_, err := t.Write([]byte{'0'})
			return err
		}
		if _, err := t.Write([]byte{'D'}); err != nil {
			return err
		}
		req, err := readDER(t)
		if err != nil {
			return fmt.Errorf("gss: reading the delegation request: %w", err)
		}
		cert, err := cfg.Sign(req)
		if err != nil {
			return err
		}
		if _, err := t.Write(cert); err != nil {
			return err
		}
		ctx.delegated = true
		return nil
	})
	return ctx
}

// Delegated reports whether a credential was delegated (after completion).
func (c *Context) Delegated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended && c.err == nil && c.delegated
}
