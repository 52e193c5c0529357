package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/server"
)

// ftpsSrv is Ferry's server in-process with a host credential (or none),
// password user alice/secret, and a count of password checks and PASS
// commands received.
type ftpsSrv struct {
	dir, addr string
	auths     atomic.Int32 // Authenticate calls
	passes    atomic.Int32 // PASS commands, from the server's Debug log
}

// passCounter counts the server's Debug "command" records of PASS.
type passCounter struct{ n *atomic.Int32 }

func (p passCounter) Enabled(context.Context, slog.Level) bool { return true }
func (p passCounter) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p passCounter) WithGroup(string) slog.Handler            { return p }
func (p passCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "command" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "cmd" && strings.HasPrefix(strings.ToUpper(a.Value.String()), "PASS") {
				p.n.Add(1)
			}
			return true
		})
	}
	return nil
}

// startFTPSSrv starts the server with certFile/keyFile ("" for none), and
// points X509_CERT_DIR at the PKI's trust directory and NETRC at nothing.
func startFTPSSrv(t *testing.T, pki *gsipki.PKI, certFile, keyFile string) *ftpsSrv {
	t.Helper()
	t.Setenv("X509_CERT_DIR", pki.TrustDir)
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	s := &ftpsSrv{dir: t.TempDir()}
	fs, err := posix.New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ftpserver.Start(t, server.Config{
		Storage: fs,
		Authenticate: func(ctx context.Context, user, pass string) (*server.Account, error) {
			s.auths.Add(1)
			if user == "alice" && pass == "secret" {
				return &server.Account{Name: "alice", Writable: true}, nil
			}
			return nil, server.ErrLoginDenied
		},
		HostCert:            certFile,
		HostKey:             keyFile,
		TrustDir:            pki.TrustDir,
		GridMap:             pki.GridMap,
		ServeMappedAsServer: true,
		LoginFailureDelay:   -1,
		Logger:              slog.New(passCounter{&s.passes}),
	})
	return s
}

// url is the ftps:// URL of p on s, logged in as alice, with the host
// name localhost (which the PKI's host certificate names).
func (s *ftpsSrv) url(p string) string {
	_, port, _ := net.SplitHostPort(s.addr)
	return "ftps://alice:secret@localhost:" + port + p
}

// TestFTPSCp copies up and down over ftps:// in stream mode and with
// -p 4, lists, makes and removes a directory, checksums, and runs a
// shell session.
func TestFTPSCp(t *testing.T) {
	pki := gsipki.New(t, "")
	s := startFTPSSrv(t, pki, pki.HostCert, pki.HostKey)
	local := t.TempDir()
	data := randomData(t, 3<<20+11)
	src := filepath.Join(local, "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(local, "state"))
	for _, p := range []string{"1", "4"} {
		ok(t, "cp", "-p", p, src, s.url("/up"+p))
		if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "up"+p)), data) {
			t.Fatalf("-p %s: upload differs", p)
		}
		down := filepath.Join(local, "down"+p)
		ok(t, "cp", "-p", p, s.url("/up"+p), down)
		if !bytes.Equal(mustRead(t, down), data) {
			t.Fatalf("-p %s: download differs", p)
		}
	}
	ok(t, "mkdir", s.url("/newdir"))
	if fi, err := os.Stat(filepath.Join(s.dir, "newdir")); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir: %v", err)
	}
	r := ok(t, "ls", s.url("/"))
	for _, want := range []string{"up1", "up4", "newdir"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ls: no %s in %q", want, r.stdout)
		}
	}
	ok(t, "rm", s.url("/up1"))
	ok(t, "rm", "-d", s.url("/newdir"))
	for _, gone := range []string{"up1", "newdir"} {
		if _, err := os.Stat(filepath.Join(s.dir, gone)); !os.IsNotExist(err) {
			t.Errorf("rm %s: %v", gone, err)
		}
	}
	if r := ok(t, "cksum", "-a", "md5", s.url("/up4")); len(strings.Fields(r.stdout)) == 0 {
		t.Errorf("cksum printed nothing")
	}
	script := "lcd " + local + "\nput src shell-up\nls\nquit\n"
	if r := ferry(t, []byte(script), "shell", s.url("/")); r.code != 0 || !strings.Contains(r.stdout, "shell-up") {
		t.Errorf("shell: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "shell-up")), data) {
		t.Error("shell put differs")
	}

	// A client certificate instead of a password: no user in the URL,
	// the server maps the proxy's identity through its grid-mapfile.
	proxy := pki.Proxy(t, gsi.ProxyOptions{})
	_, port, _ := net.SplitHostPort(s.addr)
	before := s.auths.Load()
	ok(t, "cp", "-cert", proxy, src, "ftps://localhost:"+port+"/by-cert")
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "by-cert")), data) {
		t.Error("upload with a client certificate differs")
	}
	if n := s.auths.Load(); n != before {
		t.Errorf("a certificate login checked a password (%d calls)", n-before)
	}

	// Third party between two ftps:// servers is refused clearly.
	s2 := startFTPSSrv(t, pki, pki.HostCert, pki.HostKey)
	r = ferry(t, nil, "cp", s.url("/up4"), s2.url("/copy"))
	if r.code == 0 || !strings.Contains(r.stderr, "third-party") {
		t.Errorf("third party between ftps:// servers: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Logf("third party: %s", strings.TrimSpace(r.stderr))
	// -notpt copies through this client, over PROT P both ways.
	ok(t, "cp", "-notpt", s.url("/up4"), s2.url("/copy"))
	if !bytes.Equal(mustRead(t, filepath.Join(s2.dir, "copy")), data) {
		t.Error("cp -notpt between ftps:// servers: the copy differs")
	}
}

// TestFTPSFailsClosed: an ftps:// URL to a server that offers no TLS
// fails with a clear message and sends no password; a certificate for
// another host name fails verification, also before any password.
func TestFTPSFailsClosed(t *testing.T) {
	pki := gsipki.New(t, "")
	t.Run("no-tls", func(t *testing.T) {
		s := startFTPSSrv(t, pki, "", "")
		r := ferry(t, nil, "ls", s.url("/"))
		if r.code == 0 || !strings.Contains(r.stderr, "AUTH TLS") {
			t.Errorf("ls: exit %d, stderr %q, want a refusal of AUTH TLS", r.code, r.stderr)
		}
		t.Logf("ls: %s", strings.TrimSpace(r.stderr))
		if a, p := s.auths.Load(), s.passes.Load(); a != 0 || p != 0 {
			t.Errorf("the server checked %d passwords and received %d PASS", a, p)
		}
		// The same with cp, which retries with -rst: still no password.
		r = ferry(t, nil, "cp", "-rst", "-rst-retries", "2", "-rst-interval", "10ms", s.url("/x"), filepath.Join(t.TempDir(), "x"))
		if r.code == 0 || s.passes.Load() != 0 {
			t.Errorf("cp: exit %d, %d PASS received; stderr %q", r.code, s.passes.Load(), r.stderr)
		}
	})
	t.Run("wrong-host", func(t *testing.T) {
		cert, key := pki.IssueHost(t, "other.example", "other.example")
		s := startFTPSSrv(t, pki, cert, key)
		r := ferry(t, nil, "ls", s.url("/"))
		if r.code == 0 || !strings.Contains(r.stderr, "do not match host") {
			t.Errorf("ls: exit %d, stderr %q, want a host name mismatch", r.code, r.stderr)
		}
		t.Logf("ls: %s", strings.TrimSpace(r.stderr))
		if a, p := s.auths.Load(), s.passes.Load(); a != 0 || p != 0 {
			t.Errorf("the server checked %d passwords and received %d PASS", a, p)
		}
	})
}
