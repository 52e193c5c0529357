package client_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/server"
)

// These tests run the client's explicit FTPS (AUTH TLS, PROT P) against
// Ferry's own server, in-process, with a host credential from a test PKI.

// ftpsServer is Ferry's server in-process with a password hook that
// counts its calls, and a log of the commands it received.
type ftpsServer struct {
	addr  string
	dir   string
	auths atomic.Int32 // calls of the Authenticate hook
	cmds  *cmdLog
}

// cmdLog keeps the "cmd" attribute of the server's Debug "command"
// records (the server shows a PASS argument as ****).
type cmdLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *cmdLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *cmdLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *cmdLog) WithGroup(string) slog.Handler            { return l }
func (l *cmdLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "command" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "cmd" {
			l.mu.Lock()
			l.cmds = append(l.cmds, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// verbs returns the command words received so far.
func (l *cmdLog) verbs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, c := range l.cmds {
		v, _, _ := strings.Cut(c, " ")
		out = append(out, strings.ToUpper(v))
	}
	return out
}

// startFTPSServer starts Ferry's server with the host credential in
// certFile and keyFile ("" for none: then it offers no AUTH TLS), the
// PKI's trust directory and grid-mapfile, and password user alice/secret.
func startFTPSServer(t *testing.T, pki *gsipki.PKI, certFile, keyFile string) *ftpsServer {
	t.Helper()
	s := &ftpsServer{dir: t.TempDir(), cmds: &cmdLog{}}
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
		Logger:              slog.New(s.cmds),
	})
	return s
}

// ftpsConfig trusts the PKI's trust directory.
func ftpsConfig(t *testing.T, pki *gsipki.PKI) *client.FTPSConfig {
	t.Helper()
	trust, err := client.LoadTrustStore(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	return &client.FTPSConfig{Trust: trust}
}

// ftpsLogin dials addr with FTPS and logs in.
func ftpsLogin(t *testing.T, addr string, f *client.FTPSConfig, active bool, user, pass string) *client.Conn {
	t.Helper()
	ctx := testCtx(t)
	c, err := client.Dial(ctx, addr, &client.Config{FTPS: f, Active: active})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(ctx, user, pass); err != nil {
		t.Fatal(err)
	}
	if ok, v := c.FTPS(); !ok || v == 0 {
		t.Fatalf("FTPS() = %v, %x after an FTPS login", ok, v)
	}
	return c
}

// ftpsRoundTrip uploads data to name with p streams (1: stream mode),
// checks the server's file, downloads it back and compares.
func ftpsRoundTrip(t *testing.T, c *client.Conn, s *ftpsServer, name string, data []byte, p int) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := c.StoreAt(ctx, "/"+name, bytes.NewReader(data), int64(len(data)), &client.StoreOptions{Parallel: p}); err != nil {
		t.Fatalf("upload %s (-p %d): %v", name, p, err)
	}
	if got, err := os.ReadFile(filepath.Join(s.dir, name)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("upload %s (-p %d): the server's file differs (%d bytes, want %d; %v)", name, p, len(got), len(data), err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.RetrieveAt(ctx, "/"+name, f, &client.RetrieveOptions{Parallel: p}); err != nil {
		t.Fatalf("download %s (-p %d): %v", name, p, err)
	}
	if got, err := os.ReadFile(f.Name()); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download %s (-p %d): got %d bytes, want %d (%v)", name, p, len(got), len(data), err)
	}
}

// TestFTPSTransfers logs in with a password over AUTH TLS and moves files
// both ways over PROT P data channels, in stream mode and MODE E with 4
// streams, passive and active; it lists, makes and removes a directory.
func TestFTPSTransfers(t *testing.T) {
	pki := gsipki.New(t, "")
	s := startFTPSServer(t, pki, pki.HostCert, pki.HostKey)
	data := randomBytes(t, 5<<20+3)
	for _, active := range []bool{false, true} {
		name := map[bool]string{false: "passive", true: "active"}[active]
		t.Run(name, func(t *testing.T) {
			c := ftpsLogin(t, s.addr, ftpsConfig(t, pki), active, "alice", "secret")
			ctx := testCtx(t)
			for _, p := range []int{1, 4} {
				ftpsRoundTrip(t, c, s, name+"-p"+string(rune('0'+p)), data, p)
			}
			ftpsRoundTrip(t, c, s, name+"-empty", nil, 1)
			dir := "/" + name + "-dir"
			if err := c.Mkdir(ctx, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Store(ctx, dir+"/small", strings.NewReader("hello"), nil); err != nil {
				t.Fatal(err)
			}
			es, err := c.List(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != 1 || es[0].Name != "small" || es[0].Size != 5 {
				t.Fatalf("listing of %s: %+v", dir, es)
			}
			if err := c.Delete(ctx, dir+"/small"); err != nil {
				t.Fatal(err)
			}
			if err := c.Rmdir(ctx, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(s.dir, name+"-dir")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("directory still there: %v", err)
			}
			if err := c.Quit(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	verbs := s.cmds.verbs()
	for _, want := range []string{"AUTH", "PBSZ", "PROT"} {
		if !slices.Contains(verbs, want) {
			t.Errorf("the server never received %s: %v", want, verbs)
		}
	}
}

// TestFTPSRefusedFailsClosed: a server without a host credential refuses
// AUTH TLS; the FTPS Dial fails with ErrTLSRefused and sends neither USER
// nor PASS.
func TestFTPSRefusedFailsClosed(t *testing.T) {
	pki := gsipki.New(t, "")
	s := startFTPSServer(t, pki, "", "")
	ctx := testCtx(t)
	c, err := client.Dial(ctx, s.addr, &client.Config{FTPS: ftpsConfig(t, pki)})
	if err == nil {
		c.Close()
		t.Fatal("FTPS Dial to a server without TLS succeeded")
	}
	if !errors.Is(err, client.ErrTLSRefused) {
		t.Fatalf("error %v, want ErrTLSRefused", err)
	}
	var re *client.ReplyError
	if !errors.As(err, &re) || re.Reply.Code != 504 {
		t.Errorf("error %v does not carry the server's 504", err)
	}
	t.Logf("error: %v", err)
	assertNoLogin(t, s, []string{"AUTH"})
}

// assertNoLogin checks that the server got exactly the commands want
// (waiting briefly for the session to end) and no password check.
func assertNoLogin(t *testing.T, s *ftpsServer, want []string) {
	t.Helper()
	if n := s.auths.Load(); n != 0 {
		t.Errorf("the password hook ran %d times", n)
	}
	got := s.cmds.verbs()
	if slices.Contains(got, "PASS") || slices.Contains(got, "USER") {
		t.Errorf("the server received a login: %v", got)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the server received %v, want %v", got, want)
	}
}

// TestFTPSWrongHost: a server certificate for another host name fails the
// handshake with a *ServerCertError (host name mismatch), before any
// login; a certificate no trusted CA issued fails too.
func TestFTPSWrongHost(t *testing.T) {
	pki := gsipki.New(t, "")
	cert, key := pki.IssueHost(t, "other.example", "other.example")
	s := startFTPSServer(t, pki, cert, key)
	ctx := testCtx(t)
	c, err := client.Dial(ctx, s.addr, &client.Config{FTPS: ftpsConfig(t, pki)})
	if err == nil {
		c.Close()
		t.Fatal("FTPS Dial accepted a certificate for other.example at 127.0.0.1")
	}
	var sce *client.ServerCertError
	if !errors.As(err, &sce) || !errors.Is(err, gsi.ErrHostMismatch) {
		t.Fatalf("error %v, want a *ServerCertError with a host name mismatch", err)
	}
	t.Logf("error: %v", err)

	// The right name passes (ServerName), and so does the login.
	f := ftpsConfig(t, pki)
	f.ServerName = "other.example"
	ftpsLogin(t, s.addr, f, false, "alice", "secret")

	// Without the trust directory the grid CA is unknown (system roots
	// only).
	c, err = client.Dial(ctx, s.addr, &client.Config{FTPS: &client.FTPSConfig{ServerName: "other.example"}})
	if err == nil {
		c.Close()
		t.Fatal("FTPS Dial accepted a certificate of an untrusted CA")
	}
	if !errors.As(err, &sce) {
		t.Fatalf("error %v, want a *ServerCertError", err)
	}
	t.Logf("error: %v", err)

	// The same CA as a crypto/x509 root (RootCAs, as the system's roots
	// are used): accepted for the right name only.
	roots := x509.NewCertPool()
	roots.AddCert(pki.CA.Leaf())
	ftpsLogin(t, s.addr, &client.FTPSConfig{RootCAs: roots, ServerName: "other.example"}, false, "alice", "secret")
	c, err = client.Dial(ctx, s.addr, &client.Config{FTPS: &client.FTPSConfig{RootCAs: roots}})
	if err == nil {
		c.Close()
		t.Fatal("FTPS Dial (RootCAs) accepted a certificate for other.example at 127.0.0.1")
	}
	var hm x509.HostnameError
	if !errors.As(err, &hm) {
		t.Fatalf("error %v, want an x509.HostnameError", err)
	}
	t.Logf("error: %v", err)
	if n := s.auths.Load(); n != 2 {
		t.Errorf("the password hook ran %d times, want 2 (the good logins)", n)
	}
}

// TestFTPSClientCertificate: with a client certificate (a proxy, as GSI
// uses) and no user, the server maps the identity through its
// grid-mapfile; no password is checked.
func TestFTPSClientCertificate(t *testing.T) {
	pki := gsipki.New(t, "")
	s := startFTPSServer(t, pki, pki.HostCert, pki.HostKey)
	f := ftpsConfig(t, pki)
	f.Certificate = loadCred(t, pki.Proxy(t, gsi.ProxyOptions{}))
	c := ftpsLogin(t, s.addr, f, false, "", "")
	ftpsRoundTrip(t, c, s, "cert", randomBytes(t, 100000), 4)
	if n := s.auths.Load(); n != 0 {
		t.Errorf("the password hook ran %d times", n)
	}
}

// TestFTPSThirdPartyRefused: a third-party transfer between FTPS Conns is
// refused before any command, with ErrThirdPartyFTPS.
func TestFTPSThirdPartyRefused(t *testing.T) {
	pki := gsipki.New(t, "")
	s := startFTPSServer(t, pki, pki.HostCert, pki.HostKey)
	if err := os.WriteFile(filepath.Join(s.dir, "src"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := ftpsLogin(t, s.addr, ftpsConfig(t, pki), false, "alice", "secret")
	b := ftpsLogin(t, s.addr, ftpsConfig(t, pki), false, "alice", "secret")
	ctx := testCtx(t)
	if _, err := client.ThirdParty(ctx, a, "/src", b, "/dst", nil); !errors.Is(err, client.ErrThirdPartyFTPS) {
		t.Fatalf("ThirdParty: %v, want ErrThirdPartyFTPS", err)
	}
	errs := client.ThirdPartyFiles(ctx, a, b, []client.ThirdPartyFile{{Src: "/src", Dst: "/dst"}}, nil)
	if !errors.Is(errs[0], client.ErrThirdPartyFTPS) {
		t.Fatalf("ThirdPartyFiles: %v, want ErrThirdPartyFTPS", errs[0])
	}
	// Both Conns are still usable.
	if _, err := a.Size(ctx, "/src"); err != nil {
		t.Fatal(err)
	}
}
