package web

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/server"
)

// testPasswords are the accounts of the tests' password file.
var testPasswords = map[string]string{"alice": "alice-secret", "bob": "bob-secret"}

// passwdFile writes a ferry passwd file with testPasswords, hashed with
// few iterations to keep the tests fast.
func passwdFile(t *testing.T) *auth.Passwd {
	t.Helper()
	var b strings.Builder
	for u, p := range testPasswords {
		salt := make([]byte, 16)
		rand.Read(salt)
		key, err := pbkdf2.Key(sha256.New, p, salt, 1000, 32)
		if err != nil {
			t.Fatal(err)
		}
		enc := base64.RawStdEncoding
		fmt.Fprintf(&b, "%s:pbkdf2-sha256$1000$%s$%s\n", u, enc.EncodeToString(salt), enc.EncodeToString(key))
	}
	pw, err := auth.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return pw
}

// ferrySrv is an in-process Ferry GridFTP server with anonymous write
// access to dir. Reads of files whose name starts with "slow" are
// throttled to slowRate while slow is set.
type ferrySrv struct {
	dir  string
	url  string
	slow atomic.Bool
}

const slowRate = 4 << 20

type slowFS struct {
	dsi.Storage
	f *ferrySrv
}

func (s slowFS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := s.Storage.Open(ctx, name)
	if err != nil || !strings.HasPrefix(filepath.Base(name), "slow") {
		return r, err
	}
	return slowReader{r, s.f}, nil
}

type slowReader struct {
	dsi.Reader
	f *ferrySrv
}

func (r slowReader) ReadAt(p []byte, off int64) (int, error) {
	if r.f.slow.Load() {
		time.Sleep(time.Duration(len(p)) * time.Second / slowRate)
	}
	return r.Reader.ReadAt(p, off)
}

func startFerrySrv(t *testing.T) *ferrySrv { t.Helper(); return startFerrySrvGSI(t, nil) }

// startFerrySrvGSI starts a Ferry server that also takes GSI logins with
// pki's host credential, trust directory and grid-mapfile (none with a
// nil pki); its url is then gsiftp://.
func startFerrySrvGSI(t *testing.T, pki *gsipki.PKI) *ferrySrv {
	t.Helper()
	f := &ferrySrv{dir: t.TempDir()}
	f.slow.Store(true)
	fs, err := posix.New(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Storage: slowFS{fs, f}, Anonymous: true, AnonymousWrite: true}
	if pki != nil {
		cfg.HostCert, cfg.HostKey, cfg.TrustDir, cfg.GridMap = pki.HostCert, pki.HostKey, pki.TrustDir, pki.GridMap
		cfg.ServeMappedAsServer = true // the tests run as root
	}
	addr := ftpserver.Start(t, cfg)
	f.url = "ftp://" + addr
	if pki != nil {
		f.url = "gsiftp://" + addr
	}
	return f
}

// testApp is an App behind an httptest server on loopback.
type testApp struct {
	app  *App
	srv  *httptest.Server
	hist history.Store
	root string // the one allowed file:// root
}

func startApp(t *testing.T) *testApp { t.Helper(); return startAppWith(t, nil) }

// startAppWith is startApp with mod applied to the Config.
func startAppWith(t *testing.T, mod func(*Config)) *testApp {
	t.Helper()
	return startAppOn(t, filepath.Join(t.TempDir(), "history.db"), t.TempDir(), mod)
}

// startAppOn starts an app whose history is the database dsn and whose
// file:// root is root.
func startAppOn(t *testing.T, dsn, root string, mod func(*Config)) *testApp {
	t.Helper()
	st, err := history.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The tests' servers are on loopback.
	cfg := Config{Passwd: passwdFile(t), Roots: []string{root}, History: st, AllowNet: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if mod != nil {
		mod(&cfg)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		app.Close()
		srv.Close()
		st.Close()
	})
	real, _ := filepath.EvalSymlinks(root)
	return &testApp{app: app, srv: srv, hist: st, root: real}
}

// apiClient is a logged-in (or not) API client with its own cookies.
type apiClient struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func (ta *testApp) client(t *testing.T) *apiClient {
	jar, _ := cookiejar.New(nil)
	return &apiClient{t: t, base: ta.srv.URL, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// do sends a request and decodes a JSON reply into out (when not nil);
// it returns the status and the error text of an error reply.
func (c *apiClient) do(method, path string, body, out any) (int, string) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.csrf != "" && method != "GET" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		var e apiError
		json.Unmarshal(data, &e)
		return res.StatusCode, e.Error
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v in %q", method, path, err, data)
		}
	}
	return res.StatusCode, ""
}

func (c *apiClient) login(user string) {
	c.t.Helper()
	var me meReply
	if code, msg := c.do("POST", "/api/login", loginRequest{User: user, Password: testPasswords[user]}, &me); code != 200 {
		c.t.Fatalf("login %s: %d %s", user, code, msg)
	}
	c.csrf = me.CSRF
}

// must fails the test unless the request succeeds.
func (c *apiClient) must(method, path string, body, out any) {
	c.t.Helper()
	if code, msg := c.do(method, path, body, out); code != 200 {
		c.t.Fatalf("%s %s: %d %s", method, path, code, msg)
	}
}

func (c *apiClient) open(url string) *endpoint {
	c.t.Helper()
	var ep endpoint
	c.must("POST", "/api/endpoints", openRequest{URL: url}, &ep)
	return &ep
}

// waitJob polls the user's job until it is in one of states.
func (c *apiClient) waitJob(id string, states ...string) job {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var jobs []job
		c.must("GET", "/api/jobs", nil, &jobs)
		for _, j := range jobs {
			if j.ID == id {
				for _, s := range states {
					if j.State == s {
						return j
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("job %s never reached %v", id, states)
	return job{}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randomData(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
