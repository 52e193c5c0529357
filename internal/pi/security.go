package pi

// Control-channel security (RFC 2228): AUTH GSSAPI with GSI (ADAT tokens,
// then every command in ENC and every reply line in 632, gsi.md §3–§5) and
// AUTH TLS (RFC 4217, FTPS); and the data-channel settings that depend on
// it, DCAU and PROT (gsi.md §6).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/gss"
	"github.com/ferrygrid/ferry/internal/krb5gss"
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
	// Admit, when set, is asked about a peer that has completed the GSI
	// handshake and asks to delegate, before the server makes a key for
	// it: an identity that could never log in (a DN the grid-mapfile does
	// not know) is refused there and costs no key generation.
	Admit func(id *gsi.Identity) error
	// Kerberos, when set, also accepts AUTH GSSAPI with the Kerberos 5
	// mechanism (krb5.go); with it alone (no Host), AUTH GSSAPI is
	// Kerberos only.
	Kerberos *krb5gss.Acceptor
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
	// Identity is the certificate identity proved on this control channel
	// (a completed GSI exchange, or a completed TLS handshake with a client
	// certificate); nil when there is none. It never outlives the channel
	// state that proved it.
	Identity *gsi.Identity
	// Remote is the client's address, for limits per source.
	Remote netip.Addr
	// Principal is the Kerberos principal ("name@REALM") proved on this
	// control channel by a verified AP-REQ; "" when there is none.
	// Service is the service principal its ticket was for (name@REALM).
	Principal, Service string
	// Mechanism is how the control channel was authenticated: "gsi" (AUTH
	// GSSAPI with GSI), "krb5" (AUTH GSSAPI with Kerberos), "tls" (AUTH
	// TLS) or "" (not at all).
	Mechanism string
}

// secMode is how the control channel is protected.
type secMode int

const (
	secNone       secMode = iota
	secGSIPending         // AUTH GSSAPI accepted, ADAT exchange under way
	secGSI                // GSI context established
	secTLS                // AUTH TLS handshake completed
	secKrb5               // Kerberos context established (krb5.go)
)

// secState is the control channel's security as one value, so that its
// parts cannot disagree: an identity exists only in an established state,
// together with the context that proved it. Only the executor changes it;
// the reader sees the established GSI context through session.gssCtx.
type secState struct {
	mode    secMode
	pending *gsiPending   // secGSIPending only
	peer    *gsi.Identity // secGSI, or secTLS with a client certificate
	// delegated is the credential the client delegated (secGSI only).
	delegated *gsi.Credential
	// principal is the Kerberos principal and service the service
	// principal its ticket was for (secKrb5 only).
	principal, service string
}

// krbPrincipal is the proved Kerberos principal, or "".
func (st *secState) krbPrincipal() string {
	if st.mode == secKrb5 {
		return st.principal
	}
	return ""
}

// identity is the proved peer, or nil: only an established state has one.
func (st *secState) identity() *gsi.Identity {
	if st.mode == secGSI || st.mode == secTLS {
		return st.peer
	}
	return nil
}

// mechanism names how the channel was authenticated (LoginRequest.Mechanism).
func (st *secState) mechanism() string {
	switch st.mode {
	case secGSI:
		return "gsi"
	case secTLS:
		return "tls"
	case secKrb5:
		return "krb5"
	}
	return ""
}

// gsiPending is a GSI exchange under way. Its delegated credential is
// handed out only when the exchange completes.
type gsiPending struct {
	ctx       *gss.Context    // nil when only Kerberos is offered
	steps     int             // ADAT tokens seen; the first picks the mechanism
	delegated *gsi.Credential // written by the exchange goroutine before it ends
	timer     *time.Timer     // ends a GSI exchange that takes too long; nil when ctx is
	began     time.Time       // AUTH GSSAPI: the exchange's latency counts from here
}

func (p *gsiPending) close() {
	if p.ctx != nil {
		p.timer.Stop()
		p.ctx.Close()
	}
}

// handshakeTimeout bounds AUTH TLS and each ADAT step; gsiExchangeTimeout
// bounds the whole ADAT exchange, so that a client cannot hold a handshake
// slot by going quiet between tokens.
const (
	handshakeTimeout   = 30 * time.Second
	gsiExchangeTimeout = 60 * time.Second
)

// delegationKeyBits is the size of the key made for every delegation,
// whatever the peer's key size: the peer must not choose how much CPU the
// server spends before anything is authorized (2048 bits, as GCT's
// default proxies).
const delegationKeyBits = 2048

// maxAuthFailures is how many failed authentications (ADAT, AUTH TLS,
// PASS) a session may have; the next failure closes it.
const maxAuthFailures = 3

// errUnprotected marks a plain command on a GSI-protected channel.
var errUnprotected = errors.New("pi: command not protected")

func cmdAUTH(ctx context.Context, s *session, arg string) wire.Reply {
	sec := s.cfg.Security
	if s.sec.mode != secNone || s.acct != nil {
		return ok(503, "Already authenticated.")
	}
	if !s.cfg.AuthRate.Allow(remoteAddrPort(s.conn).Addr()) {
		// Each handshake costs the server a signature or more.
		s.log.Warn("AUTH refused: too many from this source")
		return ok(431, "Too many authentications from your address; try again later.")
	}
	switch strings.ToUpper(strings.TrimSpace(arg)) {
	case "GSSAPI":
		gsiOn := sec != nil && sec.Host != nil && sec.Trust != nil
		if !gsiOn && (sec == nil || sec.Kerberos == nil) {
			return ok(504, "GSSAPI authentication is not configured on this server.")
		}
		var p *gsiPending
		if gsiOn {
			p = s.newAcceptor()
		} else {
			// Kerberos only: the exchange is one ADAT, and there is no
			// GSI context for a timer to end.
			p = &gsiPending{began: time.Now()}
		}
		s.sec = secState{mode: secGSIPending, pending: p}
		return ok(334, "Using authentication type; ADAT must follow.")
	case "TLS", "SSL", "TLS-C":
		if sec == nil || sec.tlsCert() == nil {
			return ok(504, "TLS is not configured on this server.")
		}
		// No handshake slot: a TLS handshake costs the server a few
		// milliseconds of work, and waiting for a client that stalls
		// costs nothing; slots held across that wait were a lever
		// (sessions, their login timeout and per-source limits bound it).
		s.startTLS = true // the executor switches after writing 234
		return ok(234, "Using authentication type %s.", strings.ToUpper(strings.TrimSpace(arg)))
	}
	return ok(504, "Unknown authentication type.")
}

// newAcceptor prepares the GSI security context of this session. The
// callbacks only check; nothing they see becomes the session's identity
// (that comes from the completed exchange, in cmdADAT).
func (s *session) newAcceptor() *gsiPending {
	sec := s.cfg.Security
	cert := sec.Host.TLSCertificate()
	p := &gsiPending{began: time.Now()}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAnyClientCert,
		MinVersion:   max(sec.MinTLS, tls.VersionTLS12),
		MaxVersion:   sec.MaxTLS,
		// GSI chains hold proxies, which crypto/x509 does not understand:
		// the trust store verifies them. This runs before the peer has
		// proved its key, so it only refuses.
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			chain, err := parseChain(raw)
			if err != nil {
				return err
			}
			if _, err := sec.Trust.Verify(chain, time.Now()); err != nil {
				s.log.Warn("GSI peer refused", "err", err)
				return err
			}
			return nil
		},
	}
	p.ctx = gss.Accept(&gss.AcceptorConfig{
		TLS: cfg,
		// Delegation runs after the handshake, so the peer has proved its
		// key; it still costs a key generation, so an unmapped DN gets none.
		Delegate: func(peer []*x509.Certificate) ([]byte, func([]byte) error, error) {
			id, err := sec.Trust.Verify(peer, time.Now())
			if err != nil {
				return nil, nil, err
			}
			if sec.Admit != nil {
				if err := sec.Admit(id); err != nil {
					return nil, nil, fmt.Errorf("%w: %v", errNotAdmitted, err)
				}
			}
			req, key, err := gsi.NewProxyRequest(delegationKeyBits)
			if err != nil {
				return nil, nil, err
			}
			return req, func(certDER []byte) error {
				cred, err := gsi.AssembleDelegated(certDER, key, peer)
				if err != nil {
					return err
				}
				p.delegated = cred
				return nil
			}, nil
		},
	})
	p.timer = time.AfterFunc(gsiExchangeTimeout, func() {
		p.ctx.Close() // the next ADAT fails on the closed context
	})
	return p
}

// errNotAdmitted is a peer refused before delegation by Security.Admit.
var errNotAdmitted = errors.New("pi: identity not admitted")

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
	if s.sec.mode != secGSIPending {
		return ok(503, "Send AUTH GSSAPI first.")
	}
	p := s.sec.pending
	token, err := base64.StdEncoding.DecodeString(strings.TrimSpace(arg))
	if err != nil {
		return s.gsiFailed(p, errors.New("the token is not base64"), "ADAT: the token is not base64.", 535)
	}
	// A slot is held while the server works on a token, not while the
	// client thinks: idle exchanges hold nothing.
	release, ok2 := s.cfg.Handshakes.TryAcquire(remoteAddrPort(s.conn).Addr())
	if !ok2 {
		s.log.Warn("ADAT refused: too many handshakes in progress")
		return s.gsiFailed(p, errors.New("too many handshakes in progress"), "Too many authentications in progress; try again later.", 431)
	}
	first := p.steps == 0
	p.steps++
	// The first token picks the mechanism (krb5.go); neither falls back
	// to the other.
	if first && krb5gss.IsKerberos(token) {
		defer release()
		if s.cfg.Security.Kerberos == nil {
			return s.krbFailed(p, errors.New("Kerberos is not configured on this server"))
		}
		return s.acceptKerberos(p, token)
	}
	if p.ctx == nil {
		release()
		return s.krbFailed(p, errors.New("the first ADAT token is not a Kerberos 5 AP-REQ"))
	}
	sctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	out, done, err := p.ctx.Step(sctx, token)
	release()
	if err != nil {
		return s.gsiFailed(p, err, "GSSAPI authentication failed.", 535)
	}
	if !done {
		return ok(335, "ADAT=%s", base64.StdEncoding.EncodeToString(out))
	}
	// The identity is taken from the completed exchange only.
	var id *gsi.Identity
	chain := p.ctx.PeerChain()
	if chain == nil {
		err = errors.New("exchange ended without an established context")
	} else {
		id, err = s.cfg.Security.Trust.Verify(chain, time.Now())
	}
	if err != nil {
		return s.gsiFailed(p, err, "GSSAPI authentication failed.", 535)
	}
	p.timer.Stop()
	s.observeHandshake("gsi", p.began, nil)
	s.sec = secState{mode: secGSI, peer: id, delegated: p.delegated}
	s.user = "" // a USER sent in clear does not carry over (RFC 2228 §3)
	s.gssCtx.Store(p.ctx)
	s.log = s.log.With("dn", id.DN)
	s.log.Info("GSI authenticated", "delegated", p.delegated != nil, "tls", tlsVersion(p.ctx.ConnectionState().Version))
	r := ok(235, "GSSAPI Authentication successful.")
	if len(out) > 0 {
		r = ok(235, "ADAT=%s", base64.StdEncoding.EncodeToString(out))
	}
	// This reply is the last in clear; every later one is wrapped.
	s.send(r)
	g := p.ctx
	s.rw.setWrap(func(line []byte) ([]byte, error) { return g.Wrap(line) })
	return wire.Reply{}
}

// gsiFailed ends a failed GSI exchange: the session goes back to
// unauthenticated, with nothing of the exchange kept, and is closed after
// too many failures. The peer hears only that it failed; the log says why.
func (s *session) gsiFailed(p *gsiPending, err error, msg string, code int) wire.Reply {
	p.close()
	s.sec = secState{}
	s.observeHandshake("gsi", p.began, err)
	s.log.Warn("GSI authentication failed", "err", err)
	if code == 431 {
		return ok(code, "%s", msg) // the server's load, not the client's failure
	}
	return s.authFailed(code, msg)
}

// observeHandshake tells the observer of a handshake that began at began
// and ended now with err.
func (s *session) observeHandshake(mech string, began time.Time, err error) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.Handshake(mech, time.Since(began), err)
	}
}

// authFailed counts a failed authentication and answers it; past
// maxAuthFailures the session is closed.
func (s *session) authFailed(code int, msg string) wire.Reply {
	s.authFailures++
	if s.authFailures >= maxAuthFailures {
		s.quit = true
		s.log.Warn("too many failed authentications; closing", "failures", s.authFailures)
		return ok(421, "%s Too many failures; closing control connection.", msg)
	}
	return ok(code, "%s", msg)
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
// 234 reply, and hands the TLS connection to the reader. A client
// certificate becomes the session's identity only once the handshake has
// completed (and with it the check of the client's signature).
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
			if _, err := sec.Trust.Verify(chain, time.Now()); err != nil {
				s.log.Warn("TLS client certificate refused", "err", err)
				return err
			}
			return nil
		}
	}
	tc := tls.Server(s.conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	began := time.Now()
	err := tc.HandshakeContext(hctx)
	s.observeHandshake("tls", began, err)
	if err != nil {
		s.log.Warn("AUTH TLS handshake failed", "err", err)
		s.switched <- nil
		s.quit = true
		return
	}
	st := secState{mode: secTLS}
	if chain := tc.ConnectionState().PeerCertificates; len(chain) > 0 && sec.Trust != nil {
		id, err := sec.Trust.Verify(chain, time.Now())
		if err != nil {
			// Verified during the handshake; a failure now is a refusal.
			s.log.Warn("TLS client certificate refused", "err", err)
			s.switched <- nil
			s.quit = true
			return
		}
		st.peer = id
		s.log = s.log.With("dn", id.DN)
	}
	s.sec = st
	s.user = "" // a USER sent in clear does not carry over (RFC 2228 §3)
	s.rw.setConn(tc)
	s.switched <- tc
	s.log.Info("TLS control channel", "tls", tlsVersion(tc.ConnectionState().Version), "client-certificate", st.peer != nil)
}

// dataSecurity is the data-channel configuration for the session's DCAU
// and PROT settings; nil means plain TCP.
func (s *session) dataSecurity() *dcsec.Config {
	sec := s.cfg.Security
	switch s.sec.mode {
	case secTLS:
		if s.prot == 'C' {
			return nil
		}
		return &dcsec.Config{Style: dcsec.FTPS, Level: dcsec.Level(s.prot), Server: true, Certificate: sec.tlsCert()}
	case secGSI:
		if s.dcau == 'N' {
			return nil
		}
		if s.dcsc != nil {
			return s.dcscSecurity()
		}
		cred := s.sec.delegated
		if cred == nil {
			cred = sec.Host
		}
		cert := cred.TLSCertificate()
		cfg := &dcsec.Config{Style: dcsec.GSI, Level: dcsec.Level(s.prot), Server: true, Certificate: &cert}
		if s.dcau == 'S' {
			cfg.VerifyPeer = dcsec.SubjectAuthorization(sec.Trust, s.dcauSubject)
			cfg.Authz = dcsec.Authorization{Mode: 'S', DN: s.dcauSubject}
		} else {
			dn := s.sec.identity().DN
			cfg.VerifyPeer = dcsec.SelfAuthorization(sec.Trust, dn)
			cfg.Authz = dcsec.Authorization{Mode: 'A', DN: dn}
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
