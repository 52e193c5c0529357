package client

// GSI security (gsi.md §3–§6): RFC 2228 AUTH GSSAPI with ADAT tokens that
// are bare TLS flights, GSI delegation, ENC-wrapped commands and 63x
// replies; DCAU and PROT for the data channels.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/gss"
	"github.com/ferrygrid/ferry/internal/wire"
)

// Credential is a GSI credential: a certificate chain, leaf first (proxies,
// then the end-entity certificate and any intermediate CAs), with the
// leaf's private key. FindCredential and LoadCredential make one.
type Credential = gsi.Credential

// TrustStore is a trust directory in GCT's layout (hashed CA certificates,
// signing policies, CRLs). LoadTrustStore makes one.
type TrustStore = gsi.TrustStore

// GlobusMapping is the user name that asks a GSI server to map the
// client's certificate identity to a local account through its
// grid-mapfile. Login sends it when the user name is empty on a GSI Conn.
const GlobusMapping = ":globus-mapping:"

// FindCredential finds the user's GSI credential as GCT's clients do, but
// never preferring the end-entity certificate over a proxy: the proxy
// named by $X509_USER_PROXY, else /tmp/x509up_u<uid>, else
// $X509_USER_CERT and $X509_USER_KEY, else ~/.globus/usercert.pem and
// userkey.pem. source says which was used. An expired credential is an
// error.
func FindCredential() (cred *Credential, source string, err error) {
	// gsi's errors name the file used and where else it looked.
	return gsi.FindClientCredential()
}

// LoadCredential reads a credential from PEM files (keyFile may be empty
// or equal certFile for a proxy file holding both) and checks that none of
// its certificates has expired.
func LoadCredential(certFile, keyFile string) (*Credential, error) {
	cred, err := gsi.LoadCredential(certFile, keyFile)
	if err != nil {
		return nil, err // names the file
	}
	if err := checkCredential(cred, time.Now()); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, certFile)
	}
	return cred, nil
}

// TrustDir returns the trust directory GCT's clients use:
// $X509_CERT_DIR, else ~/.globus/certificates if it exists (non-root),
// else /etc/grid-security/certificates.
func TrustDir() string { return gsi.TrustDir() }

// LoadTrustStore reads a trust directory (see TrustDir). A directory
// without any usable CA certificate is an error.
func LoadTrustStore(dir string) (*TrustStore, error) {
	ts, err := gsi.LoadTrustDir(dir)
	if err != nil {
		return nil, fmt.Errorf("trust directory: %w", err)
	}
	if len(ts.Certificates()) == 0 {
		msg := fmt.Sprintf("trust directory %s holds no usable CA certificate (<hash>.0 files)", dir)
		if p := ts.Problems(); len(p) > 0 {
			msg += ": " + strings.Join(p, "; ")
		}
		return nil, errors.New(msg)
	}
	return ts, nil
}

// ErrCredentialExpired is returned when the client's credential (or a
// certificate of its chain) has expired: make a new proxy.
var ErrCredentialExpired = errors.New("client: GSI credential expired; make a new proxy (ferry proxy init or grid-proxy-init)")

// checkCredential refuses an incomplete or expired credential.
func checkCredential(cred *Credential, now time.Time) error {
	if cred == nil || len(cred.Chain) == 0 || cred.Key == nil {
		return errors.New("client: GSI credential is incomplete (want a certificate chain and its key)")
	}
	for _, c := range cred.Chain {
		if now.After(c.NotAfter) {
			return fmt.Errorf("%w: %s expired at %s", ErrCredentialExpired, gsi.CertDN(c), c.NotAfter.UTC().Format(time.RFC3339))
		}
		if now.Before(c.NotBefore) {
			return fmt.Errorf("client: GSI credential not valid yet: %s is valid from %s", gsi.CertDN(c), c.NotBefore.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// DataAuth is the data channel authentication (DCAU) a GSI Conn asks for.
type DataAuth int

const (
	// DataAuthDefault keeps the server's default after GSI authentication,
	// DCAU A (self), without sending DCAU, as globus-url-copy does.
	DataAuthDefault DataAuth = iota
	// DataAuthSelf sends DCAU A: both ends of a data connection present
	// their GSI credentials, and each must have the other's identity
	// (the server presents the proxy the client delegated to it).
	DataAuthSelf
	// DataAuthNone sends DCAU N: data connections are plain TCP
	// (globus-url-copy -nodcau). Protection must then be clear.
	DataAuthNone
)

// Protection is the data channel protection level (RFC 2228 PROT) of an
// authenticated data channel.
type Protection byte

// Protection levels. The zero value is ProtClear without sending PROT.
const (
	// ProtClear (PROT C): the data connection is authenticated with a TLS
	// handshake, then the data flows in clear.
	ProtClear Protection = 'C'
	// ProtSafe (PROT S): data in TLS records, integrity protected
	// (globus-url-copy -dcsafe).
	ProtSafe Protection = 'S'
	// ProtPrivate (PROT P): data in TLS records, encrypted
	// (globus-url-copy -dcpriv).
	ProtPrivate Protection = 'P'
)

// pbsz is the protection buffer size announced before PROT, as
// globus-url-copy announces it.
const pbsz = 1048576

// GSIConfig makes a Conn authenticate with GSI (RFC 2228 AUTH GSSAPI, the
// gsiftp:// way): the server proves its identity with a certificate that
// the trust store and the host name (or ServerSubject) accept, the client
// presents Credential, delegates a proxy to the server unless
// NoDelegation, and every command and reply after that is protected.
type GSIConfig struct {
	// Credential is the client's credential, normally a proxy (see
	// FindCredential). Required; an expired one is refused before dialing.
	Credential *Credential

	// Trust verifies the server's certificate chain (see
	// LoadTrustStore). Required.
	Trust *TrustStore

	// ServerName is the host name (or IP address) the server's
	// certificate must name. Empty means the host of Dial's address.
	// Ignored when ServerSubject is set.
	ServerName string

	// ServerSubject, when set, is the exact identity (DN in the one-line
	// form, "/C=US/O=Grid/CN=host/example.org") the server's certificate
	// must have; it replaces the host name check (globus-url-copy -ss).
	ServerSubject string

	// NoDelegation declines delegation ('0' instead of 'D'). A GCT server
	// then has no credential of the user's for DCAU A data channels.
	NoDelegation bool

	// FullDelegation delegates an impersonation proxy instead of the
	// limited proxy globus-url-copy delegates.
	FullDelegation bool

	// DataAuth selects DCAU; the zero value is the server's default,
	// DCAU A.
	DataAuth DataAuth

	// PlainPeerNoDCAU makes each third-party transfer between this Conn
	// and a server without GSI (ftp://) run with DCAU N on this Conn:
	// that server has no credential, so it cannot authenticate a data
	// connection. DCAU N goes to this server before the transfer and
	// DCAU A after it, so the transfers before and after keep DataAuth;
	// if DCAU A cannot be set back, the Conn is closed. Other pairs are
	// not affected. It does nothing with DataAuthNone, or with
	// Protection ProtSafe or ProtPrivate (they need DCAU). False: such a
	// transfer fails in the data channel's TLS handshake, as
	// globus-url-copy's does.
	PlainPeerNoDCAU bool

	// Protection selects PROT for authenticated data channels; zero
	// means ProtClear without sending PROT. ProtSafe and ProtPrivate are
	// sent after PBSZ, at Login.
	Protection Protection

	// DataCredential, when set, is sent to the server after login (GCT's
	// DCSC P, globus-url-copy -data-cred) and then DCAU A: both ends of
	// every data connection present it instead of the user's proxy and
	// the server's delegated one, and each accepts only a peer that
	// presents this very certificate. It lets two servers that do not
	// trust each other's CA (or were logged into with different
	// credentials) run a third-party transfer, each Conn of it having
	// the same DataCredential. See NewDataCredential and
	// LoadDataCredential; it cannot go with DataAuthNone. A server
	// without DCSC in its FEAT fails the Login.
	DataCredential *Credential

	// MinTLSVersion and MaxTLSVersion bound the TLS versions of the
	// control and data channels (tls.VersionTLS12, tls.VersionTLS13).
	// Zero means TLS 1.2 and the highest Go supports; nothing below 1.2
	// is offered.
	MinTLSVersion, MaxTLSVersion uint16
}

// validate checks the configuration before anything is dialed.
func (g *GSIConfig) validate(now time.Time) error {
	if g.Trust == nil {
		return errors.New("client: GSIConfig.Trust is required")
	}
	if err := checkCredential(g.Credential, now); err != nil {
		return err
	}
	switch g.Protection {
	case 0, ProtClear:
	case ProtSafe, ProtPrivate:
		if g.DataAuth == DataAuthNone {
			return fmt.Errorf("client: PROT %c needs authenticated data channels (DCAU), not DCAU N", byte(g.Protection))
		}
	default:
		return fmt.Errorf("client: unsupported data channel protection %q", byte(g.Protection))
	}
	if g.DataCredential != nil {
		if g.DataAuth == DataAuthNone {
			return errors.New("client: a data channel credential (DCSC) needs authenticated data channels, not DCAU N")
		}
		if _, err := checkDataCredential(g.DataCredential); err != nil {
			return err
		}
	}
	switch g.DataAuth {
	case DataAuthDefault, DataAuthSelf, DataAuthNone:
	default:
		return fmt.Errorf("client: unsupported data channel authentication %d", g.DataAuth)
	}
	if g.MinTLSVersion != 0 && g.MinTLSVersion < tls.VersionTLS12 {
		return errors.New("client: TLS below 1.2 is not offered")
	}
	return nil
}

// gsiState is a Conn's GSI session after authentication.
type gsiState struct {
	cfg       GSIConfig
	sec       *gss.Context
	cert      tls.Certificate // the client's credential for data channels
	identity  string          // the client credential's identity DN
	serverDN  string          // the server's verified identity DN
	delegated bool
	dcau      bool       // data connections are authenticated (DCAU A)
	prot      Protection // protection of authenticated data connections
}

// tlsVersions returns the TLS version bounds of g.
func (g *GSIConfig) tlsVersions() (lo, hi uint16) {
	lo = g.MinTLSVersion
	if lo == 0 {
		lo = tls.VersionTLS12
	}
	return lo, g.MaxTLSVersion
}

// controlTLS is the TLS configuration of the control channel's GSSAPI
// context: the client's chain whatever the server asks for, and the
// server's chain verified with GSI's rules (proxies, signing policies)
// instead of crypto/x509's.
func (g *GSIConfig) controlTLS(host string, serverDN *string) *tls.Config {
	cert := g.Credential.TLSCertificate()
	lo, hi := g.tlsVersions()
	cfg := &tls.Config{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		// Verified by VerifyConnection: crypto/x509 knows neither
		// proxies nor signing policies.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := g.verifyServer(cs.PeerCertificates, host)
			if err != nil {
				return err
			}
			*serverDN = id.DN
			return nil
		},
		MinVersion: lo,
		MaxVersion: hi,
	}
	if net.ParseIP(strings.Trim(host, "[]")) == nil {
		// GCT sends the URL's host; Go sends no SNI for an IP address.
		cfg.ServerName = host
	}
	return cfg
}

// ServerCertError is the error for a server certificate the client does
// not accept. It unwraps to the gsi package's reason (*gsi.VerifyError:
// untrusted, expired, host name mismatch…).
type ServerCertError struct {
	// Host is the name checked, or Subject the DN expected (-ss).
	Host, Subject string
	Err           error
}

func (e *ServerCertError) Error() string {
	if e.Subject != "" {
		return fmt.Sprintf("client: server certificate (expected subject %q): %v", e.Subject, e.Err)
	}
	return fmt.Sprintf("client: server certificate for %s: %v", e.Host, e.Err)
}

func (e *ServerCertError) Unwrap() error { return e.Err }

// ErrSubjectMismatch is the reason of a *ServerCertError when the
// server's identity is not GSIConfig.ServerSubject.
var ErrSubjectMismatch = errors.New("server identity does not match the expected subject")

// verifyServer checks the server's chain against the trust store and the
// host name, or the expected subject.
func (g *GSIConfig) verifyServer(chain []*x509.Certificate, host string) (*gsi.Identity, error) {
	now := time.Now()
	if g.ServerSubject != "" {
		id, err := g.Trust.Verify(chain, now)
		if err != nil {
			return nil, &ServerCertError{Subject: g.ServerSubject, Err: err}
		}
		if !sameDN(id.DN, g.ServerSubject) {
			return nil, &ServerCertError{Subject: g.ServerSubject, Err: fmt.Errorf("%w: the server is %q", ErrSubjectMismatch, id.DN)}
		}
		return id, nil
	}
	id, err := g.Trust.VerifyHost(chain, host, now)
	if err != nil {
		return nil, &ServerCertError{Host: host, Err: err}
	}
	return id, nil
}

// sameDN compares two DNs in the one-line form, by their encoding when
// both parse, else as strings.
func sameDN(a, b string) bool {
	if a == b {
		return true
	}
	da, errA := gsi.ParseDN(a)
	db, errB := gsi.ParseDN(b)
	return errA == nil && errB == nil && bytes.Equal(da, db) || dcsec.SameDN(a, b)
}

// authGSI runs AUTH GSSAPI and the ADAT exchange, then protects the
// control channel. host is the name the server's certificate must have.
func (c *Conn) authGSI(ctx context.Context, g *GSIConfig, host string) error {
	if g.ServerName != "" {
		host = g.ServerName
	}
	st := &gsiState{cfg: *g, cert: g.Credential.TLSCertificate(), identity: g.Credential.Identity(), dcau: g.DataAuth != DataAuthNone}
	ic := &gss.InitiatorConfig{TLS: g.controlTLS(host, &st.serverDN)}
	if !g.NoDelegation {
		cred, limited := g.Credential, !g.FullDelegation
		ic.Sign = func(req []byte) ([]byte, error) { return gsi.SignProxyRequest(cred, req, limited, 0) }
	}
	sec := gss.Initiate(ic)
	ok := false
	defer func() {
		if !ok {
			sec.Close()
		}
	}()
	r, err := c.cmd(ctx, "AUTH GSSAPI")
	if err != nil {
		return err
	}
	if r.Code != 334 {
		return fmt.Errorf("client: the server refused GSI authentication (AUTH GSSAPI): %w", &ReplyError{Reply: r})
	}
	tok, complete, err := sec.Step(ctx, nil)
	for {
		if err != nil {
			return c.gsiFailed(ctx, err)
		}
		if len(tok) == 0 {
			return c.gsiFailed(ctx, fmt.Errorf("%w: nothing to send, and the server wants more", gss.ErrProtocol))
		}
		r, cerr := c.cmd(ctx, "ADAT %s", base64.StdEncoding.EncodeToString(tok))
		if cerr != nil {
			return cerr
		}
		in, hasToken, perr := adatToken(r)
		if perr != nil {
			return c.gsiFailed(ctx, perr)
		}
		switch {
		case r.Code == 335 && !complete && hasToken:
			tok, complete, err = sec.Step(ctx, in)
			continue
		case r.Code == 235 && hasToken && !complete:
			_, complete, err = sec.Step(ctx, in)
			if err == nil && !complete {
				err = fmt.Errorf("%w: the server finished (235) before the client", gss.ErrProtocol)
			}
		case r.Code == 235 && !complete:
			err = fmt.Errorf("%w: the server finished (235) before the client", gss.ErrProtocol)
		case r.Code == 235:
		case r.Class() == 3:
			err = fmt.Errorf("%w: unexpected reply %d to ADAT", gss.ErrProtocol, r.Code)
		default:
			return fmt.Errorf("client: GSI authentication refused by the server: %w", &ReplyError{Reply: r})
		}
		if err != nil {
			return c.gsiFailed(ctx, err)
		}
		break
	}
	st.sec = sec
	st.delegated = sec.Delegated()
	st.prot = ProtClear
	c.gsi = st
	c.dsec = st.dataSecurity(c.dialTimeout())
	c.rs.setReader(wire.NewReplyReader(newUnwrapReader(c.raw, "GSI", sec.Unwrap, "631", "632", "633")))
	c.log.Debug("GSI authenticated", "server", st.serverDN, "identity", st.identity, "delegated", st.delegated)
	ok = true
	return nil
}

// gsiFailed reports a failed GSSAPI exchange; the Conn is closed, since
// the server's state is unknown.
func (c *Conn) gsiFailed(ctx context.Context, err error) error {
	c.close()
	if ctx.Err() != nil {
		return fmt.Errorf("client: GSI authentication: %w", context.Cause(ctx))
	}
	var sce *ServerCertError
	if errors.As(err, &sce) {
		return sce
	}
	return fmt.Errorf("client: GSI authentication: %w", err)
}

// adatToken returns the token of a 335 or 235 reply ("ADAT=<base64>").
func adatToken(r Reply) (tok []byte, ok bool, err error) {
	if r.Code != 335 && r.Code != 235 {
		return nil, false, nil
	}
	text := strings.Join(r.Lines, "")
	i := strings.Index(text, "ADAT=")
	if i < 0 {
		return nil, false, nil
	}
	b64 := strings.TrimSpace(text[i+len("ADAT="):])
	if j := strings.IndexAny(b64, " \t"); j >= 0 {
		b64 = b64[:j]
	}
	tok, err = base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, false, fmt.Errorf("%w: bad base64 in the %d reply: %v", gss.ErrProtocol, r.Code, err)
	}
	return tok, true, nil
}

// maxWrappedLine bounds one protected reply line: base64 of a TLS record
// carrying a reply line of up to 64 KiB.
const maxWrappedLine = 256 << 10

// unwrapReader turns the protected replies of a GSI or Kerberos session
// back into the plaintext they carry: each protected line (a code in
// codes) holds one token whose plaintext is one original reply line with
// its CRLF. Unprotected replies are accepted only when negative (4xx,
// 5xx), such as the plaintext 530 a server sends when it cannot wrap: a
// forged one could only fail a command, which whoever can forge it could
// anyway.
type unwrapReader struct {
	lr *wire.LineReader
	// unwrap returns the plaintext of one token: the mechanism's part.
	unwrap func(tok []byte) ([]byte, error)
	codes  []string // the protected reply codes: 631, 632, 633 for GSI
	mech   string   // "GSI" or "Kerberos", for errors
	buf    []byte
	// plain is the code of an unprotected multi-line reply being passed
	// through, or "".
	plain string
}

func newUnwrapReader(r io.Reader, mech string, unwrap func([]byte) ([]byte, error), codes ...string) *unwrapReader {
	return &unwrapReader{lr: wire.NewLineReader(r, maxWrappedLine), unwrap: unwrap, codes: codes, mech: mech}
}

func (u *unwrapReader) Read(p []byte) (int, error) {
	for len(u.buf) == 0 {
		line, err := u.lr.ReadLine()
		if err != nil {
			return 0, err
		}
		if u.buf, err = u.open(line); err != nil {
			return 0, err
		}
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}

// ErrUnprotectedReply is returned for a positive reply that arrives
// without protection after GSI or Kerberos authentication; the error
// wrapping it names the mechanism.
var ErrUnprotectedReply = errors.New("client: unprotected reply")

func (u *unwrapReader) open(line string) ([]byte, error) {
	if u.plain != "" {
		if line == u.plain || strings.HasPrefix(line, u.plain+" ") {
			u.plain = ""
		}
		return []byte(line + "\r\n"), nil
	}
	if line == "" {
		return nil, nil
	}
	if len(line) >= 4 && slices.Contains(u.codes, line[:3]) && (line[3] == ' ' || line[3] == '-') {
		tok, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line[4:]))
		if err != nil {
			return nil, fmt.Errorf("client: protected reply: bad base64: %w", err)
		}
		plain, err := u.unwrap(tok)
		if err != nil {
			return nil, fmt.Errorf("client: protected reply: %w", err)
		}
		if !bytes.HasSuffix(plain, []byte("\n")) {
			plain = append(plain, '\r', '\n')
		}
		return plain, nil
	}
	if len(line) >= 3 && (line[0] == '4' || line[0] == '5') && isDigits(line[1:3]) {
		if len(line) > 3 && line[3] == '-' {
			u.plain = line[:3]
		}
		return []byte(line + "\r\n"), nil
	}
	if len(line) > 80 {
		line = line[:80] + "…"
	}
	return nil, fmt.Errorf("%w after %s authentication: %q", ErrUnprotectedReply, u.mech, line)
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sendWrapped writes one command line protected: ENC and the base64 of
// the TLS record holding the line and its CRLF.
func (c *Conn) sendWrapped(line string) error {
	c.wbuf = append(append(c.wbuf[:0], line...), '\r', '\n')
	tok, err := c.gsi.sec.Wrap(c.wbuf)
	if err != nil {
		return fmt.Errorf("client: wrap: %w", err)
	}
	n := base64.StdEncoding.EncodedLen(len(tok))
	out := make([]byte, 0, 4+n+2)
	out = append(out, "ENC "...)
	out = base64.StdEncoding.AppendEncode(out, tok)
	out = append(out, '\r', '\n')
	_, err = c.nc.Write(out)
	return err
}

// gsiDataCommands sets up data channel security after login: DCAU N, or
// DCAU A when asked for explicitly, and PBSZ with PROT S or P.
func (c *Conn) gsiDataCommands(ctx context.Context) error {
	g := c.gsi
	if dc := g.cfg.DataCredential; dc != nil {
		if err := c.sendDCSC(ctx, dc); err != nil {
			return err
		}
		// The credential replaces DCAU's: ask for DCAU A explicitly.
		if _, err := c.expect(ctx, 2, "DCAU A"); err != nil {
			return fmt.Errorf("client: DCAU A: %w", err)
		}
	}
	switch g.cfg.DataAuth {
	case DataAuthNone:
		if _, err := c.expect(ctx, 2, "DCAU N"); err != nil {
			return fmt.Errorf("client: DCAU N: %w", err)
		}
		g.dcau = false
	case DataAuthSelf:
		if _, err := c.expect(ctx, 2, "DCAU A"); err != nil {
			return fmt.Errorf("client: DCAU A: %w", err)
		}
	}
	if p := g.cfg.Protection; p == ProtSafe || p == ProtPrivate {
		if _, err := c.expect(ctx, 2, "PBSZ %d", pbsz); err != nil {
			return fmt.Errorf("client: PBSZ: %w", err)
		}
		if _, err := c.expect(ctx, 2, "PROT %c", byte(p)); err != nil {
			return fmt.Errorf("client: PROT %c: %w", byte(p), err)
		}
		g.prot = p
	}
	c.dsec = g.dataSecurity(c.dialTimeout())
	return nil
}

// GSI reports about the Conn's GSI session: whether there is one, the
// server's verified identity and whether a proxy was delegated to it.
func (c *Conn) GSI() (ok bool, serverIdentity string, delegated bool) {
	if c.gsi == nil {
		return false, "", false
	}
	return true, c.gsi.serverDN, c.gsi.delegated
}

var _ io.Reader = (*unwrapReader)(nil)
