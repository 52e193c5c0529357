package gsi

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// This file issues the certificates of test and tool PKIs (ferry cert,
// the benchmarks, the test helpers): a CA, host and user certificates,
// and the CA's trust directory entries in the layout LoadTrustDir reads.

// CertKind says what an end-entity certificate issued by a CA is for; it
// fixes the certificate's key usage and extended key usage.
type CertKind int

const (
	// HostCert is a service's certificate: digitalSignature and
	// keyEncipherment, for serverAuth and clientAuth (a GridFTP server is
	// a client too, of third-party transfers and data movers).
	HostCert CertKind = iota + 1
	// UserCert is a person's certificate: digitalSignature,
	// keyEncipherment and dataEncipherment, for clientAuth, as GCT's
	// grid-cert-request asks.
	UserCert
)

// IssueOptions are the choices of NewCA and CA.Issue; the zero value is a
// 2048-bit RSA key valid from an hour ago.
type IssueOptions struct {
	// Bits is the RSA key size; 0 means 2048. Less than 2048 or more
	// than 16384 is an error.
	Bits int
	// NotBefore and NotAfter bound the validity. A zero NotBefore means
	// an hour ago, so that a peer whose clock is a little behind accepts
	// the certificate at once. A zero NotAfter means a year from now for
	// a CA, and the CA's own notAfter for a certificate it issues; an
	// issued certificate never outlives its CA.
	NotBefore, NotAfter time.Time
	// Hosts are the subjectAltNames of a host certificate: IP addresses
	// or DNS names. Only HostCert takes them.
	Hosts []string
}

// defaultBackdate is how far back a zero IssueOptions.NotBefore lies.
const defaultBackdate = time.Hour

// validity returns the options' NotBefore and NotAfter with the defaults
// applied; defaultAfter is the NotAfter for a zero one.
func (o *IssueOptions) validity(now, defaultAfter time.Time) (notBefore, notAfter time.Time, err error) {
	notBefore, notAfter = o.NotBefore, o.NotAfter
	if notBefore.IsZero() {
		notBefore = now.Add(-defaultBackdate)
	}
	if notAfter.IsZero() {
		notAfter = defaultAfter
	}
	if !notAfter.After(notBefore) {
		return notBefore, notAfter, fmt.Errorf("gsi: validity ends (%s) before it begins (%s)",
			notAfter.UTC().Format(time.RFC3339), notBefore.UTC().Format(time.RFC3339))
	}
	return notBefore, notAfter, nil
}

// newKey makes the RSA key of a certificate.
func (o *IssueOptions) newKey() (*rsa.PrivateKey, error) {
	bits := o.Bits
	if bits == 0 {
		bits = minRSABits
	}
	if bits < minRSABits || bits > 16384 {
		return nil, fmt.Errorf("gsi: %d-bit RSA keys: want 2048 to 16384 bits", bits)
	}
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, fmt.Errorf("gsi: %w", err)
	}
	return key, nil
}

// CA is a certificate authority of a test or tool PKI: a self-signed RSA
// certificate, its key, and the signing policy that its trust directory
// entries carry. Its methods are safe for concurrent use.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer

	policy  []byte         // the signing policy file; nil when none is known
	allowed *SigningPolicy // policy parsed
}

// NewCA makes a CA with subject subject (a one-line DN) and a signing
// policy that lets it sign the DNs under its PolicyPrefix. Its key usage
// is keyCertSign and cRLSign, without a path length constraint.
func NewCA(subject string, opt IssueOptions) (*CA, error) {
	name, err := ParseDN(subject)
	if err != nil {
		return nil, err
	}
	if len(opt.Hosts) > 0 {
		return nil, errors.New("gsi: a CA certificate takes no Hosts")
	}
	now := time.Now()
	notBefore, notAfter, err := opt.validity(now, now.AddDate(1, 0, 0))
	if err != nil {
		return nil, err
	}
	key, err := opt.newKey()
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		RawSubject:            name,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            -1,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SignatureAlgorithm:    x509.SHA256WithRSA,
	}
	cert, err := createCertificate(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: cert, Key: key}
	dn, prefix := CertDN(cert), ca.PolicyPrefix()
	ca.policy = fmt.Appendf(nil, "# Signing policy of %s, written by Ferry.\n"+
		"access_id_CA   X509    '%s'\n"+
		"pos_rights     globus  CA:sign\n"+
		"cond_subjects  globus  '\"%s/*\"'\n", dn, dn, prefix)
	if ca.allowed, err = ParseSigningPolicy(ca.policy); err != nil {
		return nil, fmt.Errorf("gsi: the signing policy of %s: %w", dn, err)
	}
	return ca, nil
}

// LoadCA loads a CA from its certificate and key files, with the signing
// policy of its entry in trustDir when there is one (trustDir "" means
// none): Issue then refuses the subjects the policy does not allow.
func LoadCA(certFile, keyFile, trustDir string) (*CA, error) {
	cred, err := LoadCredential(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: cred.Leaf(), Key: cred.Key}
	if !isCA(ca.Cert) {
		return nil, fmt.Errorf("gsi: %s: %s is not a CA certificate", certFile, CertDN(ca.Cert))
	}
	if trustDir == "" {
		return ca, nil
	}
	hash, err := SubjectHash(ca.Cert.RawSubject)
	if err != nil {
		return nil, err
	}
	name := filepath.Join(trustDir, hash+".signing_policy")
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return ca, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gsi: %w", err)
	}
	if ca.allowed, err = ParseSigningPolicy(data); err != nil {
		return nil, fmt.Errorf("gsi: %s: %w", name, err)
	}
	ca.policy = data
	return ca, nil
}

// Credential returns the CA's certificate and key as a credential.
func (ca *CA) Credential() *Credential {
	return &Credential{Chain: []*x509.Certificate{ca.Cert}, Key: ca.Key}
}

// PolicyPrefix returns the DN prefix a new CA's signing policy allows:
// the CA's DN up to its last O attribute, or without its last attribute
// when it has none ("" for a one-attribute DN).
func (ca *CA) PolicyPrefix() string {
	parts := strings.Split(strings.TrimPrefix(CertDN(ca.Cert), "/"), "/")
	last := -1
	for i, p := range parts {
		if strings.HasPrefix(p, "O=") {
			last = i
		}
	}
	if last < 0 {
		last = len(parts) - 2
	}
	if last < 0 {
		return ""
	}
	return "/" + strings.Join(parts[:last+1], "/")
}

// Issue makes a new RSA key and an end-entity certificate of kind for it
// with subject subject (a one-line DN), signed with SHA-256 by the CA.
// The credential's chain is the certificate alone. A subject the CA's
// signing policy does not allow is refused, as the trust directory would
// refuse the certificate.
func (ca *CA) Issue(kind CertKind, subject string, opt IssueOptions) (*Credential, error) {
	name, err := ParseDN(subject)
	if err != nil {
		return nil, err
	}
	if ca.allowed != nil {
		if err := ca.allowed.Allows(CertDN(ca.Cert), subject); err != nil {
			return nil, fmt.Errorf("%v: the trust directory would reject it; pick a DN the CA may sign", err)
		}
	}
	tmpl := &x509.Certificate{BasicConstraintsValid: true, SignatureAlgorithm: x509.SHA256WithRSA, RawSubject: name}
	switch kind {
	case HostCert:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		for _, h := range opt.Hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	case UserCert:
		if len(opt.Hosts) > 0 {
			return nil, errors.New("gsi: a user certificate takes no Hosts")
		}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return nil, fmt.Errorf("gsi: unknown certificate kind %d", kind)
	}
	if tmpl.NotBefore, tmpl.NotAfter, err = opt.validity(time.Now(), ca.Cert.NotAfter); err != nil {
		return nil, err
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	key, err := opt.newKey()
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = randomSerial(); err != nil {
		return nil, err
	}
	cert, err := createCertificate(tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	return &Credential{Chain: []*x509.Certificate{cert}, Key: key}, nil
}

// WriteTrustDir writes the CA's entries of a trust directory in the
// layout LoadTrustDir and GCT read, creating dir if needed: <hash>.0, its
// certificate, and <hash>.signing_policy, its signing policy (when it has
// one), both mode 0644. Neither file may exist yet.
func (ca *CA) WriteTrustDir(dir string) error {
	hash, err := SubjectHash(ca.Cert.RawSubject)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	if err := writeNew(filepath.Join(dir, hash+".0"), EncodeCertsPEM(ca.Cert), 0o644); err != nil {
		return err
	}
	if ca.policy == nil {
		return nil
	}
	return writeNew(filepath.Join(dir, hash+".signing_policy"), ca.policy, 0o644)
}

// WriteCRL writes (or replaces) the CA's CRL in trust directory dir as
// <hash>.r0, mode 0644: revoked are the certificates it revokes (none
// makes the empty CRL GCT's layout has), and it is valid for the CA's
// whole validity.
func (ca *CA) WriteCRL(dir string, revoked ...*x509.Certificate) error {
	hash, err := SubjectHash(ca.Cert.RawSubject)
	if err != nil {
		return err
	}
	list := &x509.RevocationList{
		Number:             big.NewInt(1),
		ThisUpdate:         ca.Cert.NotBefore,
		NextUpdate:         ca.Cert.NotAfter,
		SignatureAlgorithm: x509.SHA256WithRSA,
	}
	for _, c := range revoked {
		list.RevokedCertificateEntries = append(list.RevokedCertificateEntries,
			x509.RevocationListEntry{SerialNumber: c.SerialNumber, RevocationTime: time.Now()})
	}
	der, err := x509.CreateRevocationList(rand.Reader, list, ca.Cert, ca.Key)
	if err != nil {
		return fmt.Errorf("gsi: signing the CRL: %w", err)
	}
	return WriteFileAtomic(filepath.Join(dir, hash+".r0"), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644)
}

// WriteCredential writes c's key to keyPath (mode 0600) and its chain to
// certPath (mode 0644), as grid-cert-request lays out usercert.pem and
// userkey.pem; neither file may exist yet. Should the certificate fail to
// be written, the key file is removed again.
func WriteCredential(certPath, keyPath string, c *Credential) error {
	if len(c.Chain) == 0 || c.Key == nil {
		return errors.New("gsi: credential is incomplete")
	}
	key, err := EncodeKeyPEM(c.Key)
	if err != nil {
		return err
	}
	if err := writeNew(keyPath, key, 0o600); err != nil {
		return err
	}
	if err := writeNew(certPath, EncodeCertsPEM(c.Chain...), 0o644); err != nil {
		os.Remove(keyPath)
		return err
	}
	return nil
}

// writeNew writes a file that must not exist yet, with exactly mode
// whatever the umask.
func writeNew(name string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; remove it first", name)
	}
	if err != nil {
		return fmt.Errorf("gsi: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // the umask may have narrowed it
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("gsi: %w", err)
	}
	return nil
}

// randomSerial returns a random serial number of up to 127 bits, never 0.
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("gsi: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// createCertificate signs tmpl for pub with parent's key and parses the
// result.
func createCertificate(tmpl, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		return nil, fmt.Errorf("gsi: signing a certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("gsi: %w", err)
	}
	return cert, nil
}
