package gsi_test

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

const issueCADN = "/C=US/O=Issue Test/CN=Issue Test CA"

// newIssueCA makes a CA and its trust directory (with an empty CRL).
func newIssueCA(t *testing.T) (ca *gsi.CA, trustDir string) {
	t.Helper()
	ca, err := gsi.NewCA(issueCADN, gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	trustDir = filepath.Join(t.TempDir(), "certificates")
	if err := ca.WriteTrustDir(trustDir); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCRL(trustDir); err != nil {
		t.Fatal(err)
	}
	return ca, trustDir
}

func TestNewCA(t *testing.T) {
	ca, trustDir := newIssueCA(t)
	c := ca.Cert
	if gsi.CertDN(c) != issueCADN || !c.IsCA || !c.BasicConstraintsValid || c.MaxPathLen != -1 ||
		c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign || c.SignatureAlgorithm != x509.SHA256WithRSA {
		t.Errorf("CA certificate: %s IsCA %v pathlen %d usage %b sig %v", gsi.CertDN(c), c.IsCA, c.MaxPathLen, c.KeyUsage, c.SignatureAlgorithm)
	}
	if age := time.Since(c.NotBefore); age < 59*time.Minute || age > 62*time.Minute {
		t.Errorf("notBefore %v ago, want an hour", age)
	}
	if life := time.Until(c.NotAfter); life < 364*24*time.Hour || life > 367*24*time.Hour {
		t.Errorf("notAfter in %v, want a year", life)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if got := ca.PolicyPrefix(); got != "/C=US/O=Issue Test" {
		t.Errorf("PolicyPrefix = %q", got)
	}
	hash, err := gsi.SubjectHash(c.RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{hash + ".0", hash + ".signing_policy", hash + ".r0"} {
		if fi, err := os.Stat(filepath.Join(trustDir, name)); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v %v", name, fi, err)
		}
	}
	ts, err := gsi.LoadTrustDir(trustDir)
	if err != nil {
		t.Fatal(err)
	}
	if p := ts.Problems(); len(p) != 0 || len(ts.Certificates()) != 1 {
		t.Errorf("trust directory: %d CAs, problems %q", len(ts.Certificates()), p)
	}
	if err := ca.WriteTrustDir(trustDir); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("writing the trust directory again: %v", err)
	}
	if _, err := ca.Issue(gsi.UserCert, "/C=US/O=Issue Test/CN=x", gsi.IssueOptions{}); err != nil {
		t.Error(err)
	}
}

func TestNewCAErrors(t *testing.T) {
	for _, tc := range []struct {
		name, subject string
		opt           gsi.IssueOptions
	}{
		{"bad DN", "CN=no slash", gsi.IssueOptions{}},
		{"small key", issueCADN, gsi.IssueOptions{Bits: 1024}},
		{"huge key", issueCADN, gsi.IssueOptions{Bits: 32768}},
		{"hosts", issueCADN, gsi.IssueOptions{Hosts: []string{"localhost"}}},
		{"ends before it begins", issueCADN, gsi.IssueOptions{NotAfter: time.Now().Add(-2 * time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ca, err := gsi.NewCA(tc.subject, tc.opt); err == nil {
				t.Errorf("NewCA made %s", gsi.CertDN(ca.Cert))
			}
		})
	}
}

func TestPolicyPrefix(t *testing.T) {
	for _, tc := range []struct{ dn, want string }{
		{"/O=Ferry/OU=Test/CN=Ferry Test CA", "/O=Ferry"},
		{"/C=US/O=Grid/O=Lab/CN=CA", "/C=US/O=Grid/O=Lab"},
		{"/C=US/OU=Unit/CN=CA", "/C=US/OU=Unit"},
		{"/CN=Lone CA", ""},
	} {
		name, err := gsi.ParseDN(tc.dn)
		if err != nil {
			t.Fatal(err)
		}
		ca := &gsi.CA{Cert: &x509.Certificate{RawSubject: name}}
		if got := ca.PolicyPrefix(); got != tc.want {
			t.Errorf("PolicyPrefix(%s) = %q, want %q", tc.dn, got, tc.want)
		}
	}
}

// issueCase is a certificate TestIssue issues and what it must be.
type issueCase struct {
	name     string
	kind     gsi.CertKind
	subject  string
	opt      gsi.IssueOptions
	usage    x509.KeyUsage
	ext      []x509.ExtKeyUsage
	dns, ips []string
	life     time.Duration // from now, roughly
}

// TestIssue issues certificates of each kind and checks them with the
// package's own verifier, as end-entity certificates and as the issuers
// of proxies.
func TestIssue(t *testing.T) {
	ca, trustDir := newIssueCA(t)
	ts, err := gsi.LoadTrustDir(trustDir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tc := range []issueCase{
		{name: "host", kind: gsi.HostCert, subject: "/C=US/O=Issue Test/OU=hosts/CN=localhost",
			opt:   gsi.IssueOptions{Hosts: []string{"localhost", "127.0.0.1", "::1", "data.example.org"}},
			usage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ext:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			dns:   []string{"localhost", "data.example.org"}, ips: []string{"127.0.0.1", "::1"},
			life: time.Until(ca.Cert.NotAfter)},
		{name: "host without SANs", kind: gsi.HostCert, subject: "/C=US/O=Issue Test/CN=bare.example.org",
			opt:   gsi.IssueOptions{Bits: 3072, NotAfter: now.Add(48 * time.Hour)},
			usage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ext:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			life:  48 * time.Hour},
		{name: "user", kind: gsi.UserCert, subject: "/C=US/O=Issue Test/OU=users/CN=Jane Doe",
			opt:   gsi.IssueOptions{NotBefore: now.Add(-5 * time.Minute), NotAfter: now.AddDate(0, 0, 30)},
			usage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
			ext:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			life:  30 * 24 * time.Hour},
		{name: "user outliving the CA", kind: gsi.UserCert, subject: "/C=US/O=Issue Test/CN=Long Lived",
			opt:   gsi.IssueOptions{NotAfter: now.AddDate(5, 0, 0)},
			usage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
			ext:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			life:  time.Until(ca.Cert.NotAfter)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cred, err := ca.Issue(tc.kind, tc.subject, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkIssuedCert(t, ca, cred, tc)
			checkIssuedVerifies(t, ts, cred, tc)
		})
	}
}

// checkIssuedCert checks the fields of the certificate cred that ca
// issued for tc.
func checkIssuedCert(t *testing.T, ca *gsi.CA, cred *gsi.Credential, tc issueCase) {
	t.Helper()
	c := cred.Leaf()
	if len(cred.Chain) != 1 || gsi.CertDN(c) != tc.subject || c.IsCA || !c.BasicConstraintsValid {
		t.Errorf("chain of %d, subject %s, IsCA %v", len(cred.Chain), gsi.CertDN(c), c.IsCA)
	}
	if c.KeyUsage != tc.usage || !slices.Equal(c.ExtKeyUsage, tc.ext) {
		t.Errorf("key usage %b %v, want %b %v", c.KeyUsage, c.ExtKeyUsage, tc.usage, tc.ext)
	}
	var ips []string
	for _, ip := range c.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Equal(c.DNSNames, tc.dns) || !slices.Equal(ips, tc.ips) {
		t.Errorf("SANs %v %v, want %v %v", c.DNSNames, ips, tc.dns, tc.ips)
	}
	if d := time.Until(c.NotAfter) - tc.life; d < -time.Minute || d > time.Minute || c.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("notAfter %v, want about now + %v, by %v", c.NotAfter, tc.life, ca.Cert.NotAfter)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 {
		t.Errorf("serial %v", c.SerialNumber)
	}
}

// checkIssuedVerifies checks that the trust store ts verifies cred,
// issued for tc, for its host names and as the issuer of an
// impersonation proxy and a limited one below it.
func checkIssuedVerifies(t *testing.T, ts *gsi.TrustStore, cred *gsi.Credential, tc issueCase) {
	t.Helper()
	id, err := ts.Verify(cred.Chain, time.Now())
	if err != nil || id.DN != tc.subject || id.Proxy {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
	for _, h := range append(slices.Clone(tc.dns), tc.ips...) {
		if _, err := ts.VerifyHost(cred.Chain, h, time.Now()); err != nil {
			t.Errorf("VerifyHost %s: %v", h, err)
		}
	}
	if _, err := ts.VerifyHost(cred.Chain, "other.example.org", time.Now()); !errors.Is(err, gsi.ErrHostMismatch) {
		t.Errorf("VerifyHost of another name: %v", err)
	}
	// Proxies chain: an impersonation proxy, and a limited one
	// below it.
	proxy, err := gsi.NewProxy(cred, gsi.ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limited, err := gsi.NewProxy(proxy, gsi.ProxyOptions{Limited: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*gsi.Credential{proxy, limited} {
		id, err := ts.Verify(p.Chain, time.Now())
		if err != nil || id.DN != tc.subject || !id.Proxy || id.Limited != (p == limited) {
			t.Errorf("Verify proxy of %d certificates = %+v, %v", len(p.Chain), id, err)
		}
	}
}

func TestIssueErrors(t *testing.T) {
	ca, _ := newIssueCA(t)
	for _, tc := range []struct {
		name, subject string
		kind          gsi.CertKind
		opt           gsi.IssueOptions
		want          string
	}{
		{"outside the signing policy", "/C=US/O=Elsewhere/CN=x", gsi.UserCert, gsi.IssueOptions{}, "would reject"},
		{"bad DN", "CN=x", gsi.UserCert, gsi.IssueOptions{}, "does not start with /"},
		{"user with hosts", "/C=US/O=Issue Test/CN=x", gsi.UserCert, gsi.IssueOptions{Hosts: []string{"localhost"}}, "no Hosts"},
		{"no kind", "/C=US/O=Issue Test/CN=x", 0, gsi.IssueOptions{}, "unknown certificate kind"},
		{"small key", "/C=US/O=Issue Test/CN=x", gsi.HostCert, gsi.IssueOptions{Bits: 1024}, "2048 to 16384"},
		{"ends before it begins", "/C=US/O=Issue Test/CN=x", gsi.HostCert, gsi.IssueOptions{NotAfter: time.Now().Add(-3 * time.Hour)}, "before it begins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ca.Issue(tc.kind, tc.subject, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Issue: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestWriteCRL revokes a certificate: the verifier then refuses it and
// its proxies, and still accepts the others.
func TestWriteCRL(t *testing.T) {
	ca, trustDir := newIssueCA(t)
	alice, err := ca.Issue(gsi.UserCert, "/C=US/O=Issue Test/CN=Alice", gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := ca.Issue(gsi.UserCert, "/C=US/O=Issue Test/CN=Bob", gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCRL(trustDir, alice.Leaf()); err != nil {
		t.Fatal(err)
	}
	ts, err := gsi.LoadTrustDir(trustDir)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := gsi.NewProxy(alice, gsi.ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, chain := range [][]*x509.Certificate{alice.Chain, proxy.Chain} {
		if _, err := ts.Verify(chain, time.Now()); !errors.Is(err, gsi.ErrRevoked) {
			t.Errorf("revoked chain of %d: %v", len(chain), err)
		}
	}
	if _, err := ts.Verify(bob.Chain, time.Now()); err != nil {
		t.Errorf("Bob: %v", err)
	}
}

// TestExpiredProxy makes a proxy whose lifetime started in the past.
func TestExpiredProxy(t *testing.T) {
	ca, trustDir := newIssueCA(t)
	ts, err := gsi.LoadTrustDir(trustDir)
	if err != nil {
		t.Fatal(err)
	}
	user, err := ca.Issue(gsi.UserCert, "/C=US/O=Issue Test/CN=Late", gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-2 * time.Hour)
	proxy, err := gsi.NewProxy(user, gsi.ProxyOptions{Start: start, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := proxy.Leaf().NotAfter; got.Sub(start.Add(time.Hour)).Abs() > time.Second {
		t.Errorf("notAfter %v, want %v", got, start.Add(time.Hour))
	}
	if _, err := ts.Verify(proxy.Chain, time.Now()); !errors.Is(err, gsi.ErrExpired) {
		t.Errorf("Verify: %v, want expired", err)
	}
}

// TestWriteCredential checks the files' modes (whatever the umask), that
// nothing is overwritten, and that LoadCredential and LoadCA read them
// back.
func TestWriteCredential(t *testing.T) {
	ca, trustDir := newIssueCA(t)
	dir := t.TempDir()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	caCert, caKey := filepath.Join(dir, "cacert.pem"), filepath.Join(dir, "cakey.pem")
	if err := gsi.WriteCredential(caCert, caKey, ca.Credential()); err != nil {
		t.Fatal(err)
	}
	host, err := ca.Issue(gsi.HostCert, "/C=US/O=Issue Test/CN=localhost", gsi.IssueOptions{Hosts: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	hostCert, hostKey := filepath.Join(dir, "hostcert.pem"), filepath.Join(dir, "hostkey.pem")
	if err := gsi.WriteCredential(hostCert, hostKey, host); err != nil {
		t.Fatal(err)
	}
	syscall.Umask(old)
	for name, mode := range map[string]os.FileMode{caCert: 0o644, caKey: 0o600, hostCert: 0o644, hostKey: 0o600} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", filepath.Base(name), fi, err, mode)
		}
	}
	back, err := gsi.LoadCredential(hostCert, hostKey)
	if err != nil || !back.Leaf().Equal(host.Leaf()) {
		t.Errorf("LoadCredential: %v", err)
	}

	// Neither file is overwritten; a key left without its certificate
	// is removed again.
	other, err := ca.Issue(gsi.UserCert, "/C=US/O=Issue Test/CN=Other", gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := gsi.WriteCredential(hostCert, hostKey, other); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("overwriting: %v", err)
	}
	newKey := filepath.Join(dir, "newkey.pem")
	if err := gsi.WriteCredential(hostCert, newKey, other); err == nil {
		t.Error("overwriting the certificate succeeded")
	}
	if _, err := os.Stat(newKey); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the key of a failed write is left: %v", err)
	}
	if back, err := gsi.LoadCredential(hostCert, hostKey); err != nil || !back.Leaf().Equal(host.Leaf()) {
		t.Errorf("the host credential changed: %v", err)
	}

	// LoadCA reads the CA back with its signing policy.
	loaded, err := gsi.LoadCA(caCert, caKey, trustDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loaded.Issue(gsi.UserCert, "/C=US/O=Elsewhere/CN=x", gsi.IssueOptions{}); err == nil {
		t.Error("a loaded CA issues outside its signing policy")
	}
	if _, err := loaded.Issue(gsi.UserCert, "/C=US/O=Issue Test/CN=y", gsi.IssueOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := gsi.LoadCA(hostCert, hostKey, ""); err == nil {
		t.Error("LoadCA accepts a host certificate")
	}
}
