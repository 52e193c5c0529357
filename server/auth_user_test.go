package server_test

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// A USER sent in clear before AUTH does not survive authentication (RFC
// 2228: an accepted AUTH requires USER again): PASS alone after it is
// 503, never a login as the earlier USER.

func TestKerberosUserBeforeAUTH(t *testing.T) {
	e := startKerberos(t, nil)
	k := e.dial(t)
	if code, text := k.cmd("USER " + krbAccount); code != 331 {
		t.Fatalf("plain USER: %d %s", code, text)
	}
	in, tok := e.token(t, "alice")
	if code, text := k.auth(in, tok); code != 235 {
		t.Fatalf("ADAT: %d %s", code, text)
	}
	if code, text := k.cmd("PASS "); code != 503 {
		t.Fatalf("MIC PASS after a USER sent before AUTH: %d %s, want 503", code, text)
	}
	if code, text := k.login(krbAccount); code != 230 {
		t.Fatalf("USER and PASS after AUTH: %d %s", code, text)
	}
}

func TestGSIUserBeforeAUTH(t *testing.T) {
	pki := gsipki.New(t, "")
	addr := gsiServer(t, pki, nil)

	t.Run("AUTH GSSAPI", func(t *testing.T) {
		c := dial(t, addr)
		c.read()
		c.send("USER :globus-mapping:")
		if r := c.read(); r.Code != 331 {
			t.Fatalf("plain USER: %v", r)
		}
		code, g := adatExchangeInject(t, c, pki.User.TLSCertificate(), tls.VersionTLS13, nil, "")
		if code != 235 {
			t.Fatalf("ADAT: %d", code)
		}
		tok, err := g.Wrap([]byte("PASS x\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		c.send("ENC " + base64.StdEncoding.EncodeToString(tok))
		// wire.ReplyReader refuses code 632: read the line itself (the
		// server sent nothing since the 235, so nothing is buffered).
		line, err := bufio.NewReader(c.c).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		wrapped, found := strings.CutPrefix(line, "632 ")
		if !found {
			t.Fatalf("PASS: %q, want a wrapped reply", line)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(wrapped))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := g.Unwrap(b)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(plain), "503") {
			t.Fatalf("ENC PASS after a USER sent before AUTH: %q, want 503", plain)
		}
	})

	t.Run("AUTH TLS", func(t *testing.T) {
		c := dial(t, addr)
		c.read()
		c.send("USER pwuser")
		if r := c.read(); r.Code != 331 {
			t.Fatalf("plain USER: %v", r)
		}
		c.send("AUTH TLS")
		if r := c.read(); r.Code != 234 {
			t.Fatalf("AUTH TLS: %v", r)
		}
		c.startTLS(nil)
		c.send("PASS right")
		if r := c.read(); r.Code != 503 {
			t.Fatalf("PASS after a USER sent before AUTH TLS: %v, want 503", r)
		}
	})
}
