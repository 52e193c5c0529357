package stripe

// Data channel security on the movers. A GSI session's data channels are
// authenticated with the session's credential (its delegated proxy, else
// the host's) and checked against the session's DCAU setting; a mover
// needs both to secure its own data connections. Requests carry the
// check (its mode and DN, which the mover turns into a verifier with its
// own trust store) and name the credential: a delegated proxy goes to
// each mover once per link, in a credential message over the sealed link;
// otherwise the mover uses its own host credential (Mover.Certificate), so
// the frontend's long-term key never leaves it.

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
)

// Security is a session's data channel security on the wire.
type Security struct {
	Style     dcsec.Style `json:"style"`
	Level     dcsec.Level `json:"level"`
	AuthzMode byte        `json:"authz,omitempty"` // 'A', 'S' or 0
	AuthzDN   string      `json:"dn,omitempty"`
	// Cred is the fingerprint of the delegated credential the link got
	// in a credential message; nil: the mover's own host credential.
	Cred []byte `json:"cred,omitempty"`
}

// securityOf describes cfg for the movers; nil stays nil. cred is the
// credential message to send each mover first, when the session's
// credential is a delegated proxy; nil when the movers use their own.
func securityOf(cfg *dcsec.Config) (sec *Security, cred *Msg, err error) {
	if cfg == nil {
		return nil, nil, nil
	}
	if cfg.Certificate == nil || len(cfg.Certificate.Certificate) == 0 {
		return nil, nil, errors.New("no credential for the data channels")
	}
	if cfg.VerifyPeer != nil && cfg.Authz.Mode == 0 {
		return nil, nil, errors.New("the data channel check cannot be passed to the movers")
	}
	sec = &Security{Style: cfg.Style, Level: cfg.Level, AuthzMode: cfg.Authz.Mode, AuthzDN: cfg.Authz.DN}
	leaf := cfg.Certificate.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cfg.Certificate.Certificate[0]); err != nil {
			return nil, nil, fmt.Errorf("the credential: %w", err)
		}
	}
	if info, err := gsi.ProxyInfoOf(leaf); err != nil || info == nil {
		return sec, nil, nil // a host credential stays here: each mover has its own
	}
	key, err := x509.MarshalPKCS8PrivateKey(cfg.Certificate.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("the credential's key: %w", err)
	}
	cred = &Msg{Type: TypeCredential, Chain: cfg.Certificate.Certificate, Key: key}
	sec.Cred = fingerprint(cred)
	return sec, cred, nil
}

// fingerprint identifies a credential message's credential (as
// securityOf's Cred).
func fingerprint(m *Msg) []byte {
	h := sha256.New()
	for _, c := range m.Chain {
		h.Write(c)
	}
	h.Write(m.Key)
	return h.Sum(nil)
}

// equal reports whether s and o describe the same security.
func (s *Security) equal(o *Security) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Style == o.Style && s.Level == o.Level && s.AuthzMode == o.AuthzMode && s.AuthzDN == o.AuthzDN &&
		bytes.Equal(s.Cred, o.Cred)
}

func (s *Security) check() error {
	switch {
	case s.Style != dcsec.GSI && s.Style != dcsec.FTPS:
		return errors.New("security style")
	case s.Level != dcsec.Clear && s.Level != dcsec.Safe && s.Level != dcsec.Private:
		return errors.New("protection level")
	case s.Cred != nil && len(s.Cred) != sha256.Size:
		return errors.New("credential")
	case s.AuthzMode != 0 && s.AuthzMode != 'A' && s.AuthzMode != 'S':
		return errors.New("authorization mode")
	}
	return nil
}

// parseCredential rebuilds a credential message's certificate.
func parseCredential(m *Msg) (*tls.Certificate, error) {
	chain, err := gsi.ParseChain(m.Chain)
	if err != nil {
		return nil, fmt.Errorf("the session's credential: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(m.Key)
	if err != nil {
		return nil, fmt.Errorf("the session's key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("the session's key cannot sign")
	}
	return &tls.Certificate{Certificate: m.Chain, PrivateKey: key, Leaf: chain[0]}, nil
}

// config rebuilds the data channel security on a mover with cert (the
// session's delegated credential or the mover's own); the peer's chain is
// verified with trust.
func (s *Security) config(trust *gsi.TrustStore, cert *tls.Certificate) *dcsec.Config {
	cfg := &dcsec.Config{Style: s.Style, Level: s.Level, Server: true, Certificate: cert,
		Authz: dcsec.Authorization{Mode: s.AuthzMode, DN: s.AuthzDN}}
	switch s.AuthzMode {
	case 'A':
		cfg.VerifyPeer = dcsec.SelfAuthorization(trust, s.AuthzDN)
	case 'S':
		cfg.VerifyPeer = dcsec.SubjectAuthorization(trust, s.AuthzDN)
	}
	return cfg
}
