package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/gsi"
	hist "github.com/ferrygrid/ferry/internal/history"
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
them) and are recorded in the history.

Users log in with the accounts of a ferry passwd file (-passwd). For
gsiftp:// each user creates a proxy in the page from their certificate
and key (the passphrase is used once, never stored) or uploads one; it
is kept in memory only. Over
plain HTTP ferry web listens only on a loopback address, unless
-insecure says otherwise out loud: give -cert and -key for HTTPS.
`

func runWeb(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["web"], e)
	listen := fs.String("listen", "127.0.0.1:8080", "listen on `ADDR`")
	cert := fs.String("cert", "", "serve HTTPS with this certificate `FILE` (PEM)")
	key := fs.String("key", "", "the private key `FILE` of -cert (PEM)")
	insecure := fs.Bool("insecure", false, "allow plain HTTP on a non-loopback address (passwords cross the network in clear)")
	passwd := fs.String("passwd", "", "the accounts: a password `FILE` written by ferry passwd")
	var roots listFlag
	fs.Var(&roots, "root", "let users open this local `DIR` (and below) as file://; repeatable")
	certDir := fs.String("certdir", "", "the trust `DIR` that gsiftp:// servers' certificates are checked against (default: $X509_CERT_DIR or /etc/grid-security/certificates, when it exists)")
	clientCA := fs.String("client-ca", "", "over HTTPS, log in browsers whose client certificate (or proxy) this trust `DIR` verifies, as the user -gridmap names")
	gridmap := fs.String("gridmap", "", "the grid-mapfile `FILE` that maps client certificates' DNs to users (with -client-ca)")
	dsn := fs.String("history", "", "the history `DSN`: a file, a postgres:// URL or off (default $"+hist.EnvDSN+", else the SQLite file under $XDG_DATA_HOME/ferry)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	if (*cert == "") != (*key == "") {
		return usagef("-cert and -key go together")
	}
	if (*clientCA == "") != (*gridmap == "") {
		return usagef("-client-ca and -gridmap go together")
	}
	if *clientCA != "" && *cert == "" {
		return usagef("client certificates need HTTPS: give -cert and -key")
	}
	if *passwd == "" && *clientCA == "" {
		return usagef("nobody could log in: give -passwd FILE (see ferry passwd), or -client-ca DIR and -gridmap FILE")
	}
	useTLS := *cert != ""
	if !useTLS && !*insecure && !loopbackListen(*listen) {
		return usagef("-listen %s is not a loopback address: give -cert and -key for HTTPS, or -insecure to serve plain HTTP to the network", *listen)
	}
	var pw *auth.Passwd
	if *passwd != "" {
		var err error
		if pw, err = auth.Load(*passwd); err != nil {
			return err
		}
	}
	var certUser func([]*x509.Certificate) (string, error)
	if *clientCA != "" {
		ts, err := gsi.LoadTrustDir(*clientCA)
		if err != nil {
			return err
		}
		gm, err := gsi.LoadGridMap(*gridmap)
		if err != nil {
			return err
		}
		certUser = func(chain []*x509.Certificate) (string, error) {
			id, err := ts.Verify(chain, time.Now())
			if err != nil {
				return "", err
			}
			users, ok := gm.Lookup(id.DN)
			if !ok || len(users) == 0 {
				return "", fmt.Errorf("%s is not in %s", id.DN, *gridmap)
			}
			return users[0], nil
		}
	}
	if *certDir == "" {
		if fi, err := os.Stat(gsi.TrustDir()); err == nil && fi.IsDir() {
			*certDir = gsi.TrustDir()
		}
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st := hist.OpenOrOff(ctx, hist.DSN(*dsn), log)
	defer st.Close()
	app, err := web.New(web.Config{Passwd: pw, CertUser: certUser, Roots: roots, History: st, Secure: useTLS, TrustDir: *certDir, Log: log})
	if err != nil {
		return err
	}
	defer app.Close()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if certUser != nil {
		// Asked for, checked by certUser (proxies included), never required.
		srv.TLSConfig = &tls.Config{ClientAuth: tls.RequestClientCert}
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	fmt.Fprintf(e.stderr, "ferry web: serving %s://%s/\n", scheme, l.Addr())
	done := make(chan error, 1)
	go func() {
		if useTLS {
			done <- srv.ServeTLS(l, *cert, *key)
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
