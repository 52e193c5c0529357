package server

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/pi"
)

// TestKerberosPrincipalMapping is the principal → account decision:
// the map file first, then name@REALM of the server's realm for an
// existing non-root account, else a refusal.
func TestKerberosPrincipalMapping(t *testing.T) {
	if _, err := user.Lookup("nobody"); err != nil {
		t.Fatalf("the host has no user nobody: %v", err)
	}
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
		{"nobody@R.TEST", "", "nobody"},     // .k5login-style default
		{"nobody@OTHER.TEST", "", ""},       // another realm
		{"nobody/admin@R.TEST", "", ""},     // two components
		{"no-such-user-xyz@R.TEST", "", ""}, // not an account
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
	// A malformed map refuses everyone.
	os.WriteFile(kmap, []byte("alice@R.TEST\n"), 0o600)
	s.cfg.KrbMap = kmap
	if _, err := s.authorizePrincipal(context.Background(), "nobody@R.TEST", service, ""); err == nil {
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
