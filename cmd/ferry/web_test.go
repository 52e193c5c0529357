package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/ferrygrid/ferry/internal/replica"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

func TestWebListenRules(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "passwd")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"web", "-passwd", pw, "-listen", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"web", "-passwd", pw, "-listen", "192.0.2.1:8080"}, "not a loopback address"},
		{[]string{"web", "-passwd", pw, "-cert", "x.pem"}, "-cert and -key go together"},
		{[]string{"web", "-listen", "127.0.0.1:0"}, "give -passwd"},
	} {
		r := ferry(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("ferry %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}

// startWeb runs ferry web with args in this process and returns the
// https:// URL it says it serves; it is stopped at the end of the test.
func startWeb(t *testing.T, args ...string) (base string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &stderr},
			append([]string{"web"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("ferry web did not stop")
		}
	})
	re := regexp.MustCompile(`serving (https://[^/]+/)`)
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("ferry web did not start: %s", stderr.String())
	}
	return base
}

// TestWebHTTPS serves ferry web over HTTPS on a non-loopback-safe
// configuration and checks the session cookie is Secure.
// webCert writes a self-signed certificate for 127.0.0.1 and its key
// into dir.
func webCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

func TestWebHTTPS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := webCert(t, dir)
	pw := filepath.Join(dir, "passwd")
	if err := auth.SetUser(pw, "alice", "alice-secret", ""); err != nil {
		t.Fatal(err)
	}
	base := startWeb(t, "-listen", "127.0.0.1:0", "-cert", certFile, "-key", keyFile, "-passwd", pw, "-history", "off", "-root", dir)
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	res, err := hc.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("GET /: %d, HSTS %q", res.StatusCode, res.Header.Get("Strict-Transport-Security"))
	}
	res, err = hc.Post(base+"api/login", "application/json", strings.NewReader(`{"user":"alice","password":"alice-secret"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cs := res.Cookies()
	if res.StatusCode != 200 || len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("login over HTTPS: %d, cookies %+v", res.StatusCode, cs)
	}
	// Without a client certificate, /api/me wants a login.
	res, err = hc.Get(base + "api/me")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("me without a certificate: %d", res.StatusCode)
	}
}

// TestWebClientCert logs in with a client certificate over HTTPS: the
// grid-mapfile names the user.
func TestWebClientCert(t *testing.T) {
	pki := gsipki.New(t, "")
	_, otherCert, otherKey := pki.IssueUser(t, "Not Mapped")
	base := startWeb(t, "-listen", "127.0.0.1:0", "-cert", pki.HostCert, "-key", pki.HostKey,
		"-client-ca", pki.TrustDir, "-gridmap", pki.GridMap, "-history", "off")
	me := func(certFile, keyFile string) (int, string) {
		cfg := &tls.Config{InsecureSkipVerify: true}
		if certFile != "" {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		res, err := hc.Get(base + "api/me")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m struct{ User, CSRF string }
		json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m.User
	}
	if code, user := me(pki.UserCert, pki.UserKey); code != 200 || user != pki.Account {
		t.Errorf("with the mapped certificate: %d %q, want %s", code, user, pki.Account)
	}
	if code, _ := me(otherCert, otherKey); code != http.StatusUnauthorized {
		t.Errorf("with an unmapped certificate: %d", code)
	}
	if code, _ := me("", ""); code != http.StatusUnauthorized {
		t.Errorf("without a certificate: %d", code)
	}
	if r := ferry(t, nil, "web", "-client-ca", pki.TrustDir, "-gridmap", pki.GridMap); r.code != 2 || !strings.Contains(r.stderr, "need HTTPS") {
		t.Errorf("client certificates over HTTP: exit %d, %q", r.code, r.stderr)
	}
}

func TestWebParseNets(t *testing.T) {
	got, err := parseNets("127.0.0.0/8, ::1,10.1.2.3/16,::ffff:192.0.2.0/120")
	if err != nil {
		t.Fatal(err)
	}
	want := "[127.0.0.0/8 ::1/128 10.1.0.0/16 192.0.2.0/24]"
	if s := fmt.Sprint(got); s != want {
		t.Errorf("parseNets: %s, want %s", s, want)
	}
	if _, err := parseNets("127.0.0.0/8,nonsense"); err == nil {
		t.Error("a bad network was accepted")
	}
	pw := filepath.Join(t.TempDir(), "passwd")
	r := ferry(t, nil, "web", "-passwd", pw, "-allow-net", "bogus")
	if r.code != 2 || !strings.Contains(r.stderr, "-allow-net") {
		t.Errorf("ferry web -allow-net bogus: exit %d, %q", r.code, r.stderr)
	}
}

func TestWebDefaultHosts(t *testing.T) {
	if got := defaultWebHosts("ferry.example.org:8080", ""); len(got) != 1 || got[0] != "ferry.example.org" {
		t.Errorf("named listen: %q", got)
	}
	if got := defaultWebHosts("127.0.0.1:8080", ""); len(got) != 0 {
		t.Errorf("loopback listen: %q", got)
	}
	h, _ := os.Hostname()
	if got := defaultWebHosts(":443", ""); len(got) != 1 || got[0] != h {
		t.Errorf("listen on all: %q, want [%s]", got, h)
	}
}

// TestWebCatalogue: ferry web opens the replica catalogue of its history
// database: a logged-in user sees an LFN registered with ferry replica,
// with its replica; with -history off there is no catalogue to show.
func TestWebCatalogue(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := webCert(t, dir)
	pw := filepath.Join(dir, "passwd")
	if err := auth.SetUser(pw, "alice", "alice-secret", ""); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "history.db")
	cat, err := replica.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	const url = "ftp://replica.example.org/data/f.root"
	if err := cat.Add(t.Context(), "/cms/run1/f.root", "ADLER32", replica.Replica{URL: url, Size: 42, Sum: "0a0b0c0d"}); err != nil {
		t.Fatal(err)
	}
	cat.Close()

	for _, history := range []string{db, "off"} {
		base := startWeb(t, "-listen", "127.0.0.1:0", "-cert", certFile, "-key", keyFile, "-passwd", pw, "-history", history, "-root", dir)
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		res, err := hc.Post(base+"api/login", "application/json", strings.NewReader(`{"user":"alice","password":"alice-secret"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("history %s: login: %d", history, res.StatusCode)
		}
		res, err = hc.Get(base + "api/catalogue/lfn?lfn=" + neturl.QueryEscape("lfn:/cms/run1/f.root"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch {
		case history == "off" && res.StatusCode != http.StatusNotFound:
			t.Errorf("history off: the LFN gives %d, want 404 (no catalogue): %s", res.StatusCode, body)
		case history != "off" && (res.StatusCode != 200 || !strings.Contains(string(body), url)):
			t.Errorf("the LFN gives %d %s, want 200 with its replica %s", res.StatusCode, body, url)
		}
	}
}
