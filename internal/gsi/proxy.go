package gsi

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"
)

// Proxy certificate object identifiers.
var (
	// OIDProxyCertInfo is the RFC 3820 ProxyCertInfo extension.
	OIDProxyCertInfo = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 14}
	// OIDProxyCertInfoDraft is the ProxyCertInfo extension of the GSI-3
	// draft ("pre-RFC" proxies of GT3/GT4), recognised when validating.
	OIDProxyCertInfoDraft = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3536, 1, 222}
	// OIDPolicyInheritAll is id-ppl-inheritAll: an impersonation proxy.
	OIDPolicyInheritAll = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 21, 1}
	// OIDPolicyIndependent is id-ppl-independent: a proxy with no rights
	// of its issuer, whose identity is its own subject.
	OIDPolicyIndependent = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 21, 2}
	// OIDPolicyLimited is the Globus limited-proxy policy language: the
	// holder may not start jobs, only e.g. move data.
	OIDPolicyLimited = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3536, 1, 1, 1, 9}
)

// ProxyType is the kind of a proxy certificate, from its policy language.
type ProxyType int

// Proxy types.
const (
	ProxyImpersonation ProxyType = iota + 1 // id-ppl-inheritAll
	ProxyLimited                            // Globus limited proxy
	ProxyIndependent                        // id-ppl-independent
	ProxyRestricted                         // any other policy language
)

func (t ProxyType) String() string {
	switch t {
	case ProxyImpersonation:
		return "impersonation"
	case ProxyLimited:
		return "limited"
	case ProxyIndependent:
		return "independent"
	case ProxyRestricted:
		return "restricted"
	}
	return "not a proxy"
}

// ProxyInfo is what the ProxyCertInfo extension of a certificate says.
type ProxyInfo struct {
	Type ProxyType
	// Draft is true for the GSI-3 draft extension (OID …3536.1.222).
	Draft bool
	// PathLen is pcPathLenConstraint: how many proxies may follow this
	// one; -1 when unlimited.
	PathLen int
	// Language is the policy language OID and Policy the optional policy.
	Language asn1.ObjectIdentifier
	Policy   []byte
}

// ProxyInfoOf returns the proxy information of c, or nil (and no error)
// when c has no ProxyCertInfo extension. A malformed or duplicated
// extension is an error.
func ProxyInfoOf(c *x509.Certificate) (*ProxyInfo, error) {
	var info *ProxyInfo
	for _, ext := range c.Extensions {
		draft := ext.Id.Equal(OIDProxyCertInfoDraft)
		if !draft && !ext.Id.Equal(OIDProxyCertInfo) {
			continue
		}
		if info != nil {
			return nil, errors.New("gsi: more than one ProxyCertInfo extension")
		}
		var err error
		if info, err = parseProxyCertInfo(ext.Value, draft); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// parseProxyCertInfo decodes
//
//	RFC 3820:  ProxyCertInfo ::= SEQUENCE { pCPathLenConstraint INTEGER OPTIONAL, proxyPolicy ProxyPolicy }
//	GSI-3:     ProxyCertInfo ::= SEQUENCE { proxyPolicy ProxyPolicy, pCPathLenConstraint [1] EXPLICIT INTEGER OPTIONAL }
//	           ProxyPolicy   ::= SEQUENCE { policyLanguage OBJECT IDENTIFIER, policy OCTET STRING OPTIONAL }
func parseProxyCertInfo(der []byte, draft bool) (*ProxyInfo, error) {
	elems, err := proxyCertInfoElements(der)
	if err != nil {
		return nil, err
	}
	info := &ProxyInfo{Draft: draft, PathLen: -1}
	var policy *asn1.RawValue
	for i, e := range elems {
		switch {
		case !draft && e.Class == asn1.ClassUniversal && e.Tag == asn1.TagInteger && i == 0 && len(elems) == 2:
			if info.PathLen, err = parseProxyPathLen(e); err != nil {
				return nil, err
			}
		case e.Class == asn1.ClassUniversal && e.Tag == asn1.TagSequence && e.IsCompound && policy == nil:
			policy = &elems[i]
		case draft && e.Class == asn1.ClassContextSpecific && e.Tag == 1 && e.IsCompound && policy != nil && i == len(elems)-1:
			var inner asn1.RawValue
			if r, err := asn1.Unmarshal(e.Bytes, &inner); err != nil || len(r) != 0 {
				return nil, badProxyCertInfo("bad [1] path length")
			}
			if info.PathLen, err = parseProxyPathLen(inner); err != nil {
				return nil, err
			}
		default:
			return nil, badProxyCertInfo("unexpected element")
		}
	}
	if policy == nil {
		return nil, badProxyCertInfo("no proxyPolicy")
	}
	var pp struct {
		Language asn1.ObjectIdentifier
		Policy   []byte `asn1:"optional"`
	}
	if r, err := asn1.Unmarshal(policy.FullBytes, &pp); err != nil || len(r) != 0 {
		return nil, badProxyCertInfo("bad proxyPolicy")
	}
	info.Language, info.Policy = pp.Language, pp.Policy
	info.Type = proxyTypeOf(pp.Language)
	return info, nil
}

// badProxyCertInfo is the error of a malformed ProxyCertInfo extension.
func badProxyCertInfo(why string) error {
	return fmt.Errorf("gsi: bad ProxyCertInfo extension: %s", why)
}

// proxyCertInfoElements decodes der, which must be exactly one SEQUENCE,
// into its elements (whatever they are).
func proxyCertInfoElements(der []byte) ([]asn1.RawValue, error) {
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil || len(rest) != 0 || seq.Tag != asn1.TagSequence || seq.Class != asn1.ClassUniversal || !seq.IsCompound {
		return nil, badProxyCertInfo("not a SEQUENCE")
	}
	var elems []asn1.RawValue
	for b := seq.Bytes; len(b) > 0; {
		var e asn1.RawValue
		if b, err = asn1.Unmarshal(b, &e); err != nil {
			return nil, badProxyCertInfo(err.Error())
		}
		elems = append(elems, e)
	}
	return elems, nil
}

// parseProxyPathLen decodes pcPathLenConstraint: a non-negative INTEGER,
// of which anything above 2^20 counts as 2^20.
func parseProxyPathLen(v asn1.RawValue) (int, error) {
	var n *big.Int
	if _, err := asn1.Unmarshal(v.FullBytes, &n); err != nil {
		return 0, badProxyCertInfo("path length is not an INTEGER")
	}
	if n.Sign() < 0 {
		return 0, badProxyCertInfo("negative path length")
	}
	if !n.IsInt64() || n.Int64() > 1<<20 {
		return 1 << 20, nil
	}
	return int(n.Int64()), nil
}

// proxyTypeOf is the type of a proxy whose policy language is lang.
func proxyTypeOf(lang asn1.ObjectIdentifier) ProxyType {
	switch {
	case lang.Equal(OIDPolicyInheritAll):
		return ProxyImpersonation
	case lang.Equal(OIDPolicyLimited):
		return ProxyLimited
	case lang.Equal(OIDPolicyIndependent):
		return ProxyIndependent
	}
	return ProxyRestricted
}

// marshalProxyCertInfo encodes an RFC 3820 ProxyCertInfo value.
func marshalProxyCertInfo(lang asn1.ObjectIdentifier, pathLen int) ([]byte, error) {
	type proxyPolicy struct{ Language asn1.ObjectIdentifier }
	if pathLen >= 0 {
		return asn1.Marshal(struct {
			PathLen int
			Policy  proxyPolicy
		}{pathLen, proxyPolicy{lang}})
	}
	return asn1.Marshal(struct{ Policy proxyPolicy }{proxyPolicy{lang}})
}

// ProxyOptions configures NewProxy.
type ProxyOptions struct {
	// Lifetime is how long the proxy is valid; 0 means 12 hours. It is
	// clipped to the issuer's notAfter.
	Lifetime time.Duration
	// Limited makes a Globus limited proxy. A proxy made from a limited
	// proxy is limited anyway.
	Limited bool
	// PathLen is the pcPathLenConstraint to set: how many proxies may
	// follow this one. As x509.Certificate's MaxPathLen, -1 and 0 mean no
	// constraint unless PathLenZero is set (so that the zero value makes
	// an ordinary, delegatable proxy).
	PathLen int
	// PathLenZero makes a PathLen of 0 mean "no proxy may follow".
	PathLenZero bool
	// Bits is the size of the new RSA key; 0 means the issuer's key size,
	// and anything below 2048 is raised to 2048.
	Bits int
	// Start is when the lifetime starts; zero means now. (A start in the
	// past makes a proxy that has already expired, for tests.) The
	// notBefore is set 5 minutes earlier for clock skew.
	Start time.Time
}

// DefaultProxyLifetime is the lifetime of a proxy when none is asked for,
// as grid-proxy-init's.
const DefaultProxyLifetime = 12 * time.Hour

// clockSkew is how far back a new proxy's notBefore is set, as GCT does,
// to tolerate clocks that differ a little.
const clockSkew = 5 * time.Minute

// NewProxy makes a proxy certificate from issuer, as grid-proxy-init does:
// a new RSA key, subject = issuer subject + CN=<serial> where the serial is
// derived from the new public key, a critical RFC 3820 ProxyCertInfo
// (impersonation, or limited), the issuer's key usage without
// nonRepudiation and keyCertSign, and its extended key usage. The returned
// credential's chain is the proxy followed by the issuer's chain.
func NewProxy(issuer *Credential, opt ProxyOptions) (*Credential, error) {
	if issuer == nil || len(issuer.Chain) == 0 || issuer.Key == nil {
		return nil, errors.New("gsi: NewProxy: issuer credential is incomplete")
	}
	bits := opt.Bits
	if bits == 0 {
		if pub, ok := issuer.Leaf().PublicKey.(*rsa.PublicKey); ok {
			bits = pub.N.BitLen()
		}
	}
	bits = max(bits, minRSABits)
	if bits > 16384 {
		return nil, fmt.Errorf("gsi: NewProxy: %d-bit keys are too large", bits)
	}
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, fmt.Errorf("gsi: NewProxy: %w", err)
	}
	lifetime := opt.Lifetime
	if lifetime == 0 {
		lifetime = DefaultProxyLifetime
	}
	if lifetime < 0 {
		return nil, errors.New("gsi: NewProxy: negative lifetime")
	}
	pathLen := opt.PathLen
	if pathLen == 0 && !opt.PathLenZero || pathLen < 0 {
		pathLen = -1
	}
	start := opt.Start
	if start.IsZero() {
		start = time.Now()
	}
	der, err := signProxy(issuer, &key.PublicKey, opt.Limited, pathLen, lifetime, start)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("gsi: NewProxy: %w", err)
	}
	return &Credential{Chain: append([]*x509.Certificate{cert}, issuer.Chain...), Key: key}, nil
}

// proxySerial derives a proxy's serial number (and CN) from its public
// key as GCT does: the first four bytes of the SHA-1 of the
// SubjectPublicKeyInfo, little-endian, with the top bit cleared.
func proxySerial(pub crypto.PublicKey) (*big.Int, error) {
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	md := sha1.Sum(spki)
	v := int64(md[0]) | int64(md[1])<<8 | int64(md[2])<<16 | int64(md[3]>>1)<<24
	if v == 0 {
		v = 1 // a serial must be positive
	}
	return big.NewInt(v), nil
}

// appendCN returns the DER name der with one more RDN, CN=cn, as a
// PrintableString (or UTF8String if it is not printable).
func appendCN(der []byte, cn string) ([]byte, error) {
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil || len(rest) != 0 || seq.Tag != asn1.TagSequence {
		return nil, errors.New("gsi: bad issuer name")
	}
	val, err := asn1.Marshal(cn)
	if err != nil {
		return nil, err
	}
	atv, err := asn1.Marshal(attribute{Type: oidCommonName, Value: asn1.RawValue{FullBytes: val}})
	if err != nil {
		return nil, err
	}
	set, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: atv})
	if err != nil {
		return nil, err
	}
	body := append(append([]byte(nil), seq.Bytes...), set...)
	return asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: body})
}

// signatureAlgorithm picks the digest for a certificate signed by issuer:
// SHA-256, or the issuer certificate's own digest if that is stronger.
func signatureAlgorithm(issuer *Credential) (x509.SignatureAlgorithm, error) {
	digest := 256
	switch issuer.Leaf().SignatureAlgorithm {
	case x509.SHA384WithRSA, x509.SHA384WithRSAPSS, x509.ECDSAWithSHA384:
		digest = 384
	case x509.SHA512WithRSA, x509.SHA512WithRSAPSS, x509.ECDSAWithSHA512:
		digest = 512
	}
	switch issuer.Key.Public().(type) {
	case *rsa.PublicKey:
		return map[int]x509.SignatureAlgorithm{256: x509.SHA256WithRSA, 384: x509.SHA384WithRSA, 512: x509.SHA512WithRSA}[digest], nil
	case *ecdsa.PublicKey:
		return map[int]x509.SignatureAlgorithm{256: x509.ECDSAWithSHA256, 384: x509.ECDSAWithSHA384, 512: x509.ECDSAWithSHA512}[digest], nil
	case ed25519.PublicKey:
		return x509.PureEd25519, nil
	}
	return 0, fmt.Errorf("gsi: unsupported issuer key type %T", issuer.Key.Public())
}

// signProxy issues a proxy certificate for pub signed by issuer.
func signProxy(issuer *Credential, pub crypto.PublicKey, limited bool, pathLen int, lifetime time.Duration, now time.Time) ([]byte, error) {
	leaf := issuer.Leaf()
	if leaf == nil || issuer.Key == nil {
		return nil, errors.New("gsi: issuer credential is incomplete")
	}
	if err := checkKey(pub); err != nil {
		return nil, fmt.Errorf("gsi: proxy key: %s", err.Reason)
	}
	if leaf.BasicConstraintsValid && leaf.IsCA {
		return nil, errors.New("gsi: a CA certificate cannot issue proxies")
	}
	if leaf.KeyUsage != 0 && leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return nil, fmt.Errorf("gsi: %s cannot issue proxies: its key usage lacks digitalSignature", CertDN(leaf))
	}
	if !now.Before(leaf.NotAfter) {
		return nil, fmt.Errorf("gsi: %s expired at %s", CertDN(leaf), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	// Proxies below the issuer: a limited one makes ours limited, and a
	// path length constraint may forbid another proxy altogether.
	for depth, c := range issuer.Chain {
		info, err := ProxyInfoOf(c)
		if err != nil {
			return nil, err
		}
		if info == nil {
			break
		}
		if info.Type == ProxyLimited {
			limited = true
		}
		if info.PathLen >= 0 && depth+1 > info.PathLen {
			return nil, fmt.Errorf("gsi: the path length constraint of %s forbids another proxy", CertDN(c))
		}
	}
	serial, err := proxySerial(pub)
	if err != nil {
		return nil, fmt.Errorf("gsi: %w", err)
	}
	subject, err := appendCN(leaf.RawSubject, strconv.FormatInt(serial.Int64(), 10))
	if err != nil {
		return nil, err
	}
	lang := OIDPolicyInheritAll
	if limited {
		lang = OIDPolicyLimited
	}
	pci, err := marshalProxyCertInfo(lang, pathLen)
	if err != nil {
		return nil, err
	}
	sigAlg, err := signatureAlgorithm(issuer)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(lifetime)
	if lifetime == 0 || notAfter.After(leaf.NotAfter) {
		notAfter = leaf.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:       serial,
		RawSubject:         subject,
		NotBefore:          now.Add(-clockSkew),
		NotAfter:           notAfter,
		KeyUsage:           leaf.KeyUsage &^ (x509.KeyUsageContentCommitment | x509.KeyUsageCertSign),
		ExtKeyUsage:        leaf.ExtKeyUsage,
		UnknownExtKeyUsage: leaf.UnknownExtKeyUsage,
		SignatureAlgorithm: sigAlg,
		ExtraExtensions:    []pkix.Extension{{Id: OIDProxyCertInfo, Critical: true, Value: pci}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, leaf, pub, issuer.Key)
	if err != nil {
		return nil, fmt.Errorf("gsi: signing proxy: %w", err)
	}
	return der, nil
}

// nullSubject is the placeholder subject GCT puts in delegation requests.
const nullSubject = "NULL SUBJECT NAME ENTRY"

// NewProxyRequest makes a delegation request, the acceptor's side of GSI
// delegation: a new RSA key of bits bits (0 or less than 2048: 2048) and a
// PKCS #10 request for it with subject CN=NULL SUBJECT NAME ENTRY (the
// signer ignores it), signed with SHA-256, requesting a critical
// ProxyCertInfo (inheritAll, no path length).
func NewProxyRequest(bits int) (csrDER []byte, key crypto.Signer, err error) {
	bits = max(bits, minRSABits)
	if bits > 16384 {
		return nil, nil, fmt.Errorf("gsi: %d-bit keys are too large", bits)
	}
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, nil, fmt.Errorf("gsi: %w", err)
	}
	subject, err := appendCN([]byte{0x30, 0}, nullSubject)
	if err != nil {
		return nil, nil, err
	}
	pci, err := marshalProxyCertInfo(OIDPolicyInheritAll, -1)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.CertificateRequest{
		RawSubject:         subject,
		SignatureAlgorithm: x509.SHA256WithRSA,
		ExtraExtensions:    []pkix.Extension{{Id: OIDProxyCertInfo, Critical: true, Value: pci}},
	}
	csrDER, err = x509.CreateCertificateRequest(rand.Reader, tmpl, k)
	if err != nil {
		return nil, nil, fmt.Errorf("gsi: %w", err)
	}
	return csrDER, k, nil
}

// SignProxyRequest is the initiator's side of delegation: it checks the
// request's signature and key and returns the DER of a proxy certificate
// for the requested key, signed by issuer: limited or impersonation, no
// path length, valid from five minutes ago for lifetime (0: until the
// issuer's notAfter). The request's subject and extensions are ignored.
func SignProxyRequest(issuer *Credential, csrDER []byte, limited bool, lifetime time.Duration) (certDER []byte, err error) {
	if issuer == nil || len(issuer.Chain) == 0 {
		return nil, errors.New("gsi: SignProxyRequest: no issuer credential")
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return nil, fmt.Errorf("gsi: bad delegation request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("gsi: delegation request signature: %w", err)
	}
	if lifetime < 0 {
		return nil, errors.New("gsi: negative proxy lifetime")
	}
	return signProxy(issuer, csr.PublicKey, limited, -1, lifetime, time.Now())
}

// AssembleDelegated builds the delegated credential on the acceptor's
// side: the proxy certificate the peer signed (certDER), the key from
// NewProxyRequest, and the peer's chain as verified during the handshake
// (leaf first). The certificate must be a proxy for key, signed by the
// peer's leaf.
func AssembleDelegated(certDER []byte, key crypto.Signer, peerChain []*x509.Certificate) (*Credential, error) {
	if key == nil || len(peerChain) == 0 {
		return nil, errors.New("gsi: AssembleDelegated: missing key or peer chain")
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, fmt.Errorf("gsi: delegated certificate: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("gsi: delegated certificate is not for the requested key")
	}
	info, err := ProxyInfoOf(cert)
	if err != nil {
		return nil, err
	}
	if info == nil {
		return nil, errors.New("gsi: delegated certificate is not a proxy certificate")
	}
	peer := peerChain[0]
	if !nameEqual(cert.RawIssuer, peer.RawSubject) {
		return nil, fmt.Errorf("gsi: delegated certificate issuer %s is not the peer %s", CertIssuerDN(cert), CertDN(peer))
	}
	if err := peer.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil {
		return nil, fmt.Errorf("gsi: delegated certificate signature: %w", err)
	}
	return &Credential{Chain: append([]*x509.Certificate{cert}, peerChain...), Key: key}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}
