// Package gsipki builds a GSI test PKI for tests that need real peers,
// issued with gsi.NewCA: a CA in a trust directory of GCT's layout
// (hashed certificate, signing policy, empty CRL), a host certificate for
// 127.0.0.1 and localhost, a user certificate, proxies (made with the gsi
// package or with GCT's grid-proxy-init), and a grid-mapfile that maps the
// user to a local account.
//
// Everything lives in a world-traversable directory under the system's
// temporary directory, because a GCT server reads the trust directory
// again after it switched to the mapped account. Private keys are mode
// 0600.
package gsipki

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

// Org is the organization of every DN the PKI issues; the CA's signing
// policy allows "/C=US/O=FerryTest/*".
const Org = "/C=US/O=FerryTest"

// UserDN is the user certificate's subject.
const UserDN = Org + "/OU=users/CN=Ferry User"

// HostDN is the default host certificate's subject.
const HostDN = Org + "/OU=hosts/CN=localhost"

// Account is the local account the grid-mapfile maps UserDN to by default.
const Account = "ferrygsi"

// PKI is a test PKI on disk.
type PKI struct {
	// Dir holds every file; it is removed when the test ends.
	Dir string
	// TrustDir is the trust directory (X509_CERT_DIR).
	TrustDir string
	// CA is the CA's credential; CADN its subject.
	CA   *gsi.Credential
	CADN string
	// HostCert and HostKey are the files of the host credential: HostDN,
	// with subject alternative names DNS:localhost and IP:127.0.0.1.
	HostCert, HostKey string
	// UserCert and UserKey are the files of the user credential (UserDN),
	// User the credential itself.
	UserCert, UserKey string
	User              *gsi.Credential
	// GridMap is a grid-mapfile mapping UserDN to Account.
	GridMap string
	// Account is the local account the user is mapped to.
	Account string

	ca *gsi.CA // issues the certificates

	mu   sync.Mutex
	used map[string]int // file name prefixes used; guarded by mu
}

// New builds a PKI whose grid-mapfile maps the user to account (Account
// when empty), creating that local account if it does not exist.
func New(t testing.TB, account string) *PKI {
	t.Helper()
	if account == "" {
		account = Account
	}
	EnsureAccount(t, account)
	dir, err := os.MkdirTemp("", "ferry-gsipki-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &PKI{Dir: dir, TrustDir: filepath.Join(dir, "certificates"), Account: account}
	if err := os.Mkdir(p.TrustDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p.makeCA(t)
	p.HostCert, p.HostKey = p.IssueHost(t, "localhost", "localhost", "127.0.0.1")
	p.UserCert, p.UserKey, p.User = p.issue(t, gsi.UserCert, UserDN, nil, "user")
	p.GridMap = filepath.Join(dir, "grid-mapfile")
	writeFile(t, p.GridMap, []byte(gsi.GridMapLine(UserDN, account)+"\n"))
	return p
}

// makeCA makes the CA and its trust directory entries (hashed
// certificate, signing policy, empty CRL). Its DN carries a random suffix
// so that two PKIs of one test never share a subject hash.
func (p *PKI) makeCA(t testing.TB) {
	t.Helper()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	p.CADN = Org + "/CN=FerryTest CA " + hex.EncodeToString(suffix)
	ca, err := gsi.NewCA(p.CADN, gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.ca, p.CA = ca, ca.Credential()
	if err := ca.WriteTrustDir(p.TrustDir); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCRL(p.TrustDir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(p.Dir, "cacert.pem"), gsi.EncodeCertsPEM(ca.Cert))
}

// IssueHost issues a host certificate with subject Org/OU=hosts/CN=cn and
// the given subject alternative names (IP addresses or DNS names; none
// means no SAN extension), and returns its certificate and key files.
func (p *PKI) IssueHost(t testing.TB, cn string, sans ...string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, _ = p.issue(t, gsi.HostCert, Org+"/OU=hosts/CN="+cn, sans, "host")
	return certFile, keyFile
}

// IssueUser issues another user certificate, Org/OU=users/CN=cn (not in
// the grid-mapfile), and returns its credential and files.
func (p *PKI) IssueUser(t testing.TB, cn string) (cred *gsi.Credential, certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, cred = p.issue(t, gsi.UserCert, Org+"/OU=users/CN="+cn, nil, "user")
	return cred, certFile, keyFile
}

// ProxyOf makes a proxy of cred with gsi.NewProxy, writes it and returns
// the file.
func (p *PKI) ProxyOf(t testing.TB, cred *gsi.Credential, opt gsi.ProxyOptions) string {
	t.Helper()
	proxy, err := gsi.NewProxy(cred, opt)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(p.Dir, p.unique("proxy")+".pem")
	if err := gsi.WriteProxyFile(name, proxy); err != nil {
		t.Fatal(err)
	}
	return name
}

// issue issues a certificate valid for six months and writes
// NAMEcert.pem and NAMEkey.pem, where NAME is prefix made unique (host,
// host2, …).
func (p *PKI) issue(t testing.TB, kind gsi.CertKind, dn string, hosts []string, prefix string) (certFile, keyFile string, cred *gsi.Credential) {
	t.Helper()
	cred, err := p.ca.Issue(kind, dn, gsi.IssueOptions{NotAfter: time.Now().AddDate(0, 6, 0), Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	base := p.unique(prefix)
	certFile = filepath.Join(p.Dir, base+"cert.pem")
	keyFile = filepath.Join(p.Dir, base+"key.pem")
	if err := gsi.WriteCredential(certFile, keyFile, cred); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cred
}

// unique returns prefix for its first use, then prefix2, prefix3…
func (p *PKI) unique(prefix string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used = map[string]int{}
	}
	p.used[prefix]++
	if n := p.used[prefix]; n > 1 {
		return prefix + strconv.Itoa(n)
	}
	return prefix
}

// Revoke rewrites the CA's CRL in the trust directory so that it revokes
// the certificates of creds (none: the empty CRL again).
func (p *PKI) Revoke(t testing.TB, creds ...*gsi.Credential) {
	t.Helper()
	var certs []*x509.Certificate
	for _, c := range creds {
		certs = append(certs, c.Chain[0])
	}
	if err := p.ca.WriteCRL(p.TrustDir, certs...); err != nil {
		t.Fatal(err)
	}
}

// Proxy makes a proxy of the user credential with gsi.NewProxy, writes it
// in GCT's proxy file layout (mode 0600) and returns the file.
func (p *PKI) Proxy(t testing.TB, opt gsi.ProxyOptions) string {
	t.Helper()
	return p.ProxyOf(t, p.User, opt)
}

// GCTProxy makes an RFC 3820 proxy of the user credential with GCT's
// grid-proxy-init (extra arguments appended, e.g. "-limited") and returns
// the file. A missing grid-proxy-init fails the test.
func (p *PKI) GCTProxy(t testing.TB, extra ...string) string {
	t.Helper()
	prog, err := exec.LookPath("grid-proxy-init")
	if err != nil {
		t.Fatalf("gsipki: GCT's grid-proxy-init is required (Debian package globus-proxy-utils): %v", err)
	}
	name := filepath.Join(p.Dir, p.unique("gctproxy")+".pem")
	args := append([]string{"-q", "-rfc", "-cert", p.UserCert, "-key", p.UserKey, "-certdir", p.TrustDir, "-out", name}, extra...)
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), "X509_CERT_DIR="+p.TrustDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("grid-proxy-init %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return name
}

// ExpiredProxy writes a proxy of the user credential that expired an hour
// ago and returns the file.
func (p *PKI) ExpiredProxy(t testing.TB) string {
	t.Helper()
	proxy, err := gsi.NewProxy(p.User, gsi.ProxyOptions{Start: time.Now().Add(-2 * time.Hour), Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(p.Dir, p.unique("expired")+".pem")
	if err := gsi.WriteProxyFile(name, proxy); err != nil {
		t.Fatal(err)
	}
	return name
}

// writeFile writes a file readable by all, whatever the umask.
func writeFile(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		t.Fatal(err)
	}
}

var accountMu sync.Mutex

// EnsureAccount makes sure the local account name exists, with a home
// directory and a real shell (GCT refuses accounts without one), creating
// it with useradd if needed (the tests run as root). It returns the
// account's uid and gid.
func EnsureAccount(t testing.TB, name string) (uid, gid int) {
	t.Helper()
	accountMu.Lock()
	defer accountMu.Unlock()
	var lastErr error
	for attempt := range 20 {
		if u, err := user.Lookup(name); err == nil {
			uid, _ = strconv.Atoi(u.Uid)
			gid, _ = strconv.Atoi(u.Gid)
			if uid == 0 {
				t.Fatalf("gsipki: account %s is root; GCT refuses to map to root", name)
			}
			return uid, gid
		}
		// Another test process may be adding it (or holding the lock
		// of /etc/passwd) at the same time: retry.
		out, err := exec.Command("useradd", "--system", "--create-home", "--shell", "/bin/sh", name).CombinedOutput()
		if err == nil {
			continue
		}
		lastErr = fmt.Errorf("useradd %s: %v: %s", name, err, out)
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond)
	}
	t.Fatalf("gsipki: cannot create the local account %s (tests must run as root): %v", name, lastErr)
	return 0, 0
}
