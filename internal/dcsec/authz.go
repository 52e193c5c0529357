package dcsec

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

// SelfAuthorization returns a VerifyPeer function for DCAU A: the peer's
// chain must be valid in trust, and its identity (the end-entity DN, proxy
// CNs stripped) must equal identity, this side's own (GCT's "self"
// authorization). DNs are in the one-line form and compared as OpenSSL
// compares names: ASCII case and runs of white space do not matter.
func SelfAuthorization(trust *gsi.TrustStore, identity string) func([]*x509.Certificate) error {
	return func(chain []*x509.Certificate) error {
		id, err := verify(trust, chain)
		if err != nil {
			return err
		}
		if !SameDN(id.DN, identity) {
			return fmt.Errorf("peer identity %q is not ours (%q)", id.DN, identity)
		}
		return nil
	}
}

// SubjectAuthorization returns a VerifyPeer function for DCAU S: the peer's
// chain must be valid in trust and its identity must be subject (one-line
// form, as given to DCAU S).
func SubjectAuthorization(trust *gsi.TrustStore, subject string) func([]*x509.Certificate) error {
	return func(chain []*x509.Certificate) error {
		id, err := verify(trust, chain)
		if err != nil {
			return err
		}
		if !SameDN(id.DN, subject) {
			return fmt.Errorf("peer identity %q is not the expected subject %q", id.DN, subject)
		}
		return nil
	}
}

func verify(trust *gsi.TrustStore, chain []*x509.Certificate) (*gsi.Identity, error) {
	if trust == nil {
		return nil, errors.New("no trust store to verify the peer with")
	}
	if len(chain) == 0 {
		return nil, errors.New("the peer presented no certificate")
	}
	id, err := trust.Verify(chain, time.Now())
	if err != nil {
		return nil, fmt.Errorf("peer certificate %q: %w", gsi.CertDN(chain[0]), err)
	}
	return id, nil
}

// SameDN reports whether two one-line DNs name the same subject: equal, or
// equal once ASCII case is folded and runs of white space are collapsed
// (and white space around separators dropped), as OpenSSL's canonical
// name comparison treats them.
func SameDN(a, b string) bool {
	return a == b || canonDN(a) == canonDN(b)
}

func canonDN(s string) string {
	var sb strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			space = true
			continue
		}
		if space && sb.Len() > 0 && c != '/' && c != '=' {
			if last := sb.String()[sb.Len()-1]; last != '/' && last != '=' {
				sb.WriteByte(' ')
			}
		}
		space = false
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		sb.WriteByte(c)
	}
	return sb.String()
}
