package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
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
		w := e.stdout // asked for
		if len(args) == 0 {
			w = e.stderr // a usage error
		}
		fmt.Fprintf(w, "usage: ferry %s %s\n\n%s\n\nverbs:\n", p.name, p.usage, p.summary)
		for _, v := range order {
			fmt.Fprintf(w, "  %-8s %s\n", v, verbs[v].summary)
		}
		fmt.Fprintf(w, "\nRun 'ferry %s VERB -h' for a verb's flags.\n", p.name)
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

func runCertCA(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	dir := fs.String("dir", "", "`DIR` for cacert.pem, cakey.pem and the trust directory certificates/ (required)")
	subject := fs.String("subject", "/O=Ferry/OU=Test/CN=Ferry Test CA", "the CA's `DN`, in the one-line form")
	days := fs.Int("days", 1825, "validity in `DAYS`")
	bits := fs.Int("bits", 3072, "RSA key size in `BITS` (2048 or more)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() != 0 {
		return usagef("want -dir DIR and no arguments")
	}
	if *days <= 0 || *bits < 2048 || *bits > 16384 {
		return usagef("-days must be positive and -bits between 2048 and 16384")
	}
	if _, err := gsi.ParseDN(*subject); err != nil {
		return usagef("-subject: %v", err)
	}
	now := time.Now()
	ca, err := gsi.NewCA(*subject, gsi.IssueOptions{Bits: *bits, NotBefore: now.Add(-5 * time.Minute), NotAfter: now.AddDate(0, 0, *days)})
	if err != nil {
		return err
	}
	td := filepath.Join(*dir, trustSub)
	if err := os.MkdirAll(td, 0o755); err != nil {
		return err
	}
	if err := gsi.WriteCredential(filepath.Join(*dir, caCertFile), filepath.Join(*dir, caKeyFile), ca.Credential()); err != nil {
		return err
	}
	if err := ca.WriteTrustDir(td); err != nil {
		return err
	}
	if err := ca.WriteCRL(td); err != nil {
		return err
	}
	hash, err := gsi.SubjectHash(ca.Cert.RawSubject)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "CA %s (hash %s), valid until %s\nsigning policy: %s/*\n",
		gsi.CertDN(ca.Cert), hash, ca.Cert.NotAfter.UTC().Format(time.RFC3339), ca.PolicyPrefix())
	fmt.Fprintf(e.stdout, "export X509_CERT_DIR=%s\n", shellQuote(absPath(td)))
	return nil
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

// loadTestCA loads a CA made by "ferry cert ca" in dir.
func loadTestCA(dir string) (*gsi.CA, error) {
	ca, err := gsi.LoadCA(filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile), filepath.Join(dir, trustSub))
	if err != nil {
		return nil, fmt.Errorf("loading the CA (made by ferry cert ca?): %w", err)
	}
	return ca, nil
}

// issueTo issues a certificate of kind with the CA, valid from five
// minutes ago for days days (at most as long as the CA), and writes
// out/<prefix>cert.pem and out/<prefix>key.pem.
func issueTo(ca *gsi.CA, kind gsi.CertKind, subject string, hosts []string, days, bits int, out, prefix string) (*x509.Certificate, error) {
	if _, err := gsi.ParseDN(subject); err != nil {
		return nil, usagef("%v", err)
	}
	now := time.Now()
	cred, err := ca.Issue(kind, subject, gsi.IssueOptions{Bits: bits, Hosts: hosts,
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.AddDate(0, 0, days)})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := gsi.WriteCredential(filepath.Join(out, prefix+"cert.pem"), filepath.Join(out, prefix+"key.pem"), cred); err != nil {
		return nil, err
	}
	return cred.Leaf(), nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runCertHost(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	caDir := fs.String("ca", "", "`DIR` made by ferry cert ca (required)")
	host := fs.String("name", "", "`HOST` name (or IP address) the certificate is for (required)")
	var ips, dnss listFlag
	fs.Var(&ips, "ip", "an `IP` address to add as subjectAltName (repeatable)")
	fs.Var(&dnss, "dns", "another DNS `NAME` to add as subjectAltName (repeatable)")
	out := fs.String("out", ".", "`DIR` for hostcert.pem and hostkey.pem")
	subject := fs.String("subject", "", "the `DN` (default: the CA's O prefix + /CN=HOST)")
	days := fs.Int("days", 365, "validity in `DAYS`")
	bits := fs.Int("bits", 2048, "RSA key size in `BITS` (2048 or more)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *caDir == "" || *host == "" || fs.NArg() != 0 {
		return usagef("want -ca DIR -name HOST and no arguments")
	}
	if *days <= 0 || *bits < 2048 || *bits > 16384 {
		return usagef("-days must be positive and -bits between 2048 and 16384")
	}
	hosts := []string{*host}
	for _, s := range ips {
		if net.ParseIP(s) == nil {
			return usagef("-ip %q is not an IP address", s)
		}
		hosts = append(hosts, s)
	}
	hosts = append(hosts, dnss...)
	ca, err := loadTestCA(*caDir)
	if err != nil {
		return err
	}
	dn := *subject
	if dn == "" {
		dn = ca.PolicyPrefix() + "/CN=" + strings.ReplaceAll(*host, "/", `\/`)
	}
	cert, err := issueTo(ca, gsi.HostCert, dn, hosts, *days, *bits, *out, "host")
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s and %s for %s\n", filepath.Join(*out, "hostcert.pem"), filepath.Join(*out, "hostkey.pem"), gsi.CertDN(cert))
	return nil
}

func runCertUser(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	caDir := fs.String("ca", "", "`DIR` made by ferry cert ca (required)")
	subject := fs.String("subject", "", "the user's `DN`, e.g. \"/O=Ferry/OU=Test/CN=Alice\"")
	cn := fs.String("cn", "", "the user's `CN`, placed under the CA's O prefix (instead of -subject)")
	out := fs.String("out", ".", "`DIR` for usercert.pem and userkey.pem")
	account := fs.String("account", "", "local `ACCOUNT` for the printed grid-mapfile line (default: from the CN)")
	days := fs.Int("days", 365, "validity in `DAYS`")
	bits := fs.Int("bits", 2048, "RSA key size in `BITS` (2048 or more)")
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
		dn = ca.PolicyPrefix() + "/CN=" + strings.ReplaceAll(*cn, "/", `\/`)
	}
	cert, err := issueTo(ca, gsi.UserCert, dn, nil, *days, *bits, *out, "user")
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
