package server_test

// Attacks on the control channel's authentication, each performed as an
// outsider would against an in-process server with real TLS and
// certificates from the test PKI.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/gss"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/server"
)

// gsiServer starts a server with the PKI's host credential, trust
// directory and grid-mapfile, and a password hook that knows "pwuser".
func gsiServer(t *testing.T, pki *gsipki.PKI, mod func(*server.Config)) string {
	t.Helper()
	cfg := server.Config{
		Storage:  memory.New(),
		HostCert: pki.HostCert, HostKey: pki.HostKey,
		TrustDir: pki.TrustDir, GridMap: pki.GridMap,
		Authenticate: func(ctx context.Context, user, pass string) (*server.Account, error) {
			if user == "pwuser" && pass == "right" {
				return &server.Account{Name: "pwuser"}, nil
			}
			return nil, server.ErrLoginDenied
		},
		// Root in CI: a successful forgery would be served as the server.
		ServeMappedAsServer: true,
		LoginFailureDelay:   -1,
	}
	if mod != nil {
		mod(&cfg)
	}
	_, addr, _ := start(t, cfg)
	return addr
}

// forgedCert is the victim's public chain with a private key that is not
// theirs: what anyone who has seen the victim's certificate can build.
func forgedCert(t *testing.T, victim *gsi.Credential) tls.Certificate {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c := victim.TLSCertificate()
	c.PrivateKey = key
	c.Leaf = nil
	return c
}

// adatExchange runs AUTH GSSAPI with cert until the server answers other
// than 334/335 and returns that reply's code.
func adatExchange(t *testing.T, c *client, cert tls.Certificate, version uint16) int {
	t.Helper()
	return adatExchangeSign(t, c, cert, version, nil)
}

// adatExchangeSign is adatExchange with delegation through sign.
func adatExchangeSign(t *testing.T, c *client, cert tls.Certificate, version uint16, sign func([]byte) ([]byte, error)) int {
	t.Helper()
	code, _ := adatExchangeInject(t, c, cert, version, sign, "")
	return code
}

// adatExchangeInject is adatExchangeSign that sends inject (clear-text
// command lines) in the same write as the last ADAT, and returns the
// established context too.
func adatExchangeInject(t *testing.T, c *client, cert tls.Certificate, version uint16, sign func([]byte) ([]byte, error), inject string) (int, *gss.Context) {
	t.Helper()
	c.send("AUTH GSSAPI")
	if r := c.read(); r.Code != 334 {
		t.Fatalf("AUTH GSSAPI: %v", r)
	}
	g := gss.Initiate(&gss.InitiatorConfig{TLS: &tls.Config{
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // the attacker does not care who the server is
		MinVersion:         version, MaxVersion: version,
	}, Sign: sign})
	t.Cleanup(func() { g.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var in []byte
	for range 10 {
		out, done, err := g.Step(ctx, in)
		if err != nil && len(out) == 0 {
			// The forged signature travels in the last flight; a
			// client that cannot go on says nothing more.
			t.Fatalf("initiator: %v", err)
		}
		line := "ADAT " + base64.StdEncoding.EncodeToString(out)
		if done {
			line += "\r\n" + strings.TrimSuffix(inject, "\r\n")
		}
		c.send(strings.TrimSuffix(line, "\r\n"))
		r := c.read()
		if r.Code != 335 {
			return r.Code, g
		}
		tok, _ := strings.CutPrefix(r.Lines[len(r.Lines)-1], "ADAT=")
		if in, err = base64.StdEncoding.DecodeString(strings.TrimSpace(tok)); err != nil {
			t.Fatalf("ADAT reply %v: %v", r, err)
		}
		if done {
			t.Fatal("initiator done while the server wants more")
		}
	}
	t.Fatal("ADAT exchange did not end")
	return 0, nil
}

// TestLoginWithoutPrivateKey: a grid-mapped user's public certificate with
// a signature by another key must never lead to a login, whatever the
// client does after the failed exchange (finding 1 of the security review).
func TestLoginWithoutPrivateKey(t *testing.T) {
	pki := gsipki.New(t, "")
	withPasswords := gsiServer(t, pki, nil)
	gsiOnly := gsiServer(t, pki, func(c *server.Config) { c.Authenticate = nil })
	forged := forgedCert(t, pki.User)
	for _, v := range []struct {
		name    string
		version uint16
		addr    string
	}{
		{"TLS1.2/passwords", tls.VersionTLS12, withPasswords},
		{"TLS1.3/passwords", tls.VersionTLS13, withPasswords},
		{"TLS1.2/GSI only", tls.VersionTLS12, gsiOnly},
		{"TLS1.3/GSI only", tls.VersionTLS13, gsiOnly},
	} {
		addr := v.addr
		t.Run(v.name+"/clear USER after failed ADAT", func(t *testing.T) {
			c := dial(t, addr)
			c.read()
			if code := adatExchange(t, c, forged, v.version); code/100 != 5 {
				t.Fatalf("forged ADAT answered %d", code)
			}
			c.send("USER :globus-mapping:")
			r := c.readOrClosed()
			if r == nil {
				return // closing the session is a refusal too
			}
			c.send("PASS x")
			if r := c.readOrClosed(); r != nil && r.Code == 230 {
				t.Fatalf("logged in without the private key: %v", r)
			}
			c.send("RETR /x")
			if r := c.readOrClosed(); r != nil && r.Code/100 != 5 {
				t.Fatalf("RETR after the forged exchange: %v", r)
			}
		})
		t.Run(v.name+"/AUTH TLS after failed ADAT", func(t *testing.T) {
			c := dial(t, addr)
			c.read()
			if code := adatExchange(t, c, forged, v.version); code/100 != 5 {
				t.Fatalf("forged ADAT answered %d", code)
			}
			c.send("AUTH TLS")
			r := c.readOrClosed()
			if r == nil || r.Code != 234 {
				return // refused, or closed: no login either way
			}
			c.startTLS(nil)
			c.send("USER :globus-mapping:")
			c.read()
			c.send("PASS x")
			if r := c.readOrClosed(); r != nil && r.Code == 230 {
				t.Fatalf("logged in over AUTH TLS without the private key: %v", r)
			}
		})
	}
	t.Run("the real key still logs in", func(t *testing.T) {
		c := dial(t, withPasswords)
		c.read()
		real := pki.User.TLSCertificate()
		// A completed exchange ends in 235; the rest is wrapped, which
		// the client package's tests cover.
		if code := adatExchange(t, c, real, tls.VersionTLS12); code != 235 {
			t.Fatalf("genuine ADAT answered %d", code)
		}
	})
}

func (c *client) send(line string) {
	c.t.Helper()
	if _, err := c.c.Write([]byte(line + "\r\n")); err != nil {
		c.t.Fatalf("%s: %v", line, err)
	}
}

// readOrClosed reads a reply, or returns nil when the server closed the
// session.
func (c *client) readOrClosed() *wire.Reply {
	r, err := c.rr.ReadReply()
	if err != nil {
		return nil
	}
	return &r
}

// startTLS turns the control connection into a TLS client connection
// (after a 234), presenting cert when it is not nil.
func (c *client) startTLS(cert *tls.Certificate) {
	c.t.Helper()
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	tc := tls.Client(c.c, cfg)
	if err := tc.Handshake(); err != nil {
		c.t.Fatalf("TLS handshake: %v", err)
	}
	c.c = tc
	c.rr = wire.NewReplyReader(tc)
}

// TestDelegationCost: the peer must not choose how much CPU a delegation
// costs the server, and a DN that could never log in gets no key made for
// it (finding 2 of the security review).
func TestDelegationCost(t *testing.T) {
	pki := gsipki.New(t, "")
	addr := gsiServer(t, pki, nil)
	// A proxy with a large key, as an attacker would make (4096 bits keeps
	// the test quick; the review used 8192).
	big, err := gsi.NewProxy(pki.User, gsi.ProxyOptions{Bits: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var asked []int
	sign := func(issuer *gsi.Credential) func([]byte) ([]byte, error) {
		return func(req []byte) ([]byte, error) {
			csr, err := x509.ParseCertificateRequest(req)
			if err != nil {
				return nil, err
			}
			asked = append(asked, csr.PublicKey.(*rsa.PublicKey).N.BitLen())
			return gsi.SignProxyRequest(issuer, req, false, time.Hour)
		}
	}
	c := dial(t, addr)
	c.read()
	if code := adatExchangeSign(t, c, big.TLSCertificate(), tls.VersionTLS13, sign(big)); code != 235 {
		t.Fatalf("delegating ADAT answered %d", code)
	}
	if len(asked) != 1 || asked[0] != 2048 {
		t.Fatalf("the server asked to delegate keys of %v bits; want one of 2048 whatever the peer's key", asked)
	}

	// A trusted certificate whose DN is not in the grid-mapfile.
	stranger, _, _ := pki.IssueUser(t, "Not Mapped")
	asked = nil
	c = dial(t, addr)
	c.read()
	if code := adatExchangeSign(t, c, stranger.TLSCertificate(), tls.VersionTLS13, sign(stranger)); code/100 != 5 {
		t.Fatalf("delegation for an unmapped DN answered %d", code)
	}
	if len(asked) != 0 {
		t.Fatalf("the server made a %v-bit key for a DN it would never log in", asked)
	}
}

// TestNoClearTextAfterADAT: command lines sent in clear together with the
// last ADAT (what a man in the middle would append to a relayed exchange)
// must not run as the user the exchange authenticated.
func TestNoClearTextAfterADAT(t *testing.T) {
	pki := gsipki.New(t, "")
	st := memory.New()
	w, err := st.Create(context.Background(), "/victim", dsiCreate())
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	addr := gsiServer(t, pki, func(c *server.Config) { c.Storage = st; c.Authenticate = nil })
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		c := dial(t, addr)
		u := &unwrapLines{br: bufio.NewReader(c.c)}
		c.rr = wire.NewReplyReader(u)
		c.read()
		code, g := adatExchangeInject(t, c, pki.User.TLSCertificate(), version, nil, "USER :globus-mapping:\r\nPASS x\r\nDELE /victim\r\n")
		if code != 235 {
			t.Fatalf("ADAT answered %d", code)
		}
		u.g = g
		answered := 0
		for _, cmd := range []string{"USER", "PASS", "DELE"} {
			r := c.readOrClosed()
			if r == nil {
				break // closing is a refusal too
			}
			answered++
			if !u.wrapped || r.Code != 533 {
				t.Fatalf("%s in clear after ADAT: %v (wrapped %v), want a wrapped 533", cmd, r, u.wrapped)
			}
		}
		t.Logf("TLS %x: %d of 3 clear commands answered with a wrapped 533", version, answered)
		if _, err := st.Stat(context.Background(), "/victim"); err != nil {
			t.Fatalf("the victim's file is gone: %v", err)
		}
	}
}

// unwrapLines hands a control connection's lines to a ReplyReader one at
// a time and, once g is set, opens 631/632/633 lines into the reply they
// carry; wrapped says whether the last line was one.
type unwrapLines struct {
	br      *bufio.Reader
	g       *gss.Context
	buf     []byte
	wrapped bool
}

func (u *unwrapLines) Read(p []byte) (int, error) {
	if len(u.buf) == 0 {
		line, err := u.br.ReadString('\n')
		if err != nil {
			return 0, err
		}
		u.buf, u.wrapped = []byte(line), false
		if u.g != nil && len(line) > 4 && strings.HasPrefix(line, "63") {
			tok, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line[4:]))
			if err != nil {
				return 0, err
			}
			if u.buf, err = u.g.Unwrap(tok); err != nil {
				return 0, err
			}
			u.wrapped = true
		}
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}
