package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
)

func init() {
	register(&command{
		name:    "proxy",
		summary: "make, show or remove a GSI proxy certificate (like grid-proxy-init/-info/-destroy)",
		usage:   "init|info|destroy [flags]",
		run:     runProxy,
	})
}

var proxyVerbs = map[string]subcommand{
	"init":    {"make a proxy certificate from a user certificate (or another proxy)", "[flags]", runProxyInit},
	"info":    {"describe a proxy file", "[flags]", runProxyInfo},
	"destroy": {"remove a proxy file", "[flags]", runProxyDestroy},
}

func runProxy(ctx context.Context, e *env, args []string) error {
	return runVerb(ctx, e, "proxy", proxyVerbs, []string{"init", "info", "destroy"}, args)
}

// parseHM parses grid-proxy-init's H:M lifetime.
func parseHM(s string) (time.Duration, error) {
	h, m, ok := strings.Cut(s, ":")
	hours, err1 := strconv.Atoi(h)
	mins := 0
	var err2 error
	if ok {
		mins, err2 = strconv.Atoi(m)
	}
	if err1 != nil || err2 != nil || hours < 0 || mins < 0 || mins > 59 || hours > 100000 {
		return 0, fmt.Errorf("bad lifetime %q, want H:M", s)
	}
	return time.Duration(hours)*time.Hour + time.Duration(mins)*time.Minute, nil
}

func runProxyInit(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	defCert, defKey := gsi.UserCertPaths()
	certFile := fs.String("cert", defCert, "certificate `FILE` to make the proxy from (a proxy file also works)")
	keyFile := fs.String("key", "", "its private key `FILE` (default: "+defKey+", or -cert when -cert is given)")
	out := fs.String("out", gsi.ProxyPath(), "proxy `FILE` to write ($X509_USER_PROXY or /tmp/x509up_u<uid>)")
	hours := fs.Int("hours", 0, "lifetime in `HOURS` (default 12)")
	valid := fs.String("valid", "", "lifetime as `H:M` (instead of -hours)")
	limited := fs.Bool("limited", false, "make a limited proxy")
	pathLen := fs.Int("path-length", -1, "`N` proxies may be made from this one, in a chain (-1: no limit)")
	bits := fs.Int("bits", 0, "RSA key size in `BITS` (default: the issuer's, at least 2048)")
	verify := fs.Bool("verify", false, "verify the new proxy against the trust directory")
	certDir := fs.String("certdir", "", "trust directory `DIR` for -verify (default: $X509_CERT_DIR or /etc/grid-security/certificates)")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("no arguments expected")
	}
	if *hours < 0 || *hours > 100000 || *bits < 0 || *bits > 16384 || *pathLen < -1 {
		return usagef("-hours, -bits and -path-length are out of range")
	}
	if *hours != 0 && *valid != "" {
		return usagef("give -hours or -valid, not both")
	}
	lifetime := time.Duration(*hours) * time.Hour
	if *valid != "" {
		var err error
		if lifetime, err = parseHM(*valid); err != nil {
			return usagef("-valid: %v", err)
		}
	}
	if lifetime == 0 {
		lifetime = gsi.DefaultProxyLifetime
	}
	kf := *keyFile
	if kf == "" {
		kf = defKey
		if flagGiven(fs, "cert") {
			kf = *certFile
		}
	}
	issuer, err := gsi.LoadCredential(*certFile, kf)
	if err != nil {
		return err
	}
	if now := time.Now(); now.After(issuer.Leaf().NotAfter) {
		return fmt.Errorf("%s expired at %s", gsi.CertDN(issuer.Leaf()), issuer.Leaf().NotAfter.Local().Format(time.ANSIC))
	}
	if !*quiet {
		fmt.Fprintf(e.stdout, "Your identity: %s\n", issuer.Identity())
	}
	opt := gsi.ProxyOptions{Lifetime: lifetime, Limited: *limited, Bits: *bits, PathLen: *pathLen, PathLenZero: *pathLen == 0}
	proxy, err := gsi.NewProxy(issuer, opt)
	if err != nil {
		return err
	}
	if *verify {
		dir := *certDir
		if dir == "" {
			dir = gsi.TrustDir()
		}
		ts, err := gsi.LoadTrustDir(dir)
		if err != nil {
			return err
		}
		if _, err := ts.Verify(proxy.Chain, time.Now()); err != nil {
			return fmt.Errorf("the new proxy does not verify: %w", err)
		}
	}
	if err := gsi.WriteProxyFile(*out, proxy); err != nil {
		return err
	}
	if !*quiet {
		if proxy.Leaf().NotAfter.Before(time.Now().Add(lifetime - time.Minute)) {
			fmt.Fprintf(e.stdout, "Warning: the proxy's lifetime is cut short by its issuer's\n")
		}
		fmt.Fprintf(e.stdout, "Your proxy is valid until: %s\nProxy written to %s\n", proxy.Leaf().NotAfter.Local().Format(time.ANSIC), *out)
	}
	return nil
}

// flagGiven reports whether the flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// proxyTypeText describes a certificate's type as grid-proxy-info does.
func proxyTypeText(info *gsi.ProxyInfo) string {
	if info == nil {
		return "end entity credential"
	}
	prefix := "RFC 3820 compliant"
	if info.Draft {
		prefix = "Proxy draft (pre-RFC) compliant"
	}
	return prefix + " " + info.Type.String() + " proxy"
}

func keyStrength(pub any) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("%d bits", k.N.BitLen())
	case *ecdsa.PublicKey:
		return fmt.Sprintf("%d bits (ECDSA)", k.Curve.Params().BitSize)
	}
	return fmt.Sprintf("%T", pub)
}

func formatLeft(d time.Duration) string {
	if d <= 0 {
		return "0:00:00 (expired)"
	}
	d = d.Truncate(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

func runProxyInfo(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	file := fs.String("file", gsi.ProxyPath(), "proxy `FILE` ($X509_USER_PROXY or /tmp/x509up_u<uid>)")
	exists := fs.Bool("exists", false, "print nothing; exit 0 if the proxy exists and is valid (for -valid), else 1")
	valid := fs.String("valid", "0:0", "with -exists: the time `H:M` the proxy must still be valid for")
	identity := fs.Bool("identity", false, "print only the identity")
	timeleft := fs.Bool("timeleft", false, "print only the seconds left (0 if expired)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("no arguments expected")
	}
	need, err := parseHM(*valid)
	if err != nil {
		return usagef("-valid: %v", err)
	}
	cred, err := gsi.LoadCredential(*file, *file)
	if err != nil {
		if *exists {
			return exitError{code: 1}
		}
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no proxy at %s; run ferry proxy init", *file)
		}
		return err
	}
	leaf := cred.Leaf()
	left := time.Until(leaf.NotAfter)
	for _, cert := range cred.Chain {
		left = min(left, time.Until(cert.NotAfter))
	}
	switch {
	case *exists:
		if left < need || left <= 0 {
			return exitError{code: 1}
		}
		return nil
	case *identity:
		fmt.Fprintln(e.stdout, cred.Identity())
		return nil
	case *timeleft:
		fmt.Fprintln(e.stdout, max(int64(left.Seconds()), 0))
		return nil
	}
	info, err := gsi.ProxyInfoOf(leaf)
	if err != nil {
		return err
	}
	pathLen := "none"
	if info != nil && info.PathLen >= 0 {
		pathLen = strconv.Itoa(info.PathLen)
	}
	fmt.Fprintf(e.stdout, "subject  : %s\nissuer   : %s\nidentity : %s\ntype     : %s\nstrength : %s\npath     : %s\ntimeleft : %s\npathlen  : %s\n",
		gsi.CertDN(leaf), gsi.CertIssuerDN(leaf), cred.Identity(), proxyTypeText(info),
		keyStrength(leaf.PublicKey), *file, formatLeft(left), pathLen)
	return nil
}

func runProxyDestroy(ctx context.Context, e *env, c *command, args []string) error {
	fs := newFlagSet(c, e)
	file := fs.String("file", gsi.ProxyPath(), "proxy `FILE` to remove ($X509_USER_PROXY or /tmp/x509up_u<uid>)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("no arguments expected")
	}
	fi, err := os.Lstat(*file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no proxy at %s", *file)
		}
		return err
	}
	// Overwrite a regular file before removing it, as grid-proxy-destroy
	// does, so that the key does not linger in freed blocks.
	if fi.Mode().IsRegular() {
		if f, err := os.OpenFile(*file, os.O_WRONLY, 0); err == nil {
			_, _ = f.Write(make([]byte, fi.Size()))
			_ = f.Sync()
			f.Close()
		}
	}
	return os.Remove(*file)
}
