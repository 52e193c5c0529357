package gsi

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests reach the checks of Verify that TestVerifyRejects (which
// needs OpenSSL and GCT's tools) does not: each builds its chain with
// crypto/x509 alone, so the checks are tested wherever Go is.

// pathPKI is a small PKI made in Go: a root CA in a trust directory
// and helpers to sign certificates below it.
type pathPKI struct {
	t    *testing.T
	now  time.Time
	root *CA
	dir  string // the trust directory holding root
}

func newPathPKI(t *testing.T) *pathPKI {
	t.Helper()
	root, err := NewCA("/O=Ferry Paths/CN=Paths Root CA", IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "certificates")
	if err := root.WriteTrustDir(dir); err != nil {
		t.Fatal(err)
	}
	return &pathPKI{t: t, now: time.Now(), root: root, dir: dir}
}

func (p *pathPKI) store() *TrustStore {
	p.t.Helper()
	ts, err := LoadTrustDir(p.dir)
	if err != nil {
		p.t.Fatal(err)
	}
	return ts
}

// key makes a P-256 key, quicker to make than RSA and as acceptable.
func (p *pathPKI) key() *ecdsa.PrivateKey {
	p.t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	return k
}

// sign completes tmpl (serial, subject dn unless it has a raw one,
// validity unless set) and signs it for pub with parent's key.
func (p *pathPKI) sign(tmpl *x509.Certificate, dn string, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer) *x509.Certificate {
	p.t.Helper()
	var err error
	if tmpl.SerialNumber == nil {
		if tmpl.SerialNumber, err = randomSerial(); err != nil {
			p.t.Fatal(err)
		}
	}
	if tmpl.RawSubject == nil {
		if tmpl.RawSubject, err = ParseDN(dn); err != nil {
			p.t.Fatal(err)
		}
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = p.now.Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = p.now.Add(24 * time.Hour)
	}
	if parent == nil {
		parent = tmpl
	}
	c, err := createCertificate(tmpl, parent, pub, parentKey)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// ca signs a CA certificate for key with subject dn; with keyUsage 0 it
// may sign certificates.
func (p *pathPKI) ca(dn string, key *ecdsa.PrivateKey, keyUsage x509.KeyUsage, parent *x509.Certificate, parentKey crypto.Signer, edit func(*x509.Certificate)) *x509.Certificate {
	p.t.Helper()
	if keyUsage == 0 {
		keyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	}
	tmpl := &x509.Certificate{IsCA: true, BasicConstraintsValid: true, MaxPathLen: -1, KeyUsage: keyUsage}
	if edit != nil {
		edit(tmpl)
	}
	return p.sign(tmpl, dn, &key.PublicKey, parent, parentKey)
}

// eec signs an end-entity certificate for key with subject dn.
func (p *pathPKI) eec(dn string, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey crypto.Signer, notAfter time.Time) *x509.Certificate {
	p.t.Helper()
	tmpl := &x509.Certificate{BasicConstraintsValid: true, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	return p.sign(tmpl, dn, &key.PublicKey, parent, parentKey)
}

// proxy signs an RFC 3820 proxy of issuer (whose key is issuerKey) with
// the ProxyCertInfo value pci; edit may change the template.
func (p *pathPKI) proxy(issuer *x509.Certificate, issuerKey crypto.Signer, pci []byte, edit func(*x509.Certificate)) *x509.Certificate {
	p.t.Helper()
	key := p.key()
	serial, err := randomSerial()
	if err != nil {
		p.t.Fatal(err)
	}
	subj, err := appendCN(issuer.RawSubject, serial.String())
	if err != nil {
		p.t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, RawSubject: subj, KeyUsage: x509.KeyUsageDigitalSignature,
		NotAfter:        issuer.NotAfter,
		ExtraExtensions: []pkix.Extension{{Id: OIDProxyCertInfo, Critical: true, Value: pci}}}
	if edit != nil {
		edit(tmpl)
	}
	return p.sign(tmpl, "", &key.PublicKey, issuer, issuerKey)
}

func (p *pathPKI) pci(lang asn1.ObjectIdentifier) []byte {
	p.t.Helper()
	v, err := marshalProxyCertInfo(lang, -1)
	if err != nil {
		p.t.Fatal(err)
	}
	return v
}

// wantRefused checks that Verify refuses chain with sentinel want and a
// reason containing text.
func wantRefused(t *testing.T, ts *TrustStore, chain []*x509.Certificate, want error, text string) {
	t.Helper()
	_, err := ts.Verify(chain, time.Now())
	var ve *VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, want) || !strings.Contains(err.Error(), text) {
		t.Fatalf("got %v, want %v containing %q", err, want, text)
	}
	t.Log(err)
}

func TestVerifyChainShape(t *testing.T) {
	p := newPathPKI(t)
	ts := p.store()
	user := p.eec("/O=Ferry Paths/CN=User", p.key(), p.root.Cert, p.root.Key, time.Time{})
	t.Run("too long", func(t *testing.T) {
		long := make([]*x509.Certificate, maxChain+1)
		for i := range long {
			long[i] = user
		}
		wantRefused(t, ts, long, ErrBadChain, "too long")
	})
	t.Run("nil certificate", func(t *testing.T) {
		wantRefused(t, ts, []*x509.Certificate{user, nil}, ErrBadChain, "nil certificate")
	})
}

func TestVerifyProxyChecks(t *testing.T) {
	p := newPathPKI(t)
	ts := p.store()
	userKey := p.key()
	user := p.eec("/O=Ferry Paths/CN=User", userKey, p.root.Cert, p.root.Key, time.Time{})
	t.Run("good proxy", func(t *testing.T) {
		px := p.proxy(user, userKey, p.pci(OIDPolicyInheritAll), nil)
		id := mustVerify(t, ts, []*x509.Certificate{px, user})
		if !id.Proxy || id.Limited || id.DN != "/O=Ferry Paths/CN=User" || len(id.Chain) != 3 {
			t.Errorf("identity %+v", id)
		}
	})
	t.Run("bad ProxyCertInfo", func(t *testing.T) {
		px := p.proxy(user, userKey, []byte{0x05, 0x00}, nil)
		wantRefused(t, ts, []*x509.Certificate{px, user}, ErrBadProxy, "ProxyCertInfo")
	})
	t.Run("proxy claims to be a CA", func(t *testing.T) {
		px := p.proxy(user, userKey, p.pci(OIDPolicyInheritAll), func(c *x509.Certificate) {
			c.IsCA, c.BasicConstraintsValid = true, true
		})
		wantRefused(t, ts, []*x509.Certificate{px, user}, ErrBadProxy, "claims to be a CA")
	})
	t.Run("unsupported policy language", func(t *testing.T) {
		px := p.proxy(user, userKey, p.pci(asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}), nil)
		wantRefused(t, ts, []*x509.Certificate{px, user}, ErrBadProxy, "unsupported proxy policy language")
	})
	t.Run("independent proxy", func(t *testing.T) {
		ind := p.proxy(user, userKey, p.pci(OIDPolicyIndependent), nil)
		id := mustVerify(t, ts, []*x509.Certificate{ind, user})
		if id.DN != CertDN(ind) {
			t.Errorf("independent proxy's identity %q, want %q", id.DN, CertDN(ind))
		}
	})
}

func TestVerifyCAPathChecks(t *testing.T) {
	p := newPathPKI(t)
	ts := p.store()
	t.Run("issuer is not a CA", func(t *testing.T) {
		k1 := p.key()
		e1 := p.eec("/O=Ferry Paths/CN=Not A CA", k1, p.root.Cert, p.root.Key, time.Time{})
		e2 := p.eec("/O=Ferry Paths/CN=Below Not A CA", p.key(), e1, k1, time.Time{})
		wantRefused(t, ts, []*x509.Certificate{e2, e1}, ErrUntrusted, "is not a CA certificate")
	})
	t.Run("issuer lacks keyCertSign", func(t *testing.T) {
		ik := p.key()
		inter := p.ca("/O=Ferry Paths/CN=No CertSign CA", ik, x509.KeyUsageDigitalSignature, p.root.Cert, p.root.Key, nil)
		e := p.eec("/O=Ferry Paths/CN=Below No CertSign", p.key(), inter, ik, time.Time{})
		wantRefused(t, ts, []*x509.Certificate{e, inter}, ErrUntrusted, "keyCertSign")
	})
	t.Run("issuer has name constraints", func(t *testing.T) {
		ik := p.key()
		inter := p.ca("/O=Ferry Paths/CN=Constrained CA", ik, 0, p.root.Cert, p.root.Key, func(c *x509.Certificate) {
			c.PermittedDNSDomains = []string{"example.org"}
		})
		e := p.eec("/O=Ferry Paths/CN=Below Constrained", p.key(), inter, ik, time.Time{})
		wantRefused(t, ts, []*x509.Certificate{e, inter}, ErrUntrusted, "name constraints")
	})
	t.Run("CA path length exceeded", func(t *testing.T) {
		ak := p.key()
		a := p.ca("/O=Ferry Paths/CN=Path Zero CA", ak, 0, p.root.Cert, p.root.Key, func(c *x509.Certificate) {
			c.MaxPathLen, c.MaxPathLenZero = 0, true
		})
		bk := p.key()
		b := p.ca("/O=Ferry Paths/CN=Below Path Zero CA", bk, 0, a, ak, nil)
		e := p.eec("/O=Ferry Paths/CN=Two Below", p.key(), b, bk, time.Time{})
		wantRefused(t, ts, []*x509.Certificate{e, b, a}, ErrPathLength, "CA path length exceeded")
	})
}

// TestVerifyCAPathLoop: two CAs of the trust directory that sign each
// other make an endless path, which Verify ends.
func TestVerifyCAPathLoop(t *testing.T) {
	p := newPathPKI(t)
	xk, yk := p.key(), p.key()
	xName, err := ParseDN("/O=Ferry Paths/CN=Loop X")
	if err != nil {
		t.Fatal(err)
	}
	yName, err := ParseDN("/O=Ferry Paths/CN=Loop Y")
	if err != nil {
		t.Fatal(err)
	}
	// Templates standing for the signers: their subject and key.
	xSigner := &x509.Certificate{RawSubject: xName, PublicKey: &xk.PublicKey}
	ySigner := &x509.Certificate{RawSubject: yName, PublicKey: &yk.PublicKey}
	x := p.ca("", xk, 0, ySigner, yk, func(c *x509.Certificate) { c.RawSubject = xName })
	y := p.ca("", yk, 0, xSigner, xk, func(c *x509.Certificate) { c.RawSubject = yName })
	for _, c := range []*x509.Certificate{x, y} {
		hash, err := SubjectHash(c.RawSubject)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p.dir, hash+".0"), EncodeCertsPEM(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := p.eec("/O=Ferry Paths/CN=Below The Loop", p.key(), x, xk, time.Time{})
	wantRefused(t, p.store(), []*x509.Certificate{e}, ErrBadChain, "CA path too long")
}

// TestVerifyNotAfter: the identity expires with the first certificate of
// its chain to expire, here the CA.
func TestVerifyNotAfter(t *testing.T) {
	p := newPathPKI(t)
	e := p.eec("/O=Ferry Paths/CN=Outlives Its CA", p.key(), p.root.Cert, p.root.Key, p.root.Cert.NotAfter.Add(24*time.Hour))
	id := mustVerify(t, p.store(), []*x509.Certificate{e})
	if !id.NotAfter.Equal(p.root.Cert.NotAfter) {
		t.Errorf("NotAfter %v, want the CA's %v", id.NotAfter, p.root.Cert.NotAfter)
	}
	if id.Proxy || id.DN != CertDN(e) || len(id.Chain) != 2 {
		t.Errorf("identity %+v", id)
	}
}
