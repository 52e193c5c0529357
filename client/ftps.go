package client

// Explicit FTPS (RFC 4217, the ftps:// way): AUTH TLS on the control
// channel before anything else is sent, then USER/PASS inside TLS, then
// PBSZ 0 and PROT P so that every data connection is a TLS connection.
//
//	client                              server
//	  <------------------------------------ 220 greeting
//	  AUTH TLS --------------------------->
//	  <------------------------------------ 234 (anything else: fail)
//	  ===== TLS handshake (client is TLS client) =====
//	  USER, PASS, FEAT, SITE CLIENTINFO, TYPE I
//	  PBSZ 0, PROT P --------------------->  (refused: fail)
//	  data connections: TLS, the server is the TLS server whoever
//	  connects (RFC 4217 §9; dcsec.FTPS)

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/wire"
)

// FTPSConfig makes a Conn use explicit FTPS (RFC 4217): AUTH TLS right
// after the greeting, so that the login and every later command, reply
// and data connection are protected by TLS (PBSZ 0 and PROT P at Login,
// as curl --ssl-reqd does). Nothing is ever sent in clear after the
// greeting: a server that refuses AUTH TLS or PROT P, or whose
// certificate is not accepted, fails the Dial or the Login.
//
// The server's certificate must chain to RootCAs (the system roots when
// nil) or be accepted by Trust with GSI's rules, and name the host (or
// ServerName); with ServerSubject it must instead have that identity in
// Trust.
type FTPSConfig struct {
	// RootCAs verifies the server's chain with crypto/x509. Nil means the
	// system's roots.
	RootCAs *x509.CertPool

	// Trust, when not nil, also verifies the server's chain: a grid trust
	// directory (see LoadTrustStore), as gsiftp:// uses it. A chain
	// either RootCAs or Trust accepts passes.
	Trust *TrustStore

	// ServerName is the host name (or IP address) the server's
	// certificate must name, and the TLS server name sent. Empty means
	// the host of Dial's address (NewConn: the IP address connected to).
	ServerName string

	// ServerSubject, when set, is the exact identity (one-line DN) the
	// server's certificate must have in Trust; it replaces the host name
	// check, as GSIConfig.ServerSubject does.
	ServerSubject string

	// Certificate, when not nil, is presented as the TLS client
	// certificate (a proxy or end-entity credential, as GSI uses); a
	// Ferry or GCT-style server maps its identity through its
	// grid-mapfile. Login with an empty user then asks for that mapping
	// (GlobusMapping). Nil presents none, and a password is needed.
	Certificate *Credential

	// MinTLSVersion and MaxTLSVersion bound the TLS versions of the
	// control and data channels. Zero means TLS 1.2 and the highest Go
	// supports; nothing below 1.2 is offered.
	MinTLSVersion, MaxTLSVersion uint16
}

// ErrTLSRefused is returned (wrapped, with the server's *ReplyError) when
// the server refuses AUTH TLS: an FTPS Conn never continues in clear.
var ErrTLSRefused = errors.New("client: the server refused AUTH TLS (FTPS); not continuing without TLS")

// ErrDataProtectionRefused is returned (wrapped, with the server's
// *ReplyError) when an FTPS server refuses PBSZ or PROT P: data would
// flow in clear.
var ErrDataProtectionRefused = errors.New("client: the server refused protected data channels (PBSZ 0, PROT P); not transferring data in clear")

// ErrThirdPartyFTPS is returned by ThirdParty when either Conn uses FTPS:
// RFC 4217 makes each server the TLS server of its data connections, so
// two servers cannot secure a connection between them without SSCN or
// CPSV, which Ferry's server does not offer, and it does not let an
// unauthenticated FTPS data peer be another host anyway.
var ErrThirdPartyFTPS = errors.New("client: third-party transfers between FTPS (ftps://) servers are not supported: both servers would be TLS servers of the data connection (no SSCN); copy through the client instead")

// validate checks the configuration before anything is dialed.
func (f *FTPSConfig) validate(now time.Time) error {
	if f.ServerSubject != "" && f.Trust == nil {
		return errors.New("client: FTPSConfig.ServerSubject needs a Trust store to verify the subject with")
	}
	if f.Certificate != nil {
		if err := checkCredential(f.Certificate, now); err != nil {
			return err
		}
	}
	if f.MinTLSVersion != 0 && f.MinTLSVersion < tls.VersionTLS12 {
		return errors.New("client: TLS below 1.2 is not offered")
	}
	return nil
}

// ftpsState is a Conn's FTPS session after AUTH TLS.
type ftpsState struct {
	cfg  FTPSConfig
	host string // the name the server's certificates must have
	cert *tls.Certificate
	tls  tls.ConnectionState // of the control channel
}

func (f *FTPSConfig) tlsVersions() (lo, hi uint16) {
	lo = f.MinTLSVersion
	if lo == 0 {
		lo = tls.VersionTLS12
	}
	return lo, f.MaxTLSVersion
}

// verifyServer checks a chain the server presented (control or data
// channel): against RootCAs and then Trust for host, or against Trust for
// ServerSubject.
func (f *FTPSConfig) verifyServer(chain []*x509.Certificate, host string) error {
	if len(chain) == 0 {
		return &ServerCertError{Host: host, Subject: f.ServerSubject, Err: errors.New("the server presented no certificate")}
	}
	now := time.Now()
	if f.ServerSubject != "" {
		id, err := f.Trust.Verify(chain, now)
		if err != nil {
			return &ServerCertError{Subject: f.ServerSubject, Err: err}
		}
		if !sameDN(id.DN, f.ServerSubject) {
			return &ServerCertError{Subject: f.ServerSubject, Err: fmt.Errorf("%w: the server is %q", ErrSubjectMismatch, id.DN)}
		}
		return nil
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	// The chain first, then the name: x509's Verify would report a wrong
	// name before an unknown authority.
	_, sysErr := chain[0].Verify(x509.VerifyOptions{
		Roots:         f.RootCAs,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if sysErr == nil {
		if err := chain[0].VerifyHostname(strings.Trim(host, "[]")); err != nil {
			return &ServerCertError{Host: host, Err: err}
		}
		return nil
	}
	if f.Trust == nil {
		return &ServerCertError{Host: host, Err: sysErr}
	}
	_, err := f.Trust.VerifyHost(chain, host, now)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gsi.ErrHostMismatch):
		// Trusted by the trust directory, for another name.
		return &ServerCertError{Host: host, Err: err}
	}
	return &ServerCertError{Host: host, Err: fmt.Errorf("%w; trust directory %s: %w", sysErr, f.Trust.Dir(), err)}
}

// controlTLS is the TLS configuration of the control channel.
func (f *FTPSConfig) controlTLS(host string, cert *tls.Certificate) *tls.Config {
	lo, hi := f.tlsVersions()
	cfg := &tls.Config{
		// Verified by VerifyConnection: RootCAs or the grid trust
		// directory, whose rules crypto/x509 does not know.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return f.verifyServer(cs.PeerCertificates, host)
		},
		MinVersion: lo,
		MaxVersion: hi,
	}
	if net.ParseIP(strings.Trim(host, "[]")) == nil {
		cfg.ServerName = host
	}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg
}

// authTLS runs AUTH TLS and the TLS handshake on the control connection;
// host is the name the server's certificate must have. On any failure
// the caller closes the Conn, and nothing has been sent but AUTH TLS.
func (c *Conn) authTLS(ctx context.Context, f *FTPSConfig, host string) error {
	if f.ServerName != "" {
		host = f.ServerName
	}
	st := &ftpsState{cfg: *f, host: host}
	if f.Certificate != nil {
		cert := f.Certificate.TLSCertificate()
		st.cert = &cert
	}
	r, err := c.cmd(ctx, "AUTH TLS")
	if err != nil {
		return err
	}
	if r.Code != 234 {
		return fmt.Errorf("%w: %w", ErrTLSRefused, &ReplyError{Reply: r})
	}
	if n := c.raw.Buffered(); n > 0 {
		// Bytes after 234 and before the handshake were not protected:
		// they must not be read as replies.
		return fmt.Errorf("client: AUTH TLS: %d unexpected bytes from the server before the TLS handshake", n)
	}
	tc := tls.Client(c.nc, f.controlTLS(host, st.cert))
	if err := tc.HandshakeContext(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("client: AUTH TLS: %w", context.Cause(ctx))
		}
		var sce *ServerCertError
		if errors.As(err, &sce) {
			return sce
		}
		return fmt.Errorf("client: AUTH TLS handshake: %w", err)
	}
	st.tls = tc.ConnectionState()
	c.nc = tc
	c.raw = bufio.NewReader(tc)
	c.rs.setReader(wire.NewReplyReader(c.raw))
	c.ftps = st
	c.log.Debug("FTPS control channel", "tls", tls.VersionName(st.tls.Version), "client-certificate", st.cert != nil)
	return nil
}

// ftpsDataCommands asks for protected data channels after login: PBSZ 0
// and PROT P (RFC 4217 §8–§9). Data connections are secured only once
// the server has accepted PROT P, and a refusal fails the login.
func (c *Conn) ftpsDataCommands(ctx context.Context) error {
	rs, err := c.cmds(ctx, "PBSZ 0", "PROT P")
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Class() != 2 {
			return fmt.Errorf("%w: %w", ErrDataProtectionRefused, &ReplyError{Reply: r})
		}
	}
	c.dsec = c.ftps.dataSecurity(c.dialTimeout())
	return nil
}

// dataSecurity is the dcsec configuration of an FTPS session's data
// connections (PROT P): the client is the TLS client of every data
// connection, also of those it accepts in active mode, and the server
// must present a certificate for the control channel's host.
func (st *ftpsState) dataSecurity(handshakeTimeout time.Duration) *dcsec.Config {
	lo, hi := st.cfg.tlsVersions()
	cfg, host := &st.cfg, st.host
	return &dcsec.Config{
		Style:            dcsec.FTPS,
		Level:            dcsec.Private,
		Certificate:      st.cert,
		VerifyPeer:       func(chain []*x509.Certificate) error { return cfg.verifyServer(chain, host) },
		ServerName:       host,
		MinVersion:       lo,
		MaxVersion:       hi,
		HandshakeTimeout: handshakeTimeout,
	}
}

// FTPS reports whether the Conn's control channel is protected by AUTH
// TLS, and its TLS version (tls.VersionTLS13…).
func (c *Conn) FTPS() (ok bool, version uint16) {
	if c.ftps == nil {
		return false, 0
	}
	return true, c.ftps.tls.Version
}

// ftpsTCP marks the TCP connection under an FTPS data connection, so that
// closeData ends it with close_notify as RFC 4217 asks (GSI peers get a
// bare FIN).
type ftpsTCP struct{ *net.TCPConn }

// markFTPS wraps nc for an FTPS data connection.
func markFTPS(nc net.Conn) net.Conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		return ftpsTCP{tc}
	}
	return nc
}

// dataStyle is the dcsec style to end dc with.
func dataStyle(dc net.Conn) dcsec.Style {
	if _, ok := dcsec.NetConn(dc).(ftpsTCP); ok {
		return dcsec.FTPS
	}
	return dcsec.GSI
}

// checkThirdPartyFTPS refuses a third-party transfer with an FTPS Conn.
func checkThirdPartyFTPS(src, dst *Conn) error {
	if src.ftps != nil || dst.ftps != nil {
		return ErrThirdPartyFTPS
	}
	return nil
}

// validateSecurity checks the GSI or FTPS configuration before anything
// is dialed.
func (cfg *Config) validateSecurity(now time.Time) error {
	if cfg.GSI != nil && cfg.FTPS != nil {
		return errors.New("client: Config.GSI and Config.FTPS exclude each other")
	}
	if cfg.GSI != nil {
		return cfg.GSI.validate(now)
	}
	if cfg.FTPS != nil {
		return cfg.FTPS.validate(now)
	}
	return nil
}
