package dcsec

// Data channel credentials: GCT's DCSC command (gsi.md §6, protocol.md).
// A client sends "DCSC P <base64 of a PEM bundle>" (certificate, key,
// rest of the chain) and from then on both ends of every data connection
// of that session present that credential instead of their own. The peer
// is accepted when it presents the very same certificate (and, TLS having
// checked it, proves it holds its key): the DCSC certificate is the data
// channel's only trust anchor, so two servers whose CAs do not trust each
// other can still run an authenticated third-party transfer.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

// MaxDataCredential bounds the PEM bundle of a DCSC credential given to
// ParseDataCredential. Over the control channel the command line's own
// limit is lower: a GSI session's ENC-wrapped line of at most 16 KiB
// carries about 9 KB of PEM (a leaf, two 4096-bit issuers and the key).
const MaxDataCredential = 64 << 10

// AutoDataCredentialSubject is the subject of the credential that
// NewAutoDataCredential makes: the one globus-url-copy -data-cred auto
// makes, so that logs read the same.
const AutoDataCredentialSubject = "/C=US/CN=Globus DCSC Cert"

// AutoDataCredentialLifetime is how long an automatic data channel
// credential is valid. globus-url-copy makes its own valid for 100 days;
// one made per run needs to outlive that run only.
const AutoDataCredentialLifetime = 7 * 24 * time.Hour

// ParseDataCredential parses the PEM bundle of DCSC P: certificates (leaf
// first) and the leaf's private key, in any order. It refuses a bundle
// without a certificate or key, a key that does not belong to the leaf, a
// weak key, a leaf signed with MD5 or SHA-1, and any certificate that is
// not valid at now. Certificates
// repeated in the bundle (GCT's carries the leaf twice) are kept once.
func ParseDataCredential(data []byte, now time.Time) (*gsi.Credential, error) {
	if len(data) > MaxDataCredential {
		return nil, fmt.Errorf("dcsec: data channel credential of %d bytes, more than %d", len(data), MaxDataCredential)
	}
	cred, err := gsi.ParseCredentialPEM(data)
	if err != nil {
		return nil, fmt.Errorf("dcsec: data channel credential: %w", err)
	}
	var chain []*x509.Certificate
	for _, c := range cred.Chain {
		dup := false
		for _, k := range chain {
			dup = dup || k.Equal(c)
		}
		if !dup {
			chain = append(chain, c)
		}
	}
	for _, c := range chain {
		if now.Before(c.NotBefore) {
			return nil, fmt.Errorf("dcsec: data channel credential: certificate %s is not valid before %s", gsi.CertDN(c), c.NotBefore.UTC().Format(time.RFC3339))
		}
		if now.After(c.NotAfter) {
			return nil, fmt.Errorf("dcsec: data channel credential: certificate %s expired at %s", gsi.CertDN(c), c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	if err := strongKey(cred.Key.Public()); err != nil {
		return nil, fmt.Errorf("dcsec: data channel credential: %w", err)
	}
	switch alg := chain[0].SignatureAlgorithm; alg {
	case x509.MD2WithRSA, x509.MD5WithRSA, x509.SHA1WithRSA, x509.DSAWithSHA1, x509.ECDSAWithSHA1, x509.UnknownSignatureAlgorithm:
		// TLS 1.2 and 1.3 peers (crypto/tls, and OpenSSL against a
		// peer that did not list the algorithm) cannot use such a
		// certificate: every data connection would fail. GCT's
		// globus-url-copy -data-cred auto makes MD5 ones.
		return nil, fmt.Errorf("dcsec: data channel credential: certificate %s is signed with %v, which TLS 1.2/1.3 data channels cannot use; use one signed with SHA-256 (ferry cp -data-cred auto makes one)", gsi.CertDN(chain[0]), alg)
	}
	return &gsi.Credential{Chain: chain, Key: cred.Key}, nil
}

// strongKey refuses keys below 112-bit security, as OpenSSL's default
// security level does.
func strongKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits is too weak (want 2048 or more)", k.N.BitLen())
		}
	case *ecdsa.PublicKey:
		if k.Curve.Params().BitSize < 256 {
			return fmt.Errorf("EC key of %d bits is too weak", k.Curve.Params().BitSize)
		}
	case ed25519.PublicKey:
	default:
		return fmt.Errorf("unsupported key type %T", pub)
	}
	return nil
}

// EncodeDataCredential returns the PEM bundle DCSC P carries: the leaf,
// its key (PKCS #1 for RSA, which every GCT release reads), then the rest
// of the chain. A GCT peer trusts the certificates after the key (not the
// leaf) as anchors of the data channel, so a leaf that is not a proxy (a
// self-signed certificate, an end-entity certificate) comes again after
// the key, as globus-url-copy -data-cred auto sends it; a proxy's own
// end-entity certificate is in the rest of its chain.
func EncodeDataCredential(cred *gsi.Credential) ([]byte, error) {
	if cred == nil || len(cred.Chain) == 0 || cred.Key == nil {
		return nil, errors.New("dcsec: empty data channel credential")
	}
	var key []byte
	if k, ok := cred.Key.(*rsa.PrivateKey); ok {
		key = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	} else {
		var err error
		if key, err = gsi.EncodeKeyPEM(cred.Key); err != nil {
			return nil, err
		}
	}
	out := gsi.EncodeCertsPEM(cred.Chain[0])
	out = append(out, key...)
	if info, err := gsi.ProxyInfoOf(cred.Chain[0]); err == nil && info == nil {
		out = append(out, gsi.EncodeCertsPEM(cred.Chain[0])...)
	}
	return append(out, gsi.EncodeCertsPEM(cred.Chain[1:]...)...), nil
}

// NewAutoDataCredential makes a throw-away self-signed data channel
// credential (globus-url-copy -data-cred auto): subject
// AutoDataCredentialSubject, no extensions, an RSA 2048 key (GCT servers read RSA keys;
// 2048 bits pass OpenSSL's default security level), signed with SHA-256
// (GCT signs its own with MD5, which only its level-0 data channels
// accept), valid from a minute before now for
// AutoDataCredentialLifetime.
func NewAutoDataCredential(now time.Time) (*gsi.Credential, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("dcsec: data channel key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 63))
	if err != nil {
		return nil, err
	}
	name := pkix.Name{Country: []string{"US"}, CommonName: "Globus DCSC Cert"}
	rdn, err := asn1.Marshal(name.ToRDNSequence())
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:       serial,
		RawSubject:         rdn,
		RawIssuer:          rdn,
		NotBefore:          now.Add(-time.Minute),
		NotAfter:           now.Add(AutoDataCredentialLifetime),
		SignatureAlgorithm: x509.SHA256WithRSA,
		// No extensions, as GCT's: a key usage without keyCertSign would
		// keep OpenSSL from taking the certificate as its own issuer
		// (the peer's anchor), "self-signed certificate".
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("dcsec: data channel certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &gsi.Credential{Chain: []*x509.Certificate{cert}, Key: key}, nil
}

// DataCredentialAuthorization returns a VerifyPeer function for a data
// channel under a DCSC credential: the peer must present cred's own leaf
// certificate, valid now (TLS has made it prove it holds the key). With
// subject set (DCAU S) cred's identity must also be that subject; DCAU A
// needs nothing more, since the peer's identity is then cred's own.
func DataCredentialAuthorization(cred *gsi.Credential, subject string) func([]*x509.Certificate) error {
	leaf := cred.Leaf()
	return func(chain []*x509.Certificate) error {
		if len(chain) == 0 {
			return errors.New("the peer presented no certificate")
		}
		if leaf == nil || !chain[0].Equal(leaf) {
			return fmt.Errorf("peer certificate %q is not the session's data channel credential (DCSC)", gsi.CertDN(chain[0]))
		}
		now := time.Now()
		if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
			return fmt.Errorf("the data channel credential %q is not valid now", gsi.CertDN(leaf))
		}
		if subject != "" && !SameDN(cred.Identity(), subject) {
			return fmt.Errorf("the data channel credential's identity %q is not the expected subject %q", cred.Identity(), subject)
		}
		return nil
	}
}
