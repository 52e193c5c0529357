package gsi

import (
	"bytes"
	"crypto/dsa" //nolint:staticcheck // only to name and refuse DSA keys
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Sentinel errors a *VerifyError unwraps to, for errors.Is.
var (
	ErrBadChain      = errors.New("malformed certificate chain")
	ErrExpired       = errors.New("certificate expired")
	ErrNotYetValid   = errors.New("certificate not yet valid")
	ErrUntrusted     = errors.New("certificate not issued by a trusted CA")
	ErrSigningPolicy = errors.New("signing policy violation")
	ErrRevoked       = errors.New("certificate revoked")
	ErrCRL           = errors.New("unusable CRL")
	ErrBadSignature  = errors.New("bad signature")
	ErrPathLength    = errors.New("path length exceeded")
	ErrWeakCrypto    = errors.New("weak cryptography")
	ErrBadProxy      = errors.New("invalid proxy certificate")
	ErrHostMismatch  = errors.New("host name mismatch")
)

// VerifyError is why Verify refused a chain.
type VerifyError struct {
	// Reason says what is wrong, in words fit for a log line or a reply.
	Reason string
	// Cert is the DN of the certificate concerned ("" if none).
	Cert string
	// Err is one of the sentinel errors above.
	Err error
}

func (e *VerifyError) Error() string {
	if e.Cert == "" {
		return "gsi: " + e.Reason
	}
	return "gsi: " + e.Cert + ": " + e.Reason
}

// Unwrap returns the sentinel error.
func (e *VerifyError) Unwrap() error { return e.Err }

func verr(sentinel error, c *x509.Certificate, format string, args ...any) *VerifyError {
	e := &VerifyError{Reason: fmt.Sprintf(format, args...), Err: sentinel}
	if c != nil {
		e.Cert = CertDN(c)
	}
	return e
}

// Identity is the result of a successful Verify.
type Identity struct {
	// DN is the identity: the subject of the end-entity certificate (or
	// of the independent proxy that starts a new identity), one-line form.
	DN string
	// Chain is the verified chain, leaf first, up to and including the
	// trusted root.
	Chain []*x509.Certificate
	// Proxy is true when the leaf is a proxy certificate.
	Proxy bool
	// Limited is true when any proxy in the chain is a limited proxy.
	Limited bool
	// NotAfter is when the first certificate of the chain expires.
	NotAfter time.Time
}

// TrustStore is a trust directory in GCT's layout. It is immutable after
// LoadTrustDir and safe for concurrent use.
type TrustStore struct {
	dir      string
	byHash   map[string][]*x509.Certificate
	policies map[string]*SigningPolicy
	policyEr map[string]error
	crls     map[string][]*crlEntry
	crlErr   map[string]error
	roots    []*x509.Certificate
	problems []string
}

type crlEntry struct {
	crl     *x509.RevocationList
	file    string
	revoked map[string]bool // serial numbers, big.Int.String()
}

var (
	caFileRE  = regexp.MustCompile(`^([0-9a-f]{8})\.[0-9]+$`)
	crlFileRE = regexp.MustCompile(`^([0-9a-f]{8})\.r[0-9]+$`)
	spFileRE  = regexp.MustCompile(`^([0-9a-f]{8})\.signing_policy$`)
)

// LoadTrustDir reads a trust directory: CA certificates as <hash>.0 (and
// .1, … for CAs whose names hash alike), where hash is SubjectHash of the
// CA's subject; <hash>.signing_policy files (mandatory for any CA that
// signs a certificate); CRLs as <hash>.r0 (optional; enforced when
// present; a CRL must be issued and signed by a CA of its hash, else
// it is unusable). Other files (.namespaces, old-hash names, …) are ignored. A
// CA file that cannot be parsed, or whose name does not match its
// subject's hash, is skipped and reported by Problems. An unparsable
// policy or CRL makes every certificate of that CA fail verification.
func LoadTrustDir(dir string) (*TrustStore, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err // names the directory; the caller says what it is
	}
	ts := &TrustStore{
		dir:      dir,
		byHash:   map[string][]*x509.Certificate{},
		policies: map[string]*SigningPolicy{},
		policyEr: map[string]error{},
		crls:     map[string][]*crlEntry{},
		crlErr:   map[string]error{},
	}
	type pendingCRL struct {
		hash, path string
		entry      *crlEntry
	}
	var pending []pendingCRL
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case caFileRE.MatchString(name):
			ts.loadCA(path, caFileRE.FindStringSubmatch(name)[1])
		case spFileRE.MatchString(name):
			h := spFileRE.FindStringSubmatch(name)[1]
			data, err := os.ReadFile(path)
			if err == nil {
				var p *SigningPolicy
				if p, err = ParseSigningPolicy(data); err == nil {
					ts.policies[h] = p
					continue
				}
			}
			ts.policyEr[h] = fmt.Errorf("%s: %v", name, err)
			ts.problems = append(ts.problems, fmt.Sprintf("%s: %v", path, err))
		case crlFileRE.MatchString(name):
			h := crlFileRE.FindStringSubmatch(name)[1]
			c, err := loadCRL(path)
			if err != nil {
				ts.crlErr[h] = fmt.Errorf("%s: %v", name, err)
				ts.problems = append(ts.problems, fmt.Sprintf("%s: %v", path, err))
				continue
			}
			pending = append(pending, pendingCRL{h, path, c})
		}
	}
	// A CRL counts only once it is known to be its CA's: another CA's
	// list (or a forged one) at <hash>.r0 would otherwise stand for the
	// CA's own and un-revoke its certificates. Such a file makes the CA's
	// CRL unusable, as a CRL that does not parse does.
	for _, p := range pending {
		if err := ts.crlIssuer(p.hash, p.entry); err != nil {
			ts.crlErr[p.hash] = fmt.Errorf("%s: %v", filepath.Base(p.path), err)
			ts.problems = append(ts.problems, fmt.Sprintf("%s: %v", p.path, err))
			continue
		}
		ts.crls[p.hash] = append(ts.crls[p.hash], p.entry)
	}
	if len(ts.roots) == 0 {
		return nil, fmt.Errorf("gsi: trust directory %s holds no CA certificate (<hash>.0)", dir)
	}
	return ts, nil
}

func (ts *TrustStore) loadCA(path, hash string) {
	data, err := os.ReadFile(path)
	if err != nil {
		ts.problems = append(ts.problems, err.Error())
		return
	}
	der := data
	if b, _ := pem.Decode(data); b != nil {
		der = b.Bytes
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		ts.problems = append(ts.problems, fmt.Sprintf("%s: %v", path, err))
		return
	}
	h, err := SubjectHash(c.RawSubject)
	if err != nil || h != hash {
		ts.problems = append(ts.problems, fmt.Sprintf("%s: subject %s hashes to %s, not %s", path, CertDN(c), h, hash))
		return
	}
	ts.byHash[hash] = append(ts.byHash[hash], c)
	ts.roots = append(ts.roots, c)
}

// crlIssuer checks that e was issued and signed by a CA of the store
// whose subject hashes to hash. A CRL at a hash no CA has is left alone:
// it covers no certificate.
func (ts *TrustStore) crlIssuer(hash string, e *crlEntry) error {
	cas := ts.byHash[hash]
	if len(cas) == 0 {
		return nil
	}
	var named *x509.Certificate
	var sigErr error
	for _, ca := range cas {
		if !nameEqual(e.crl.RawIssuer, ca.RawSubject) {
			continue
		}
		if sigErr = e.crl.CheckSignatureFrom(ca); sigErr == nil {
			return nil
		}
		named = ca
	}
	if named != nil {
		return fmt.Errorf("CRL names CA %s as its issuer but is not signed by it: %v", CertDN(named), sigErr)
	}
	issuer, ok := rawDN(e.crl.RawIssuer)
	if !ok {
		issuer = DN(e.crl.Issuer.ToRDNSequence())
	}
	return fmt.Errorf("CRL issued by %s, which is not a CA of hash %s", issuer, hash)
}

func loadCRL(path string) (*crlEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	der := data
	if b, _ := pem.Decode(data); b != nil {
		der = b.Bytes
	}
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		return nil, err
	}
	e := &crlEntry{crl: crl, file: filepath.Base(path), revoked: map[string]bool{}}
	for _, r := range crl.RevokedCertificateEntries {
		if r.SerialNumber != nil {
			e.revoked[r.SerialNumber.String()] = true
		}
	}
	return e, nil
}

// Dir returns the directory the store was loaded from.
func (ts *TrustStore) Dir() string { return ts.dir }

// Certificates returns the CA certificates of the store.
func (ts *TrustStore) Certificates() []*x509.Certificate { return slices.Clone(ts.roots) }

// Problems lists the files LoadTrustDir skipped or could not use, for
// logging.
func (ts *TrustStore) Problems() []string { return slices.Clone(ts.problems) }

// CertPool returns the CA certificates as an x509.CertPool (for TLS
// clients that want to offer CA names; verification must still use
// Verify).
func (ts *TrustStore) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range ts.roots {
		p.AddCert(c)
	}
	return p
}

// maxChain bounds the number of certificates Verify walks.
const maxChain = 32

const minRSABits = 2048

// checkKey refuses weak or unknown public keys.
func checkKey(pub any) *VerifyError {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < minRSABits {
			return &VerifyError{Reason: fmt.Sprintf("RSA key too weak: %d bits (minimum %d)", n, minRSABits), Err: ErrWeakCrypto}
		}
	case *ecdsa.PublicKey:
		if k.Curve == nil || k.Curve.Params().BitSize < 256 {
			return &VerifyError{Reason: "ECDSA key too weak", Err: ErrWeakCrypto}
		}
	case ed25519.PublicKey:
	case *dsa.PublicKey:
		return &VerifyError{Reason: "DSA keys are not accepted", Err: ErrWeakCrypto}
	default:
		return &VerifyError{Reason: fmt.Sprintf("unsupported public key type %T", pub), Err: ErrWeakCrypto}
	}
	return nil
}

// checkStatic applies the checks that need no other certificate: key
// strength, signature digest, critical extensions, validity.
func checkStatic(c *x509.Certificate, now time.Time, selfSigned bool) *VerifyError {
	if e := checkKey(c.PublicKey); e != nil {
		e.Cert = CertDN(c)
		return e
	}
	if !selfSigned {
		switch c.SignatureAlgorithm {
		case x509.MD2WithRSA, x509.MD5WithRSA:
			return verr(ErrWeakCrypto, c, "signature digest too weak: %v (MD5 is refused)", c.SignatureAlgorithm)
		case x509.SHA1WithRSA, x509.DSAWithSHA1, x509.ECDSAWithSHA1:
			return verr(ErrWeakCrypto, c, "signature digest too weak: %v (SHA-1 is refused)", c.SignatureAlgorithm)
		case x509.DSAWithSHA256:
			return verr(ErrWeakCrypto, c, "DSA signatures are not accepted")
		case x509.UnknownSignatureAlgorithm:
			return verr(ErrWeakCrypto, c, "unsupported signature algorithm")
		}
	}
	for _, oid := range c.UnhandledCriticalExtensions {
		if !oid.Equal(OIDProxyCertInfo) && !oid.Equal(OIDProxyCertInfoDraft) {
			return verr(ErrBadChain, c, "unsupported critical extension %s", oid)
		}
	}
	if now.Before(c.NotBefore) {
		return verr(ErrNotYetValid, c, "certificate not yet valid: valid from %s", c.NotBefore.UTC().Format(time.RFC3339))
	}
	if now.After(c.NotAfter) {
		return verr(ErrExpired, c, "certificate expired at %s", c.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

func isCA(c *x509.Certificate) bool { return c.BasicConstraintsValid && c.IsCA }

// selfSigned reports whether c names itself as issuer and its signature
// verifies with its own key.
func selfSigned(c *x509.Certificate) bool {
	return nameEqual(c.RawSubject, c.RawIssuer) &&
		c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}

// isProxyOf checks RFC 3820 §3.4: the proxy's subject is its issuer's
// subject with exactly one more RDN, a single CN.
func isProxyOf(proxy, issuer *x509.Certificate) error {
	pn, err := canonName(proxy.RawSubject)
	if err != nil {
		return err
	}
	in, err := canonName(issuer.RawSubject)
	if err != nil {
		return err
	}
	if len(pn) != len(in)+1 {
		return errors.New("subject is not the issuer's subject plus one CN")
	}
	for i := range in {
		if !bytes.Equal(pn[i], in[i]) {
			return errors.New("subject is not the issuer's subject plus one CN")
		}
	}
	names, _ := parseName(proxy.RawSubject)
	last := names[len(names)-1]
	if len(last) != 1 || !last[0].Type.Equal(oidCommonName) {
		return errors.New("the last RDN of the subject is not a single CN")
	}
	if !nameEqual(proxy.RawIssuer, issuer.RawSubject) {
		return errors.New("issuer name is not the signer's subject")
	}
	return nil
}

// legacyProxyCN reports whether c looks like a GT2 proxy: no
// ProxyCertInfo, and its last RDN is CN=proxy or CN=limited proxy.
func legacyProxyCN(c *x509.Certificate) bool {
	names, err := parseName(c.RawSubject)
	if err != nil || len(names) < 2 {
		return false
	}
	last := names[len(names)-1]
	if len(last) != 1 || !last[0].Type.Equal(oidCommonName) {
		return false
	}
	v := string(last[0].Value.Bytes)
	return v == "proxy" || v == "limited proxy"
}

// Verify validates a peer chain (leaf first, as TLS delivers it) at time
// now. The proxies at the front are checked by RFC 3820's rules (subject
// = issuer + one CN, issued by an end-entity certificate or proxy whose
// key usage allows digitalSignature, signatures, validity,
// pcPathLenConstraint, limited-ness propagating down); the end-entity
// certificate must lead through CA certificates (from the chain or the
// store) to a self-signed CA in the store, every CA-signed certificate
// being allowed by its CA's signing policy and not revoked by its CRL.
// RSA keys under 2048 bits and MD5/SHA-1 signatures are refused. Errors
// are *VerifyError.
//
// The steps run in this order, each refusing before the next begins:
// checkChainShape, verifyProxies, the end-entity check, pathToRoot and
// checkSigners.
func (ts *TrustStore) Verify(chain []*x509.Certificate, now time.Time) (*Identity, error) {
	if e := checkChainShape(chain); e != nil {
		return nil, e
	}
	px, e := verifyProxies(chain, now)
	if e != nil {
		return nil, e
	}
	eec := chain[px.n]
	if isCA(eec) {
		return nil, verr(ErrBadChain, eec, "end-entity certificate expected, got a CA certificate")
	}
	id := &Identity{NotAfter: chain[0].NotAfter, Proxy: px.n > 0, Limited: px.limited, DN: CertDN(eec)}
	if px.independent >= 0 {
		id.DN = CertDN(chain[px.independent])
	}
	// First the path to a trusted root (signatures, CA constraints), then
	// the signing policies and CRLs along it, so that an untrusted chain
	// is reported as such rather than by a policy it happens to break.
	toRoot, links, e := ts.pathToRoot(eec, chain[px.n+1:], now)
	if e != nil {
		return nil, e
	}
	if e := ts.checkSigners(links, now); e != nil {
		return nil, e
	}
	id.Chain = append(px.verified, toRoot...)
	for _, c := range id.Chain {
		if c.NotAfter.Before(id.NotAfter) {
			id.NotAfter = c.NotAfter
		}
	}
	return id, nil
}

// checkChainShape refuses a chain that is empty, longer than maxChain or
// holds a nil certificate, before any certificate is looked at.
func checkChainShape(chain []*x509.Certificate) *VerifyError {
	if len(chain) == 0 {
		return &VerifyError{Reason: "no certificate presented", Err: ErrBadChain}
	}
	if len(chain) > maxChain {
		return &VerifyError{Reason: fmt.Sprintf("chain of %d certificates is too long", len(chain)), Err: ErrBadChain}
	}
	for _, c := range chain {
		if c == nil {
			return &VerifyError{Reason: "nil certificate in chain", Err: ErrBadChain}
		}
	}
	return nil
}

// proxyFront is what verifyProxies found at the front of a chain.
type proxyFront struct {
	n           int                 // proxies before the end-entity certificate, chain[n]
	verified    []*x509.Certificate // the n proxies, leaf first
	limited     bool                // some proxy is a limited proxy
	independent int                 // the index of the first independent proxy; -1: none
}

// verifyProxies checks the proxies at the front of chain, up to the first
// certificate without ProxyCertInfo (the end-entity certificate, which
// must exist). A GT2 legacy proxy there is refused rather than taken for
// the end-entity certificate.
func verifyProxies(chain []*x509.Certificate, now time.Time) (proxyFront, *VerifyError) {
	px := proxyFront{verified: []*x509.Certificate{}, independent: -1}
	for i, c := range chain {
		info, err := ProxyInfoOf(c)
		if err != nil {
			return px, verr(ErrBadProxy, c, "%v", strings.TrimPrefix(err.Error(), "gsi: "))
		}
		if info == nil {
			if i+1 < len(chain) && legacyProxyCN(c) && !isCA(chain[i+1]) && isProxyOf(c, chain[i+1]) == nil {
				return px, verr(ErrBadProxy, c, "legacy (GT2) proxy certificates are not accepted; make an RFC 3820 proxy")
			}
			px.n = i
			return px, nil
		}
		if e := checkProxy(chain, i, info, now); e != nil {
			return px, e
		}
		switch info.Type {
		case ProxyLimited:
			px.limited = true
		case ProxyIndependent:
			if px.independent < 0 {
				px.independent = i
			}
		case ProxyImpersonation:
		default:
			return px, verr(ErrBadProxy, c, "unsupported proxy policy language %s", info.Language)
		}
		px.verified = append(px.verified, c)
	}
	// Not reached: checkProxy refuses a last certificate that is a proxy,
	// as it has no issuer in the chain.
	return px, &VerifyError{Reason: "no end-entity certificate in the chain", Err: ErrBadChain}
}

// checkProxy applies RFC 3820's rules to the proxy chain[i], described by
// info: its own validity, then its issuer chain[i+1] (present, no CA,
// allowed to sign), its subject and signature, and its pcPathLenConstraint.
func checkProxy(chain []*x509.Certificate, i int, info *ProxyInfo, now time.Time) *VerifyError {
	c := chain[i]
	if e := checkStatic(c, now, false); e != nil {
		return e
	}
	if i+1 == len(chain) {
		return verr(ErrBadChain, c, "proxy certificate without its issuer in the chain")
	}
	issuer := chain[i+1]
	if isCA(issuer) {
		return verr(ErrBadProxy, c, "proxy certificate issued by a CA certificate (%s)", CertDN(issuer))
	}
	if issuer.KeyUsage != 0 && issuer.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return verr(ErrBadProxy, c, "issuer %s may not sign proxies: its key usage lacks digitalSignature", CertDN(issuer))
	}
	if isCA(c) {
		return verr(ErrBadProxy, c, "proxy certificate claims to be a CA")
	}
	if err := isProxyOf(c, issuer); err != nil {
		return verr(ErrBadProxy, c, "proxy %v", err)
	}
	if err := issuer.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		return verr(ErrBadSignature, c, "signature does not verify with the issuer's key (%s)", CertDN(issuer))
	}
	if info.PathLen >= 0 && i > info.PathLen {
		return verr(ErrPathLength, c, "proxy path length exceeded: %d proxies follow a proxy that allows %d", i, info.PathLen)
	}
	return nil
}

// signedLink is one signature along the CA path: ca signed cert.
type signedLink struct{ ca, cert *x509.Certificate }

// pathToRoot follows the issuers of the end-entity certificate eec (from
// the store first, then rest, the chain's certificates after it) up to a
// self-signed CA that the store holds, checking each certificate's own
// validity and each issuer's CA constraints. It returns the path, eec
// first and the root last, and its links for checkSigners.
func (ts *TrustStore) pathToRoot(eec *x509.Certificate, rest []*x509.Certificate, now time.Time) ([]*x509.Certificate, []signedLink, *VerifyError) {
	var path []*x509.Certificate
	var links []signedLink
	cur := eec
	for depth := 0; ; depth++ {
		if depth > maxChain {
			return nil, nil, verr(ErrBadChain, cur, "CA path too long")
		}
		ss := selfSigned(cur)
		if e := checkStatic(cur, now, ss); e != nil {
			return nil, nil, e
		}
		path = append(path, cur)
		if ss {
			if !ts.contains(cur) {
				return nil, nil, verr(ErrUntrusted, cur, "self-signed certificate is not in the trust directory %s", ts.dir)
			}
			return path, links, nil
		}
		issuer, ierr := ts.findIssuer(cur, rest)
		if ierr != nil {
			return nil, nil, ierr
		}
		if e := checkIssuerCA(issuer, cur, depth); e != nil {
			return nil, nil, e
		}
		links = append(links, signedLink{issuer, cur})
		cur = issuer
	}
}

// checkIssuerCA checks that issuer, which signed cur with depth CA
// certificates between it and the end-entity certificate, may sign it:
// a CA certificate whose key usage allows keyCertSign, without name
// constraints (not supported), within its path length constraint.
func checkIssuerCA(issuer, cur *x509.Certificate, depth int) *VerifyError {
	if !isCA(issuer) {
		return verr(ErrUntrusted, cur, "issuer %s is not a CA certificate", CertDN(issuer))
	}
	if issuer.KeyUsage != 0 && issuer.KeyUsage&x509.KeyUsageCertSign == 0 {
		return verr(ErrUntrusted, cur, "issuer %s may not sign certificates: its key usage lacks keyCertSign", CertDN(issuer))
	}
	if hasNameConstraints(issuer) {
		return verr(ErrUntrusted, issuer, "CA certificates with name constraints are not supported")
	}
	// depth CA certificates lie between the EEC and this issuer.
	if issuer.MaxPathLen >= 0 && (issuer.MaxPathLen > 0 || issuer.MaxPathLenZero) && depth > issuer.MaxPathLen {
		return verr(ErrPathLength, issuer, "CA path length exceeded: %d intermediate CAs below a CA that allows %d", depth, issuer.MaxPathLen)
	}
	return nil
}

// checkSigners checks every link of the CA path, in order, against its
// CA's signing policy and CRL.
func (ts *TrustStore) checkSigners(links []signedLink, now time.Time) *VerifyError {
	for _, l := range links {
		hash, herr := SubjectHash(l.ca.RawSubject)
		if herr != nil {
			return verr(ErrBadChain, l.ca, "%v", herr)
		}
		if e := ts.checkPolicy(hash, l.ca, l.cert); e != nil {
			return e
		}
		if e := ts.checkCRL(hash, l.ca, l.cert, now); e != nil {
			return e
		}
	}
	return nil
}

func hasNameConstraints(c *x509.Certificate) bool {
	return len(c.PermittedDNSDomains) > 0 || len(c.ExcludedDNSDomains) > 0 ||
		len(c.PermittedIPRanges) > 0 || len(c.ExcludedIPRanges) > 0 ||
		len(c.PermittedEmailAddresses) > 0 || len(c.ExcludedEmailAddresses) > 0 ||
		len(c.PermittedURIDomains) > 0 || len(c.ExcludedURIDomains) > 0 ||
		c.PermittedDNSDomainsCritical
}

func (ts *TrustStore) contains(c *x509.Certificate) bool {
	h, err := SubjectHash(c.RawSubject)
	if err != nil {
		return false
	}
	for _, t := range ts.byHash[h] {
		if bytes.Equal(t.Raw, c.Raw) || nameEqual(t.RawSubject, c.RawSubject) && bytes.Equal(t.RawSubjectPublicKeyInfo, c.RawSubjectPublicKeyInfo) {
			return true
		}
	}
	return false
}

// findIssuer finds the certificate that signed c: in the trust store
// first, then among the chain's other certificates.
func (ts *TrustStore) findIssuer(c *x509.Certificate, rest []*x509.Certificate) (*x509.Certificate, *VerifyError) {
	h, err := SubjectHash(c.RawIssuer)
	if err != nil {
		return nil, verr(ErrBadChain, c, "bad issuer name: %v", err)
	}
	named := false
	for _, cands := range [][]*x509.Certificate{ts.byHash[h], rest} {
		for _, cand := range cands {
			if !nameEqual(cand.RawSubject, c.RawIssuer) {
				continue
			}
			named = true
			if cand.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil {
				return cand, nil
			}
		}
	}
	if named {
		return nil, verr(ErrBadSignature, c, "signature does not verify with the key of %s", CertIssuerDN(c))
	}
	return nil, verr(ErrUntrusted, c, "issuer %s is not trusted: no CA certificate %s.0 in %s", CertIssuerDN(c), h, ts.dir)
}

func (ts *TrustStore) checkPolicy(hash string, ca, c *x509.Certificate) *VerifyError {
	if err := ts.policyEr[hash]; err != nil {
		return verr(ErrSigningPolicy, c, "signing policy of CA %s unusable: %v", CertDN(ca), err)
	}
	p := ts.policies[hash]
	if p == nil {
		return verr(ErrSigningPolicy, c, "no signing policy %s.signing_policy for CA %s in %s", hash, CertDN(ca), ts.dir)
	}
	if err := p.Allows(CertDN(ca), CertDN(c)); err != nil {
		return verr(ErrSigningPolicy, c, "%v (%s.signing_policy)", err, hash)
	}
	return nil
}

func (ts *TrustStore) checkCRL(hash string, ca, c *x509.Certificate, now time.Time) *VerifyError {
	if err := ts.crlErr[hash]; err != nil {
		return verr(ErrCRL, c, "CRL of CA %s unusable: %v", CertDN(ca), err)
	}
	for _, e := range ts.crls[hash] {
		if !nameEqual(e.crl.RawIssuer, ca.RawSubject) {
			continue
		}
		if err := e.crl.CheckSignatureFrom(ca); err != nil {
			return verr(ErrCRL, c, "CRL %s is not signed by CA %s: %v", e.file, CertDN(ca), err)
		}
		if now.Before(e.crl.ThisUpdate) {
			return verr(ErrCRL, c, "CRL %s of CA %s is not yet valid (thisUpdate %s)", e.file, CertDN(ca), e.crl.ThisUpdate.UTC().Format(time.RFC3339))
		}
		if !e.crl.NextUpdate.IsZero() && now.After(e.crl.NextUpdate) {
			return verr(ErrCRL, c, "CRL %s of CA %s has expired (nextUpdate %s)", e.file, CertDN(ca), e.crl.NextUpdate.UTC().Format(time.RFC3339))
		}
		if e.revoked[c.SerialNumber.String()] {
			return verr(ErrRevoked, c, "certificate has been revoked (serial %s, CRL %s)", c.SerialNumber, e.file)
		}
	}
	return nil
}

// VerifyHost is Verify plus a check that the identity certificate (the
// first one that is not a proxy) names host: if it has DNS or IP subject
// alternative names, host must match one (DNS names may have a "*." first
// label); otherwise its CN must equal host, in the forms NAME, host/NAME
// or ftp/NAME.
func (ts *TrustStore) VerifyHost(chain []*x509.Certificate, host string, now time.Time) (*Identity, error) {
	id, err := ts.Verify(chain, now)
	if err != nil {
		return nil, err
	}
	var c *x509.Certificate
	for _, cert := range chain {
		if info, _ := ProxyInfoOf(cert); info == nil {
			c = cert
			break
		}
	}
	if c == nil || !MatchHost(c, host) {
		var names []string
		if c != nil {
			names = append(names, c.DNSNames...)
			for _, ip := range c.IPAddresses {
				names = append(names, ip.String())
			}
			if len(names) == 0 {
				names = append(names, "CN="+c.Subject.CommonName)
			}
		}
		return nil, verr(ErrHostMismatch, c, "certificate names (%s) do not match host %q", strings.Join(names, ", "), host)
	}
	return id, nil
}

// MatchHost reports whether certificate c names host (see VerifyHost).
func MatchHost(c *x509.Certificate, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	ip := net.ParseIP(host)
	if len(c.DNSNames) > 0 || len(c.IPAddresses) > 0 {
		if ip != nil {
			return slices.ContainsFunc(c.IPAddresses, ip.Equal)
		}
		for _, n := range c.DNSNames {
			if matchDNS(strings.ToLower(strings.TrimSuffix(n, ".")), host) {
				return true
			}
		}
		return false
	}
	cn := strings.ToLower(c.Subject.CommonName)
	for _, prefix := range []string{"host/", "ftp/"} {
		cn = strings.TrimPrefix(cn, prefix)
	}
	return cn == host
}

func matchDNS(pattern, host string) bool {
	if pattern == host {
		return true
	}
	rest, ok := strings.CutPrefix(pattern, "*.")
	if !ok || rest == "" || strings.Contains(rest, "*") {
		return false
	}
	_, hostRest, ok := strings.Cut(host, ".")
	return ok && hostRest == rest
}
