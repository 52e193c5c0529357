// Package dcsectest builds small grid PKIs for tests of secured data
// channels with gsi.NewCA: a CA written as a GCT trust directory (hashed
// certificate and signing policy), end-entity certificates it signs, and
// RFC 3820 proxies made with gsi.NewProxy.
package dcsectest

import (
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

// Prefix is the DN prefix of every certificate a PKI issues, and what its
// signing policy allows.
const Prefix = "/C=US/O=Ferry Test"

// PKI is a test CA with its trust directory.
type PKI struct {
	// Dir is the trust directory (X509_CERT_DIR).
	Dir string
	// Trust is Dir loaded.
	Trust *gsi.TrustStore
	// CA is the CA's credential.
	CA *gsi.Credential

	ca *gsi.CA
}

// New makes a CA "Prefix/CN=Ferry Test CA" and its trust directory under
// a temporary directory of t.
func New(t testing.TB) *PKI {
	t.Helper()
	p, err := NewIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// NewIn is New writing the trust directory to dir (which must exist).
func NewIn(dir string) (*PKI, error) {
	ca, err := gsi.NewCA(Prefix+"/CN=Ferry Test CA", gsi.IssueOptions{NotAfter: time.Now().Add(30 * 24 * time.Hour)})
	if err != nil {
		return nil, err
	}
	if err := ca.WriteTrustDir(dir); err != nil {
		return nil, err
	}
	ts, err := gsi.LoadTrustDir(dir)
	if err != nil {
		return nil, err
	}
	return &PKI{Dir: dir, Trust: ts, CA: ca.Credential(), ca: ca}, nil
}

// User issues a certificate "Prefix/CN=<cn>" with a new 2048-bit key,
// valid for a week, for clientAuth and serverAuth (either end of a data
// channel). Its chain is the certificate and the CA's; its Identity is
// that DN.
func (p *PKI) User(t testing.TB, cn string) *gsi.Credential {
	t.Helper()
	cred, err := p.ca.Issue(gsi.HostCert, Prefix+"/CN="+cn, gsi.IssueOptions{NotAfter: time.Now().Add(7 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	cred.Chain = append(cred.Chain, p.ca.Cert)
	return cred
}

// Proxy makes an RFC 3820 proxy of issuer (limited if asked), as
// grid-proxy-init or a delegation would.
func (p *PKI) Proxy(t testing.TB, issuer *gsi.Credential, limited bool) *gsi.Credential {
	t.Helper()
	c, err := gsi.NewProxy(issuer, gsi.ProxyOptions{Limited: limited, Bits: 2048})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
