// Package gsipki builds a GSI test PKI for tests that need real peers: a
// CA in a trust directory of GCT's layout (hashed certificate, signing
// policy, empty CRL), a host certificate for 127.0.0.1 and localhost, a
// user certificate, proxies (made with the gsi package or with GCT's
// grid-proxy-init), and a grid-mapfile that maps the user to a local
// account.
//
// Everything lives in a world-traversable directory under the system's
// temporary directory, because a GCT server reads the trust directory
// again after it switched to the mapped account. Private keys are mode
// 0600.
package gsipki

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
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

	mu   sync.Mutex
	n    int            // serial numbers issued; guarded by mu
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
	p.UserCert, p.UserKey, p.User = p.issue(t, UserDN, &x509.Certificate{
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, "user")
	p.GridMap = filepath.Join(dir, "grid-mapfile")
	writeFile(t, p.GridMap, []byte(gsi.GridMapLine(UserDN, account)+"\n"), 0o644)
	return p
}

// makeCA makes the CA and its trust directory entries. Its DN carries a
// random suffix so that two PKIs of one test never share a subject hash.
func (p *PKI) makeCA(t testing.TB) {
	t.Helper()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	p.CADN = Org + "/CN=FerryTest CA " + hex.EncodeToString(suffix)
	name, err := gsi.ParseDN(p.CADN)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		RawSubject:            name,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            -1,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SignatureAlgorithm:    x509.SHA256WithRSA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p.CA = &gsi.Credential{Chain: []*x509.Certificate{ca}, Key: key}
	crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number:             big.NewInt(1),
		ThisUpdate:         now.Add(-time.Hour),
		NextUpdate:         ca.NotAfter,
		SignatureAlgorithm: x509.SHA256WithRSA,
	}, ca, key)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := gsi.SubjectHash(ca.RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf("access_id_CA   X509    '%s'\npos_rights     globus  CA:sign\ncond_subjects  globus  '\"%s/*\"'\n", p.CADN, Org)
	writeFile(t, filepath.Join(p.TrustDir, hash+".0"), gsi.EncodeCertsPEM(ca), 0o644)
	writeFile(t, filepath.Join(p.TrustDir, hash+".signing_policy"), []byte(policy), 0o644)
	writeFile(t, filepath.Join(p.TrustDir, hash+".r0"), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: crl}), 0o644)
	writeFile(t, filepath.Join(p.Dir, "cacert.pem"), gsi.EncodeCertsPEM(ca), 0o644)
}

// IssueHost issues a host certificate with subject Org/OU=hosts/CN=cn and
// the given subject alternative names (IP addresses or DNS names; none
// means no SAN extension), and returns its certificate and key files.
func (p *PKI) IssueHost(t testing.TB, cn string, sans ...string) (certFile, keyFile string) {
	t.Helper()
	tmpl := &x509.Certificate{
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, s := range sans {
		if ip := net.ParseIP(s); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	certFile, keyFile, _ = p.issue(t, Org+"/OU=hosts/CN="+cn, tmpl, "host")
	return certFile, keyFile
}

// IssueUser issues another user certificate, Org/OU=users/CN=cn (not in
// the grid-mapfile), and returns its credential and files.
func (p *PKI) IssueUser(t testing.TB, cn string) (cred *gsi.Credential, certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, cred = p.issue(t, Org+"/OU=users/CN="+cn, &x509.Certificate{
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, "user")
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

// issue signs an end-entity certificate and writes NAMEcert.pem and
// NAMEkey.pem (with a unique NAME).
func (p *PKI) issue(t testing.TB, dn string, tmpl *x509.Certificate, prefix string) (certFile, keyFile string, cred *gsi.Credential) {
	t.Helper()
	name, err := gsi.ParseDN(dn)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	now := time.Now()
	tmpl.SerialNumber = p.serial()
	tmpl.RawSubject = name
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.AddDate(0, 6, 0)
	tmpl.BasicConstraintsValid = true
	tmpl.SignatureAlgorithm = x509.SHA256WithRSA
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.CA.Leaf(), &key.PublicKey, p.CA.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	base := p.unique(prefix)
	certFile = filepath.Join(p.Dir, base+"cert.pem")
	keyFile = filepath.Join(p.Dir, base+"key.pem")
	writeFile(t, certFile, gsi.EncodeCertsPEM(cert), 0o644)
	keyPEM, err := gsi.EncodeKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, keyFile, keyPEM, 0o600)
	return certFile, keyFile, &gsi.Credential{Chain: []*x509.Certificate{cert}, Key: key}
}

func (p *PKI) serial() *big.Int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	return big.NewInt(int64(1000 + p.n))
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
	key := newKey(t)
	user := p.User.Leaf()
	var rdns pkix.RDNSequence
	if _, err := asn1.Unmarshal(user.RawSubject, &rdns); err != nil {
		t.Fatal(err)
	}
	serial := big.NewInt(int64(time.Now().UnixNano() & 0x7fffffff))
	rdns = append(rdns, pkix.RelativeDistinguishedNameSET{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: serial.String()}})
	subject, err := asn1.Marshal(rdns)
	if err != nil {
		t.Fatal(err)
	}
	pci, err := asn1.Marshal(struct {
		Policy struct{ Lang asn1.ObjectIdentifier }
	}{struct{ Lang asn1.ObjectIdentifier }{gsi.OIDPolicyInheritAll}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:       serial,
		RawSubject:         subject,
		NotBefore:          now.Add(-2 * time.Hour),
		NotAfter:           now.Add(-time.Hour),
		KeyUsage:           x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		SignatureAlgorithm: x509.SHA256WithRSA,
		ExtraExtensions:    []pkix.Extension{{Id: gsi.OIDProxyCertInfo, Critical: true, Value: pci}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, user, &key.PublicKey, p.User.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(p.Dir, p.unique("expired")+".pem")
	if err := gsi.WriteProxyFile(name, &gsi.Credential{Chain: []*x509.Certificate{cert, user}, Key: key}); err != nil {
		t.Fatal(err)
	}
	return name
}

func newKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writeFile(t testing.TB, name string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(name, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil {
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
