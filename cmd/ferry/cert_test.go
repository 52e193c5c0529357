package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

var (
	gctProxyOnce sync.Once
	gctProxyErr  error
)

// needGCTProxyTools installs GCT's grid-proxy-init/-info when missing and
// fails (never skips) if that is impossible.
func needGCTProxyTools(t *testing.T) {
	t.Helper()
	gctProxyOnce.Do(func() {
		if _, err := exec.LookPath("grid-proxy-info"); err == nil {
			return
		}
		out, err := exec.Command("apt-get", "install", "-y", "globus-proxy-utils", "globus-gsi-cert-utils-progs").CombinedOutput()
		if err != nil {
			gctProxyErr = err
			t.Logf("%s", out)
		}
	})
	if gctProxyErr != nil {
		t.Fatalf("installing GCT proxy tools: %v", gctProxyErr)
	}
}

func run(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCertAndProxy makes a PKI with ferry cert and proxies with ferry
// proxy, and checks them with OpenSSL, GCT's tools and our verifier, step
// by step: each step uses what the ones before made.
func TestCertAndProxy(t *testing.T) {
	needGCTProxyTools(t)
	d := t.TempDir()
	ca, td := checkCertCA(t, d)
	hostDir, userDir := checkCertHostUser(t, d, ca)
	ts := checkCertPKI(t, td, hostDir, userDir)
	uc, uk := filepath.Join(userDir, "usercert.pem"), filepath.Join(userDir, "userkey.pem")
	env := []string{"X509_CERT_DIR=" + td, "X509_USER_PROXY=", "X509_USER_CERT=", "X509_USER_KEY="}
	t.Setenv("X509_CERT_DIR", td)
	gp := checkProxyInit(t, d, td, ts, uc, uk, env)
	checkProxyInfo(t, d, uc, uk, env, gp)

	// X509_USER_PROXY is the default output.
	envProxy := filepath.Join(d, "envproxy")
	t.Setenv("X509_USER_PROXY", envProxy)
	ok(t, "proxy", "init", "-q", "-cert", uc, "-key", uk)
	if fi, err := os.Stat(envProxy); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("proxy at $X509_USER_PROXY: %v %v", fi, err)
	}
	ok(t, "proxy", "destroy")
}

// certAliceDN is the user of TestCertAndProxy.
const certAliceDN = "/C=US/O=Ferry Lab/OU=People/CN=Alice Example"

// checkCertCA makes a CA in d with ferry cert ca and checks its files
// (modes, a CRL OpenSSL reads) and that a second one is refused. It
// returns the CA's directory and its trust directory.
func checkCertCA(t *testing.T, d string) (ca, td string) {
	t.Helper()
	ca = filepath.Join(d, "ca")
	r := ok(t, "cert", "ca", "-dir", ca, "-subject", "/C=US/O=Ferry Lab/CN=Ferry Lab CA", "-bits", "2048", "-days", "30")
	td = filepath.Join(ca, "certificates")
	if !strings.Contains(r.stdout, "export X509_CERT_DIR=") || !strings.Contains(r.stdout, td) {
		t.Errorf("cert ca stdout %q", r.stdout)
	}
	hash, err := run(t, nil, "openssl", "x509", "-in", filepath.Join(ca, "cacert.pem"), "-noout", "-subject_hash")
	if err != nil {
		t.Fatal(hash)
	}
	hash = strings.TrimSpace(hash)
	for name, mode := range map[string]os.FileMode{
		filepath.Join(ca, "cakey.pem"): 0o600, filepath.Join(td, hash+".0"): 0o644,
		filepath.Join(td, hash+".signing_policy"): 0o644, filepath.Join(td, hash+".r0"): 0o644,
	} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v", name, fi, err)
		}
	}
	if out, err := run(t, nil, "openssl", "crl", "-in", filepath.Join(td, hash+".r0"), "-CAfile", filepath.Join(ca, "cacert.pem"), "-noout"); err != nil {
		t.Errorf("openssl crl: %v %s", err, out)
	}
	if r := ferry(t, nil, "cert", "ca", "-dir", ca); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("second cert ca: %+v", r)
	}
	return ca, td
}

// checkCertHostUser issues a host and user certificates from the CA ca
// with ferry cert, checks the grid-mapfile line printed for the user and
// that a subject outside the CA's signing policy is refused. It returns
// the host's and Alice's directories.
func checkCertHostUser(t *testing.T, d, ca string) (hostDir, userDir string) {
	t.Helper()
	hostDir = filepath.Join(d, "host")
	ok(t, "cert", "host", "-ca", ca, "-name", "localhost", "-ip", "127.0.0.1", "-out", hostDir)
	userDir = filepath.Join(d, "user")
	r := ok(t, "cert", "user", "-ca", ca, "-subject", certAliceDN, "-out", userDir)
	if r.stdout != `"`+certAliceDN+`" alice`+"\n" {
		t.Errorf("grid-mapfile line %q", r.stdout)
	}
	if g, err := gsi.ParseGridMap([]byte(r.stdout)); err != nil {
		t.Error(err)
	} else if acc, _ := g.Lookup(certAliceDN); len(acc) != 1 || acc[0] != "alice" {
		t.Errorf("grid-mapfile line maps to %v", acc)
	}
	if r := ferry(t, nil, "cert", "user", "-ca", ca, "-subject", "/C=US/O=Elsewhere/CN=Mallory", "-out", filepath.Join(d, "m")); r.code != 1 || !strings.Contains(r.stderr, "signing policy") {
		t.Errorf("user outside the policy: %+v", r)
	}
	ok(t, "cert", "user", "-ca", ca, "-cn", "Bob", "-out", filepath.Join(d, "bob"))
	return hostDir, userDir
}

// checkCertPKI checks that OpenSSL and our verifier accept the PKI in
// the trust directory td, and returns its trust store.
func checkCertPKI(t *testing.T, td, hostDir, userDir string) *gsi.TrustStore {
	t.Helper()
	if out, err := run(t, nil, "openssl", "verify", "-CApath", td, filepath.Join(userDir, "usercert.pem"), filepath.Join(hostDir, "hostcert.pem")); err != nil {
		t.Errorf("openssl verify: %v %s", err, out)
	}
	ts, err := gsi.LoadTrustDir(td)
	if err != nil {
		t.Fatal(err)
	}
	host, err := gsi.LoadCredential(filepath.Join(hostDir, "hostcert.pem"), filepath.Join(hostDir, "hostkey.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "127.0.0.1"} {
		if _, err := ts.VerifyHost(host.Chain, h, time.Now()); err != nil {
			t.Errorf("VerifyHost %s: %v", h, err)
		}
	}
	return ts
}

// checkProxyInit makes a proxy of Alice's certificate (uc, uk) with ferry
// proxy init, checked by GCT's tools and by us: GCT makes a proxy of it,
// and one of the certificate itself, whose file it returns.
func checkProxyInit(t *testing.T, d, td string, ts *gsi.TrustStore, uc, uk string, env []string) string {
	t.Helper()
	p := filepath.Join(d, "proxy")
	r := ok(t, "proxy", "init", "-cert", uc, "-key", uk, "-out", p, "-verify", "-valid", "2:30")
	if !strings.Contains(r.stdout, "Your identity: "+certAliceDN) {
		t.Errorf("proxy init stdout %q", r.stdout)
	}
	info, err := run(t, env, "grid-proxy-info", "-f", p)
	if err != nil || !strings.Contains(info, "identity : "+certAliceDN) || !strings.Contains(info, "RFC 3820 compliant impersonation proxy") || !strings.Contains(info, "timeleft : 2:") {
		t.Errorf("grid-proxy-info: %v\n%s", err, info)
	}
	// GCT verifies our proxy against the trust directory (chain, signing
	// policy) and makes a proxy from it; we verify GCT's.
	p2 := filepath.Join(d, "proxy2")
	if out, err := run(t, env, "grid-proxy-init", "-q", "-verify", "-cert", p, "-key", p, "-certdir", td, "-out", p2); err != nil {
		t.Errorf("grid-proxy-init -verify from ferry's proxy: %v\n%s", err, out)
	}
	c2, err := gsi.LoadCredential(p2, p2)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := ts.Verify(c2.Chain, time.Now()); err != nil || id.DN != certAliceDN || len(id.Chain) != 4 {
		t.Errorf("GCT proxy of ferry proxy: %v %+v", err, id)
	}
	// GCT's grid-proxy-init accepts the user certificate and trust dir
	// that ferry cert made.
	gp := filepath.Join(d, "gctproxy")
	if out, err := run(t, env, "grid-proxy-init", "-q", "-verify", "-cert", uc, "-key", uk, "-certdir", td, "-out", gp); err != nil {
		t.Errorf("grid-proxy-init with ferry's PKI: %v\n%s", err, out)
	}
	return gp
}

// checkProxyInfo checks a limited proxy with a path length, ferry proxy
// info (of it, and of GCT's proxy gp) and ferry proxy destroy.
func checkProxyInfo(t *testing.T, d, uc, uk string, env []string, gp string) {
	t.Helper()
	lp := filepath.Join(d, "limited")
	ok(t, "proxy", "init", "-q", "-cert", uc, "-key", uk, "-out", lp, "-limited", "-path-length", "2", "-hours", "1")
	r := ok(t, "proxy", "info", "-file", lp)
	for _, want := range []string{"identity : " + certAliceDN, "type     : RFC 3820 compliant limited proxy", "pathlen  : 2", "strength : 2048 bits"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("proxy info lacks %q:\n%s", want, r.stdout)
		}
	}
	if info, err := run(t, env, "grid-proxy-info", "-f", lp, "-type"); err != nil || !strings.Contains(info, "limited") {
		t.Errorf("grid-proxy-info -type: %v %s", err, info)
	}
	if r := ok(t, "proxy", "info", "-file", lp, "-identity"); r.stdout != certAliceDN+"\n" {
		t.Errorf("proxy info -identity %q", r.stdout)
	}
	ok(t, "proxy", "info", "-file", lp, "-exists", "-valid", "0:30")
	if r := ferry(t, nil, "proxy", "info", "-file", lp, "-exists", "-valid", "2:00"); r.code != 1 {
		t.Errorf("-exists -valid 2:00 on a 1-hour proxy: exit %d", r.code)
	}
	r = ok(t, "proxy", "info", "-file", gp)
	if !strings.Contains(r.stdout, "RFC 3820 compliant impersonation proxy") {
		t.Errorf("proxy info of GCT's proxy:\n%s", r.stdout)
	}
	ok(t, "proxy", "destroy", "-file", lp)
	if _, err := os.Stat(lp); err == nil {
		t.Error("proxy destroy left the file")
	}
	if r := ferry(t, nil, "proxy", "info", "-file", lp); r.code != 1 || !strings.Contains(r.stderr, "no proxy") {
		t.Errorf("info on a destroyed proxy: %+v", r)
	}
	if r := ferry(t, nil, "proxy", "info", "-file", lp, "-exists"); r.code != 1 || r.stderr != "" {
		t.Errorf("-exists on a destroyed proxy: %+v", r)
	}
}

func TestCertProxyUsage(t *testing.T) {
	for _, args := range [][]string{
		{"cert"}, {"cert", "nope"}, {"cert", "ca"}, {"cert", "ca", "-dir", "x", "-bits", "1024"},
		{"cert", "host", "-ca", "x"}, {"cert", "user", "-ca", "x"}, {"cert", "user", "-ca", "x", "-cn", "a", "-subject", "/CN=b"},
		{"cert", "ca", "-dir", "x", "-subject", "no-slash"},
		{"proxy"}, {"proxy", "bogus"}, {"proxy", "init", "-hours", "1", "-valid", "1:00"}, {"proxy", "init", "-valid", "x"},
		{"proxy", "info", "extra"}, {"proxy", "init", "-path-length", "-2"},
	} {
		if r := ferry(t, nil, args...); r.code != 2 {
			t.Errorf("ferry %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"cert", "-h"}, {"proxy", "-h"}, {"help", "proxy"}, {"proxy", "init", "-h"}} {
		if r := ferry(t, nil, args...); r.code != 0 {
			t.Errorf("ferry %v: exit %d", args, r.code)
		}
	}
	if r := ferry(t, nil, "proxy", "init", "-cert", "/nonexistent.pem", "-key", "/nonexistent.key"); r.code != 1 {
		t.Errorf("missing certificate: exit %d", r.code)
	}
}
