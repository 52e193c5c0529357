// Package dcsectest builds small grid PKIs for tests of secured data
// channels: a CA written as a GCT trust directory (hashed certificate and
// signing policy), end-entity certificates it signs, and RFC 3820 proxies
// made with gsi.NewProxy.
package dcsectest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync/atomic"
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

	serial atomic.Int64
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
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	name, err := gsi.ParseDN(Prefix + "/CN=Ferry Test CA")
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		RawSubject:            name,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            -1,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SignatureAlgorithm:    x509.SHA256WithRSA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	hash, err := gsi.SubjectHash(ca.RawSubject)
	if err != nil {
		return nil, err
	}
	caDN := gsi.CertDN(ca)
	policy := fmt.Sprintf("access_id_CA X509 '%s'\npos_rights globus CA:sign\ncond_subjects globus '\"%s/*\"'\n", caDN, Prefix)
	if err := os.WriteFile(filepath.Join(dir, hash+".0"), gsi.EncodeCertsPEM(ca), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, hash+".signing_policy"), []byte(policy), 0o644); err != nil {
		return nil, err
	}
	ts, err := gsi.LoadTrustDir(dir)
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, Trust: ts, CA: &gsi.Credential{Chain: []*x509.Certificate{ca}, Key: key}}
	p.serial.Store(100)
	return p, nil
}

// User issues an end-entity certificate "Prefix/CN=<cn>" with a new
// 2048-bit key. Its Identity is that DN.
func (p *PKI) User(t testing.TB, cn string) *gsi.Credential {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	name, err := gsi.ParseDN(Prefix + "/CN=" + cn)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:       big.NewInt(p.serial.Add(1)),
		RawSubject:         name,
		NotBefore:          now.Add(-time.Hour),
		NotAfter:           now.Add(7 * 24 * time.Hour),
		KeyUsage:           x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:        []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		SignatureAlgorithm: x509.SHA256WithRSA,
	}
	ca := p.CA.Leaf()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, p.CA.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &gsi.Credential{Chain: []*x509.Certificate{cert, ca}, Key: key}
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
