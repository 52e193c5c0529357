package stripe

// Data channel security on the movers. A GSI session's data channels are
// authenticated with the session's credential (its delegated proxy, else
// the host's) and checked against the session's DCAU setting; a mover
// needs both to secure its own data connections. The frontend sends them
// with each transfer request over the sealed link: the credential as DER
// certificates and a PKCS #8 key, the check as its mode and DN, which the
// mover turns into a verifier with its own trust store.

import (
	"bytes"
	"crypto"
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
	Chain     [][]byte    `json:"chain"`           // DER, leaf first
	Key       []byte      `json:"key"`             // PKCS #8 DER of the leaf's key
	AuthzMode byte        `json:"authz,omitempty"` // 'A', 'S' or 0
	AuthzDN   string      `json:"dn,omitempty"`
}

// securityOf describes cfg for the movers; nil stays nil.
func securityOf(cfg *dcsec.Config) (*Security, error) {
	if cfg == nil {
		return nil, nil
	}
	if cfg.Certificate == nil || len(cfg.Certificate.Certificate) == 0 {
		return nil, errors.New("no credential for the data channels")
	}
	if cfg.VerifyPeer != nil && cfg.Authz.Mode == 0 {
		return nil, errors.New("the data channel check cannot be passed to the movers")
	}
	key, err := x509.MarshalPKCS8PrivateKey(cfg.Certificate.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("the credential's key: %w", err)
	}
	return &Security{Style: cfg.Style, Level: cfg.Level, Chain: cfg.Certificate.Certificate, Key: key,
		AuthzMode: cfg.Authz.Mode, AuthzDN: cfg.Authz.DN}, nil
}

// equal reports whether s and o describe the same security.
func (s *Security) equal(o *Security) bool {
	if s == nil || o == nil {
		return s == o
	}
	if s.Style != o.Style || s.Level != o.Level || s.AuthzMode != o.AuthzMode || s.AuthzDN != o.AuthzDN ||
		!bytes.Equal(s.Key, o.Key) || len(s.Chain) != len(o.Chain) {
		return false
	}
	for i := range s.Chain {
		if !bytes.Equal(s.Chain[i], o.Chain[i]) {
			return false
		}
	}
	return true
}

func (s *Security) check() error {
	switch {
	case s.Style != dcsec.GSI && s.Style != dcsec.FTPS:
		return errors.New("security style")
	case s.Level != dcsec.Clear && s.Level != dcsec.Safe && s.Level != dcsec.Private:
		return errors.New("protection level")
	case len(s.Chain) == 0 || len(s.Chain) > 16 || len(s.Key) == 0:
		return errors.New("credential")
	case s.AuthzMode != 0 && s.AuthzMode != 'A' && s.AuthzMode != 'S':
		return errors.New("authorization mode")
	}
	return nil
}

// config rebuilds the data channel security on a mover; the peer's chain
// is verified with trust.
func (s *Security) config(trust *gsi.TrustStore) (*dcsec.Config, error) {
	chain, err := gsi.ParseChain(s.Chain)
	if err != nil {
		return nil, fmt.Errorf("the session's credential: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(s.Key)
	if err != nil {
		return nil, fmt.Errorf("the session's key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("the session's key cannot sign")
	}
	cfg := &dcsec.Config{Style: s.Style, Level: s.Level, Server: true,
		Certificate: &tls.Certificate{Certificate: s.Chain, PrivateKey: key, Leaf: chain[0]},
		Authz:       dcsec.Authorization{Mode: s.AuthzMode, DN: s.AuthzDN}}
	switch s.AuthzMode {
	case 'A':
		cfg.VerifyPeer = dcsec.SelfAuthorization(trust, s.AuthzDN)
	case 'S':
		cfg.VerifyPeer = dcsec.SubjectAuthorization(trust, s.AuthzDN)
	}
	return cfg, nil
}
