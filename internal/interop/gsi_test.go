package interop

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/gss"
)

// gsiServer starts ferry serve with the PKI's host credential and a
// grid-mapfile that maps the test user.
func gsiServer(t *testing.T, p *pki, root string, extra ...string) *server {
	t.Helper()
	gridmap := filepath.Join(t.TempDir(), "grid-mapfile")
	if err := os.WriteFile(gridmap, []byte(p.gridmapRow+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-cert", p.hostCert, "-key", p.hostKey, "-gridmap", gridmap}
	if !p.asUser {
		flags = append(flags, "-run-as-mapped-user=false")
	}
	flags = append(flags, extra...)
	return startFerry(t, root, flags...)
}

// gctProxy makes a proxy with GCT's grid-proxy-init.
func (p *pki) gctProxy(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "x509up_gct")
	r := run(t, "", "", "env", "X509_USER_CERT="+p.userCert, "X509_USER_KEY="+p.userKey,
		"grid-proxy-init", "-bits", "2048", "-out", out)
	if r.err != nil {
		t.Fatalf("grid-proxy-init: %v", r)
	}
	return out
}

// ferryProxy makes a proxy with ferry proxy init.
func (p *pki) ferryProxy(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "x509up_ferry")
	ferry(t, "proxy", "init", "-cert", p.userCert, "-key", p.userKey, "-out", out, "-q")
	return out
}

// TestGlobusURLCopyGSI: globus-url-copy with gsiftp:// against ferry serve,
// both directions, in stream mode and MODE E, with every data-channel
// security setting, with proxies from grid-proxy-init and ferry proxy init,
// over TLS 1.3 and 1.2.
func TestGlobusURLCopyGSI(t *testing.T) {
	p := newPKI(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	srv := gsiServer(t, p, root)
	want := writeRandom(t, filepath.Join(root, "g.bin"), 5<<20+3, 11)
	local := t.TempDir()
	url := "gsiftp://" + srv.addr
	proxies := map[string]string{"grid-proxy-init": p.gctProxy(t), "ferry-proxy": p.ferryProxy(t)}
	cases := []struct {
		name  string
		flags []string
		env   []string
	}{
		{"dcau-a", nil, nil},
		{"p4", []string{"-p", "4"}, nil},
		{"nodcau", []string{"-nodcau"}, nil},
		{"p4-nodcau", []string{"-p", "4", "-nodcau"}, nil},
		{"dcsafe", []string{"-dcsafe"}, nil},
		{"dcpriv", []string{"-dcpriv"}, nil},
		{"p4-dcpriv", []string{"-p", "4", "-dcpriv"}, nil},
		{"verify-checksum", []string{"-verify-checksum"}, nil},
		{"tls12-p2-dcpriv", []string{"-p", "2", "-dcpriv"}, []string{"GLOBUS_GSSAPI_MAX_TLS_PROTOCOL=TLS1_2_VERSION"}},
	}
	for pname, proxy := range proxies {
		for _, tc := range cases {
			t.Run(pname+"/"+tc.name, func(t *testing.T) {
				env := append([]string{"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=" + filepath.Join(p.dir, "certificates")}, tc.env...)
				guc := func(args ...string) {
					t.Helper()
					all := append(append(append([]string{}, env...), "globus-url-copy"), append(append([]string{}, tc.flags...), args...)...)
					mustRun(t, "", "", "env", all...)
				}
				got := filepath.Join(local, pname+tc.name)
				guc(url+"/g.bin", "file://"+got)
				sameFile(t, got, want)
				up := "/up-" + pname + tc.name
				guc("file://"+got, url+up)
				sameFile(t, filepath.Join(root, up), want)
			})
		}
	}
}

// TestGlobusURLCopyGSIThirdParty: globus-url-copy steers a copy between
// two Ferry GSI servers; with DCAU A both present the user's delegated proxy.
func TestGlobusURLCopyGSIThirdParty(t *testing.T) {
	p := newPKI(t)
	rootA, rootB := t.TempDir(), t.TempDir()
	a, b := gsiServer(t, p, rootA), gsiServer(t, p, rootB)
	want := writeRandom(t, filepath.Join(rootA, "tp.bin"), 9<<20+1, 13)
	for pname, proxy := range map[string]string{"grid-proxy-init": p.gctProxy(t), "ferry-proxy": p.ferryProxy(t)} {
		for _, flags := range [][]string{nil, {"-p", "4"}, {"-p", "2", "-dcpriv"}, {"-nodcau"}} {
			name := pname + strings.Join(flags, "")
			t.Run(name, func(t *testing.T) {
				args := append([]string{"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=" + filepath.Join(p.dir, "certificates"), "globus-url-copy"}, flags...)
				args = append(args, "gsiftp://"+a.addr+"/tp.bin", "gsiftp://"+b.addr+"/"+name)
				mustRun(t, "", "", "env", args...)
				sameFile(t, filepath.Join(rootB, name), want)
			})
		}
	}
}

// TestGSIRefusals: what GSI must refuse, with a clear reply and a log line.
func TestGSIRefusals(t *testing.T) {
	p := newPKI(t)
	root := t.TempDir()
	writeRandom(t, filepath.Join(root, "r.bin"), 1000, 3)
	srv := gsiServer(t, p, root)
	certDir := filepath.Join(p.dir, "certificates")

	t.Run("DN not in the grid-mapfile", func(t *testing.T) {
		dir := t.TempDir()
		ferry(t, "cert", "user", "-ca", p.dir, "-cn", "Mallory Unmapped", "-out", dir, "-bits", "2048")
		proxy := filepath.Join(dir, "proxy")
		ferry(t, "proxy", "init", "-cert", filepath.Join(dir, "usercert.pem"), "-key", filepath.Join(dir, "userkey.pem"), "-out", proxy, "-q")
		r := run(t, "", "", "env", "X509_USER_PROXY="+proxy, "X509_CERT_DIR="+certDir,
			"globus-url-copy", "gsiftp://"+srv.addr+"/r.bin", "file://"+filepath.Join(dir, "x"))
		// Refused before the delegation's key is made (535), or at login
		// (530) by clients that do not delegate; either way the reply does
		// not say whether the DN is known.
		if out := r.stderr + r.stdout; r.err == nil || !strings.Contains(out, "530") && !strings.Contains(out, "535") || strings.Contains(out, "grid-mapfile") {
			t.Fatalf("unmapped DN: %v", r)
		}
	})
	t.Run("DN mapped to an account this host lacks", func(t *testing.T) {
		// A grid-mapfile typo must not become access as the server (root
		// in CI): the login is refused, with a log line that says why.
		dir := t.TempDir()
		row := strings.TrimSpace(ferry(t, "cert", "user", "-ca", p.dir, "-cn", "Typo Tester", "-account", "ferry-no-such-account", "-out", dir, "-bits", "2048"))
		gridmap := filepath.Join(t.TempDir(), "grid-mapfile")
		os.WriteFile(gridmap, []byte(row+"\n"), 0o644)
		srv := startFerry(t, root, "-cert", p.hostCert, "-key", p.hostKey, "-gridmap", gridmap)
		proxy := filepath.Join(dir, "proxy")
		ferry(t, "proxy", "init", "-cert", filepath.Join(dir, "usercert.pem"), "-key", filepath.Join(dir, "userkey.pem"), "-out", proxy, "-q")
		r := run(t, "", "", "env", "X509_USER_PROXY="+proxy, "X509_CERT_DIR="+certDir,
			"globus-url-copy", "gsiftp://"+srv.addr+"/r.bin", "file://"+filepath.Join(dir, "x"))
		if r.err == nil || !strings.Contains(r.stderr+r.stdout, "530") {
			t.Fatalf("DN mapped to a missing account: %v", r)
		}
		// globus-url-copy creates its local file before it logs in.
		if fi, err := os.Stat(filepath.Join(dir, "x")); err == nil && fi.Size() > 0 {
			t.Errorf("%d bytes were copied", fi.Size())
		}
		if !strings.Contains(srv.log.String(), "not a user of this host") {
			t.Errorf("no log line saying why:\n%s", srv.log.String())
		}
	})
	t.Run("certificate from an untrusted CA", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "ca")
		ferry(t, "cert", "ca", "-dir", other, "-subject", "/O=Ferry Test/CN=Rogue CA", "-bits", "2048")
		dir := t.TempDir()
		ferry(t, "cert", "user", "-ca", other, "-cn", "Alice Tester", "-out", dir, "-bits", "2048")
		proxy := filepath.Join(dir, "proxy")
		ferry(t, "proxy", "init", "-cert", filepath.Join(dir, "usercert.pem"), "-key", filepath.Join(dir, "userkey.pem"), "-out", proxy, "-q")
		// The client trusts both CAs, so only the server can refuse.
		both := t.TempDir()
		for _, d := range []string{certDir, filepath.Join(other, "certificates")} {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(d, e.Name()))
				os.WriteFile(filepath.Join(both, e.Name()), b, 0o644)
			}
		}
		r := run(t, "", "", "env", "X509_USER_PROXY="+proxy, "X509_CERT_DIR="+both,
			"globus-url-copy", "gsiftp://"+srv.addr+"/r.bin", "file://"+filepath.Join(dir, "x"))
		if r.err == nil {
			t.Fatalf("untrusted CA accepted: %v", r)
		}
		if !strings.Contains(srv.log.String(), "GSI peer refused") {
			t.Errorf("no log line names the refusal:\n%s", srv.log)
		}
	})
	t.Run("garbage and truncated ADAT", func(t *testing.T) {
		for _, token := range []string{"Zm9vYmFy", "FgMBAAU=", "not base64!"} {
			c := rawDial(t, srv.addr)
			c.expect("AUTH GSSAPI", 334)
			if r := c.do("ADAT " + token); r.code != 535 && r.code != 501 {
				t.Errorf("ADAT %q: %d %s", token, r.code, r.text)
			}
			c.expect("NOOP", 200)
		}
	})
	t.Run("password login on a plain channel", func(t *testing.T) {
		c := rawDial(t, srv.addr)
		c.expect("USER alice", 331)
		c.expect("PASS secret", 530)
	})
	t.Run("unwrapped command after authentication", func(t *testing.T) {
		proxy, err := gsi.LoadCredential(p.ferryProxy(t), "")
		if err != nil {
			t.Fatal(err)
		}
		c := rawDial(t, srv.addr)
		g := c.gsiLogin(t, proxy)
		defer g.Close()
		c.send("PWD") // not in ENC
		line := c.line()
		if !strings.HasPrefix(line, "632 ") {
			t.Fatalf("reply to an unwrapped command is not wrapped: %q", line)
		}
		tok, _ := base64.StdEncoding.DecodeString(line[4:])
		plain, err := g.Unwrap(tok)
		if err != nil || !strings.HasPrefix(string(plain), "533 ") {
			t.Fatalf("unwrapped command: %q %v", plain, err)
		}
	})
}

// rawConn is a plain control connection for protocol-level checks.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

type rawReply struct {
	code int
	text string
}

func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	if r := rc.read(); r.code != 220 {
		t.Fatalf("banner %v", r)
	}
	return rc
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := c.c.Write([]byte(line + "\r\n")); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) line() string {
	c.t.Helper()
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return strings.TrimRight(l, "\r\n")
}

// read reads a reply, multi-line ones included.
func (c *rawConn) read() rawReply {
	c.t.Helper()
	first := c.line()
	var code int
	fmt.Sscanf(first, "%3d", &code)
	text := first[min(4, len(first)):]
	if len(first) > 3 && first[3] == '-' {
		for {
			l := c.line()
			if strings.HasPrefix(l, first[:3]+" ") {
				break
			}
		}
	}
	return rawReply{code, text}
}

func (c *rawConn) do(line string) rawReply {
	c.t.Helper()
	c.send(line)
	return c.read()
}

func (c *rawConn) expect(line string, code int) {
	c.t.Helper()
	if r := c.do(line); r.code != code {
		c.t.Fatalf("%s: %d %s, want %d", line, r.code, r.text, code)
	}
}

// gsiLogin authenticates with AUTH GSSAPI as cred, without delegation.
func (c *rawConn) gsiLogin(t *testing.T, cred *gsi.Credential) *gss.Context {
	t.Helper()
	c.expect("AUTH GSSAPI", 334)
	g := gss.Initiate(&gss.InitiatorConfig{TLS: &tls.Config{
		Certificates:       []tls.Certificate{cred.TLSCertificate()},
		InsecureSkipVerify: true, // this test checks the server's side of the exchange
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, _, err := g.Step(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		r := c.do("ADAT " + base64.StdEncoding.EncodeToString(tok))
		switch r.code {
		case 235:
			return g
		case 335:
			in, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(r.text, "ADAT="))
			if err != nil {
				t.Fatal(err)
			}
			if tok, _, err = g.Step(ctx, in); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("ADAT: %d %s", r.code, r.text)
		}
	}
	t.Fatal("no end to ADAT")
	return nil
}
