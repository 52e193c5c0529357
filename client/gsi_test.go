package client_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// These tests run the client's GSI (gsiftp://) against GCT's
// globus-gridftp-server started with a host certificate, trust directory
// and grid-mapfile from a test PKI; sessions run as the mapped account.

// gsiEnv is a test PKI with a GCT GSI server.
type gsiEnv struct {
	pki   *gsipki.PKI
	srv   *gctgsi.Server
	dir   string
	trust *client.TrustStore
}

func newGSIEnv(t *testing.T, opt *gctgsi.Options) *gsiEnv {
	t.Helper()
	pki := gsipki.New(t, "")
	return gsiEnvFor(t, pki, opt)
}

func gsiEnvFor(t *testing.T, pki *gsipki.PKI, opt *gctgsi.Options) *gsiEnv {
	t.Helper()
	trust, err := client.LoadTrustStore(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	return &gsiEnv{pki: pki, srv: gctgsi.Start(t, pki, opt), dir: gctgsi.Dir(t, pki), trust: trust}
}

// loadCred loads a credential file.
func loadCred(t *testing.T, file string) *client.Credential {
	t.Helper()
	cred, err := client.LoadCredential(file, "")
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// gsiLogin dials addr with GSI and logs in through the grid-mapfile.
func gsiLogin(t *testing.T, addr string, g *client.GSIConfig, active bool) *client.Conn {
	t.Helper()
	ctx := testCtx(t)
	start := time.Now()
	c, err := client.Dial(ctx, addr, &client.Config{GSI: g, Active: active})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	t.Logf("GSI login in %v", time.Since(start).Round(time.Millisecond))
	return c
}

// roundTrip uploads data to name in dir (stream mode or MODE E with p
// streams), checks the server's file, downloads it back and compares.
func roundTrip(t *testing.T, ctx context.Context, c *client.Conn, e *gsiEnv, name string, data []byte, p int) {
	t.Helper()
	remote := filepath.Join(e.dir, name)
	if _, err := c.StoreAt(ctx, remote, bytes.NewReader(data), int64(len(data)), &client.StoreOptions{Parallel: p}); err != nil {
		t.Fatalf("upload %s (-p %d): %v", name, p, err)
	}
	if got, err := os.ReadFile(remote); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("upload %s (-p %d): the server's file differs (%d bytes, want %d; %v)", name, p, len(got), len(data), err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.RetrieveAt(ctx, remote, f, &client.RetrieveOptions{Parallel: p}); err != nil {
		t.Fatalf("download %s (-p %d): %v", name, p, err)
	}
	if got, err := os.ReadFile(f.Name()); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download %s (-p %d): got %d bytes, want %d (%v)", name, p, len(got), len(data), err)
	}
}

// gsiModes are the data channel settings of the matrix.
var gsiModes = []struct {
	name string
	auth client.DataAuth
	prot client.Protection
}{
	{"dcau-default", client.DataAuthDefault, 0},
	{"nodcau", client.DataAuthNone, 0},
	{"dcsafe", client.DataAuthDefault, client.ProtSafe},
	{"dcpriv", client.DataAuthDefault, client.ProtPrivate},
}

func TestGSITransfersGCT(t *testing.T) {
	e := newGSIEnv(t, nil)
	ours := loadCred(t, e.pki.Proxy(t, gsi.ProxyOptions{}))
	sizes := []int{0, 1, 10 << 20}
	datas := make([][]byte, len(sizes))
	for i, n := range sizes {
		datas[i] = randomBytes(t, n)
	}
	for _, m := range gsiModes {
		t.Run(m.name, func(t *testing.T) {
			c := gsiLogin(t, e.srv.Addr, &client.GSIConfig{Credential: ours, Trust: e.trust, DataAuth: m.auth, Protection: m.prot}, false)
			ctx := testCtx(t)
			for i, data := range datas {
				for _, p := range []int{1, 4} {
					start := time.Now()
					roundTrip(t, ctx, c, e, fmt.Sprintf("%s-%d-p%d", m.name, sizes[i], p), data, p)
					if sizes[i] > 1 {
						t.Logf("%d bytes up and down, -p %d: %v", sizes[i], p, time.Since(start).Round(time.Millisecond))
					}
				}
			}
		})
	}
}

func TestGSIProxiesAndTLSVersions(t *testing.T) {
	pki := gsipki.New(t, "")
	e13 := gsiEnvFor(t, pki, nil)
	e12 := gsiEnvFor(t, pki, &gctgsi.Options{MaxTLS12: true})
	proxies := map[string]string{
		"ferry-proxy":        pki.Proxy(t, gsi.ProxyOptions{}),
		"grid-proxy-init":    pki.GCTProxy(t),
		"grid-proxy-limited": pki.GCTProxy(t, "-limited"),
	}
	data := randomBytes(t, 1<<20+17)
	for _, srv := range []struct {
		name string
		e    *gsiEnv
	}{{"tls13", e13}, {"tls12", e12}} {
		for pname, file := range proxies {
			for _, m := range gsiModes {
				if m.auth == client.DataAuthNone {
					continue
				}
				t.Run(srv.name+"/"+pname+"/"+m.name, func(t *testing.T) {
					c := gsiLogin(t, srv.e.srv.Addr, &client.GSIConfig{Credential: loadCred(t, file), Trust: srv.e.trust, Protection: m.prot}, false)
					ctx := testCtx(t)
					for _, p := range []int{1, 4} {
						roundTrip(t, ctx, c, srv.e, fmt.Sprintf("%s-%s-%s-p%d", srv.name, pname, m.name, p), data, p)
					}
				})
			}
		}
	}
	// The client capped at TLS 1.2 talks to a TLS 1.3 server, too.
	t.Run("client-tls12", func(t *testing.T) {
		c := gsiLogin(t, e13.srv.Addr, &client.GSIConfig{Credential: loadCred(t, proxies["ferry-proxy"]), Trust: e13.trust,
			Protection: client.ProtPrivate, MaxTLSVersion: 0x0303}, false)
		roundTrip(t, testCtx(t), c, e13, "client-tls12", data, 4)
	})
}

func TestGSIOperationsGCT(t *testing.T) {
	e := newGSIEnv(t, nil)
	cred := loadCred(t, e.pki.Proxy(t, gsi.ProxyOptions{}))
	data := randomBytes(t, 300000)
	gctgsi.WriteFile(t, e.pki, filepath.Join(e.dir, "f.bin"), data)
	ctx := testCtx(t)

	// Active stream mode (the client listens, the server connects and is
	// the TLS client), with DCAU A sent explicitly.
	c := gsiLogin(t, e.srv.Addr, &client.GSIConfig{Credential: cred, Trust: e.trust, DataAuth: client.DataAuthSelf}, true)
	ok, server, delegated := c.GSI()
	if !ok || server != gsipki.HostDN || !delegated {
		t.Errorf("GSI() = %v, %q, %v; want true, %q, true", ok, server, delegated, gsipki.HostDN)
	}
	var buf bytes.Buffer
	if _, err := c.Retrieve(ctx, filepath.Join(e.dir, "f.bin"), &buf, nil); err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("active download: %d bytes, %v", buf.Len(), err)
	}
	if _, err := c.Store(ctx, filepath.Join(e.dir, "g.bin"), bytes.NewReader(data), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(e.dir, "g.bin")); !bytes.Equal(got, data) {
		t.Fatal("active upload: contents differ")
	}
	entries, err := c.List(ctx, e.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "f.bin") || !strings.Contains(strings.Join(names, ","), "g.bin") {
		t.Errorf("List = %v", names)
	}
	sum, err := c.Checksum(ctx, "MD5", filepath.Join(e.dir, "f.bin"), 0, -1)
	want := md5.Sum(data)
	if err != nil || sum != hex.EncodeToString(want[:]) {
		t.Errorf("Checksum = %q, %v; want %x", sum, err, want)
	}
	if err := c.Mkdir(ctx, filepath.Join(e.dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, filepath.Join(e.dir, "g.bin"), filepath.Join(e.dir, "sub", "h.bin")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, filepath.Join(e.dir, "sub", "h.bin")); err != nil {
		t.Fatal(err)
	}
	// A negative reply arrives protected, and the session goes on.
	var re *client.ReplyError
	if _, err := c.Size(ctx, filepath.Join(e.dir, "missing")); !errors.As(err, &re) || re.Reply.Code != 550 {
		t.Errorf("Size(missing) = %v; want a 550 reply", err)
	}
	if err := c.Quit(ctx); err != nil {
		t.Errorf("Quit: %v", err)
	}

	// Without delegation the control channel works (and DCAU N data).
	c = gsiLogin(t, e.srv.Addr, &client.GSIConfig{Credential: cred, Trust: e.trust, NoDelegation: true, DataAuth: client.DataAuthNone}, false)
	if _, _, delegated := c.GSI(); delegated {
		t.Error("delegated with NoDelegation")
	}
	buf.Reset()
	if _, err := c.Retrieve(ctx, filepath.Join(e.dir, "f.bin"), &buf, nil); err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("download without delegation: %d bytes, %v", buf.Len(), err)
	}

	// The server's expected subject instead of the host name.
	gsiLogin(t, e.srv.Addr, &client.GSIConfig{Credential: cred, Trust: e.trust, ServerSubject: gsipki.HostDN}, false)
}

// dialFails dials with GSI and returns the error, which must come soon.
func dialFails(t *testing.T, addr string, g *client.GSIConfig) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	c, err := client.Dial(ctx, addr, &client.Config{GSI: g})
	if err == nil {
		err = c.Login(ctx, "", "")
		c.Close()
	}
	if err == nil {
		t.Fatal("GSI login succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %v", d)
	}
	t.Logf("error: %v", err)
	return err
}

func TestGSIBadInputGCT(t *testing.T) {
	pki := gsipki.New(t, "")
	e := gsiEnvFor(t, pki, nil)
	cred := loadCred(t, pki.Proxy(t, gsi.ProxyOptions{}))

	t.Run("untrusted-server", func(t *testing.T) {
		other := gsipki.New(t, "")
		srv := gctgsi.Start(t, pki, &gctgsi.Options{HostCert: other.HostCert, HostKey: other.HostKey})
		err := dialFails(t, srv.Addr, &client.GSIConfig{Credential: cred, Trust: e.trust})
		var sce *client.ServerCertError
		if !errors.As(err, &sce) || !errors.Is(err, gsi.ErrUntrusted) {
			t.Errorf("error %v; want a ServerCertError for an untrusted CA", err)
		}
	})

	t.Run("host-mismatch", func(t *testing.T) {
		cert, key := pki.IssueHost(t, "elsewhere.example", "elsewhere.example")
		srv := gctgsi.Start(t, pki, &gctgsi.Options{HostCert: cert, HostKey: key})
		err := dialFails(t, srv.Addr, &client.GSIConfig{Credential: cred, Trust: e.trust})
		if !errors.Is(err, gsi.ErrHostMismatch) || !strings.Contains(err.Error(), "elsewhere.example") {
			t.Errorf("error %v; want a host name mismatch naming the certificate's name", err)
		}
		// The right subject instead of the host name is accepted...
		gsiLogin(t, srv.Addr, &client.GSIConfig{Credential: cred, Trust: e.trust, ServerSubject: gsipki.Org + "/OU=hosts/CN=elsewhere.example", DataAuth: client.DataAuthNone}, false)
		// ...a wrong one is not.
		err = dialFails(t, srv.Addr, &client.GSIConfig{Credential: cred, Trust: e.trust, ServerSubject: gsipki.HostDN})
		if !errors.Is(err, client.ErrSubjectMismatch) {
			t.Errorf("error %v; want ErrSubjectMismatch", err)
		}
	})

	t.Run("expired-proxy", func(t *testing.T) {
		file := pki.ExpiredProxy(t)
		if _, err := client.LoadCredential(file, ""); !errors.Is(err, client.ErrCredentialExpired) {
			t.Errorf("LoadCredential(expired) = %v; want ErrCredentialExpired", err)
		}
		expired, err := gsi.LoadCredential(file, "")
		if err != nil {
			t.Fatal(err)
		}
		err = dialFails(t, e.srv.Addr, &client.GSIConfig{Credential: expired, Trust: e.trust})
		if !errors.Is(err, client.ErrCredentialExpired) {
			t.Errorf("error %v; want ErrCredentialExpired", err)
		}
	})

	t.Run("unmapped-user", func(t *testing.T) {
		stranger, _, _ := pki.IssueUser(t, "Stranger")
		sc := loadCred(t, pki.ProxyOf(t, stranger, gsi.ProxyOptions{}))
		err := dialFails(t, e.srv.Addr, &client.GSIConfig{Credential: sc, Trust: e.trust})
		var re *client.ReplyError
		if !errors.As(err, &re) || re.Reply.Code != 530 {
			t.Errorf("error %v; want a 530 reply", err)
		}
	})

	t.Run("bad-config", func(t *testing.T) {
		for _, g := range []*client.GSIConfig{
			{Credential: cred},
			{Trust: e.trust},
			{Credential: cred, Trust: e.trust, DataAuth: client.DataAuthNone, Protection: client.ProtPrivate},
			{Credential: cred, Trust: e.trust, Protection: 'E'},
		} {
			if c, err := client.Dial(t.Context(), e.srv.Addr, &client.Config{GSI: g}); err == nil {
				c.Close()
				t.Errorf("Dial with %+v succeeded", g)
			}
		}
	})
}

// strangerHandler is a slog.Handler that, when the client sends EPRT,
// connects two strangers to the announced port first: one sends garbage
// where a security handshake belongs, one stays silent.
type strangerHandler struct{ t *testing.T }

func (h strangerHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h strangerHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h strangerHandler) WithGroup(string) slog.Handler            { return h }

func (h strangerHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "send" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		cmd := a.Value.String()
		if a.Key != "cmd" || !strings.HasPrefix(cmd, "EPRT ") {
			return true
		}
		f := strings.Split(cmd, "|") // EPRT |1|127.0.0.1|port|
		if len(f) < 4 {
			h.t.Errorf("odd EPRT %q", cmd)
			return false
		}
		// One sends garbage, one says nothing (its handshake would
		// stall until the handshake timeout).
		for _, garbage := range []bool{true, false} {
			nc, err := net.Dial("tcp", net.JoinHostPort(f[2], f[3]))
			if err != nil {
				h.t.Errorf("stranger: %v", err)
				return false
			}
			h.t.Cleanup(func() { nc.Close() })
			if garbage {
				fmt.Fprintf(nc, "GET / HTTP/1.0\r\n\r\n")
			}
		}
		return false
	})
	return nil
}

// TestActiveStrangerFailsHandshake: connections that reach the client's
// active listener first, from the server's host, and fail or stall the
// data channel's security handshake are dropped, and the transfer goes
// on with the server's connection, without waiting for the stalled
// handshake. This is the server's passive-listener
// behaviour (internal/dtp.Acceptor, now shared); the client used to fail
// the whole transfer.
func TestActiveStrangerFailsHandshake(t *testing.T) {
	e := newGSIEnv(t, nil)
	cred := loadCred(t, e.pki.Proxy(t, gsi.ProxyOptions{}))
	data := randomBytes(t, 1<<20)
	remote := filepath.Join(e.dir, "stranger")
	if err := os.WriteFile(remote, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	c, err := client.Dial(ctx, e.srv.Addr, &client.Config{
		GSI:    &client.GSIConfig{Credential: cred, Trust: e.trust},
		Active: true,
		Logger: slog.New(strangerHandler{t}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{1, 2} {
		start := time.Now()
		f, err := os.Create(filepath.Join(t.TempDir(), "got"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.RetrieveAt(ctx, remote, f, &client.RetrieveOptions{Parallel: p}); err != nil {
			t.Fatalf("-p %d: %v", p, err)
		}
		f.Close()
		if got, err := os.ReadFile(f.Name()); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("-p %d: got %d bytes, want %d (%v)", p, len(got), len(data), err)
		}
		took := time.Since(start)
		t.Logf("-p %d with strangers: %v", p, took.Round(time.Millisecond))
		if took > client.DefaultDialTimeout/2 {
			t.Errorf("-p %d took %v: waited for a stranger's handshake", p, took)
		}
	}
}
