package server

// Kerberos logins (AUTH GSSAPI with the Kerberos 5 mechanism; see
// internal/pi/krb5.go). A principal proved by a verified AP-REQ is mapped
// to an account:
//
//   - through Config.KrbMap, a file of "PRINCIPAL ACCOUNT" lines ('#'
//     starts a comment; a principal may have several lines, its first
//     account is the default); a principal listed there gets only the
//     accounts listed for it;
//   - else, .k5login-style, "name@REALM" logs in as "name" when REALM is
//     the realm of the service principal the client's ticket was for,
//     name has one component, and name is an account of this host (not
//     root);
//   - else the login is refused (530).
//
// The user name the client sends selects among the principal's accounts;
// a name the principal may not use is refused, never served as another
// account, as anonymous, or checked as a password.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/ferrygrid/ferry/internal/krb5gss"
	"github.com/ferrygrid/ferry/internal/pi"
)

// kerberosService is the GSS service name of FTP (RFC 2228; curl and
// MIT's ftp ask for ftp/HOST@REALM).
const kerberosService = "ftp"

// kerberosAcceptor loads the keytab of Config.Keytab, or returns nil.
func (cfg *Config) kerberosAcceptor() (*krb5gss.Acceptor, error) {
	if cfg.Keytab == "" {
		if cfg.KrbService != "" {
			return nil, fmt.Errorf("server: a Kerberos service (%s) without a keytab", cfg.KrbService)
		}
		return nil, nil
	}
	kt, err := keytab.Load(cfg.Keytab)
	if err != nil {
		return nil, fmt.Errorf("server: keytab %s: %w", cfg.Keytab, err)
	}
	if cfg.KrbService != "" {
		name, realm, _ := strings.Cut(cfg.KrbService, "@")
		host, ok := strings.CutPrefix(name, kerberosService+"/")
		if !ok || host == "" || strings.Contains(host, "/") {
			return nil, fmt.Errorf("server: Kerberos service %q is not %s/HOST or %s/HOST@REALM", cfg.KrbService, kerberosService, kerberosService)
		}
		for _, e := range kt.Entries {
			if e.Principal.Realm == realm || realm == "" {
				if strings.Join(e.Principal.Components, "/") == name {
					return &krb5gss.Acceptor{Keytab: kt, Service: kerberosService, Principal: name, Realm: realm}, nil
				}
			}
		}
		return nil, fmt.Errorf("server: keytab %s holds no key of %s", cfg.Keytab, cfg.KrbService)
	}
	found := false
	for _, e := range kt.Entries {
		if len(e.Principal.Components) == 2 && e.Principal.Components[0] == kerberosService {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("server: keytab %s holds no %s/HOST@REALM key", cfg.Keytab, kerberosService)
	}
	return &krb5gss.Acceptor{Keytab: kt, Service: kerberosService}, nil
}

// authorizePrincipal maps a Kerberos principal and the user name the
// client asked for to an account.
func (s *Server) authorizePrincipal(ctx context.Context, principal, service, username string) (*Account, error) {
	accounts, listed, err := loadKrbMap(s.cfg.KrbMap, principal)
	if err != nil {
		return nil, fmt.Errorf("server: Kerberos map: %w", err)
	}
	if !listed {
		name, realm, _ := strings.Cut(principal, "@")
		_, svcRealm, _ := strings.Cut(service, "@")
		switch {
		case realm == "" || realm != svcRealm:
			return nil, fmt.Errorf("%w: %s is not in the Kerberos map and not of the server's realm", ErrLoginDenied, principal)
		case name == "" || strings.ContainsAny(name, "/@"):
			return nil, fmt.Errorf("%w: %s is not in the Kerberos map", ErrLoginDenied, principal)
		}
		u, err := user.Lookup(name)
		if err != nil || u.Uid == "0" {
			return nil, fmt.Errorf("%w: %s is not in the Kerberos map and %q is not an account of this host", ErrLoginDenied, principal, name)
		}
		accounts = []string{name}
	}
	name := accounts[0]
	if username != "" && username != ":globus-mapping:" {
		if !slices.Contains(accounts, username) {
			return nil, fmt.Errorf("%w: %s may not log in as %s", ErrLoginDenied, principal, username)
		}
		name = username
	}
	return &Account{Name: name, Writable: true, LocalUser: name}, nil
}

// loadKrbMap reads the accounts of principal from the map file; listed
// reports whether the file names the principal. No file (path "") lists
// nobody.
func loadKrbMap(path, principal string) (accounts []string, listed bool, err error) {
	if path == "" {
		return nil, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case len(fields) != 2:
			return nil, false, fmt.Errorf("%s:%d: want PRINCIPAL ACCOUNT", path, n)
		case fields[0] == principal:
			listed = true
			accounts = append(accounts, fields[1])
		}
	}
	return accounts, listed, sc.Err()
}

// kerberosLoginAllowed is the authorize rule for a Kerberos session: only
// a proved principal on the Kerberos-protected channel.
func kerberosLoginAllowed(req pi.LoginRequest) error {
	if !req.Protected || req.Mechanism != "krb5" || req.Identity != nil {
		return fmt.Errorf("%w: a Kerberos principal outside a Kerberos session", pi.ErrLoginDenied)
	}
	return nil
}
