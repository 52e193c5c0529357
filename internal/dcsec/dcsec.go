package dcsec

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// Level is an RFC 2228 protection level: 'C' clear, 'S' safe, 'P' private
// ('E' is not supported).
type Level byte

// Protection levels (PROT).
const (
	Clear   Level = 'C'
	Safe    Level = 'S'
	Private Level = 'P'
)

// String returns the level's letter.
func (l Level) String() string { return string(rune(l)) }

// Style says whose TLS conventions apply.
type Style int

const (
	// GSI is GridFTP's convention: the side that connects is the TLS
	// client, the listener the TLS server. With Level C the TLS handshake
	// authenticates, then the flag records are exchanged (0x00 from the
	// listener in TLS 1.3, '0' from the connector) and the data flows in
	// clear on the same socket. With Level S or P all data goes in TLS
	// records, without flag bytes.
	GSI Style = iota
	// FTPS is RFC 4217's convention: the FTP server is the TLS server
	// whoever connects; Level C means no TLS at all on the data channel,
	// Level P means TLS.
	FTPS
)

// String names the style.
func (s Style) String() string {
	switch s {
	case GSI:
		return "GSI"
	case FTPS:
		return "FTPS"
	}
	return fmt.Sprintf("Style(%d)", int(s))
}

// Config says how data connections are authenticated and protected. A nil
// *Config means no security (DCAU N). A Config is read only and may be
// shared by concurrent calls of Secure.
type Config struct {
	// Style selects the GSI or the FTPS conventions.
	Style Style
	// Level is the protection level (PROT). The zero value is an error.
	Level Level
	// Server says this side is the FTP server; it decides the TLS roles in
	// FTPS style and is ignored in GSI style.
	Server bool
	// Certificate is what this side presents: in GSI style the user's proxy
	// chain or a server's delegated proxy; for an FTPS server its
	// certificate; for an FTPS client an optional client certificate.
	// Required whenever this side is the TLS server.
	Certificate *tls.Certificate
	// VerifyPeer authenticates the peer's chain (leaf first): DCAU A is
	// SelfAuthorization, DCAU S SubjectAuthorization. It is the only
	// verification (Go's x509 path validation does not understand
	// proxies). It is required in GSI style (DCAU A or S; DCAU N is a nil
	// *Config) and whenever this side is the TLS client: Secure refuses a
	// Config without it there, so no peer is ever accepted unchecked by
	// omission. Only an FTPS TLS server may leave it nil: RFC 4217 asks
	// the client for no certificate, and such a data channel does not
	// authenticate its peer (AuthenticatesPeer is false).
	VerifyPeer func(chain []*x509.Certificate) error
	// Authz says what VerifyPeer checks, for a process that must rebuild
	// it with its own trust store (a striped server's data movers); the
	// zero value means VerifyPeer is nil or cannot be rebuilt elsewhere
	// (DataCredentialAuthorization, which such a process must refuse).
	Authz Authorization
	// ServerName is the SNI a TLS client sends. It is sent only when it is
	// a valid DNS host name (never an IP address or a user's CN with
	// spaces); empty, the default, sends none.
	ServerName string
	// MinVersion and MaxVersion bound the TLS version; 0 means TLS 1.2 and
	// TLS 1.3 respectively.
	MinVersion, MaxVersion uint16
	// HandshakeTimeout bounds the handshake and flag exchange; 0 means 30s.
	HandshakeTimeout time.Duration
}

// Authorization names a VerifyPeer function: Mode 'A' is
// SelfAuthorization and 'S' SubjectAuthorization, of DN; 0 is none.
type Authorization struct {
	Mode byte
	DN   string
}

// DefaultHandshakeTimeout is the handshake deadline when Config has none.
const DefaultHandshakeTimeout = 30 * time.Second

var (
	// ErrUnauthorized wraps VerifyPeer's verdict on the peer's certificate.
	ErrUnauthorized = errors.New("dcsec: data channel peer not authorized")
	// ErrProtocol reports a peer that broke the GSI flag-byte exchange.
	ErrProtocol = errors.New("dcsec: data channel protocol violation")
)

// AuthenticatesPeer reports whether a data connection secured with c proves
// who its peer is: c puts TLS on the channel and checks the peer's
// certificate with VerifyPeer (GSI DCAU A or S). Only then may the peer be
// a host other than the control connection's (a third-party transfer).
// A nil c (DCAU N, FTPS PROT C) authenticates nobody.
func (c *Config) AuthenticatesPeer() bool {
	return c.usesTLS() && c.VerifyPeer != nil
}

// usesTLS reports whether cfg puts TLS on the data channel at all.
func (c *Config) usesTLS() bool {
	return c != nil && !(c.Style == FTPS && c.Level == Clear)
}

// check validates cfg for one connection; tlsServer says this side would
// be the TLS server.
func (c *Config) check(tlsServer bool) error {
	switch c.Style {
	case GSI:
		switch c.Level {
		case Clear, Safe, Private:
		default:
			return fmt.Errorf("dcsec: protection level %q is not supported", rune(c.Level))
		}
	case FTPS:
		switch c.Level {
		case Clear, Private:
		default:
			return fmt.Errorf("dcsec: protection level %q is not supported with TLS (RFC 4217 knows C and P)", rune(c.Level))
		}
	default:
		return fmt.Errorf("dcsec: unknown style %v", c.Style)
	}
	if tlsServer && c.Certificate == nil {
		return errors.New("dcsec: no certificate to present as the data channel's TLS server")
	}
	if c.VerifyPeer == nil {
		switch {
		case c.Style == GSI:
			return errors.New("dcsec: a GSI data channel needs a peer check (DCAU A or S); DCAU N is no Config at all")
		case !tlsServer:
			return errors.New("dcsec: a TLS client data channel needs a check of the server's certificate")
		}
	}
	return nil
}

// Secure performs the data-channel security handshake on a new data
// connection that this side dialed (connector) or accepted, and returns
// the connection the transfer must use: a *tls.Conn (Level S or P, FTPS
// Level P), or conn itself after authentication (GSI Level C; not one byte
// after the flag record has been consumed) or untouched (nil cfg, FTPS
// Level C). On failure conn is closed and an error returned; a protected
// level never falls back to clear. ctx and cfg.HandshakeTimeout bound the
// handshake; deadlines on conn are cleared on success.
func Secure(ctx context.Context, conn net.Conn, connector bool, cfg *Config) (net.Conn, error) {
	if !cfg.usesTLS() {
		return conn, nil
	}
	tlsClient := connector
	if cfg.Style == FTPS {
		tlsClient = !cfg.Server
	}
	if err := cfg.check(!tlsClient); err != nil {
		conn.Close()
		return nil, err
	}
	timeout := cfg.HandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, &timeoutError{timeout})
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	out, err := handshake(conn, tlsClient, cfg)
	if !stop() {
		// Interrupted: whatever the handshake says, the cause is ctx's.
		conn.Close()
		cause := context.Cause(ctx)
		if _, ok := cause.(*timeoutError); ok {
			return nil, cause
		}
		return nil, fmt.Errorf("dcsec: data channel handshake interrupted: %w", cause)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dcsec: %w", err)
	}
	return out, nil
}

// timeoutError is the cause of a handshake that ran out of time.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("dcsec: data channel security handshake not done within %v (does the peer use the same DCAU and PROT?)", e.d)
}

func (e *timeoutError) Unwrap() error { return os.ErrDeadlineExceeded }

func handshake(conn net.Conn, tlsClient bool, cfg *Config) (net.Conn, error) {
	clearAfter := cfg.Style == GSI && cfg.Level == Clear
	under := conn
	if clearAfter {
		under = &recordConn{Conn: conn, r: recordReader{r: conn}}
	}
	tcfg := tlsConfig(cfg, tlsClient)
	var tc *tls.Conn
	role := "TLS server"
	if tlsClient {
		tc, role = tls.Client(under, tcfg), "TLS client"
	} else {
		tc = tls.Server(under, tcfg)
	}
	if err := tc.Handshake(); err != nil {
		if errors.Is(err, ErrUnauthorized) {
			return nil, err
		}
		return nil, fmt.Errorf("dcsec: %s data channel handshake as %s: %w", cfg.Style, role, err)
	}
	if !clearAfter {
		return tc, nil
	}
	tls13 := tc.ConnectionState().Version >= tls.VersionTLS13
	if tlsClient {
		// The connector (GSS initiator) reads and ignores the acceptor's
		// 0x00, then says "no delegation".
		if tls13 {
			if _, err := readFlag(tc); err != nil {
				return nil, err
			}
		}
		if _, err := tc.Write([]byte{'0'}); err != nil {
			return nil, fmt.Errorf("dcsec: sending the GSI flag byte: %w", err)
		}
		return conn, nil
	}
	if tls13 {
		if _, err := tc.Write([]byte{0}); err != nil {
			return nil, fmt.Errorf("dcsec: sending the GSI flag byte: %w", err)
		}
	}
	switch b, err := readFlag(tc); {
	case err != nil:
		return nil, err
	case b == 'D':
		return nil, fmt.Errorf("%w: the peer wants to delegate a credential on the data channel, which is not supported", ErrProtocol)
	case b != '0':
		return nil, fmt.Errorf("%w: flag byte 0x%02x, want '0'", ErrProtocol, b)
	}
	return conn, nil
}

// readFlag reads the one-byte record of the GSI flag exchange.
func readFlag(tc *tls.Conn) (byte, error) {
	var b [64]byte
	n, err := tc.Read(b[:])
	switch {
	case n == 1:
		return b[0], nil
	case n > 1:
		// More would be data the caller expects in clear: refuse.
		return 0, fmt.Errorf("%w: %d bytes in the flag record, want 1", ErrProtocol, n)
	case err == io.EOF:
		return 0, fmt.Errorf("dcsec: peer closed the data connection during the GSI flag exchange: %w", io.ErrUnexpectedEOF)
	case err != nil:
		return 0, fmt.Errorf("dcsec: reading the GSI flag byte: %w", err)
	}
	return 0, fmt.Errorf("%w: empty flag record", ErrProtocol)
}

// tlsConfig builds the crypto/tls configuration for one side.
func tlsConfig(cfg *Config, tlsClient bool) *tls.Config {
	minV := cfg.MinVersion
	if minV == 0 {
		minV = tls.VersionTLS12
	}
	tc := &tls.Config{
		MinVersion:             minV,
		MaxVersion:             cfg.MaxVersion,
		SessionTicketsDisabled: true,
	}
	// Verification is VerifyPeer's; it sees every connection. check made
	// sure it is there whenever this side must verify (GSI, TLS client);
	// an FTPS server without it asks for no certificate (below).
	if verify := cfg.VerifyPeer; verify != nil {
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if err := verify(cs.PeerCertificates); err != nil {
				return fmt.Errorf("%w: %w", ErrUnauthorized, err)
			}
			return nil
		}
	}
	if tlsClient {
		tc.InsecureSkipVerify = true // VerifyConnection verifies instead
		tc.ServerName = sniName(cfg.ServerName)
		if cert := cfg.Certificate; cert != nil {
			// Always present it: GCT's CertificateRequest names no CA.
			tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		return tc
	}
	tc.Certificates = []tls.Certificate{*cfg.Certificate}
	switch {
	case cfg.Style == GSI, cfg.VerifyPeer != nil:
		tc.ClientAuth = tls.RequireAnyClientCert
	default:
		tc.ClientAuth = tls.NoClientCert
	}
	return tc
}

// sniName returns name if it may go into SNI: a DNS host name (RFC 1123
// labels), not an IP address. Anything else gives "" (no SNI).
func sniName(name string) string {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return ""
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return ""
	}
	for label := range strings.SplitSeq(name, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return ""
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return ""
			}
		}
	}
	return name
}

// CloseWrite ends the sending direction of a data connection that Secure
// returned (the end of a stream-mode file). A TLS connection in GSI style
// ends with a bare FIN, as GCT's does (its peers expect no close_notify);
// in FTPS style close_notify comes first (RFC 4217 wants the TLS session
// closed properly). A plain TCP connection just sends FIN.
func CloseWrite(c net.Conn, style Style) error {
	if tc, ok := c.(*tls.Conn); ok {
		if style == FTPS {
			if err := tc.CloseWrite(); err != nil {
				return err
			}
		}
		c = tc.NetConn()
	}
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		return fmt.Errorf("dcsec: %T cannot half-close", c)
	}
	return cw.CloseWrite()
}

// NetConn returns the TCP connection under a connection Secure returned,
// for socket-level counters and options (it must never be written to or
// read from directly while TLS is in use).
func NetConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}
