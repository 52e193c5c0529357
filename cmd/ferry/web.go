package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/net/netutil"

	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/gsi"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/web"
)

func init() {
	register(&command{
		name:    "web",
		summary: "serve the web application: browse two endpoints, drag files between them",
		usage:   "[-listen ADDR] [-cert FILE -key FILE] -passwd FILE [-root DIR]...",
		help:    webHelp,
		run:     runWeb,
	})
}

const webHelp = `
ferry web serves a web application, every asset embedded in this binary:
two panes, each opening an ftp:// server or a directory of this host
(file://, only under a -root), files dragged from one to the other are
copied by the copy engine after the advisor's parameters and ETA are
shown; transfers run in this process (closing the browser does not stop
them) and are recorded in the history. With a -history database, the
Catalogue tab shows its replica catalogue (ferry replica), and copies an
LFN into a pane as ferry cp lfn:/PATH DIR/ does: best replica first,
failover, checked against the catalogue's checksum.

Users log in with the accounts of a ferry passwd file (-passwd). For
gsiftp:// each user creates a proxy in the page from their certificate
and key (the passphrase is used once, never stored) or uploads one; it
is kept in memory only. Over
plain HTTP ferry web listens only on a loopback address, unless
-insecure says otherwise out loud: give -cert and -key for HTTPS.

With -history postgres://…, several ferry web instances (behind a load
balancer) share sessions, opened endpoints and the job queue through
that database: any instance runs a queued job, and one whose instance
stopped is resumed by another. -site-key FILE (32 random bytes, or 64
hex digits) seals endpoint passwords stored there; without it they stay
in the instance that was given them, which alone runs their jobs. GSI
proxies always stay in the instance they were given to
(docs/web-site-mode.md).
`

// webConfig is ferry web's command line.
type webConfig struct {
	listen, cert, key string
	insecure          bool
	passwd            string
	roots             listFlag
	certDir           string
	clientCA, gridmap string
	hosts             listFlag
	allow, deny       []netip.Prefix
	dsn               string
	siteKey           string
	instance          string
	useTLS            bool
}

// parseWebFlags parses and checks ferry web's arguments.
func parseWebFlags(e *env, args []string) (*webConfig, error) {
	c := &webConfig{}
	fs := newFlagSet(commands["web"], e)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "listen on `ADDR`")
	fs.StringVar(&c.cert, "cert", "", "serve HTTPS with this certificate `FILE` (PEM)")
	fs.StringVar(&c.key, "key", "", "the private key `FILE` of -cert (PEM)")
	fs.BoolVar(&c.insecure, "insecure", false, "allow plain HTTP on a non-loopback address (passwords cross the network in clear)")
	fs.StringVar(&c.passwd, "passwd", "", "the accounts: a password `FILE` written by ferry passwd")
	fs.Var(&c.roots, "root", "let users open this local `DIR` (and below) as file://; repeatable")
	fs.StringVar(&c.certDir, "certdir", "", "the trust `DIR` that gsiftp:// servers' certificates are checked against (default: $X509_CERT_DIR or /etc/grid-security/certificates, when it exists)")
	fs.StringVar(&c.clientCA, "client-ca", "", "over HTTPS, log in browsers whose client certificate (or proxy) this trust `DIR` verifies, as the user -gridmap names")
	fs.StringVar(&c.gridmap, "gridmap", "", "the grid-mapfile `FILE` that maps client certificates' DNs to users (with -client-ca)")
	fs.Var(&c.hosts, "host", "the host `NAME` browsers use for this server, checked against each request's Host (DNS rebinding); repeatable; default: the -listen host, the -cert certificate's DNS names, and this host's name when listening on all addresses (IP addresses and localhost always work)")
	allowNet := fs.String("allow-net", "", "let endpoints be on these networks (`CIDR,...`) although loopback, link-local and unspecified addresses are refused by default; e.g. 127.0.0.0/8 to browse a server on this host")
	denyNet := fs.String("deny-net", "", "never let endpoints be on these networks (`CIDR,...`); wins over -allow-net")
	fs.StringVar(&c.dsn, "history", "", historyDSNUsage)
	fs.StringVar(&c.siteKey, "site-key", "", "with a postgres:// -history (site mode), seal the endpoint passwords stored in the database with the key in this `FILE` (32 bytes, or 64 hex digits), so that any instance can run their jobs")
	fs.StringVar(&c.instance, "instance", "", "with a postgres:// -history, this instance's `NAME` in the shared job queue (default: random)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, usagef("unexpected arguments %q", fs.Args())
	}
	if (c.cert == "") != (c.key == "") {
		return nil, usagef("-cert and -key go together")
	}
	if (c.clientCA == "") != (c.gridmap == "") {
		return nil, usagef("-client-ca and -gridmap go together")
	}
	if c.clientCA != "" && c.cert == "" {
		return nil, usagef("client certificates need HTTPS: give -cert and -key")
	}
	if (c.siteKey != "" || c.instance != "") && !isPostgresDSN(hist.DSN(c.dsn)) {
		return nil, usagef("-site-key and -instance need a postgres:// -history (site mode)")
	}
	if c.passwd == "" && c.clientCA == "" {
		return nil, usagef("nobody could log in: give -passwd FILE (see ferry passwd), or -client-ca DIR and -gridmap FILE")
	}
	var err error
	if c.allow, err = parseNets(*allowNet); err != nil {
		return nil, usagef("-allow-net: %v", err)
	}
	if c.deny, err = parseNets(*denyNet); err != nil {
		return nil, usagef("-deny-net: %v", err)
	}
	c.useTLS = c.cert != ""
	if !c.useTLS && !c.insecure && !loopbackListen(c.listen) {
		return nil, usagef("-listen %s is not a loopback address: give -cert and -key for HTTPS, or -insecure to serve plain HTTP to the network", c.listen)
	}
	return c, nil
}

func runWeb(ctx context.Context, e *env, args []string) error {
	c, err := parseWebFlags(e, args)
	if err != nil {
		return err
	}
	var pw *auth.Passwd
	if c.passwd != "" {
		if pw, err = auth.Load(c.passwd); err != nil {
			return err
		}
	}
	var certUser func([]*x509.Certificate) (string, error)
	if c.clientCA != "" {
		if certUser, err = webCertUser(c.clientCA, c.gridmap); err != nil {
			return err
		}
	}
	if c.certDir == "" {
		if fi, err := os.Stat(gsi.TrustDir()); err == nil && fi.IsDir() {
			c.certDir = gsi.TrustDir()
		}
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var site *web.SiteConfig
	if dsn := hist.DSN(c.dsn); isPostgresDSN(dsn) {
		site = &web.SiteConfig{DSN: dsn, Instance: c.instance}
		if c.siteKey != "" {
			if site.Key, err = web.LoadSiteKey(c.siteKey); err != nil {
				return err
			}
		}
	}
	st := hist.OpenOrOff(ctx, hist.DSN(c.dsn), log)
	defer st.Close()
	// The replica catalogue lives in the same database; without it the
	// web UI just has no Catalogue tab.
	var cat *replica.Catalogue
	if dsn := hist.DSN(c.dsn); dsn != hist.OffDSN {
		if cat, err = replica.Open(ctx, dsn); err != nil {
			log.Warn("ferry web: no replica catalogue", "err", err)
			cat = nil
		} else {
			defer cat.Close()
		}
	}
	l, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	// The name said loopback; the address it resolved to must be.
	if ta, ok := l.Addr().(*net.TCPAddr); !c.useTLS && !c.insecure && (!ok || !ta.IP.IsLoopback()) {
		l.Close()
		return usagef("-listen %s listens on %v, not a loopback address: give -cert and -key for HTTPS, or -insecure", c.listen, l.Addr())
	}
	hosts := c.hosts
	if len(hosts) == 0 {
		hosts = defaultWebHosts(c.listen, c.cert)
	}
	var self []netip.AddrPort
	if ta, ok := l.Addr().(*net.TCPAddr); ok {
		self = append(self, ta.AddrPort())
	}
	app, err := web.New(web.Config{Passwd: pw, CertUser: certUser, Roots: c.roots, History: st, Secure: c.useTLS, TrustDir: c.certDir, Log: log,
		AllowNet: c.allow, DenyNet: c.deny, Self: self, Hosts: hosts, Site: site, Catalogue: cat})
	if err != nil {
		l.Close()
		return err
	}
	defer app.Close()
	// Bound the connections, and the time a client takes to send a
	// request (Server-Sent Events streams are GETs without a body: the
	// read timeout does not cut them; no WriteTimeout for them either).
	l = netutil.LimitListener(l, webMaxConns)
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if certUser != nil {
		// Asked for, checked by certUser (proxies included), never required.
		srv.TLSConfig = &tls.Config{ClientAuth: tls.RequestClientCert}
	}
	return serveWeb(ctx, e, c, srv, l, app)
}

// webCertUser loads the trust directory clientCA and the grid-mapfile
// gridmap and returns the function that maps a client chain to a user.
func webCertUser(clientCA, gridmap string) (func([]*x509.Certificate) (string, error), error) {
	ts, err := gsi.LoadTrustDir(clientCA)
	if err != nil {
		return nil, err
	}
	gm, err := gsi.LoadGridMap(gridmap)
	if err != nil {
		return nil, err
	}
	return func(chain []*x509.Certificate) (string, error) {
		id, err := ts.Verify(chain, time.Now())
		if err != nil {
			return "", err
		}
		users, ok := gm.Lookup(id.DN)
		if !ok || len(users) == 0 {
			return "", fmt.Errorf("%s is not in %s", id.DN, gridmap)
		}
		return users[0], nil
	}, nil
}

// serveWeb serves srv on l until it fails or ctx ends, then shuts it
// down, app first.
func serveWeb(ctx context.Context, e *env, c *webConfig, srv *http.Server, l net.Listener, app *web.App) error {
	scheme := "http"
	if c.useTLS {
		scheme = "https"
	}
	fmt.Fprintf(e.stderr, "ferry web: serving %s://%s/\n", scheme, l.Addr())
	done := make(chan error, 1)
	go func() {
		if c.useTLS {
			done <- srv.ServeTLS(l, c.cert, c.key)
		} else {
			done <- srv.Serve(l)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Server-Sent Events streams end with the app.
	app.Close()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	<-done
	return nil
}

// defaultWebHosts are the host names ferry web answers to without
// -host: the -listen host when it is a name, the DNS names of the
// certificate FILE cert, and this host's name when listen has no host
// or an unspecified address.
func defaultWebHosts(listen, cert string) []string {
	var out []string
	host, _, _ := net.SplitHostPort(listen)
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			out = append(out, h)
		}
	} else if err != nil {
		out = append(out, host)
	}
	if cert != "" {
		if b, err := os.ReadFile(cert); err == nil {
			for {
				var blk *pem.Block
				if blk, b = pem.Decode(b); blk == nil {
					break
				}
				if c, err := x509.ParseCertificate(blk.Bytes); err == nil && blk.Type == "CERTIFICATE" {
					out = append(out, c.DNSNames...)
					break
				}
			}
		}
	}
	return out
}

// webMaxConns bounds the connections ferry web serves at once.
const webMaxConns = 512

// parseNets parses a comma-separated list of CIDR prefixes (or single
// addresses).
func parseNets(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, err
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// loopbackListen reports whether addr listens on loopback only.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isPostgresDSN reports whether a history DSN names a PostgreSQL
// database: ferry web then runs in site mode.
func isPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}
