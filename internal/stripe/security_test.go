package stripe

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
)

func testCert(t *testing.T) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mover test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestSecurityToMover: a session's data channel security survives the
// trip to a mover (credential, level, DCAU check), and what cannot be
// passed on is refused with a reason.
func TestSecurityToMover(t *testing.T) {
	cert := testCert(t)
	cfg := &dcsec.Config{Style: dcsec.GSI, Level: dcsec.Private, Certificate: cert,
		VerifyPeer: func([]*x509.Certificate) error { return nil }, Authz: dcsec.Authorization{Mode: 'S', DN: "/CN=peer"}}
	sec, err := securityOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Through a frame and back.
	b, err := AppendFrame(nil, &Msg{Type: TypePassive, Sec: sec})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ParseFrame(b)
	if err != nil || !m.Sec.equal(sec) {
		t.Fatalf("round trip: %v", err)
	}
	got, err := m.Sec.config(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Style != dcsec.GSI || got.Level != dcsec.Private || !got.Server || got.VerifyPeer == nil ||
		got.Authz != cfg.Authz || got.Certificate.Leaf == nil || !got.Certificate.PrivateKey.(*ecdsa.PrivateKey).Equal(cert.PrivateKey) {
		t.Errorf("rebuilt config: %+v", got)
	}
	// Without a trust store every peer is refused.
	if err := got.VerifyPeer([]*x509.Certificate{got.Certificate.Leaf}); err == nil || !strings.Contains(err.Error(), "trust") {
		t.Errorf("verify without a trust store: %v", err)
	}
	if sec, err := securityOf(nil); sec != nil || err != nil {
		t.Errorf("no security: %v %v", sec, err)
	}
	if _, err := securityOf(&dcsec.Config{Style: dcsec.GSI, Level: dcsec.Clear}); err == nil {
		t.Error("security without a credential accepted")
	}
	if _, err := securityOf(&dcsec.Config{Style: dcsec.GSI, Level: dcsec.Clear, Certificate: cert,
		VerifyPeer: func([]*x509.Certificate) error { return nil }}); err == nil {
		t.Error("a check the movers cannot rebuild accepted")
	}
	for name, bad := range map[string]string{
		"level":  `{"sec":{"style":0,"level":88,"chain":["AA=="],"key":"AA=="}}`,
		"chain":  `{"sec":{"style":0,"level":67,"chain":[],"key":"AA=="}}`,
		"authz":  `{"sec":{"style":0,"level":67,"chain":["AA=="],"key":"AA==","authz":90}}`,
		"style":  `{"sec":{"style":7,"level":67,"chain":["AA=="],"key":"AA=="}}`,
		"no key": `{"sec":{"style":0,"level":67,"chain":["AA=="]}}`,
	} {
		if _, _, err := ParseFrame(frame(t, bad, TypeSend)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
