package server_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	ftpclient "github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gatedwriter"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/server"
)

// reloadServer starts a GSI server over st with the PKI's files and
// returns it, its address and its Config (to hand to Reload).
func reloadServer(t *testing.T, pki *gsipki.PKI) (*server.Server, string, server.Config) {
	t.Helper()
	st := memory.New()
	w, err := st.Create(context.Background(), "/big", dsiCreate())
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt(bytes.Repeat([]byte("ferry"), 1<<20), 0)
	w.Close()
	cfg := server.Config{
		Storage:  st,
		HostCert: pki.HostCert, HostKey: pki.HostKey,
		TrustDir: pki.TrustDir, GridMap: pki.GridMap,
		ServeMappedAsServer: true,
		LoginFailureDelay:   -1,
	}
	srv, addr, _ := start(t, cfg)
	return srv, addr, cfg
}

// gsiDial opens a GSI session with a proxy of cred (the handshake done,
// not logged in), trusting trustDir.
func gsiDial(t *testing.T, cred *gsi.Credential, pki *gsipki.PKI, trustDir, addr string) (*ftpclient.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proxy, err := ftpclient.LoadCredential(pki.ProxyOf(t, cred, gsi.ProxyOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := ftpclient.LoadTrustStore(trustDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ftpclient.Dial(ctx, addr, &ftpclient.Config{GSI: &ftpclient.GSIConfig{Credential: proxy, Trust: trust}})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// gsiLogin is gsiDial and a mapped login; it reports the error of either.
func gsiLogin(t *testing.T, cred *gsi.Credential, pki *gsipki.PKI, trustDir, addr string) error {
	t.Helper()
	c, err := gsiDial(t, cred, pki, trustDir, addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.Login(ctx, "", "x")
}

// copyDir copies the files of dir into a new directory: a client's view
// of a trust directory the test then changes under the server.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// partRefused reports whether err refuses the named part of a reload.
func partRefused(err error, part string) bool {
	for _, e := range unjoin(err) {
		var pe *server.ReloadPartError
		if errors.As(e, &pe) && pe.Part == part {
			return true
		}
	}
	return false
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestReloadCRL: a CRL that revokes the user, reloaded, refuses the user's
// new logins, and a login on a channel authenticated before the reload;
// the session logged in before it carries on and its running download
// finishes. A corrupt CRL is refused, the current trust kept.
func TestReloadCRL(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, addr, cfg := reloadServer(t, pki)
	clientTrust := copyDir(t, pki.TrustDir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	old := gsiSession(t, pki, addr)
	g := gatedwriter.New()
	done := make(chan error, 1)
	go func() {
		_, err := old.RetrieveAt(ctx, "/big", g, nil)
		done <- err
	}()
	<-g.Started()
	pending, err := gsiDial(t, pki.User, pki, clientTrust, addr)
	if err != nil {
		t.Fatal(err)
	}

	// A CRL written halfway: refused, and logins go on as before.
	hash, err := gsi.SubjectHash(pki.CA.Chain[0].RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	crl := filepath.Join(pki.TrustDir, hash+".r0")
	good, err := os.ReadFile(crl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crl, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Reload(cfg); !partRefused(err, "trust directory") {
		t.Fatalf("corrupt CRL: Reload = %v, want the trust directory refused", err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err != nil {
		t.Fatalf("login after a refused reload: %v", err)
	}

	pki.Revoke(t, pki.User)
	applied, err := srv.Reload(cfg)
	if err != nil {
		t.Fatalf("Reload = %v", err)
	}
	t.Logf("applied: %v", applied)
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Fatal("a revoked user logged in after the reload")
	}
	if err := pending.Login(ctx, "", "x"); err == nil {
		t.Fatal("a revoked user authenticated before the reload logged in after it")
	}

	// The session of before carries on: its download, then a command.
	g.Open()
	if err := <-done; err != nil {
		t.Fatalf("download running across the reload: %v", err)
	}
	if g.N() != 5<<20 {
		t.Fatalf("download moved %d bytes, want %d", g.N(), 5<<20)
	}
	if err := old.Mkdir(ctx, "/after-reload"); err != nil {
		t.Fatalf("session of before the reload: %v", err)
	}
}

// TestReloadTrustAddsCA: a CA added to the trust directory is trusted
// for new logins once reloaded.
func TestReloadTrustAddsCA(t *testing.T) {
	pki := gsipki.New(t, "")
	other := gsipki.New(t, "")
	srv, addr, cfg := reloadServer(t, pki)
	if err := gsiLogin(t, other.User, other, other.TrustDir, addr); err == nil {
		t.Fatal("a user of an untrusted CA logged in")
	}
	entries, err := os.ReadDir(other.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(other.TrustDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pki.TrustDir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	// The client trusts the server's CA (pki's directory, now both).
	c, err := gsiDial(t, other.User, other, pki.TrustDir, addr)
	if err != nil {
		t.Fatalf("user of the added CA: %v", err)
	}
	if err := c.Login(context.Background(), "", "x"); err != nil {
		t.Fatalf("user of the added CA: %v", err)
	}
}

// TestReloadGridMap: a corrupt grid-mapfile is refused and the current
// one kept; a new one that drops the user refuses the user's new logins,
// not the session already logged in.
func TestReloadGridMap(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, addr, cfg := reloadServer(t, pki)
	clientTrust := pki.TrustDir
	ctx := context.Background()
	old := gsiSession(t, pki, addr)

	if err := os.WriteFile(pki.GridMap, []byte("\"/C=US/O=FerryTest/CN=unterminated\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Reload(cfg); !partRefused(err, "grid-mapfile") {
		t.Fatalf("corrupt grid-mapfile: Reload = %v", err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err != nil {
		t.Fatalf("the grid-mapfile kept should still map the user: %v", err)
	}

	if err := os.WriteFile(pki.GridMap, []byte(gsi.GridMapLine(gsipki.Org+"/OU=users/CN=Someone Else", pki.Account)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Fatal("a user no longer in the grid-mapfile logged in")
	}
	if err := old.Mkdir(ctx, "/still-here"); err != nil {
		t.Fatalf("session of before the reload: %v", err)
	}

	// A missing file revokes every mapping (TestReloadGridMapMissing).
	os.Remove(pki.GridMap)
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatalf("missing grid-mapfile: Reload = %v", err)
	}
	if err := gsiLogin(t, pki.User, pki, clientTrust, addr); err == nil {
		t.Fatal("a missing grid-mapfile let the user in")
	}
}

// TestReloadLoginSettings: the password hook and anonymous access follow
// Reload; a session logged in before keeps working.
func TestReloadLoginSettings(t *testing.T) {
	pw := func(want string) func(ctx context.Context, user, pass string) (*server.Account, error) {
		return func(ctx context.Context, user, pass string) (*server.Account, error) {
			if user == "alice" && pass == want {
				return &server.Account{Name: "alice", Writable: true}, nil
			}
			return nil, server.ErrLoginDenied
		}
	}
	cfg := server.Config{Storage: memory.New(), Anonymous: true, Authenticate: pw("one"), LoginFailureDelay: -1}
	srv, addr, _ := start(t, cfg)
	anon := dial(t, addr)
	anon.read()
	anon.expect("USER anonymous", 331)
	anon.expect("PASS x", 230)

	cfg.Anonymous, cfg.Authenticate = false, pw("two")
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	login := func(user, pass string, code int) {
		t.Helper()
		c := dial(t, addr)
		c.read()
		c.expect("USER "+user, 331)
		c.expect("PASS "+pass, code)
	}
	login("alice", "one", 530)
	login("alice", "two", 230)
	login("anonymous", "x", 530)
	anon.expect("PWD", 257)

	// A server without a host credential cannot gain one by reloading.
	cfg.HostCert, cfg.HostKey = "/nonexistent/cert.pem", "/nonexistent/key.pem"
	if _, err := srv.Reload(cfg); !partRefused(err, "host credential") {
		t.Fatalf("Reload = %v, want the host credential refused", err)
	}
}

// TestReloadGridMapMissing: removing the grid-mapfile and reloading
// revokes every mapping it granted (fail closed); putting it back and
// reloading restores them.
func TestReloadGridMapMissing(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, addr, cfg := reloadServer(t, pki)
	if err := gsiLogin(t, pki.User, pki, pki.TrustDir, addr); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(pki.GridMap)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(pki.GridMap)
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatalf("missing grid-mapfile: Reload = %v", err)
	}
	if err := gsiLogin(t, pki.User, pki, pki.TrustDir, addr); err == nil {
		t.Fatal("the user still logs in after the grid-mapfile was removed and the server reloaded")
	}
	if err := os.WriteFile(pki.GridMap, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if err := gsiLogin(t, pki.User, pki, pki.TrustDir, addr); err != nil {
		t.Fatalf("grid-mapfile back: %v", err)
	}
}
