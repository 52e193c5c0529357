package interop

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/internal/wire"
)

// Data channel credentials (DCSC, -data-cred): Ferry's server, Ferry's
// client, and GCT's of both, with each other.

// dcscFerry starts ferry serve with GSI from pki (trusting pki's CA only)
// and returns it with its root directory.
func dcscFerry(t *testing.T, pki *gsipki.PKI) (*server, string) {
	t.Helper()
	root := t.TempDir()
	os.Chmod(root, 0o755)
	t.Setenv("X509_CERT_DIR", pki.TrustDir) // what the server trusts
	return startFerry(t, root, "-cert", pki.HostCert, "-key", pki.HostKey, "-gridmap", pki.GridMap, "-run-as-mapped-user=false"), root
}

// dcscLogin logs in to addr with GSI as pki's user.
func dcscLogin(t *testing.T, ctx context.Context, pki *gsipki.PKI, addr string, dc *client.Credential) *client.Conn {
	t.Helper()
	cred, err := client.LoadCredential(pki.Proxy(t, gsi.ProxyOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := client.LoadTrustStore(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, addr, &client.Config{GSI: &client.GSIConfig{Credential: cred, Trust: trust, DataCredential: dc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	return c
}

func dcscCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dcscBlob is the DCSC P argument for cred.
func dcscBlob(t *testing.T, cred *gsi.Credential) string {
	t.Helper()
	pem, err := dcsec.EncodeDataCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem)
}

// TestDCSCReplies: Ferry's server answers DCSC as GCT's does
// (protocol.md), only after login, and lists it in FEAT of GSI sessions.
func TestDCSCReplies(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, _ := dcscFerry(t, pki)
	ctx := dcscCtx(t)
	c := dcscLogin(t, ctx, pki, srv.addr, nil)
	if v, ok := c.Features()["DCSC"]; !ok || v != "P,D" {
		t.Errorf("FEAT of a GSI session: DCSC %q (listed: %v), want P,D", v, ok)
	}
	auto, err := client.NewDataCredential()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	expired := &gsi.Credential{Key: auto.Key}
	{
		tmpl := *auto.Leaf()
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-48*time.Hour), now.Add(-time.Hour)
		der, err := x509.CreateCertificate(nil, &tmpl, &tmpl, auto.Key.Public(), auto.Key)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(der)
		expired.Chain = []*x509.Certificate{leaf}
	}
	other, err := client.NewDataCredential()
	if err != nil {
		t.Fatal(err)
	}
	foreignKey := base64.StdEncoding.EncodeToString(append(gsi.EncodeCertsPEM(auto.Leaf()), must(gsi.EncodeKeyPEM(other.Key))...))
	for _, tc := range []struct {
		cmd   string
		code  int
		first string
	}{
		{"DCSC D", 250, "OK."},
		{"DCSC P " + dcscBlob(t, auto), 250, "OK."},
		{"DCSC p " + dcscBlob(t, auto), 250, "OK."}, // globus-url-copy -data-cred auto sends "p"
		{"DCSC P " + base64.StdEncoding.EncodeToString([]byte("not a pem")), 500, "Credential import failed."},
		{"DCSC P !!!notbase64", 500, "Invalid base64 input for credential type P."},
		{"DCSC P " + dcscBlob(t, expired), 500, "Credential import failed."},
		{"DCSC P " + foreignKey, 500, "Credential import failed."},
		{"DCSC X foo", 500, "Unsupported credential type."},
		{"DCSC P", 501, "Invalid command arguments."},
		{"DCSC X", 501, "Invalid command arguments."},
		{"DCSC D", 250, "OK."},
	} {
		r, err := c.Do(ctx, "%s", tc.cmd)
		if err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(tc.cmd+" ", " ")
		name += " " + strings.Fields(tc.cmd)[1]
		if r.Code != tc.code || len(r.Lines) == 0 || r.Lines[0] != tc.first {
			t.Errorf("%s: %d %q, want %d %q", name, r.Code, r.Lines, tc.code, tc.first)
		}
		if r.Code == 500 && tc.first == "Credential import failed." && (len(r.Lines) != 3 || r.Lines[2] != "End.") {
			t.Errorf("%s: %q, want the reason and End.", name, r.Lines)
		}
	}
	if strings.Contains(srv.log.String(), dcscBlob(t, auto)[:40]) || strings.Contains(srv.log.String(), "PRIVATE KEY") {
		t.Error("the server's log holds the credential")
	}

	// Before login: refused, as every command but the public ones.
	rc := rawDial(t, srv.addr)
	if r := rc.do("DCSC D"); r.code != 530 {
		t.Errorf("DCSC before login: %d %s", r.code, r.text)
	}
	if r := rc.do("FEAT"); r.code != 211 {
		t.Errorf("FEAT: %d %s", r.code, r.text)
	}
	// A server without GSI does not list it.
	plain := startFerry(t, t.TempDir())
	pc := rawDial(t, plain.addr)
	pc.send("FEAT")
	for l := pc.line(); !strings.HasPrefix(l, "211 "); l = pc.line() {
		if strings.Contains(l, "DCSC") {
			t.Errorf("FEAT of a server without GSI lists %q", l)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDCSCRefusesOtherPeer: under a DCSC credential the server accepts a
// data connection only from a peer presenting that certificate: another
// self-signed one with the same subject, or the user's own proxy (which
// DCAU A accepts without DCSC), fails the handshake and gets nothing;
// the right one then gets the file. A refused import leaves the credential in
// force.
func TestDCSCRefusesOtherPeer(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, root := dcscFerry(t, pki)
	want := writeRandom(t, filepath.Join(root, "f.bin"), 1<<20+3, 5)
	ctx := dcscCtx(t)
	dc, err := client.NewDataCredential()
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := client.NewDataCredential()
	if err != nil {
		t.Fatal(err)
	}
	userProxy, err := client.LoadCredential(pki.Proxy(t, gsi.ProxyOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	c := dcscLogin(t, ctx, pki, srv.addr, dc)
	if r, err := c.Do(ctx, "DCSC P %s", base64.StdEncoding.EncodeToString([]byte("garbage"))); err != nil || r.Code != 500 {
		t.Fatalf("DCSC P garbage: %v %v", r, err)
	}
	if r, err := c.Do(ctx, "TYPE I"); err != nil || r.Code != 200 {
		t.Fatalf("TYPE I: %v %v", r, err)
	}
	for _, tc := range []struct {
		name    string
		present *gsi.Credential
	}{
		{"impostor", impostor},
		{"user proxy", userProxy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Do(ctx, "PASV")
			if err != nil || r.Code != 227 {
				t.Fatalf("PASV: %v %v", r, err)
			}
			ap, err := wire.ParsePASVReply(r.Lines[0])
			if err != nil {
				t.Fatal(err)
			}
			handshake := func(present *gsi.Credential) (net.Conn, error) {
				nc, err := net.DialTimeout("tcp", ap.String(), 10*time.Second)
				if err != nil {
					return nil, err
				}
				cert := present.TLSCertificate()
				return dcsec.Secure(ctx, nc, true, &dcsec.Config{Style: dcsec.GSI, Level: dcsec.Clear, Certificate: &cert,
					VerifyPeer: func([]*x509.Certificate) error { return nil }, HandshakeTimeout: 20 * time.Second})
			}
			type got struct {
				refused error // the other certificate's handshake
				data    []byte
				err     error
			}
			done := make(chan got, 1)
			// The other certificate connects first; the server refuses it
			// and waits on for a data connection, which the DCSC
			// credential then makes.
			go func() {
				var g got
				sc, err := handshake(tc.present)
				if err == nil {
					sc.SetReadDeadline(time.Now().Add(5 * time.Second))
					g.data, _ = io.ReadAll(sc)
					sc.Close()
					g.refused = errors.New("accepted")
				} else {
					g.refused = err
				}
				if sc, err = handshake(dc); err != nil {
					g.err = err
					done <- g
					return
				}
				defer sc.Close()
				sc.SetReadDeadline(time.Now().Add(30 * time.Second))
				var b []byte
				b, g.err = io.ReadAll(sc)
				g.data = append(g.data, b...)
				done <- g
			}()
			r, err = c.Do(ctx, "RETR f.bin")
			for err == nil && r.Class() == 1 {
				r, err = c.ReadReply(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			g := <-done
			if g.refused == nil || g.refused.Error() == "accepted" {
				t.Errorf("a peer presenting the %s was accepted", tc.name)
			}
			if !strings.Contains(srv.log.String(), "not the session's data channel credential") {
				t.Errorf("the server's log does not say why:\n%s", srv.log)
			}
			if r.Code != 226 || g.err != nil {
				t.Fatalf("with the DCSC credential: %d %q, data %v", r.Code, r.Lines, g.err)
			}
			if sumOf(g.data) != want {
				t.Fatalf("got %d bytes, want the file", len(g.data))
			}
		})
	}
}

// TestGlobusURLCopyDataCred: globus-url-copy -data-cred (auto, and a
// proxy file) uploads to and downloads from ferry serve byte for byte,
// with DCAU A by default, PROT P and MODE E; without delegation too.
func TestGlobusURLCopyDataCred(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, root := dcscFerry(t, pki)
	want := writeRandom(t, filepath.Join(root, "d.bin"), 4<<20+9, 21)
	proxy := pki.GCTProxy(t)
	dataProxy := pki.Proxy(t, gsi.ProxyOptions{})
	local := t.TempDir()
	url := "gsiftp://" + srv.addr
	for _, cred := range []string{"auto", dataProxy} {
		for _, m := range []struct {
			name  string
			flags []string
		}{
			{"dcau-a", nil},
			{"dcpriv", []string{"-dcpriv"}},
			{"p4", []string{"-p", "4"}},
			{"p4-dcsafe", []string{"-p", "4", "-dcsafe"}},
		} {
			cname := "auto"
			if cred != "auto" {
				cname = "path"
			}
			t.Run(cname+"/"+m.name, func(t *testing.T) {
				env := []string{"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=" + pki.TrustDir, "globus-url-copy", "-data-cred", cred}
				if cred == "auto" && !gucIsFerry() {
					// GCT's generated certificate is signed with MD5,
					// which no TLS 1.2/1.3 data channel with crypto/tls
					// can carry (GCT's client sends no certificate to a
					// peer that lists no MD5 signatures): the server
					// refuses it at once, saying why, instead of letting
					// every data connection fail.
					r := run(t, "", "", "env", append(append(env, m.flags...), url+"/d.bin", "file://"+filepath.Join(local, "md5"))...)
					if r.err == nil || !strings.Contains(srv.log.String(), "is signed with MD5-RSA") {
						t.Fatalf("GCT's MD5-signed -data-cred auto: %v\n%s", r, srv.log)
					}
					return
				}
				guc := func(args ...string) {
					t.Helper()
					mustRun(t, "", "", "env", append(append(env, m.flags...), args...)...)
				}
				got := filepath.Join(local, cname+m.name)
				guc(url+"/d.bin", "file://"+got)
				sameFile(t, got, want)
				up := "/up-" + cname + m.name
				guc("file://"+got, url+up)
				sameFile(t, filepath.Join(root, up), want)
			})
		}
	}
	if !strings.Contains(srv.log.String(), "DCSC data channel credential set") {
		t.Errorf("the server's log does not show DCSC:\n%s", srv.log)
	}
}

// TestGlobusURLCopyDataCredGCTServer: globus-url-copy -data-cred auto
// with GCT's server (run again with Ferry as globus-url-copy: Ferry's
// drop-in against GCT's server).
func TestGlobusURLCopyDataCredGCTServer(t *testing.T) {
	pki := gsipki.New(t, "")
	gdir := gctgsi.Dir(t, pki)
	gsrv := gctgsi.Start(t, pki, nil)
	data := []byte(strings.Repeat("data channel credential\n", 100000))
	gctgsi.WriteFile(t, pki, filepath.Join(gdir, "g.bin"), data)
	want := sumOf(data)
	proxy := pki.GCTProxy(t)
	local := t.TempDir()
	for _, m := range []struct {
		name  string
		flags []string
	}{{"dcau-a", nil}, {"p4-dcpriv", []string{"-p", "4", "-dcpriv"}}} {
		t.Run(m.name, func(t *testing.T) {
			guc := func(args ...string) {
				t.Helper()
				all := append([]string{"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=" + pki.TrustDir, "globus-url-copy", "-data-cred", "auto"}, m.flags...)
				mustRun(t, "", "", "env", append(all, args...)...)
			}
			got := filepath.Join(local, m.name)
			guc("gsiftp://"+gsrv.Addr+filepath.Join(gdir, "g.bin"), "file://"+got)
			sameFile(t, got, want)
			guc("file://"+got, "gsiftp://"+gsrv.Addr+filepath.Join(gdir, "up-"+m.name))
			sameFile(t, filepath.Join(gdir, "up-"+m.name), want)
		})
	}
}

// TestFerryCpDataCredGCT: ferry cp -data-cred auto (and a proxy file)
// with GCT's server, both ways; with -nodelegate too, where GCT's server
// has no credential of the user's and only DCSC lets its data channels
// authenticate (without -data-cred that copy fails).
func TestFerryCpDataCredGCT(t *testing.T) {
	pki := gsipki.New(t, "")
	t.Setenv("X509_CERT_DIR", pki.TrustDir)
	gdir := gctgsi.Dir(t, pki)
	gsrv := gctgsi.Start(t, pki, nil)
	data := []byte(strings.Repeat("ferry cp -data-cred\n", 200000))
	gctgsi.WriteFile(t, pki, filepath.Join(gdir, "g.bin"), data)
	want := sumOf(data)
	proxy := pki.Proxy(t, gsi.ProxyOptions{})
	local := t.TempDir()
	remote := func(n string) string { return "gsiftp://" + gsrv.Addr + filepath.Join(gdir, n) }
	for _, m := range []struct {
		name  string
		flags []string
	}{
		{"auto", []string{"-data-cred", "auto"}},
		{"auto-p4-dcpriv", []string{"-data-cred", "auto", "-p", "4", "-dcpriv"}},
		{"path", []string{"-data-cred", pki.Proxy(t, gsi.ProxyOptions{})}},
		{"auto-nodelegate", []string{"-data-cred", "auto", "-nodelegate"}},
	} {
		t.Run(m.name, func(t *testing.T) {
			cp := func(args ...string) {
				t.Helper()
				ferry(t, append(append([]string{"cp", "-q", "-cert", proxy}, m.flags...), args...)...)
			}
			got := filepath.Join(local, m.name)
			cp(remote("g.bin"), got)
			sameFile(t, got, want)
			cp(got, remote("up-"+m.name))
			sameFile(t, filepath.Join(gdir, "up-"+m.name), want)
		})
	}
	t.Run("nodelegate without data-cred fails", func(t *testing.T) {
		r := run(t, "", "", ferryBin, "cp", "-q", "-cert", proxy, "-nodelegate", remote("g.bin"), filepath.Join(local, "x"))
		if r.code == 0 {
			t.Fatalf("copy without a credential for GCT's data channel succeeded: %v", r)
		}
	})
	t.Run("bad data-cred", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.pem")
		os.WriteFile(bad, []byte("not a credential"), 0o600)
		r := run(t, "", "", ferryBin, "cp", "-q", "-cert", proxy, "-data-cred", bad, remote("g.bin"), filepath.Join(local, "y"))
		if r.code == 0 || !strings.Contains(r.stderr, "-data-cred") {
			t.Fatalf("a bad -data-cred: %v", r)
		}
	})
}

// dcscTrustBoth is a trust directory with the CAs of all pkis (a client
// that talks to servers of each).
func dcscTrustBoth(t *testing.T, pkis ...*gsipki.PKI) string {
	t.Helper()
	both := t.TempDir()
	for _, p := range pkis {
		entries, err := os.ReadDir(p.TrustDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(p.TrustDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(both, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return both
}

// TestGlobusURLCopyDataCredThirdParty: globus-url-copy moves a file
// between GCT's server and Ferry's, each of its own PKI, logged into as
// a different user of each (-sc, -dc): neither server trusts the other's
// CA, so DCAU A fails; with -data-cred (a proxy from a third CA, which
// neither server trusts either) both present the one credential the
// client sent them, and the copy runs, both ways. (globus-url-copy's
// -data-cred auto makes an MD5-signed certificate, which Ferry's server
// refuses: TestGlobusURLCopyDataCred.)
func TestGlobusURLCopyDataCredThirdParty(t *testing.T) {
	if gucIsFerry() {
		t.Skip("Ferry's globus-url-copy takes one credential per run (no -sc/-dc that differ); TestFerryCpDataCredThirdParty covers its third party")
	}
	gpki, fpki, dpki := gsipki.New(t, ""), gsipki.New(t, ""), gsipki.New(t, "")
	gdir := gctgsi.Dir(t, gpki)
	gsrv := gctgsi.Start(t, gpki, nil)
	fsrv, froot := dcscFerry(t, fpki)
	both := dcscTrustBoth(t, gpki, fpki, dpki) // the client's
	gproxy, fproxy := gpki.GCTProxy(t), fpki.GCTProxy(t)
	dataCred := dpki.GCTProxy(t)
	data := []byte(strings.Repeat("third party under DCSC\n", 300000))
	gctgsi.WriteFile(t, gpki, filepath.Join(gdir, "src.bin"), data)
	want := sumOf(data)
	gURL := func(n string) string { return "gsiftp://" + gsrv.Addr + filepath.Join(gdir, n) }
	fURL := func(n string) string { return "gsiftp://" + fsrv.addr + "/" + n }
	guc := func(src, dst, srcCred, dstCred string, extra ...string) result {
		args := append([]string{"X509_CERT_DIR=" + both, "globus-url-copy", "-sc", srcCred, "-dc", dstCred}, extra...)
		return run(t, "", "", "env", append(args, src, dst)...)
	}
	if r := guc(gURL("src.bin"), fURL("nodcsc.bin"), gproxy, fproxy); r.err == nil {
		t.Errorf("without -data-cred, a copy between servers of different CAs succeeded: %v", r)
	}
	for _, flags := range [][]string{nil, {"-p", "4"}, {"-dcpriv"}} {
		name := "tp" + strings.Join(flags, "")
		t.Run("gct-ferry"+strings.Join(flags, ""), func(t *testing.T) {
			if r := guc(gURL("src.bin"), fURL(name), gproxy, fproxy, append([]string{"-data-cred", dataCred}, flags...)...); r.err != nil {
				t.Fatal(r)
			}
			sameFile(t, filepath.Join(froot, name), want)
		})
		t.Run("ferry-gct"+strings.Join(flags, ""), func(t *testing.T) {
			if r := guc(fURL(name), gURL(name), fproxy, gproxy, append([]string{"-data-cred", dataCred}, flags...)...); r.err != nil {
				t.Fatal(r)
			}
			sameFile(t, filepath.Join(gdir, name), want)
		})
	}
}

// TestFerryCpDataCredThirdParty: ferry cp -data-cred auto sends the
// credential to both servers of a third-party copy between GCT's server
// and Ferry's; with -nodelegate, where neither has a credential of the
// user's for its data channels, it is what makes the copy work.
func TestFerryCpDataCredThirdParty(t *testing.T) {
	pki := gsipki.New(t, "")
	gdir := gctgsi.Dir(t, pki)
	gsrv := gctgsi.Start(t, pki, nil)
	fsrv, froot := dcscFerry(t, pki)
	proxy := pki.Proxy(t, gsi.ProxyOptions{})
	data := []byte(strings.Repeat("ferry cp third party under DCSC\n", 200000))
	gctgsi.WriteFile(t, pki, filepath.Join(gdir, "src.bin"), data)
	want := sumOf(data)
	gURL := func(n string) string { return "gsiftp://" + gsrv.Addr + filepath.Join(gdir, n) }
	fURL := func(n string) string { return "gsiftp://" + fsrv.addr + "/" + n }
	for _, flags := range [][]string{{"-nodelegate"}, {"-p", "4", "-dcpriv"}} {
		name := "tp" + strings.Join(flags, "")
		t.Run("gct-ferry"+strings.Join(flags, ""), func(t *testing.T) {
			ferry(t, append(append([]string{"cp", "-q", "-cert", proxy, "-data-cred", "auto"}, flags...), gURL("src.bin"), fURL(name))...)
			sameFile(t, filepath.Join(froot, name), want)
		})
		t.Run("ferry-gct"+strings.Join(flags, ""), func(t *testing.T) {
			ferry(t, append(append([]string{"cp", "-q", "-cert", proxy, "-data-cred", "auto"}, flags...), fURL(name), gURL(name))...)
			sameFile(t, filepath.Join(gdir, name), want)
		})
	}
	r := run(t, "", "", ferryBin, "cp", "-q", "-cert", proxy, "-nodelegate", gURL("src.bin"), fURL("fails.bin"))
	if r.code == 0 {
		t.Errorf("-nodelegate without -data-cred: the third party succeeded: %v", r)
	}
}

// sumOf is data's SHA-256, as sameFile wants it.
func sumOf(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// TestDCSCTooLongClosesGSISession: a protected (ENC) command line over the
// control reader's limit is never unwrapped, so the protection layer's
// sequence is lost: the server says so once and closes, instead of
// failing every later command with an unwrap error.
func TestDCSCTooLongClosesGSISession(t *testing.T) {
	pki := gsipki.New(t, "")
	srv, _ := dcscFerry(t, pki)
	ctx := dcscCtx(t)
	c := dcscLogin(t, ctx, pki, srv.addr, nil)
	r, err := c.Do(ctx, "DCSC P %s", strings.Repeat("A", 15000))
	if err != nil {
		t.Fatalf("no reply to the over-long line: %v", err)
	}
	if r.Code != 500 || !strings.Contains(strings.Join(r.Lines, " "), "closing") {
		t.Errorf("over-long protected line: %d %q, want 500 saying the session closes", r.Code, r.Lines)
	}
	if r, err := c.Do(ctx, "NOOP"); err == nil {
		t.Errorf("the session answered after an over-long protected line: %d %q", r.Code, r.Lines)
	}
	// A new session is not affected.
	c2 := dcscLogin(t, ctx, pki, srv.addr, nil)
	if r, err := c2.Do(ctx, "NOOP"); err != nil || r.Code != 200 {
		t.Errorf("NOOP on a new session: %v %v", r, err)
	}
}

// TestDCSCStriped: a striped server's movers cannot check a session's
// data channel credential, so the server neither lists DCSC nor takes
// DCSC P, and a client asked for -data-cred fails at login, before any
// transfer.
func TestDCSCStriped(t *testing.T) {
	pki := gsipki.New(t, "")
	root := t.TempDir()
	os.Chmod(root, 0o755)
	t.Setenv("X509_CERT_DIR", pki.TrustDir)
	s := &striped{secret: secretFile(t)}
	var addrs []string
	for i := range 2 {
		m := startMover(t, fmt.Sprintf("127.0.0.%d:0", 2+i), root, s.secret, "-cert", pki.HostCert, "-key", pki.HostKey)
		s.movers = append(s.movers, m)
		addrs = append(addrs, m.addr)
	}
	s.server = startFerry(t, root, "-cert", pki.HostCert, "-key", pki.HostKey, "-gridmap", pki.GridMap, "-run-as-mapped-user=false",
		"-anonymous", "-movers", strings.Join(addrs, ","), "-mover-secret", s.secret)
	s.waitUp(t, 2)
	ctx := dcscCtx(t)
	c := dcscLogin(t, ctx, pki, s.addr, nil)
	if v, ok := c.Features()["DCSC"]; ok {
		t.Errorf("a striped server lists DCSC %q", v)
	}
	dc, err := client.NewDataCredential()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Do(ctx, "DCSC P %s", dcscBlob(t, dc)); err != nil || r.Code != 504 {
		t.Errorf("DCSC P on a striped server: %v %v, want 504", r, err)
	}
}
