package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/dsi/null"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/metrics"
	"github.com/ferrygrid/ferry/internal/stripe"
)

func init() {
	register(&command{
		name:    "mover",
		summary: "run a data mover (data node) of a striped server",
		usage:   "[flags]",
		run:     runMover,
	})
}

func runMover(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["mover"], e)
	listen := fs.String("listen", ":2812", "address `HOST:PORT` the frontend (ferry serve -movers) connects to")
	root := fs.String("root", ".", "served `DIR` (posix storage): the same tree as the frontend's, e.g. a shared file system")
	storage := fs.String("storage", "posix", "storage back-end `NAME`: posix, memory, null, or s3 (the frontend's bucket: the same -s3-* settings as its own; docs/storage-s3.md)")
	var s3f s3Flags
	s3f.register(fs)
	secretFile := fs.String("secret", "", "`FILE` holding the shared secret (the frontend's -mover-secret)")
	dataIface := fs.String("data-interface", "", "`ADDR` for data connections (default: the address the frontend connected to)")
	portRange := fs.String("port-range", "", "passive data ports `LOW,HIGH` (default: $GLOBUS_TCP_PORT_RANGE, else any)")
	heartbeat := fs.Duration("heartbeat", 2*time.Second, "how often (`DURATION`) to ping the frontend")
	timeout := fs.Duration("timeout", 10*time.Second, "a frontend silent this long (`DURATION`) is gone: its transfer stops")
	logLevel := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn, error")
	certFile := fs.String("cert", "", "host certificate `FILE` for secured data channels of sessions without a delegated proxy (default: $X509_USER_CERT, else /etc/grid-security/hostcert.pem if present)")
	keyFile := fs.String("key", "", "host key `FILE` (default: $X509_USER_KEY, else /etc/grid-security/hostkey.pem)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (HOST:PORT; port 0 picks a free port)")
	caDir := fs.String("ca-dir", "", "trusted CA `DIR` for secured data channels (DCAU) of GSI sessions (default: $X509_CERT_DIR, else /etc/grid-security/certificates, if it exists)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("bad -log-level %q", *logLevel)
	}
	secret, err := readSecret(*secretFile)
	if err != nil {
		return err
	}
	m := &stripe.Mover{
		Secret:           secret,
		Heartbeat:        *heartbeat,
		HeartbeatTimeout: *timeout,
		Logger:           slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level})),
	}
	switch *storage {
	case "posix":
		dir, err := filepath.Abs(*root)
		if err != nil {
			return err
		}
		if m.Storage, err = posix.New(dir); err != nil {
			return err
		}
	case "memory":
		m.Storage = memory.New()
	case "null":
		m.Storage = null.New()
	case "s3":
		if m.Storage, err = s3f.open(ctx); err != nil {
			return err
		}
	default:
		return usagef("unknown -storage %q (posix, memory, null, s3)", *storage)
	}
	dir := *caDir
	if dir == "" {
		dir = gsi.TrustDir()
	}
	if _, err := os.Stat(dir); err == nil || *caDir != "" {
		if m.Trust, err = gsi.LoadTrustDir(dir); err != nil {
			return err
		}
	}
	cred, source, err := gsi.FindHostCredential(*certFile, *keyFile)
	switch {
	case err == nil:
		c := cred.TLSCertificate()
		m.Certificate = &c
		m.Logger.Info("host credential", "identity", cred.Identity(), "from", source)
	case *certFile != "" || !errors.Is(err, gsi.ErrNoCredential):
		return err
	case m.Trust != nil:
		// A trust directory means GSI sessions are expected: say what
		// they will lack. Otherwise nothing needs a credential.
		m.Logger.Info("no host credential: secured data channels need a delegated proxy", "err", err)
	default:
		m.Logger.Debug("no host credential", "err", err)
	}
	if *dataIface != "" {
		if m.DataIP, err = netip.ParseAddr(*dataIface); err != nil {
			return usagef("bad -data-interface: %v", err)
		}
	}
	pr := *portRange
	if pr == "" {
		pr = os.Getenv("GLOBUS_TCP_PORT_RANGE")
	}
	if pr != "" {
		if m.PortLow, m.PortHigh, err = parsePortRange(pr); err != nil {
			return usagef("bad port range %q: %v", pr, err)
		}
	}
	stopMetrics, err := moverMetrics(*metricsAddr, m, e.stdout)
	if err != nil {
		return err
	}
	defer stopMetrics()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Mover listening at %s\n", l.Addr())
	errc := make(chan error, 1)
	go func() { errc <- m.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.Shutdown(sctx)
	if err := <-errc; !errors.Is(err, stripe.ErrMoverClosed) {
		return err
	}
	return nil
}

// moverMetrics serves the mover's metrics at addr (-metrics), unless addr
// is empty; stop ends that.
func moverMetrics(addr string, m *stripe.Mover, out io.Writer) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	reg := metrics.NewRegistry()
	m.Observe = metrics.NewTransfers(reg).Observe
	ep, err := startMetrics(addr, reg, out, m.Logger)
	if err != nil {
		return nil, err
	}
	return func() {
		if err := ep.stop(); err != nil {
			m.Logger.Warn("metrics endpoint", "err", err)
		}
	}, nil
}

// readSecret reads a shared-secret file: its content, surrounding white
// space removed; at least 16 bytes, and not readable by others.
func readSecret(file string) ([]byte, error) {
	if file == "" {
		return nil, usagef("give the shared secret of the frontend and its movers with -mover-secret (serve) or -secret (mover)")
	}
	fi, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: the secret file must not be readable by others (chmod 600)", file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < 16 {
		return nil, fmt.Errorf("%s: the secret must be at least 16 bytes (e.g. head -c 32 /dev/urandom | base64 > %s)", file, file)
	}
	return b, nil
}
