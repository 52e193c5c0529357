package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/pi"
)

// fakeAccounts points the default rule at a passwd file and a
// login.defs of the test's.
func fakeAccounts(t *testing.T, passwd, defs string) {
	t.Helper()
	dir := t.TempDir()
	old, oldDefs := passwdFile, loginDefs
	passwdFile, loginDefs = filepath.Join(dir, "passwd"), filepath.Join(dir, "login.defs")
	t.Cleanup(func() { passwdFile, loginDefs = old, oldDefs })
	os.WriteFile(passwdFile, []byte(passwd), 0o644)
	if defs != "" {
		os.WriteFile(loginDefs, []byte(defs), 0o644)
	}
}

const testPasswd = `root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
carol:x:1500:1500::/home/carol:/bin/bash
ops:x:1200:1200::/home/ops:/bin/false
low:x:900:900::/home/low:/bin/sh
`

// TestKerberosPrincipalMapping is the principal → account decision:
// the map file first, then name@REALM of the server's realm for a user
// account (uid ≥ UID_MIN, a login shell), else a refusal.
func TestKerberosPrincipalMapping(t *testing.T) {
	fakeAccounts(t, testPasswd, "# defaults\nUID_MIN\t\t 1000\nUID_MAX 60000\n")
	kmap := filepath.Join(t.TempDir(), "krb-map")
	os.WriteFile(kmap, []byte(`# comment
alice@R.TEST   nobody
alice@R.TEST   daemon   # a second account
svc/batch@R.TEST nobody
root@R.TEST    bin
`), 0o600)
	s := &Server{cfg: Config{Storage: memory.New(), KrbMap: kmap}}
	const service = "ftp/host@R.TEST"
	for _, c := range []struct {
		principal, user, want string // want "" = refused
	}{
		{"alice@R.TEST", "", "nobody"},
		{"alice@R.TEST", ":globus-mapping:", "nobody"},
		{"alice@R.TEST", "daemon", "daemon"},
		{"alice@R.TEST", "root", ""},
		{"svc/batch@R.TEST", "", "nobody"},
		{"root@R.TEST", "", "bin"}, // listed: the map decides
		{"root@R.TEST", "root", ""},
		{"carol@R.TEST", "", "carol"},       // .k5login-style default
		{"carol@R.TEST", "nobody", ""},      // only its own name
		{"carol@OTHER.TEST", "", ""},        // another realm
		{"carol/admin@R.TEST", "", ""},      // two components
		{"no-such-user-xyz@R.TEST", "", ""}, // not an account
		{"nobody@R.TEST", "", ""},           // no login shell
		{"daemon@R.TEST", "", ""},           // system account (uid 1)
		{"ops@R.TEST", "", ""},              // /bin/false
		{"low@R.TEST", "", ""},              // uid 900 < UID_MIN
		{"mallory@R.TEST", "nobody", ""},
	} {
		a, err := s.authorizePrincipal(context.Background(), c.principal, service, c.user)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s as %q: got %s, want a refusal", c.principal, c.user, a.Name)
		case c.want == "" && !errors.Is(err, ErrLoginDenied):
			t.Errorf("%s as %q: %v, want ErrLoginDenied", c.principal, c.user, err)
		case c.want != "" && err != nil:
			t.Errorf("%s as %q: %v, want %s", c.principal, c.user, err, c.want)
		case c.want != "" && a.Name != c.want:
			t.Errorf("%s as %q: %s, want %s", c.principal, c.user, a.Name, c.want)
		}
	}
	// root through the default is refused.
	s.cfg.KrbMap = ""
	if _, err := s.authorizePrincipal(context.Background(), "root@R.TEST", service, ""); err == nil {
		t.Error("root@R.TEST mapped to root")
	}
	// UID_MIN comes from login.defs, 1000 without it.
	fakeAccounts(t, testPasswd, "UID_MIN 800\n")
	if _, err := s.authorizePrincipal(context.Background(), "low@R.TEST", service, ""); err != nil {
		t.Errorf("low (uid 900) with UID_MIN 800: %v", err)
	}
	fakeAccounts(t, testPasswd, "")
	if _, err := s.authorizePrincipal(context.Background(), "low@R.TEST", service, ""); err == nil {
		t.Error("low (uid 900) allowed without login.defs (UID_MIN 1000)")
	}
	// A malformed map refuses everyone.
	os.WriteFile(kmap, []byte("alice@R.TEST\n"), 0o600)
	s.cfg.KrbMap = kmap
	if _, err := s.authorizePrincipal(context.Background(), "carol@R.TEST", service, ""); err == nil {
		t.Error("malformed map: a login was allowed")
	}
}

// TestKerberosAuthorize: a Kerberos session logs in only through its
// principal, and a principal is believed only on a Kerberos session.
func TestKerberosAuthorize(t *testing.T) {
	p := &loginPolicy{anonymous: true, authenticate: func(context.Context, string, string) (*Account, error) {
		return &Account{Name: "pw"}, nil
	}}
	for _, c := range []struct {
		req  pi.LoginRequest
		want loginMethod
	}{
		{pi.LoginRequest{User: "anonymous", Protected: true, Mechanism: "krb5", Principal: "a@R"}, kerberosLogin},
		{pi.LoginRequest{User: "x", Password: "p", Protected: true, Mechanism: "krb5", Principal: "a@R"}, kerberosLogin},
		{pi.LoginRequest{User: "anonymous", Protected: true, Mechanism: "krb5"}, denyLogin},
		{pi.LoginRequest{User: "x", Mechanism: "", Principal: "a@R"}, denyLogin},
		{pi.LoginRequest{User: "x", Protected: true, Mechanism: "gsi", Principal: "a@R", Identity: &gsi.Identity{DN: "/CN=x"}}, denyLogin},
	} {
		got, _ := p.authorize(c.req)
		if got != c.want {
			t.Errorf("%+v: %v, want %v", c.req, got, c.want)
		}
	}
}
