package server_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/internal/testutil/krb5kdc"
	"github.com/ferrygrid/ferry/server"
)

// TestKerberosBesideGSI: one server with a host credential and a keytab
// takes GSI and Kerberos logins, and the first ADAT token decides which;
// neither mechanism is tried in place of the other.
func TestKerberosBesideGSI(t *testing.T) {
	pki := gsipki.New(t, "")
	k := krb5kdc.Start(t)
	for _, p := range []string{"ftp/localhost", "alice"} {
		k.AddPrincipal(t, p)
	}
	kt := k.Keytab(t, "ftp.keytab", "ftp/localhost")
	kmap := filepath.Join(k.Dir, "krb-map")
	if err := os.WriteFile(kmap, []byte("alice@"+krb5kdc.Realm+" "+krbAccount+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	both := gsiServer(t, pki, func(cfg *server.Config) { cfg.Keytab, cfg.KrbMap = kt, kmap })

	// GSI still works.
	c := gsiSession(t, pki, both)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := c.Do(ctx, "PWD"); err != nil || r.Code != 257 {
		t.Fatalf("GSI PWD: %v %v", r, err)
	}

	// Kerberos on the same server.
	e := &krbEnv{kdc: k, addr: both}
	kc := e.dial(t)
	in, tok := e.token(t, "alice")
	if code, text := kc.auth(in, tok); code != 235 {
		t.Fatalf("Kerberos ADAT: %d %s", code, text)
	}
	if code, text := kc.login(krbAccount); code != 230 {
		t.Fatalf("Kerberos login: %d %s", code, text)
	}
	if code, _ := kc.cmd("PROT P"); code != 536 {
		t.Fatalf("PROT P on Kerberos: %d", code)
	}

	// A Kerberos token to a server without a keytab is refused, not
	// handed to GSI.
	gsiOnly := gsiServer(t, pki, nil)
	e2 := &krbEnv{kdc: k, addr: gsiOnly}
	kc = e2.dial(t)
	in, tok = e2.token(t, "alice")
	if code, text := kc.auth(in, tok); code != 535 {
		t.Fatalf("Kerberos ADAT to a GSI-only server: %d %s", code, text)
	}

	// A GSI token (a TLS ClientHello) to a Kerberos-only server is refused.
	ke := startKerberos(t, nil)
	kc = ke.dial(t)
	if code, _ := kc.cmd("AUTH GSSAPI"); code != 334 {
		t.Fatalf("AUTH GSSAPI on a Kerberos-only server: %d", code)
	}
	hello := []byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00}
	if code, text := kc.cmd("ADAT " + base64.StdEncoding.EncodeToString(hello)); code != 535 {
		t.Fatalf("GSI token to a Kerberos-only server: %d %s", code, text)
	}
	if code, _ := kc.cmd("USER anonymous"); code != 331 {
		t.Fatalf("USER: %d", code)
	}
}
