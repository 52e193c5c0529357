package pi

// Control-channel security (RFC 2228): AUTH GSSAPI with GSI (ADAT tokens,
// then every command in ENC and every reply line in 632, gsi.md §3–§5) and
// AUTH TLS (RFC 4217, FTPS); and the data-channel settings that depend on
// it, DCAU and PROT (gsi.md §6).

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/gss"
	"github.com/ferrygrid/ferry/internal/wire"
)

// Security configures AUTH GSSAPI and AUTH TLS. Fields are read only.
type Security struct {
	// Host is the server's credential: it offers AUTH GSSAPI and, unless
	// TLSCertificate is set, is also the AUTH TLS certificate.
	Host *gsi.Credential
	// Trust verifies GSI peers and client certificates; required with Host.
	Trust *gsi.TrustStore
	// TLSCertificate is the certificate for AUTH TLS (FTPS); nil uses Host.
	TLSCertificate *tls.Certificate
	// RequireProtection refuses logins (other than anonymous ones, which the
	// Login function judges) on a control channel without AUTH.
	RequireProtection bool
	// MinTLS and MaxTLS bound the TLS versions; 0 means 1.2 and 1.3.
	MinTLS, MaxTLS uint16
}

func (sec *Security) tlsCert() *tls.Certificate {
	if sec.TLSCertificate != nil {
		return sec.TLSCertificate
	}
	if sec.Host != nil {
		c := sec.Host.TLSCertificate()
		return &c
	}
	return nil
}

// LoginRequest is what a client presented to log in.
type LoginRequest struct {
	User, Password string
	// Protected reports that the control channel is protected (GSI or TLS).
	Protected bool
	// Identity is the verified certificate identity (GSI, or a client
	// certificate over AUTH TLS); nil when there is none.
	Identity *gsi.Identity
}

// secMode is how the control channel is protected.
type secMode int

const (
	secNone secMode = iota
	secGSI
	secTLS
)

// handshakeTimeout bounds AUTH TLS and each ADAT step.
const handshakeTimeout = 30 * time.Second

// errUnprotected marks a plain command on a GSI-protected channel.
var errUnprotected = errors.New("pi: command not protected")

func cmdAUTH(ctx context.Context, s *session, arg string) wire.Reply {
	sec := s.cfg.Security
	if s.sec != secNone || s.gssPending != nil {
		return ok(503, "Already authenticated.")
	}
	switch strings.ToUpper(strings.TrimSpace(arg)) {
	case "GSSAPI":
		if sec == nil || sec.Host == nil || sec.Trust == nil {
			return ok(504, "GSSAPI authentication is not configured on this server.")
		}
		s.gssPending = s.newAcceptor()
		return ok(334, "Using authentication type; ADAT must follow.")
	case "TLS", "SSL", "TLS-C":
		if sec == nil || sec.tlsCert() == nil {
			return ok(504, "TLS is not configured on this server.")
		}
		s.startTLS = true // the executor switches after writing 234
		return ok(234, "Using authentication type %s.", strings.ToUpper(strings.TrimSpace(arg)))
	}
	return ok(504, "Unknown authentication type.")
}

// newAcceptor prepares the GSI security context of this session.
func (s *session) newAcceptor() *gss.Context {
	sec := s.cfg.Security
	cert := sec.Host.TLSCertificate()
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAnyClientCert,
		MinVersion:   max(sec.MinTLS, tls.VersionTLS12),
		MaxVersion:   sec.MaxTLS,
		// GSI chains hold proxies, which crypto/x509 does not understand:
		// the trust store verifies them.
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			chain, err := parseChain(raw)
			if err != nil {
				return err
			}
			id, err := sec.Trust.Verify(chain, time.Now())
			if err != nil {
				s.log.Warn("GSI peer refused", "err", err)
				return err
			}
			s.gssIdentity = id
			return nil
		},
	}
	return gss.Accept(&gss.AcceptorConfig{
		TLS: cfg,
		Delegate: func(peer []*x509.Certificate) ([]byte, func([]byte) error, error) {
			bits := 2048
			if k, isRSA := peer[0].PublicKey.(*rsa.PublicKey); isRSA {
				bits = max(k.N.BitLen(), 2048)
			}
			req, key, err := gsi.NewProxyRequest(bits)
			if err != nil {
				return nil, nil, err
			}
			return req, func(certDER []byte) error {
				cred, err := gsi.AssembleDelegated(certDER, key, peer)
				if err != nil {
					return err
				}
				s.delegated = cred
				return nil
			}, nil
		},
	})
}

func parseChain(raw [][]byte) ([]*x509.Certificate, error) {
	if len(raw) == 0 {
		return nil, errors.New("no certificate presented")
	}
	chain := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return nil, err
		}
		chain = append(chain, c)
	}
	return chain, nil
}

func cmdADAT(ctx context.Context, s *session, arg string) wire.Reply {
	g := s.gssPending
	if g == nil {
		return ok(503, "Send AUTH GSSAPI first.")
	}
	token, err := base64.StdEncoding.DecodeString(strings.TrimSpace(arg))
	if err != nil {
		s.gssPending = nil
		g.Close()
		return ok(501, "ADAT: the token is not base64.")
	}
	sctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	out, done, err := g.Step(sctx, token)
	if err != nil {
		s.gssPending = nil
		g.Close()
		s.log.Warn("GSI authentication failed", "err", err)
		return ok(535, "GSSAPI authentication failed: %s", reason(err))
	}
	if !done {
		return ok(335, "ADAT=%s", base64.StdEncoding.EncodeToString(out))
	}
	s.gssPending = nil
	s.gssCtx.Store(g)
	s.sec = secGSI
	s.log = s.log.With("dn", s.gssIdentity.DN)
	s.log.Info("GSI authenticated", "delegated", s.delegated != nil, "tls", tlsVersion(g.ConnectionState().Version))
	r := ok(235, "GSSAPI Authentication successful.")
	if len(out) > 0 {
		r = ok(235, "ADAT=%s", base64.StdEncoding.EncodeToString(out))
	}
	// This reply is the last in clear; every later one is wrapped.
	s.send(r)
	s.rw.setWrap(func(line []byte) ([]byte, error) { return g.Wrap(line) })
	return wire.Reply{}
}

// reason is an error's text for a reply: one line, bounded.
func reason(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

func tlsVersion(v uint16) string { return tls.VersionName(v) }

// unwrapLine turns an ENC/MIC/CONF line into the command it protects; the
// reader calls it for every line once a GSI context exists.
func (s *session) unwrapLine(g *gss.Context, line string) (string, error) {
	verb, arg, _ := strings.Cut(line, " ")
	switch strings.ToUpper(verb) {
	case "ENC", "MIC", "CONF":
	default:
		return "", errUnprotected
	}
	token, err := base64.StdEncoding.DecodeString(strings.TrimSpace(arg))
	if err != nil {
		return "", fmt.Errorf("%w: token is not base64", gss.ErrProtocol)
	}
	plain, err := g.Unwrap(token)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(plain), "\r\n"), nil
}

// switchTLS runs the AUTH TLS handshake on the control connection after the
// 234 reply, and hands the TLS connection to the reader.
func (s *session) switchTLS(ctx context.Context) {
	sec := s.cfg.Security
	cfg := &tls.Config{
		Certificates: []tls.Certificate{*sec.tlsCert()},
		MinVersion:   max(sec.MinTLS, tls.VersionTLS12),
		MaxVersion:   sec.MaxTLS,
	}
	if sec.Trust != nil {
		// A client certificate may stand in for a password (mapped like a GSI identity).
		cfg.ClientAuth = tls.RequestClientCert
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return nil
			}
			chain, err := parseChain(raw)
			if err != nil {
				return err
			}
			id, err := sec.Trust.Verify(chain, time.Now())
			if err != nil {
				s.log.Warn("TLS client certificate refused", "err", err)
				return err
			}
			s.gssIdentity = id
			return nil
		}
	}
	tc := tls.Server(s.conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		s.log.Warn("AUTH TLS handshake failed", "err", err)
		s.switched <- nil
		s.quit = true
		return
	}
	s.sec = secTLS
	s.rw.setConn(tc)
	s.switched <- tc
	s.log.Info("TLS control channel", "tls", tlsVersion(tc.ConnectionState().Version))
}

// dataSecurity is the data-channel configuration for the session's DCAU
// and PROT settings; nil means plain TCP.
func (s *session) dataSecurity() *dcsec.Config {
	sec := s.cfg.Security
	switch s.sec {
	case secTLS:
		if s.prot == 'C' {
			return nil
		}
		return &dcsec.Config{Style: dcsec.FTPS, Level: dcsec.Level(s.prot), Server: true, Certificate: sec.tlsCert()}
	case secGSI:
		if s.dcau == 'N' {
			return nil
		}
		cred := s.delegated
		if cred == nil {
			cred = sec.Host
		}
		cert := cred.TLSCertificate()
		cfg := &dcsec.Config{Style: dcsec.GSI, Level: dcsec.Level(s.prot), Server: true, Certificate: &cert}
		if s.dcau == 'S' {
			cfg.VerifyPeer = dcsec.SubjectAuthorization(sec.Trust, s.dcauSubject)
			cfg.Authz = dcsec.Authorization{Mode: 'S', DN: s.dcauSubject}
		} else {
			cfg.VerifyPeer = dcsec.SelfAuthorization(sec.Trust, s.gssIdentity.DN)
			cfg.Authz = dcsec.Authorization{Mode: 'A', DN: s.gssIdentity.DN}
		}
		return cfg
	}
	return nil
}

// applyDataSecurity hands the current settings to the DTP, which drops its
// cached connections (they were secured under the old settings).
func (s *session) applyDataSecurity() {
	s.dtp.SetSecurity(s.dataSecurity())
}
