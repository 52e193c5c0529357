package gsi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCredentialFiles(t *testing.T) {
	l := getLab(t)
	uc, uk := l.user(t)
	user := loadCred(t, uc, uk)
	d := t.TempDir()
	p, err := NewProxy(user, ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(d, "x509up")
	os.Symlink(filepath.Join(d, "elsewhere"), f) // replaced, not followed
	if err := WriteProxyFile(f, p); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(f)
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("proxy file mode %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(d, "elsewhere")); err == nil {
		t.Error("WriteProxyFile followed a symbolic link")
	}
	data, _ := os.ReadFile(f)
	if got := strings.Join(pemTypes(data), ","); got != "CERTIFICATE,PRIVATE KEY,CERTIFICATE" {
		t.Errorf("proxy file layout %s", got)
	}
	back := loadCred(t, f, "")
	if len(back.Chain) != 2 || !back.Leaf().Equal(p.Leaf()) || back.Identity() != labUserDN {
		t.Errorf("round trip: %d certificates, identity %s", len(back.Chain), back.Identity())
	}
	if tc := back.TLSCertificate(); len(tc.Certificate) != 2 || tc.PrivateKey == nil {
		t.Errorf("TLSCertificate: %d certificates", len(tc.Certificate))
	}

	// Key formats: PKCS#1 (openssl -traditional), PKCS#8, EC.
	sh(t, d, nil, "openssl", "rsa", "-in", uk, "-traditional", "-out", "pkcs1.key")
	os.Chmod(filepath.Join(d, "pkcs1.key"), 0o600)
	if b, _ := os.ReadFile(filepath.Join(d, "pkcs1.key")); !strings.Contains(string(b), "RSA PRIVATE KEY") {
		t.Fatal("openssl did not write PKCS#1")
	}
	loadCred(t, uc, filepath.Join(d, "pkcs1.key"))

	// Refusals: readable by others, encrypted (PKCS#8 and legacy PEM),
	// a key for another certificate, no key, no certificate.
	os.WriteFile(filepath.Join(d, "open.key"), mustRead(t, uk), 0o644)
	os.Chmod(filepath.Join(d, "open.key"), 0o644)
	if _, err := LoadCredential(uc, filepath.Join(d, "open.key")); !errors.Is(err, ErrKeyPermissions) {
		t.Errorf("mode 0644 key: %v", err)
	}
	sh(t, d, nil, "openssl", "pkey", "-in", uk, "-aes256", "-passout", "pass:secret", "-out", "enc8.key")
	sh(t, d, nil, "openssl", "rsa", "-in", uk, "-aes256", "-traditional", "-passout", "pass:secret", "-out", "enc1.key")
	for _, k := range []string{"enc8.key", "enc1.key"} {
		os.Chmod(filepath.Join(d, k), 0o600)
		if _, err := LoadCredential(uc, filepath.Join(d, k)); !errors.Is(err, ErrEncryptedKey) {
			t.Errorf("%s: %v", k, err)
		}
	}
	if _, err := LoadCredential(uc, filepath.Join(l.dir, "cakey.pem")); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("mismatched key: %v", err)
	}
	if _, err := ParseCredentialPEM(mustRead(t, uc)); err == nil {
		t.Error("credential without a key accepted")
	}
	if _, err := ParseCredentialPEM(mustRead(t, uk)); err == nil {
		t.Error("credential without a certificate accepted")
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFindCredentials(t *testing.T) {
	l := getLab(t)
	uc, uk := l.user(t)
	user := loadCred(t, uc, uk)
	d := t.TempDir()
	home := filepath.Join(d, "home")
	os.MkdirAll(filepath.Join(home, ".globus"), 0o755)
	oldProxyDir, oldGS := proxyDir, gridSecurityDir
	proxyDir, gridSecurityDir = filepath.Join(d, "tmp"), filepath.Join(d, "etc")
	t.Cleanup(func() { proxyDir, gridSecurityDir = oldProxyDir, oldGS })
	os.MkdirAll(proxyDir, 0o755)
	os.MkdirAll(gridSecurityDir, 0o755)
	t.Setenv("HOME", home)
	for _, v := range []string{"X509_USER_PROXY", "X509_USER_CERT", "X509_USER_KEY"} {
		t.Setenv(v, "")
	}
	mk := func(name string, opt ProxyOptions) string {
		p, err := NewProxy(user, opt)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(d, name)
		if err := WriteProxyFile(f, p); err != nil {
			t.Fatal(err)
		}
		return f
	}
	find := func() (string, bool, error) {
		c, src, err := FindClientCredential()
		if err != nil {
			return src, false, err
		}
		info, _ := ProxyInfoOf(c.Leaf())
		return src, info != nil, nil
	}

	if _, _, err := find(); !errors.Is(err, ErrNoCredential) {
		t.Errorf("nothing anywhere: %v", err)
	}
	// ~/.globus only.
	os.WriteFile(filepath.Join(home, ".globus", "usercert.pem"), mustRead(t, uc), 0o644)
	os.WriteFile(filepath.Join(home, ".globus", "userkey.pem"), mustRead(t, uk), 0o600)
	if src, proxy, err := find(); err != nil || proxy || !strings.Contains(src, ".globus/usercert.pem") {
		t.Errorf("~/.globus: %s %v %v", src, proxy, err)
	}
	// X509_USER_CERT/KEY beat ~/.globus.
	t.Setenv("X509_USER_CERT", uc)
	t.Setenv("X509_USER_KEY", uk)
	if src, proxy, err := find(); err != nil || proxy || !strings.Contains(src, "X509_USER_CERT") {
		t.Errorf("X509_USER_CERT: %s %v %v", src, proxy, err)
	}
	// The default proxy beats X509_USER_CERT/KEY (GCT's trap avoided).
	os.Rename(mk("p1", ProxyOptions{}), DefaultProxyPath())
	if src, proxy, err := find(); err != nil || !proxy || src != "proxy "+DefaultProxyPath() {
		t.Errorf("default proxy: %s %v %v", src, proxy, err)
	}
	// X509_USER_PROXY beats everything.
	p2 := mk("p2", ProxyOptions{Limited: true})
	t.Setenv("X509_USER_PROXY", p2)
	if src, proxy, err := find(); err != nil || !proxy || !strings.Contains(src, p2) {
		t.Errorf("X509_USER_PROXY: %s %v %v", src, proxy, err)
	}
	if ProxyPath() != p2 {
		t.Errorf("ProxyPath() = %s", ProxyPath())
	}
	// A broken or expired proxy named by X509_USER_PROXY is an error, not
	// a reason to fall back to the EEC.
	t.Setenv("X509_USER_PROXY", filepath.Join(d, "missing"))
	if _, _, err := find(); err == nil {
		t.Error("missing X509_USER_PROXY fell through")
	}
	exp, err := NewProxy(user, ProxyOptions{Lifetime: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	ef := filepath.Join(d, "expired")
	WriteProxyFile(ef, exp)
	time.Sleep(10 * time.Millisecond)
	t.Setenv("X509_USER_PROXY", ef)
	if _, _, err := find(); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired proxy: %v", err)
	}

	// Host credential: explicit, then X509_USER_CERT/KEY, then /etc.
	if _, src, err := FindHostCredential(uc, uk); err != nil || !strings.Contains(src, uc) {
		t.Errorf("explicit host credential: %s %v", src, err)
	}
	if _, src, err := FindHostCredential("", ""); err != nil || !strings.Contains(src, "X509_USER_CERT") {
		t.Errorf("X509_USER_CERT host credential: %s %v", src, err)
	}
	t.Setenv("X509_USER_CERT", "")
	t.Setenv("X509_USER_KEY", "")
	if _, _, err := FindHostCredential("", ""); !errors.Is(err, ErrNoCredential) {
		t.Errorf("no host credential: %v", err)
	}
	os.WriteFile(filepath.Join(gridSecurityDir, "hostcert.pem"), mustRead(t, uc), 0o644)
	os.WriteFile(filepath.Join(gridSecurityDir, "hostkey.pem"), mustRead(t, uk), 0o600)
	if _, src, err := FindHostCredential("", ""); err != nil || !strings.Contains(src, "hostcert.pem") {
		t.Errorf("/etc host credential: %s %v", src, err)
	}
}
