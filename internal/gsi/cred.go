package gsi

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Credential is a certificate chain, leaf first (proxies…, the end-entity
// certificate, then any intermediate CAs), with the leaf's private key.
type Credential struct {
	Chain []*x509.Certificate
	Key   crypto.Signer
}

// Leaf returns the first certificate of the chain, or nil.
func (c *Credential) Leaf() *x509.Certificate {
	if c == nil || len(c.Chain) == 0 {
		return nil
	}
	return c.Chain[0]
}

// Identity returns the DN of the first certificate that is not a proxy:
// the end-entity certificate whose rights the proxies carry.
func (c *Credential) Identity() string {
	if c == nil {
		return ""
	}
	for _, cert := range c.Chain {
		if info, err := ProxyInfoOf(cert); err != nil || info == nil {
			return CertDN(cert)
		}
	}
	if len(c.Chain) > 0 {
		return CertDN(c.Chain[len(c.Chain)-1])
	}
	return ""
}

// TLSCertificate returns the credential for crypto/tls: the whole chain
// is sent, as GCT sends it.
func (c *Credential) TLSCertificate() tls.Certificate {
	tc := tls.Certificate{PrivateKey: c.Key, Leaf: c.Leaf()}
	for _, cert := range c.Chain {
		tc.Certificate = append(tc.Certificate, cert.Raw)
	}
	return tc
}

// ErrEncryptedKey is returned for a private key protected by a passphrase,
// which this package does not decrypt.
var ErrEncryptedKey = errors.New("private key is encrypted (passphrase-protected); decrypt it first, e.g. openssl pkey -in KEY -out PLAIN_KEY, and keep the result mode 0600")

// ErrKeyPermissions is returned for a private key file that others than
// its owner may read or write.
var ErrKeyPermissions = errors.New("private key file is accessible by group or others (want mode 0600 or 0400)")

// ErrNoCredential is returned by FindClientCredential and
// FindHostCredential when no credential file exists where they look.
var ErrNoCredential = errors.New("no credential found")

// ParseCredentialPEM parses PEM data holding certificates (leaf first) and
// the leaf's private key, in any order, as a GCT proxy file does. The key
// may be PKCS #1 ("RSA PRIVATE KEY"), PKCS #8 ("PRIVATE KEY") or SEC 1
// ("EC PRIVATE KEY").
func ParseCredentialPEM(data []byte) (*Credential, error) {
	certs, key, err := parsePEM(data)
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, errors.New("gsi: no certificate in PEM data")
	}
	if key == nil {
		return nil, errors.New("gsi: no private key in PEM data")
	}
	return newCredential(certs, key)
}

func newCredential(certs []*x509.Certificate, key crypto.Signer) (*Credential, error) {
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return nil, fmt.Errorf("gsi: the private key does not belong to certificate %s", CertDN(certs[0]))
	}
	return &Credential{Chain: certs, Key: key}, nil
}

// parsePEM returns the certificates and the first private key in data.
func parsePEM(data []byte) ([]*x509.Certificate, crypto.Signer, error) {
	var certs []*x509.Certificate
	var key crypto.Signer
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("gsi: certificate %d: %w", len(certs)+1, err)
			}
			certs = append(certs, c)
		case "ENCRYPTED PRIVATE KEY":
			return nil, nil, fmt.Errorf("gsi: %w", ErrEncryptedKey)
		case "RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY":
			if key != nil {
				continue
			}
			if _, ok := b.Headers["DEK-Info"]; ok {
				return nil, nil, fmt.Errorf("gsi: %w", ErrEncryptedKey)
			}
			k, err := parseKey(b)
			if err != nil {
				return nil, nil, err
			}
			key = k
		}
	}
	return certs, key, nil
}

func parseKey(b *pem.Block) (crypto.Signer, error) {
	var k any
	var err error
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("gsi: private key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("gsi: unsupported private key type %T", k)
	}
	return s, nil
}

// LoadCredential reads a credential from PEM files: certFile holds the
// certificate chain (leaf first) and keyFile the leaf's key. They may be
// the same file, as a proxy file is (cert, key, rest of the chain). The
// key file must not be accessible by group or others (ErrKeyPermissions);
// an encrypted key gives ErrEncryptedKey.
func LoadCredential(certFile, keyFile string) (*Credential, error) {
	if keyFile == "" {
		keyFile = certFile
	}
	keyData, err := readKeyFile(keyFile)
	if err != nil {
		return nil, err
	}
	if keyFile == certFile {
		c, err := ParseCredentialPEM(keyData)
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, certFile)
		}
		return c, nil
	}
	certData, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err // names the file
	}
	certs, _, err := parsePEM(certData)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, certFile)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("gsi: no certificate in %s", certFile)
	}
	_, key, err := parsePEM(keyData)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, keyFile)
	}
	if key == nil {
		return nil, fmt.Errorf("gsi: no private key in %s", keyFile)
	}
	c, err := newCredential(certs, key)
	if err != nil {
		return nil, fmt.Errorf("%w (%s, %s)", err, certFile, keyFile)
	}
	return c, nil
}

// readKeyFile reads a file holding a private key after checking that only
// its owner may access it.
func readKeyFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err // names the file
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s (mode %04o): %w", name, fi.Mode().Perm(), ErrKeyPermissions)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("gsi: %w", err)
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("%s is too large for a credential", name)
	}
	return data, nil
}

// Where credentials are looked for; variables so that tests can move them.
var (
	proxyDir        = "/tmp"
	gridSecurityDir = "/etc/grid-security"
)

// DefaultProxyPath returns GCT's default proxy file, /tmp/x509up_u<uid>.
func DefaultProxyPath() string {
	return filepath.Join(proxyDir, "x509up_u"+strconv.Itoa(os.Getuid()))
}

// ProxyPath returns where a proxy is read from and written to by default:
// $X509_USER_PROXY if set, else DefaultProxyPath.
func ProxyPath() string {
	if p := os.Getenv("X509_USER_PROXY"); p != "" {
		return p
	}
	return DefaultProxyPath()
}

// TrustDir returns the trust directory as GCT finds it: $X509_CERT_DIR,
// else ~/.globus/certificates if it exists (for non-root users), else
// /etc/grid-security/certificates.
func TrustDir() string {
	if d := os.Getenv("X509_CERT_DIR"); d != "" {
		return d
	}
	if os.Getuid() != 0 {
		if home, err := os.UserHomeDir(); err == nil {
			d := filepath.Join(home, ".globus", "certificates")
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				return d
			}
		}
	}
	return filepath.Join(gridSecurityDir, "certificates")
}

// UserCertPaths returns the end-entity credential files of the user:
// $X509_USER_CERT and $X509_USER_KEY, each defaulting to
// ~/.globus/usercert.pem and ~/.globus/userkey.pem.
func UserCertPaths() (certFile, keyFile string) {
	certFile, keyFile = os.Getenv("X509_USER_CERT"), os.Getenv("X509_USER_KEY")
	if certFile == "" || keyFile == "" {
		home, _ := os.UserHomeDir()
		if certFile == "" {
			certFile = filepath.Join(home, ".globus", "usercert.pem")
		}
		if keyFile == "" {
			keyFile = filepath.Join(home, ".globus", "userkey.pem")
		}
	}
	return certFile, keyFile
}

// FindClientCredential finds the client's credential, trying in order:
// $X509_USER_PROXY; /tmp/x509up_u<uid> if it exists; $X509_USER_CERT and
// $X509_USER_KEY; ~/.globus/usercert.pem and userkey.pem. Unlike GCT it
// never prefers the end-entity certificate over a proxy. The first source
// that is set or exists is used: if it cannot be loaded, or has expired,
// that is the error (no silent fall-through). source says what was used,
// e.g. "proxy /tmp/x509up_u1000".
func FindClientCredential() (cred *Credential, source string, err error) {
	now := time.Now()
	if p := os.Getenv("X509_USER_PROXY"); p != "" {
		return loadChecked("proxy "+p+" (X509_USER_PROXY)", p, p, now)
	}
	if p := DefaultProxyPath(); exists(p) {
		return loadChecked("proxy "+p, p, p, now)
	}
	cf, kf := os.Getenv("X509_USER_CERT"), os.Getenv("X509_USER_KEY")
	if cf != "" || kf != "" {
		cf, kf = UserCertPaths()
		return loadChecked("certificate "+cf+" and key "+kf+" (X509_USER_CERT/X509_USER_KEY)", cf, kf, now)
	}
	cf, kf = UserCertPaths()
	if exists(cf) {
		return loadChecked("certificate "+cf+" and key "+kf, cf, kf, now)
	}
	return nil, "", fmt.Errorf("%w: X509_USER_PROXY is not set and neither %s nor %s exists; run ferry proxy init", ErrNoCredential, DefaultProxyPath(), cf)
}

// FindHostCredential finds a server's credential: certFile and keyFile if
// certFile is given (keyFile defaults to certFile); else $X509_USER_CERT
// and $X509_USER_KEY if set; else /etc/grid-security/hostcert.pem and
// hostkey.pem.
func FindHostCredential(certFile, keyFile string) (cred *Credential, source string, err error) {
	now := time.Now()
	if certFile != "" {
		if keyFile == "" {
			keyFile = certFile
		}
		return loadChecked("certificate "+certFile+" and key "+keyFile, certFile, keyFile, now)
	}
	cf, kf := os.Getenv("X509_USER_CERT"), os.Getenv("X509_USER_KEY")
	if cf != "" {
		if kf == "" {
			kf = cf
		}
		return loadChecked("certificate "+cf+" and key "+kf+" (X509_USER_CERT/X509_USER_KEY)", cf, kf, now)
	}
	cf = filepath.Join(gridSecurityDir, "hostcert.pem")
	kf = filepath.Join(gridSecurityDir, "hostkey.pem")
	if !exists(cf) {
		return nil, "", fmt.Errorf("%w: no -cert given, X509_USER_CERT is not set and %s does not exist", ErrNoCredential, cf)
	}
	return loadChecked("certificate "+cf+" and key "+kf, cf, kf, now)
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return !errors.Is(err, fs.ErrNotExist)
}

func loadChecked(source, certFile, keyFile string, now time.Time) (*Credential, string, error) {
	c, err := LoadCredential(certFile, keyFile)
	if err != nil {
		return nil, source, err
	}
	for _, cert := range c.Chain {
		if now.After(cert.NotAfter) {
			return nil, source, fmt.Errorf("gsi: %s: %s expired at %s", source, CertDN(cert), cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return c, source, nil
}

// EncodeKeyPEM encodes a private key as PKCS #8 ("PRIVATE KEY"), which is
// what grid-proxy-init (with OpenSSL 3) writes.
func EncodeKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("gsi: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// EncodeCertsPEM encodes certificates as consecutive PEM blocks.
func EncodeCertsPEM(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// EncodeProxyPEM encodes a credential in GCT's proxy file layout: the leaf
// certificate, its private key, then the rest of the chain.
func EncodeProxyPEM(c *Credential) ([]byte, error) {
	if len(c.Chain) == 0 || c.Key == nil {
		return nil, errors.New("gsi: credential is incomplete")
	}
	key, err := EncodeKeyPEM(c.Key)
	if err != nil {
		return nil, err
	}
	out := EncodeCertsPEM(c.Chain[0])
	out = append(out, key...)
	return append(out, EncodeCertsPEM(c.Chain[1:]...)...), nil
}

// WriteProxyFile writes c to path in GCT's proxy file layout (see
// EncodeProxyPEM) with mode 0600, atomically: a reader sees the old file
// or the new one, and a symbolic link at path is replaced, not followed.
func WriteProxyFile(path string, c *Credential) error {
	data, err := EncodeProxyPEM(c)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o600)
}

// WriteFileAtomic writes data to a new file in path's directory with the
// given mode and renames it to path.
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	ok = true
	return nil
}

// ParseChain parses DER certificates (as crypto/tls delivers them, leaf
// first).
func ParseChain(raw [][]byte) ([]*x509.Certificate, error) {
	out := make([]*x509.Certificate, 0, len(raw))
	for i, der := range raw {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("gsi: peer certificate %d: %w", i+1, err)
		}
		out = append(out, c)
	}
	return out, nil
}
