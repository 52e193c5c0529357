package server_test

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// writeForeignCRL writes a CRL issued and signed by other's CA (and
// revoking nothing) at the name of pki's CA CRL, <hash>.r0.
func writeForeignCRL(t *testing.T, pki, other *gsipki.PKI, thisUpdate time.Time) {
	t.Helper()
	hash, err := gsi.SubjectHash(pki.CA.Chain[0].RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	oca := other.CA.Chain[0]
	list := &x509.RevocationList{Number: big.NewInt(99), ThisUpdate: thisUpdate, NextUpdate: oca.NotAfter, SignatureAlgorithm: x509.SHA256WithRSA}
	der, err := x509.CreateRevocationList(rand.Reader, list, oca, other.CA.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := gsi.WriteFileAtomic(filepath.Join(pki.TrustDir, hash+".r0"), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Another CA's CRL (newer, revoking nothing) put in place of the CA's
// <hash>.r0 must not un-revoke the CA's certificates: Reload refuses it.
func TestReloadCRLForeignIssuer(t *testing.T) {
	pki := gsipki.New(t, "")
	other := gsipki.New(t, "")
	srv, addr, cfg := reloadServer(t, pki)
	clientTrust := copyDir(t, pki.TrustDir)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	writeCRL(t, pki, 5, base, pki.User.Chain[0])
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Fatal("revoked user logged in")
	}
	writeForeignCRL(t, pki, other, base.Add(time.Minute))
	if _, err := srv.Reload(cfg); err == nil {
		t.Error("Reload accepted another CA's CRL at the CA's name")
	} else {
		t.Logf("reload: %v", err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Error("revoked user logged in after another CA's CRL replaced the CA's CRL")
	}
}

// A server started with another CA's CRL at the CA's name fails closed:
// the CA's certificates are refused.
func TestCRLForeignIssuerAtStart(t *testing.T) {
	pki := gsipki.New(t, "")
	other := gsipki.New(t, "")
	clientTrust := copyDir(t, pki.TrustDir)
	writeForeignCRL(t, pki, other, time.Now().Add(-time.Hour).Truncate(time.Second))
	_, addr, _ := reloadServer(t, pki)
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Error("a user of a CA whose CRL file is another CA's logged in")
	} else {
		t.Logf("login: %v", err)
	}
}
