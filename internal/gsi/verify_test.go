package gsi

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const userKU = "keyUsage=critical,digitalSignature,keyEncipherment"

func mustVerify(t *testing.T, ts *TrustStore, chain []*x509.Certificate) *Identity {
	t.Helper()
	id, err := ts.Verify(chain, time.Now())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return id
}

func TestVerifyAccepts(t *testing.T) {
	l := getLab(t)
	ts := l.store(t)
	uc, uk := l.user(t)
	user := loadCred(t, uc, uk)

	id := mustVerify(t, ts, user.Chain)
	if id.DN != labUserDN || id.Proxy || id.Limited {
		t.Errorf("EEC identity = %+v", id)
	}
	if len(id.Chain) != 2 || CertDN(id.Chain[1]) != labCADN {
		t.Errorf("verified chain has %d certificates", len(id.Chain))
	}

	// Our proxies: impersonation, limited, proxy of proxy, limited-ness
	// inherited from a limited issuer.
	p, err := NewProxy(user, ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := mustVerify(t, ts, p.Chain); id.DN != labUserDN || !id.Proxy || id.Limited {
		t.Errorf("proxy identity = %+v", id)
	}
	if got := p.Identity(); got != labUserDN {
		t.Errorf("Identity() = %q", got)
	}
	lim, err := NewProxy(user, ProxyOptions{Limited: true, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if id := mustVerify(t, ts, lim.Chain); !id.Limited || id.DN != labUserDN {
		t.Errorf("limited proxy identity = %+v", id)
	}
	pp, err := NewProxy(lim, ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := mustVerify(t, ts, pp.Chain); !id.Limited || len(id.Chain) != 4 {
		t.Errorf("proxy of limited proxy = %+v", id)
	}
	if info, _ := ProxyInfoOf(pp.Leaf()); info.Type != ProxyLimited {
		t.Errorf("proxy made from a limited proxy is %v", info.Type)
	}

	// Details of a proxy made like grid-proxy-init makes them.
	leaf := p.Leaf()
	if !strings.HasPrefix(CertDN(leaf), labUserDN+"/CN=") || CertDN(leaf) != labUserDN+"/CN="+leaf.SerialNumber.String() {
		t.Errorf("proxy subject %s, serial %s", CertDN(leaf), leaf.SerialNumber)
	}
	if leaf.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment|x509.KeyUsageDataEncipherment {
		t.Errorf("proxy key usage %b", leaf.KeyUsage)
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d != DefaultProxyLifetime+clockSkew {
		t.Errorf("proxy validity %v", d)
	}
	if leaf.SignatureAlgorithm != x509.SHA256WithRSA {
		t.Errorf("proxy signature %v", leaf.SignatureAlgorithm)
	}
	// A lifetime beyond the issuer's is clipped.
	long, err := NewProxy(user, ProxyOptions{Lifetime: 10000 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !long.Leaf().NotAfter.Equal(user.Leaf().NotAfter) {
		t.Errorf("long proxy notAfter %v, issuer's %v", long.Leaf().NotAfter, user.Leaf().NotAfter)
	}
	// Path length 1: one more proxy is fine, a second is refused by
	// NewProxy itself.
	pl1, err := NewProxy(user, ProxyOptions{PathLen: 1})
	if err != nil {
		t.Fatal(err)
	}
	pl1c, err := NewProxy(pl1, ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, ts, pl1c.Chain)
	if _, err := NewProxy(pl1c, ProxyOptions{}); err == nil {
		t.Error("NewProxy ignored the issuer's path length constraint")
	}
}

func TestVerifyGCTProxies(t *testing.T) {
	l := getLab(t)
	ts := l.store(t)
	uc, uk := l.user(t)
	d := t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		limited bool
		draft   bool
	}{
		{"rfc", []string{"-rfc"}, false, false},
		{"limited", []string{"-rfc", "-limited"}, true, false},
		{"draft", []string{"-draft"}, false, true},
		{"default", nil, false, false},
	} {
		out := filepath.Join(d, tc.name+".proxy")
		if o, err := l.gridProxyInit(t, uc, uk, out, tc.args...); err != nil {
			t.Fatalf("grid-proxy-init %s: %v\n%s", tc.name, err, o)
		}
		c := loadCred(t, out, out)
		id, err := ts.Verify(c.Chain, time.Now())
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if id.DN != labUserDN || !id.Proxy || id.Limited != tc.limited {
			t.Errorf("%s: identity %+v", tc.name, id)
		}
		if info, _ := ProxyInfoOf(c.Leaf()); info == nil || info.Draft != tc.draft {
			t.Errorf("%s: proxy info %+v", tc.name, info)
		}
		// The file layout GCT writes is what we write.
		data, _ := os.ReadFile(out)
		if blocks := pemTypes(data); strings.Join(blocks, ",") != "CERTIFICATE,PRIVATE KEY,CERTIFICATE" {
			t.Errorf("%s: grid-proxy-init wrote %v", tc.name, blocks)
		}
	}
	// A proxy of a GCT proxy, by GCT, and by us.
	rfc := filepath.Join(d, "rfc.proxy")
	two := filepath.Join(d, "two.proxy")
	if o, err := l.gridProxyInit(t, rfc, rfc, two, "-rfc"); err != nil {
		t.Fatalf("grid-proxy-init of a proxy: %v\n%s", err, o)
	}
	if id := mustVerify(t, ts, loadCred(t, two, two).Chain); len(id.Chain) != 4 {
		t.Errorf("proxy of proxy chain %d", len(id.Chain))
	}
	ours, err := NewProxy(loadCred(t, two, two), ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, ts, ours.Chain)

	// An independent proxy is its own identity.
	ind := filepath.Join(d, "ind.proxy")
	if o, err := l.gridProxyInit(t, uc, uk, ind, "-rfc", "-independent"); err != nil {
		t.Fatalf("grid-proxy-init -independent: %v\n%s", err, o)
	}
	c := loadCred(t, ind, ind)
	if id := mustVerify(t, ts, c.Chain); id.DN != CertDN(c.Leaf()) {
		t.Errorf("independent proxy identity %s", id.DN)
	}
}

func pemTypes(data []byte) []string {
	var out []string
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		out = append(out, b.Type)
	}
}

// TestGCTAcceptsOurProxies: GCT's tools read and verify proxies we make.
func TestGCTAcceptsOurProxies(t *testing.T) {
	l := getLab(t)
	needGCTProxyTools(t)
	uc, uk := l.user(t)
	user := loadCred(t, uc, uk)
	d := t.TempDir()
	env := []string{"X509_CERT_DIR=" + l.certDir, "X509_USER_PROXY=", "X509_USER_CERT=", "X509_USER_KEY="}
	for _, tc := range []struct {
		name string
		opt  ProxyOptions
		typ  string
	}{
		{"impersonation", ProxyOptions{}, "RFC 3820 compliant impersonation proxy"},
		{"limited", ProxyOptions{Limited: true}, "RFC 3820 compliant limited proxy"},
		{"bits3072", ProxyOptions{Bits: 3072, Lifetime: 2 * time.Hour}, "RFC 3820 compliant impersonation proxy"},
	} {
		p, err := NewProxy(user, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(d, tc.name)
		if err := WriteProxyFile(f, p); err != nil {
			t.Fatal(err)
		}
		info := sh(t, d, env, "grid-proxy-info", "-f", f)
		for _, want := range []string{"subject  : " + CertDN(p.Leaf()), "identity : " + labUserDN, "type     : " + tc.typ} {
			if !strings.Contains(info, want) {
				t.Errorf("%s: grid-proxy-info lacks %q:\n%s", tc.name, want, info)
			}
		}
		if _, err := shErr(d, env, "grid-proxy-info", "-f", f, "-exists", "-valid", "1:0"); err != nil {
			t.Errorf("%s: grid-proxy-info -exists -valid 1:0 failed: %v", tc.name, err)
		}
		// grid-proxy-init -verify validates our proxy (its chain, the
		// signing policy) against the trust directory before using it.
		out, err := l.gridProxyInit(t, f, f, f+".gct", "-verify", "-rfc")
		if err != nil {
			t.Errorf("%s: grid-proxy-init -verify from our proxy: %v\n%s", tc.name, err, out)
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	l := getLab(t)
	ts := l.store(t)
	uc, uk := l.user(t)
	user := loadCred(t, uc, uk)
	now := time.Now()
	d := t.TempDir()
	eec := func(name, dn string, bits int, md string, ext ...string) *Credential {
		c, k := l.cert(t, name, dn, bits, md, append([]string{"basicConstraints=critical,CA:FALSE"}, ext...)...)
		return loadCred(t, c, k)
	}
	gct := func(name string, c *Credential, args ...string) []*x509.Certificate {
		cf := filepath.Join(d, name+".in")
		if err := WriteProxyFile(cf, c); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(d, name+".proxy")
		if o, err := l.gridProxyInit(t, cf, cf, out, args...); err != nil {
			t.Fatalf("grid-proxy-init %s: %v\n%s", name, err, o)
		}
		return loadCred(t, out, out).Chain
	}
	proxyOf := func(c *Credential, opt ProxyOptions) []*x509.Certificate {
		p, err := NewProxy(c, opt)
		if err != nil {
			t.Fatal(err)
		}
		return p.Chain
	}

	// Another CA, not in the trust directory.
	other := filepath.Join(d, "other")
	os.MkdirAll(other, 0o755)
	sh(t, other, nil, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-subj", labCADN,
		"-days", "5", "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	sh(t, other, nil, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca2.key", "-subj", "/C=US/O=Elsewhere/CN=Other CA",
		"-days", "5", "-out", "ca2.pem", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	impostor, _ := l.craftEEC(t, other, "impostor", labUserDN, "ca.pem", "ca.key")
	foreign, _ := l.craftEEC(t, other, "foreign", "/C=US/O=Elsewhere/CN=Someone", "ca2.pem", "ca2.key")

	// Trust directories without a signing policy, with one that covers
	// only hosts, and with a CRL revoking "revoked".
	noPolicy := filepath.Join(d, "td-nopolicy")
	if err := l.makeTrustDir(noPolicy, false, true, ""); err != nil {
		t.Fatal(err)
	}
	hostsOnly := filepath.Join(d, "td-hosts")
	if err := l.makeTrustDir(hostsOnly, true, true, `"/C=US/O=GridLab/OU=hosts/*"`); err != nil {
		t.Fatal(err)
	}
	revoked := eec("revoked", "/C=US/O=GridLab/OU=users/CN=Revoked User", 2048, "sha256", userKU)
	revokedCert := filepath.Join(l.dir, "v", "revoked.pem")
	sh(t, l.dir, nil, "openssl", "ca", "-config", "openssl.cnf", "-revoke", revokedCert)
	crlTD := filepath.Join(d, "td-crl")
	if err := l.makeTrustDir(crlTD, true, true, `"/C=US/O=GridLab/*"`); err != nil {
		t.Fatal(err)
	}
	hash, _ := SubjectHash(l.caCert(t).RawSubject)
	sh(t, l.dir, nil, "openssl", "ca", "-config", "openssl.cnf", "-gencrl", "-out", filepath.Join(crlTD, hash+".r0"))
	store := func(dir string) *TrustStore {
		s, err := LoadTrustDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// Hand-made proxies (as validation-tests.sh): path length 0 with a
	// proxy below it, a subject that is not issuer + CN, a legacy proxy.
	pl0c, pl0k := l.craft(t, "pl0", labUserDN+"/CN=111111", uc, uk, "critical,language:id-ppl-inheritAll,pathlen:0", 111111)
	pl0cc, _ := l.craft(t, "pl0c", labUserDN+"/CN=111111/CN=222222", pl0c, pl0k, "critical,language:id-ppl-inheritAll", 222222)
	badSubj, _ := l.craft(t, "badsubj", "/C=US/O=GridLab/OU=users/CN=Somebody Else/CN=333333", uc, uk, "critical,language:id-ppl-inheritAll", 333333)
	cnMismatch, _ := l.craft(t, "cnmismatch", labUserDN+"/CN=999", uc, uk, "critical,language:id-ppl-inheritAll", 123456)
	byCA, _ := l.craft(t, "byca", "/C=US/O=GridLab/CN=GridLab Test CA/CN=42", filepath.Join(l.dir, "cacert.pem"), filepath.Join(l.dir, "cakey.pem"), "critical,language:id-ppl-inheritAll", 42)
	chainOf := func(files ...string) []*x509.Certificate {
		var chain []*x509.Certificate
		for _, f := range files {
			data, _ := os.ReadFile(f)
			b, _ := pem.Decode(data)
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			chain = append(chain, c)
		}
		return chain
	}
	// The hand-made CN≠serial proxy is accepted, as by GCT.
	mustVerify(t, ts, chainOf(cnMismatch, uc))
	mustVerify(t, ts, chainOf(pl0c, uc))

	pl0ours, err := NewProxy(user, ProxyOptions{PathLenZero: true})
	if err != nil {
		t.Fatal(err)
	}
	nodig := eec("nodigsig", labUserDN, 2048, "sha256", "keyUsage=critical,keyEncipherment")
	tampered := proxyOf(user, ProxyOptions{})
	bad := *tampered[0]
	bad.Signature = bytes.Clone(bad.Signature)
	bad.Signature[10] ^= 0xff
	tampered[0] = &bad

	cases := []struct {
		name  string
		ts    *TrustStore
		chain []*x509.Certificate
		now   time.Time
		want  error
		text  string
	}{
		{"expired", ts, user.Chain, user.Leaf().NotAfter.Add(time.Hour), ErrExpired, "expired at"},
		{"not yet valid", ts, user.Chain, user.Leaf().NotBefore.Add(-time.Hour), ErrNotYetValid, "not yet valid"},
		{"expired proxy", ts, proxyOf(user, ProxyOptions{Lifetime: time.Hour}), now.Add(2 * time.Hour), ErrExpired, "expired"},
		{"untrusted CA", ts, foreign.Chain, time.Time{}, ErrUntrusted, "not in the trust directory"},
		{"untrusted CA, not sent", ts, foreign.Chain[:1], time.Time{}, ErrUntrusted, "not trusted"},
		{"impostor CA with the same name", ts, impostor.Chain, time.Time{}, ErrUntrusted, "not in the trust directory"},
		{"impostor CA, chain without it", ts, impostor.Chain[:1], time.Time{}, ErrBadSignature, "signature"},
		{"missing signing policy", store(noPolicy), user.Chain, time.Time{}, ErrSigningPolicy, "no signing policy"},
		{"outside cond_subjects", store(hostsOnly), user.Chain, time.Time{}, ErrSigningPolicy, "outside"},
		{"outside cond_subjects (other O)", ts, eec("outside", "/C=DE/O=Elsewhere/CN=Outsider", 2048, "sha256", userKU).Chain, time.Time{}, ErrSigningPolicy, "cond_subjects"},
		{"revoked", store(crlTD), revoked.Chain, time.Time{}, ErrRevoked, "revoked"},
		{"revoked, its proxy", store(crlTD), proxyOf(revoked, ProxyOptions{}), time.Time{}, ErrRevoked, "revoked"},
		{"tampered proxy signature", ts, tampered, time.Time{}, ErrBadSignature, "signature"},
		{"path length exceeded", ts, chainOf(pl0cc, pl0c, uc), time.Time{}, ErrPathLength, "path length"},
		{"path length exceeded (ours)", ts, append([]*x509.Certificate{l.craftProxyFrom(t, pl0ours)}, pl0ours.Chain...), time.Time{}, ErrPathLength, "path length"},
		{"SHA-1 signed", ts, eec("sha1", labUserDN, 2048, "sha1", userKU).Chain, time.Time{}, ErrWeakCrypto, "SHA-1"},
		{"MD5 signed", ts, eec("md5", labUserDN, 2048, "md5", userKU).Chain, time.Time{}, ErrWeakCrypto, "MD5"},
		{"RSA-1024 EEC", ts, eec("rsa1024", labUserDN, 1024, "sha256", userKU).Chain, time.Time{}, ErrWeakCrypto, "1024 bits"},
		{"RSA-1024 proxy", ts, gct("bits1024", user, "-rfc", "-bits", "1024"), time.Time{}, ErrWeakCrypto, "1024 bits"},
		{"legacy CN=proxy", ts, gct("legacy", user, "-old"), time.Time{}, ErrBadProxy, "legacy"},
		{"proxy subject not issuer+CN", ts, chainOf(badSubj, uc), time.Time{}, ErrBadProxy, "plus one CN"},
		{"proxy from EEC without digitalSignature", ts, append([]*x509.Certificate{l.craftProxyFrom(t, nodig)}, nodig.Chain...), time.Time{}, ErrBadProxy, "digitalSignature"},
		{"proxy issued by a CA", ts, chainOf(byCA, filepath.Join(l.dir, "cacert.pem")), time.Time{}, ErrBadProxy, "issued by a CA"},
		{"proxy without issuer", ts, proxyOf(user, ProxyOptions{})[:1], time.Time{}, ErrBadChain, "without its issuer"},
		{"empty chain", ts, nil, time.Time{}, ErrBadChain, "no certificate"},
		{"CA as end entity", ts, []*x509.Certificate{l.caCert(t)}, time.Time{}, ErrBadChain, "CA certificate"},
	}
	for _, tc := range cases {
		if tc.now.IsZero() {
			tc.now = time.Now()
		}
		_, err := tc.ts.Verify(tc.chain, tc.now)
		var ve *VerifyError
		if !errors.As(err, &ve) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, err, tc.want, tc.text)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
	}
	// The revoked certificate's neighbour is still fine with that CRL.
	if _, err := store(crlTD).Verify(user.Chain, time.Now()); err != nil {
		t.Errorf("unrevoked user with CRL: %v", err)
	}
}

// craftEEC issues an end-entity certificate from a CA in dir.
func (l *lab) craftEEC(t *testing.T, dir, name, dn, caCert, caKey string) (*Credential, string) {
	t.Helper()
	sh(t, dir, nil, "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", name+".key", "-subj", dn, "-out", name+".csr")
	os.Chmod(filepath.Join(dir, name+".key"), 0o600)
	os.WriteFile(filepath.Join(dir, name+".ext"), []byte("[e]\nbasicConstraints=critical,CA:FALSE\n"+userKU+"\n"), 0o644)
	sh(t, dir, nil, "openssl", "x509", "-req", "-in", name+".csr", "-CA", caCert, "-CAkey", caKey, "-set_serial", "77",
		"-days", "3", "-sha256", "-extfile", name+".ext", "-extensions", "e", "-out", name+".pem")
	c := loadChain(t, filepath.Join(dir, name+".pem"), filepath.Join(dir, caCert), filepath.Join(dir, name+".key"))
	return c, filepath.Join(dir, name+".pem")
}

// craftProxyFrom signs a proxy for c directly with x509.CreateCertificate,
// bypassing NewProxy's own checks.
func (l *lab) craftProxyFrom(t *testing.T, c *Credential) *x509.Certificate {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := proxySerial(&key.PublicKey)
	subj, _ := appendCN(c.Leaf().RawSubject, serial.String())
	pci, _ := marshalProxyCertInfo(OIDPolicyInheritAll, -1)
	tmpl := &x509.Certificate{SerialNumber: serial, RawSubject: subj, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), ExtraExtensions: []pkix.Extension{{Id: OIDProxyCertInfo, Critical: true, Value: pci}}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Leaf(), &key.PublicKey, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestVerifyHost(t *testing.T) {
	l := getLab(t)
	ts := l.store(t)
	host := func(name, dn string, ext ...string) []*x509.Certificate {
		c, k := l.cert(t, name, dn, 2048, "sha256", append([]string{"basicConstraints=critical,CA:FALSE", userKU}, ext...)...)
		return loadCred(t, c, k).Chain
	}
	san := host("h-san", "/C=US/O=GridLab/OU=hosts/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1")
	cnLocal := host("h-cn-localhost", "/C=US/O=GridLab/OU=hosts/CN=localhost")
	cnIP := host("h-cn-ip", "/C=US/O=GridLab/OU=hosts/CN=127.0.0.1")
	gt2 := host("h-gt2", `/C=US/O=GridLab/OU=hosts/CN=host\/localhost`)
	dnsOnly := host("h-dns-only", "/C=US/O=GridLab/OU=hosts/CN=whatever", "subjectAltName=DNS:localhost,DNS:*.example.org")
	for _, tc := range []struct {
		chain []*x509.Certificate
		host  string
		ok    bool
	}{
		{san, "localhost", true}, {san, "127.0.0.1", true}, {san, "LOCALHOST.", true}, {san, "other", false},
		{cnLocal, "localhost", true}, {cnLocal, "127.0.0.1", false},
		{cnIP, "127.0.0.1", true}, {cnIP, "localhost", false},
		{gt2, "localhost", true}, {gt2, "127.0.0.1", false},
		{dnsOnly, "localhost", true}, {dnsOnly, "127.0.0.1", false}, {dnsOnly, "whatever", false},
		{dnsOnly, "a.example.org", true}, {dnsOnly, "a.b.example.org", false}, {dnsOnly, "example.org", false},
	} {
		_, err := ts.VerifyHost(tc.chain, tc.host, time.Now())
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrHostMismatch) {
			t.Errorf("%s @ %s: %v, want ok=%v", CertDN(tc.chain[0]), tc.host, err, tc.ok)
		}
	}
	// A proxy chain is checked against its end-entity certificate.
	c, k := l.cert(t, "h-san", "", 0, "")
	p, err := NewProxy(loadCred(t, c, k), ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.VerifyHost(p.Chain, "localhost", time.Now()); err != nil {
		t.Errorf("host proxy: %v", err)
	}
}

func TestDelegationRoundTrip(t *testing.T) {
	l := getLab(t)
	ts := l.store(t)
	uc, uk := l.user(t)
	user := loadCred(t, uc, uk)
	client, err := NewProxy(user, ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr, key, err := NewProxyRequest(2048)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(csr)
	if err != nil {
		t.Fatal(err)
	}
	// The request as GCT makes it (gsi.md §4.2).
	wantSubject := []byte{0x30, 0x22, 0x31, 0x20, 0x30, 0x1e, 0x06, 0x03, 0x55, 0x04, 0x03, 0x13, 0x17}
	if !bytes.HasPrefix(req.RawSubject, wantSubject) || string(req.RawSubject[len(wantSubject):]) != "NULL SUBJECT NAME ENTRY" {
		t.Errorf("request subject % x", req.RawSubject)
	}
	if len(req.Extensions) != 1 || !req.Extensions[0].Id.Equal(OIDProxyCertInfo) || !req.Extensions[0].Critical ||
		!bytes.Equal(req.Extensions[0].Value, []byte{0x30, 0x0c, 0x30, 0x0a, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x15, 0x01}) {
		t.Errorf("request extensions %+v", req.Extensions)
	}
	if req.Version != 0 || req.SignatureAlgorithm != x509.SHA256WithRSA {
		t.Errorf("request version %d, algorithm %v", req.Version, req.SignatureAlgorithm)
	}
	// openssl reads it too.
	f := filepath.Join(t.TempDir(), "req.der")
	os.WriteFile(f, csr, 0o600)
	if out := sh(t, "", nil, "openssl", "req", "-inform", "DER", "-in", f, "-noout", "-verify", "-text"); !strings.Contains(out, "Proxy Certificate Information: critical") {
		t.Errorf("openssl req -text:\n%s", out)
	}

	der, err := SignProxyRequest(client, csr, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	deleg, err := AssembleDelegated(der, key, client.Chain)
	if err != nil {
		t.Fatal(err)
	}
	id := mustVerify(t, ts, deleg.Chain)
	if id.DN != labUserDN || !id.Limited || !id.Proxy || len(id.Chain) != 4 {
		t.Errorf("delegated identity %+v", id)
	}
	if !deleg.Leaf().NotAfter.Equal(client.Leaf().NotAfter) {
		t.Errorf("delegated notAfter %v, issuer %v", deleg.Leaf().NotAfter, client.Leaf().NotAfter)
	}
	// Full (not limited) delegation with a lifetime.
	der2, err := SignProxyRequest(client, csr, false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := AssembleDelegated(der2, key, client.Chain)
	if err != nil {
		t.Fatal(err)
	}
	if id := mustVerify(t, ts, d2.Chain); id.Limited {
		t.Error("full delegation came out limited")
	}
	// The wrong key, the wrong peer, garbage.
	_, other, _ := NewProxyRequest(2048)
	if _, err := AssembleDelegated(der, other, client.Chain); err == nil {
		t.Error("AssembleDelegated accepted a certificate for another key")
	}
	if _, err := AssembleDelegated(der, key, user.Chain); err == nil {
		t.Error("AssembleDelegated accepted a certificate from another issuer")
	}
	if _, err := SignProxyRequest(client, csr[:len(csr)-3], true, 0); err == nil {
		t.Error("SignProxyRequest accepted a truncated request")
	}
	csr2 := bytes.Clone(csr)
	csr2[len(csr2)-5] ^= 1
	if _, err := SignProxyRequest(client, csr2, true, 0); err == nil {
		t.Error("SignProxyRequest accepted a request with a bad signature")
	}
	// GCT's delegation from an EEC: the proxy lives as long as the EEC.
	der3, err := SignProxyRequest(user, csr, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	c3, _ := x509.ParseCertificate(der3)
	if !c3.NotAfter.Equal(user.Leaf().NotAfter) {
		t.Errorf("EEC delegation notAfter %v", c3.NotAfter)
	}
}

func TestProxyCertInfoParse(t *testing.T) {
	for _, tc := range []struct {
		hex   []byte
		draft bool
		typ   ProxyType
		plen  int
		bad   bool
	}{
		{[]byte{0x30, 0x0c, 0x30, 0x0a, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x15, 0x01}, false, ProxyImpersonation, -1, false},
		{mustHex("3012020103300D060B2B060104019B5001010109"), false, ProxyLimited, 3, false},
		{mustHex("3011300A06082B06010505071501A103020103"), true, ProxyImpersonation, 3, false},
		{mustHex("300F020100300A06082B06010505071502"), false, ProxyIndependent, 0, false},
		{mustHex("3000"), false, 0, 0, true},
		{mustHex("300302017f"), false, 0, 0, true},
		{mustHex("30050201ff3000"), false, 0, 0, true},
		{mustHex("3011300A06082B06010505071501A103020103"), false, 0, 0, true},
	} {
		info, err := parseProxyCertInfo(tc.hex, tc.draft)
		if tc.bad {
			if err == nil {
				t.Errorf("%x: accepted as %+v", tc.hex, info)
			}
			continue
		}
		if err != nil || info.Type != tc.typ || info.PathLen != tc.plen || info.Draft != tc.draft {
			t.Errorf("%x: %+v, %v", tc.hex, info, err)
		}
		for i := range tc.hex {
			if _, err := parseProxyCertInfo(tc.hex[:i], tc.draft); err == nil {
				t.Errorf("%x: prefix of %d bytes accepted", tc.hex, i)
			}
		}
	}
	b, _ := marshalProxyCertInfo(OIDPolicyLimited, 3)
	if info, err := parseProxyCertInfo(b, false); err != nil || info.Type != ProxyLimited || info.PathLen != 3 {
		t.Errorf("round trip: %+v %v", info, err)
	}
}

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		b[i] = unhex(s[2*i])<<4 | unhex(s[2*i+1])
	}
	return b
}

func (l *lab) caCert(t testing.TB) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(l.dir, "cacert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
