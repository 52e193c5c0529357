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
//     name has one component, and name is a user account of this host:
//     uid at least UID_MIN (/etc/login.defs, default 1000) and a login
//     shell (not nologin or false), so never root or a system account
//     such as daemon, which only a map line can name;
//   - else the login is refused (530).
//
// The user name the client sends selects among the principal's accounts;
// a name the principal may not use is refused, never served as another
// account, as anonymous, or checked as a password.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
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
		if err := userAccount(name); err != nil {
			return nil, fmt.Errorf("%w: %s is not in the Kerberos map and %w", ErrLoginDenied, principal, err)
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

// passwdFile and loginDefs are the files userAccount reads; tests of the
// server package change them.
var (
	passwdFile = "/etc/passwd"
	loginDefs  = "/etc/login.defs"
)

// userAccount reports why name may not be the account of name@REALM under
// the default rule: it must be a user account of this host, with a uid
// of at least UID_MIN and a login shell. Accounts that are not in the
// password file are looked up with getent (NSS: LDAP, SSSD).
func userAccount(name string) error {
	uid, shell, err := passwdEntry(passwdFile, name)
	if errors.Is(err, errNoAccount) && passwdFile == "/etc/passwd" {
		uid, shell, err = getentPasswd(name)
	}
	if err != nil {
		return fmt.Errorf("%q is not an account of this host (%w)", name, err)
	}
	if min := uidMin(loginDefs); uid < min {
		return fmt.Errorf("%q is a system account (uid %d < UID_MIN %d); name it in the map to allow it", name, uid, min)
	}
	if base := shell[strings.LastIndexByte(shell, '/')+1:]; shell == "" || base == "nologin" || base == "false" {
		return fmt.Errorf("%q has no login shell (%s); name it in the map to allow it", name, shell)
	}
	return nil
}

var errNoAccount = errors.New("no such account")

// passwdEntry returns the uid and shell of name in a passwd(5) file.
func passwdEntry(path, name string) (uid int, shell string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
	}
	for line := range bytes.Lines(b) {
		if uid, shell, ok := parsePasswd(string(line), name); ok {
			return uid, shell, nil
		}
	}
	return 0, "", errNoAccount
}

// getentPasswd looks name up through NSS.
func getentPasswd(name string) (uid int, shell string, err error) {
	out, err := exec.Command("getent", "passwd", "--", name).Output()
	if err != nil {
		return 0, "", errNoAccount
	}
	if uid, shell, ok := parsePasswd(string(out), name); ok {
		return uid, shell, nil
	}
	return 0, "", errNoAccount
}

// parsePasswd parses one passwd(5) line for name.
func parsePasswd(line, name string) (uid int, shell string, ok bool) {
	f := strings.Split(strings.TrimRight(line, "\r\n"), ":")
	if len(f) != 7 || f[0] != name {
		return 0, "", false
	}
	uid, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, "", false
	}
	return uid, f[6], true
}

// uidMin is UID_MIN of a login.defs(5) file, 1000 when it is not set.
func uidMin(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 1000
	}
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) >= 2 && f[0] == "UID_MIN" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 1000
}
