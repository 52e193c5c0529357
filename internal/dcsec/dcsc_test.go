package dcsec

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

// selfSigned makes a self-signed credential with the DCSC subject.
func selfSigned(t *testing.T, key *rsa.PrivateKey, notBefore, notAfter time.Time) *gsi.Credential {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject:      pkix.Name{Country: []string{"US"}, CommonName: "Globus DCSC Cert"},
		NotBefore:    notBefore, NotAfter: notAfter,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &gsi.Credential{Chain: []*x509.Certificate{c}, Key: key}
}

func mustKey(t *testing.T, bits int) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encode(t *testing.T, c *gsi.Credential) []byte {
	t.Helper()
	b, err := EncodeDataCredential(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseDataCredential: what DCSC P accepts and refuses.
func TestParseDataCredential(t *testing.T) {
	now := time.Now()
	auto, err := NewAutoDataCredential(now)
	if err != nil {
		t.Fatal(err)
	}
	if dn := auto.Identity(); dn != AutoDataCredentialSubject {
		t.Errorf("auto credential subject %q", dn)
	}
	if leaf := auto.Leaf(); leaf.SignatureAlgorithm != x509.SHA256WithRSA || len(leaf.Extensions) != 0 || leaf.NotAfter.Sub(now) > AutoDataCredentialLifetime {
		t.Errorf("auto credential: %v, %d extensions, until %v", leaf.SignatureAlgorithm, len(leaf.Extensions), leaf.NotAfter)
	}
	bundle := encode(t, auto)
	// GCT's layout: the leaf, its key, the leaf again.
	if n := strings.Count(string(bundle), "BEGIN CERTIFICATE"); n != 2 || !strings.Contains(string(bundle), "BEGIN RSA PRIVATE KEY") {
		t.Errorf("bundle has %d certificates:\n%s", n, bundle)
	}
	got, err := ParseDataCredential(bundle, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Chain) != 1 || !got.Leaf().Equal(auto.Leaf()) {
		t.Errorf("parsed chain of %d, want the leaf once", len(got.Chain))
	}

	key := mustKey(t, 2048)
	other := mustKey(t, 2048)
	mismatch := append(gsi.EncodeCertsPEM(auto.Leaf()), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})...)
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"garbage":     {[]byte("not a pem"), "no certificate"},
		"no key":      {gsi.EncodeCertsPEM(auto.Leaf()), "no private key"},
		"foreign key": {mismatch, "does not belong"},
		"expired":     {encode(t, selfSigned(t, key, now.Add(-48*time.Hour), now.Add(-time.Hour))), "expired"},
		"not yet":     {encode(t, selfSigned(t, key, now.Add(time.Hour), now.Add(48*time.Hour))), "not valid before"},
		"weak":        {encode(t, selfSigned(t, mustKey(t, 1024), now.Add(-time.Hour), now.Add(time.Hour))), "too weak"},
		"too large":   {make([]byte, MaxDataCredential+1), "more than"},
	} {
		if _, err := ParseDataCredential(tc.data, now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

// TestDataCredentialChannel: under a DCSC credential both ends present
// it and accept it; a peer presenting another certificate, even one with
// the same subject, is refused by either end, at every level.
func TestDataCredentialChannel(t *testing.T) {
	now := time.Now()
	dc, err := NewAutoDataCredential(now)
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := NewAutoDataCredential(now) // same DN, another key
	if err != nil {
		t.Fatal(err)
	}
	f := getFixture(t)
	cfg := func(level Level, present, expect *gsi.Credential) *Config {
		return &Config{Style: GSI, Level: level, Certificate: certOf(present),
			VerifyPeer: DataCredentialAuthorization(expect, ""), HandshakeTimeout: 10 * time.Second}
	}
	for _, level := range []Level{Clear, Safe, Private} {
		c, l := secureBoth(t, cfg(level, dc, dc), cfg(level, dc, dc))
		if c.err != nil || l.err != nil {
			t.Fatalf("%v: same credential: %v / %v", level, c.err, l.err)
		}
		style := GSI
		transfer(t, c.c, l.c, style, randomData(t, 100000))

		for name, peer := range map[string]*gsi.Credential{"impostor": impostor, "user proxy": f.alice} {
			// The listener refuses the connector.
			c, l = secureBoth(t, cfg(level, peer, dc), cfg(level, dc, dc))
			if !errors.Is(l.err, ErrUnauthorized) || !strings.Contains(l.err.Error(), "not the session's data channel credential") {
				t.Errorf("%v: listener accepted the %s: %v", level, name, l.err)
			}
			// The connector refuses the listener.
			c, l = secureBoth(t, cfg(level, dc, dc), cfg(level, peer, dc))
			if !errors.Is(c.err, ErrUnauthorized) {
				t.Errorf("%v: connector accepted the %s: %v", level, name, c.err)
			}
			if l.err == nil {
				t.Errorf("%v: the %s's listener did not notice the refusal", level, name)
			}
		}
	}
	// DCAU S: the credential's identity must be the subject.
	verify := DataCredentialAuthorization(dc, "/C=US/CN=Somebody Else")
	if err := verify(dc.Chain); err == nil {
		t.Error("DCAU S with another subject accepted the credential")
	}
	if err := DataCredentialAuthorization(dc, AutoDataCredentialSubject)(dc.Chain); err != nil {
		t.Errorf("DCAU S with the credential's subject: %v", err)
	}
	if err := DataCredentialAuthorization(dc, "")(nil); err == nil {
		t.Error("no certificate accepted")
	}
}
