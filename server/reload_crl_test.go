package server_test

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// writeCRL writes the PKI's CA CRL with the given number and ThisUpdate,
// revoking revoked.
func writeCRL(t *testing.T, pki *gsipki.PKI, number int64, thisUpdate time.Time, revoked ...*x509.Certificate) {
	t.Helper()
	ca := pki.CA.Chain[0]
	list := &x509.RevocationList{
		Number: big.NewInt(number), ThisUpdate: thisUpdate, NextUpdate: ca.NotAfter,
		SignatureAlgorithm: x509.SHA256WithRSA,
	}
	for _, c := range revoked {
		list.RevokedCertificateEntries = append(list.RevokedCertificateEntries,
			x509.RevocationListEntry{SerialNumber: c.SerialNumber, RevocationTime: time.Now()})
	}
	der, err := x509.CreateRevocationList(rand.Reader, list, ca, pki.CA.Key)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := gsi.SubjectHash(ca.RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	if err := gsi.WriteFileAtomic(filepath.Join(pki.TrustDir, hash+".r0"), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReloadCRLRollback: once a CRL revoking a user is in force, a reload
// that finds the CRL deleted, or replaced by an older one, is refused
// (naming the CA) and the user stays refused; a newer CRL is taken.
func TestReloadCRLRollback(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, addr, cfg := reloadServer(t, pki)
	clientTrust := copyDir(t, pki.TrustDir)
	ca := pki.CA.Chain[0]
	hash, err := gsi.SubjectHash(ca.RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	crl := filepath.Join(pki.TrustDir, hash+".r0")
	base := time.Now().Add(-time.Hour).Truncate(time.Second)

	writeCRL(t, pki, 5, base, pki.User.Chain[0])
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatalf("Reload with a CRL revoking the user = %v", err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Fatal("a revoked user logged in")
	}

	if err := os.Remove(crl); err != nil {
		t.Fatal(err)
	}
	_, err = srv.Reload(cfg)
	if !partRefused(err, "trust directory") {
		t.Fatalf("CRL deleted: Reload = %v, want the trust directory refused", err)
	}
	t.Logf("deleted: %v", err)
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Fatal("a revoked user logged in after the CRL was deleted and the server reloaded")
	}

	// An older CRL (a lower number; then an earlier ThisUpdate) that does
	// not revoke the user.
	writeCRL(t, pki, 4, base)
	if _, err := srv.Reload(cfg); !partRefused(err, "trust directory") {
		t.Fatalf("lower CRL Number: Reload = %v, want the trust directory refused", err)
	}
	writeCRL(t, pki, 5, base.Add(-time.Minute))
	if _, err := srv.Reload(cfg); !partRefused(err, "trust directory") {
		t.Fatalf("earlier ThisUpdate: Reload = %v, want the trust directory refused", err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Fatal("a revoked user logged in after an older CRL was reloaded")
	}

	// A newer CRL is taken, even one that un-revokes.
	writeCRL(t, pki, 6, base.Add(time.Minute))
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatalf("newer CRL: Reload = %v", err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err != nil {
		t.Fatalf("login after a newer CRL un-revoked the user: %v", err)
	}
}
