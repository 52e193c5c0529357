package web

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// encryptedKey returns the PEM key file name encrypted the legacy way
// (grid-cert-request's) with passphrase.
func encryptedKey(t *testing.T, name, passphrase string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if strings.Contains(b.Type, "PRIVATE KEY") {
			//lint:ignore SA1019 the format of grid keys
			b, err = x509.EncryptPEMBlock(rand.Reader, b.Type, b.Bytes, []byte(passphrase), x509.PEMCipherAES256) //nolint:staticcheck
			if err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, pem.EncodeToMemory(b)...)
	}
	return string(out)
}

func readText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGSICredentials(t *testing.T) {
	pki := gsipki.New(t, "")
	ta := startAppWith(t, func(c *Config) { c.TrustDir = pki.TrustDir })
	f := startFerrySrvGSI(t, pki)
	f.slow.Store(false)
	data := randomData(2<<20 + 5)
	writeFile(t, filepath.Join(f.dir, "g.bin"), data)
	alice, bob := ta.client(t), ta.client(t)
	alice.login("alice")
	bob.login("bob")

	if code, msg := alice.do("POST", "/api/endpoints", openRequest{URL: f.url + "/"}, nil); code == http.StatusOK || !strings.Contains(msg, "no proxy") {
		t.Errorf("gsiftp:// without a proxy: %d %q", code, msg)
	}
	code, msg := alice.do("POST", "/api/credential", credRequest{Proxy: readText(t, pki.ExpiredProxy(t))}, nil)
	if code != http.StatusBadRequest || !strings.Contains(msg, "this proxy expired at") {
		t.Errorf("expired proxy: %d %q", code, msg)
	}
	cert, key := readText(t, pki.UserCert), encryptedKey(t, pki.UserKey, "open sesame")
	if code, msg := alice.do("POST", "/api/credential", credRequest{Cert: cert, Key: key, Passphrase: "wrong"}, nil); code != http.StatusBadRequest || msg != "wrong passphrase for the key" {
		t.Errorf("wrong passphrase: %d %q", code, msg)
	}
	if code, msg := alice.do("POST", "/api/credential", credRequest{Cert: cert, Key: key}, nil); code != http.StatusBadRequest || !strings.Contains(msg, "give its passphrase") {
		t.Errorf("no passphrase: %d %q", code, msg)
	}
	var cr credReply
	alice.must("POST", "/api/credential", credRequest{Cert: cert, Key: key, Passphrase: "open sesame", Hours: 2}, &cr)
	// Certificate times have whole seconds: the proxy may end up to a
	// second after now + 2 h.
	if cr.Identity != pki.User.Identity() || cr.SecondsLeft < 7100 || cr.SecondsLeft > 7201 || cr.Expiring {
		t.Errorf("credential %+v, want identity %s and 2 h", cr, pki.User.Identity())
	}
	if code, _ := bob.do("GET", "/api/credential", nil, nil); code != http.StatusNotFound {
		t.Errorf("bob sees a credential: %d", code)
	}
	if code, msg := bob.do("POST", "/api/endpoints", openRequest{URL: f.url + "/"}, nil); code == http.StatusOK || !strings.Contains(msg, "no proxy") {
		t.Errorf("bob opens gsiftp:// with alice's proxy: %d %q", code, msg)
	}

	src := alice.open(f.url + "/")
	dst := alice.open("file://" + ta.root)
	var j job
	alice.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"g.bin"}, Dst: dst.ID, DstDir: ta.root}, &j)
	if j = alice.waitJob(j.ID, stateDone, stateFailed, stateCancelled); j.State != stateDone || j.Verified != "MD5" {
		t.Fatalf("gsiftp:// copy %+v", j)
	}
	if got, _ := os.ReadFile(filepath.Join(ta.root, "g.bin")); !bytes.Equal(got, data) {
		t.Errorf("g.bin: %d bytes, not the same", len(got))
	}

	// An uploaded proxy is used as it is; once expired, copies say so.
	alice.must("POST", "/api/credential", credRequest{Proxy: readText(t, pki.Proxy(t, gsi.ProxyOptions{}))}, &cr)
	if cr.Identity != pki.User.Identity() {
		t.Errorf("uploaded proxy: %+v", cr)
	}
	ta.app.mu.Lock()
	u := ta.app.users["alice"]
	ta.app.mu.Unlock()
	expired, err := gsi.LoadCredential(pki.ExpiredProxy(t), "")
	if err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	u.cred = expired
	u.mu.Unlock()
	alice.must("GET", "/api/credential", nil, &cr)
	if !cr.Expiring || cr.SecondsLeft != 0 {
		t.Errorf("expired credential shown as %+v", cr)
	}
	code, msg = alice.do("GET", "/api/list?ep="+src.ID+"&path=/", nil, nil)
	if code == http.StatusOK || !strings.Contains(msg, "your proxy expired at") {
		t.Errorf("listing with an expired proxy: %d %q", code, msg)
	}
}
