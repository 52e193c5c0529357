package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

func init() {
	register(&command{
		name:    "cert",
		summary: "make a test PKI: a CA with a GCT trust directory, host and user certificates",
		usage:   "ca|host|user [flags]",
		run:     runCert,
	})
}

// subcommand is one verb of a command with verbs (ferry cert ca, …).
type subcommand struct {
	summary, usage string
	run            func(ctx context.Context, e *env, c *command, args []string) error
}

// runVerb dispatches args[0] among verbs; "-h" prints the verbs.
func runVerb(ctx context.Context, e *env, parent string, verbs map[string]subcommand, order []string, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		p := commands[parent]
		fmt.Fprintf(e.stderr, "usage: ferry %s %s\n\n%s\n\nverbs:\n", p.name, p.usage, p.summary)
		for _, v := range order {
			fmt.Fprintf(e.stderr, "  %-8s %s\n", v, verbs[v].summary)
		}
		fmt.Fprintf(e.stderr, "\nRun 'ferry %s VERB -h' for a verb's flags.\n", p.name)
		if len(args) == 0 {
			return exitError{code: 2}
		}
		return flag.ErrHelp
	}
	v, ok := verbs[args[0]]
	if !ok {
		return usagef("unknown verb %q (want %s)", args[0], strings.Join(order, ", "))
	}
	c := &command{name: parent + " " + args[0], summary: v.summary, usage: v.usage}
	return v.run(ctx, e, c, args[1:])
}

var certVerbs = map[string]subcommand{
	"ca":   {"create a CA and a trust directory in GCT's layout", "-dir DIR [flags]", runCertCA},
	"host": {"issue a host certificate (hostcert.pem, hostkey.pem)", "-ca DIR -name HOST [flags]", runCertHost},
	"user": {"issue a user certificate (usercert.pem, userkey.pem) and print its grid-mapfile line", "-ca DIR -subject DN|-cn NAME [flags]", runCertUser},
}

func runCert(ctx context.Context, e *env, args []string) error {
	return runVerb(ctx, e, "cert", certVerbs, []string{"ca", "host", "user"}, args)
}

// Files of a CA directory made by "ferry cert ca".
const (
	caCertFile = "cacert.pem"
	caKeyFile  = "cakey.pem"
	trustSub   = "certificates"
)

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// policyPrefix returns the DN prefix a test CA's signing policy covers:
// the CA's name up to its last O attribute, or without its last
// attribute when it has no O.
func policyPrefix(caDN string) string {
	parts := strings.Split(strings.TrimPrefix(caDN, "/"), "/")
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

// writeNew writes a file that must not exist yet.
func writeNew(name string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; remove it first", name)
		}
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil { // the umask may have narrowed it
		f.Close()
		return err
	}
	return f.Close()
}

func runCertCA(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	dir := fs.String("dir", "", "directory for cacert.pem, cakey.pem and the trust directory certificates/ (required)")
	subject := fs.String("subject", "/O=Ferry/OU=Test/CN=Ferry Test CA", "the CA's DN, in the one-line form")
	days := fs.Int("days", 1825, "validity in days")
	bits := fs.Int("bits", 3072, "RSA key size (2048 or more)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() != 0 {
		return usagef("want -dir DIR and no arguments")
	}
	if *days <= 0 || *bits < 2048 || *bits > 16384 {
		return usagef("-days must be positive and -bits between 2048 and 16384")
	}
	name, err := gsi.ParseDN(*subject)
	if err != nil {
		return usagef("-subject: %v", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, *bits)
	if err != nil {
		return err
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		RawSubject:            name,
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.AddDate(0, 0, *days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            -1,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SignatureAlgorithm:    x509.SHA256WithRSA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number:             big.NewInt(1),
		ThisUpdate:         now.Add(-5 * time.Minute),
		NextUpdate:         ca.NotAfter,
		SignatureAlgorithm: x509.SHA256WithRSA,
	}, ca, key)
	if err != nil {
		return err
	}
	hash, err := gsi.SubjectHash(ca.RawSubject)
	if err != nil {
		return err
	}
	caDN := gsi.CertDN(ca)
	prefix := policyPrefix(caDN)
	policy := fmt.Sprintf("# Signing policy of %s, written by ferry cert ca.\n"+
		"access_id_CA   X509    '%s'\n"+
		"pos_rights     globus  CA:sign\n"+
		"cond_subjects  globus  '\"%s/*\"'\n", caDN, caDN, prefix)
	keyPEM, err := gsi.EncodeKeyPEM(key)
	if err != nil {
		return err
	}
	td := filepath.Join(*dir, trustSub)
	if err := os.MkdirAll(td, 0o755); err != nil {
		return err
	}
	if err := writeNew(filepath.Join(*dir, caKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	certPEM := gsi.EncodeCertsPEM(ca)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{filepath.Join(*dir, caCertFile), certPEM},
		{filepath.Join(td, hash+".0"), certPEM},
		{filepath.Join(td, hash+".signing_policy"), []byte(policy)},
		{filepath.Join(td, hash+".r0"), pemBlock("X509 CRL", crl)},
	} {
		if err := writeNew(f.name, f.data, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "CA %s (hash %s), valid until %s\nsigning policy: %s/*\n",
		caDN, hash, ca.NotAfter.UTC().Format(time.RFC3339), prefix)
	fmt.Fprintf(e.stdout, "export X509_CERT_DIR=%s\n", shellQuote(absPath(td)))
	return nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r == ',' || r == ':' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// testCA is a CA made by "ferry cert ca".
type testCA struct {
	cred   *gsi.Credential
	dn     string
	policy *gsi.SigningPolicy // nil when the directory has none
}

func loadTestCA(dir string) (*testCA, error) {
	cred, err := gsi.LoadCredential(filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, fmt.Errorf("loading the CA (made by ferry cert ca?): %w", err)
	}
	ca := &testCA{cred: cred, dn: gsi.CertDN(cred.Leaf())}
	if hash, err := gsi.SubjectHash(cred.Leaf().RawSubject); err == nil {
		if data, err := os.ReadFile(filepath.Join(dir, trustSub, hash+".signing_policy")); err == nil {
			if ca.policy, err = gsi.ParseSigningPolicy(data); err != nil {
				return nil, err
			}
		}
	}
	return ca, nil
}

// issue signs an end-entity certificate for the CA and writes
// out/<prefix>cert.pem and out/<prefix>key.pem.
func (ca *testCA) issue(subject string, tmpl *x509.Certificate, days, bits int, out, prefix string) (*x509.Certificate, error) {
	name, err := gsi.ParseDN(subject)
	if err != nil {
		return nil, errUsageWrap(err)
	}
	if ca.policy != nil {
		if err := ca.policy.Allows(ca.dn, subject); err != nil {
			return nil, fmt.Errorf("%v: the trust directory would reject it; pick a DN the CA may sign", err)
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = randomSerial(); err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl.RawSubject = name
	tmpl.NotBefore = now.Add(-5 * time.Minute)
	tmpl.NotAfter = now.AddDate(0, 0, days)
	if tmpl.NotAfter.After(ca.cred.Leaf().NotAfter) {
		tmpl.NotAfter = ca.cred.Leaf().NotAfter
	}
	tmpl.BasicConstraintsValid = true
	tmpl.SignatureAlgorithm = x509.SHA256WithRSA
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cred.Leaf(), &key.PublicKey, ca.cred.Key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := gsi.EncodeKeyPEM(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	keyName := filepath.Join(out, prefix+"key.pem")
	if err := writeNew(keyName, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(filepath.Join(out, prefix+"cert.pem"), gsi.EncodeCertsPEM(cert), 0o644); err != nil {
		os.Remove(keyName)
		return nil, err
	}
	return cert, nil
}

func errUsageWrap(err error) error { return usagef("%v", err) }

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runCertHost(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	caDir := fs.String("ca", "", "directory made by ferry cert ca (required)")
	host := fs.String("name", "", "host name (or IP address) the certificate is for (required)")
	var ips, dnss listFlag
	fs.Var(&ips, "ip", "an IP address to add as subjectAltName (repeatable)")
	fs.Var(&dnss, "dns", "another DNS name to add as subjectAltName (repeatable)")
	out := fs.String("out", ".", "directory for hostcert.pem and hostkey.pem")
	subject := fs.String("subject", "", "the DN (default: the CA's O prefix + /CN=HOST)")
	days := fs.Int("days", 365, "validity in days")
	bits := fs.Int("bits", 2048, "RSA key size (2048 or more)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *caDir == "" || *host == "" || fs.NArg() != 0 {
		return usagef("want -ca DIR -name HOST and no arguments")
	}
	if *days <= 0 || *bits < 2048 || *bits > 16384 {
		return usagef("-days must be positive and -bits between 2048 and 16384")
	}
	tmpl := &x509.Certificate{
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if ip := net.ParseIP(*host); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else {
		tmpl.DNSNames = append(tmpl.DNSNames, *host)
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return usagef("-ip %q is not an IP address", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	tmpl.DNSNames = append(tmpl.DNSNames, dnss...)
	ca, err := loadTestCA(*caDir)
	if err != nil {
		return err
	}
	dn := *subject
	if dn == "" {
		dn = policyPrefix(ca.dn) + "/CN=" + strings.ReplaceAll(*host, "/", `\/`)
	}
	cert, err := ca.issue(dn, tmpl, *days, *bits, *out, "host")
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s and %s for %s\n", filepath.Join(*out, "hostcert.pem"), filepath.Join(*out, "hostkey.pem"), gsi.CertDN(cert))
	return nil
}

func runCertUser(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	caDir := fs.String("ca", "", "directory made by ferry cert ca (required)")
	subject := fs.String("subject", "", "the user's DN, e.g. \"/O=Ferry/OU=Test/CN=Alice\"")
	cn := fs.String("cn", "", "the user's CN, placed under the CA's O prefix (instead of -subject)")
	out := fs.String("out", ".", "directory for usercert.pem and userkey.pem")
	account := fs.String("account", "", "local account for the printed grid-mapfile line (default: from the CN)")
	days := fs.Int("days", 365, "validity in days")
	bits := fs.Int("bits", 2048, "RSA key size (2048 or more)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *caDir == "" || (*subject == "") == (*cn == "") || fs.NArg() != 0 {
		return usagef("want -ca DIR and one of -subject DN or -cn NAME")
	}
	if *days <= 0 || *bits < 2048 || *bits > 16384 {
		return usagef("-days must be positive and -bits between 2048 and 16384")
	}
	ca, err := loadTestCA(*caDir)
	if err != nil {
		return err
	}
	dn := *subject
	if dn == "" {
		dn = policyPrefix(ca.dn) + "/CN=" + strings.ReplaceAll(*cn, "/", `\/`)
	}
	tmpl := &x509.Certificate{
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	cert, err := ca.issue(dn, tmpl, *days, *bits, *out, "user")
	if err != nil {
		return err
	}
	acct := *account
	if acct == "" {
		acct = accountFromCN(cert.Subject.CommonName)
	}
	fmt.Fprintf(e.stderr, "wrote %s and %s for %s\ngrid-mapfile line:\n", filepath.Join(*out, "usercert.pem"), filepath.Join(*out, "userkey.pem"), gsi.CertDN(cert))
	fmt.Fprintln(e.stdout, gsi.GridMapLine(gsi.CertDN(cert), acct))
	return nil
}

// accountFromCN suggests an account name: the CN's first word, lower-case
// letters and digits only.
func accountFromCN(cn string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(cn) {
		if r == ' ' && sb.Len() > 0 {
			break
		}
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' && sb.Len() > 0 {
			sb.WriteRune(r)
		}
	}
	if sb.Len() == 0 {
		return "nobody"
	}
	return sb.String()
}
