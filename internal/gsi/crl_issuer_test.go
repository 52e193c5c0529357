package gsi_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// TestCRLWrongIssuer: a CRL at a CA's <hash>.r0 that another CA issued,
// or that names the CA but is signed by another key, is not the CA's
// CRL: the trust directory reports it, CRLVersions leaves it out, and
// the CA's certificates are refused (fail closed), as for a CRL that
// does not parse.
func TestCRLWrongIssuer(t *testing.T) {
	pki := gsipki.New(t, "")
	other := gsipki.New(t, "")
	ca := pki.CA.Chain[0]
	hash, err := gsi.SubjectHash(ca.RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	// A self-signed impostor with the CA's exact subject and its own key.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), RawSubject: ca.RawSubject,
		NotBefore: ca.NotBefore, NotAfter: ca.NotAfter,
		KeyUsage:              x509.KeyUsageCRLSign | x509.KeyUsageCertSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		issuer *x509.Certificate
		key    crypto.Signer
	}{
		{"another CA", other.CA.Chain[0], other.CA.Key.(crypto.Signer)},
		{"the CA's name, another key", impostor, key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := &x509.RevocationList{Number: big.NewInt(99), ThisUpdate: time.Now().Add(-time.Minute), NextUpdate: ca.NotAfter}
			der, err := x509.CreateRevocationList(rand.Reader, list, tc.issuer, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if err := gsi.WriteFileAtomic(filepath.Join(pki.TrustDir, hash+".r0"), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644); err != nil {
				t.Fatal(err)
			}
			ts, err := gsi.LoadTrustDir(pki.TrustDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts.Problems()) == 0 {
				t.Error("no problem reported for a CRL that is not the CA's")
			}
			t.Logf("problems: %v", ts.Problems())
			if v, ok := ts.CRLVersions()[hash]; ok {
				t.Errorf("CRLVersions counts %s", v.File)
			}
			if _, err := ts.Verify(pki.User.Chain, time.Now()); !errors.Is(err, gsi.ErrCRL) {
				t.Errorf("Verify of the CA's user: %v, want ErrCRL", err)
			}
		})
	}
	// The CA's own CRL is counted and lets its users in.
	pki.Revoke(t)
	ts, err := gsi.LoadTrustDir(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	if p := ts.Problems(); len(p) != 0 {
		t.Errorf("problems with the CA's own CRL: %v", p)
	}
	if _, ok := ts.CRLVersions()[hash]; !ok {
		t.Error("CRLVersions leaves out the CA's own CRL")
	}
	if _, err := ts.Verify(pki.User.Chain, time.Now()); err != nil {
		t.Errorf("Verify: %v", err)
	}
}
