package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/dsi/null"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/dsi/privsep"
	"github.com/ferrygrid/ferry/dsi/s3"
	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/dpm"
	"github.com/ferrygrid/ferry/server"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run a GridFTP server",
		usage:   "[flags]",
		help:    serveHelp,
		run:     runServe,
	})
}

// serveHelp is the end of ferry serve -h (and of ferry-serve(1)).
const serveHelp = `
Signals: SIGTERM and SIGINT stop the server: it stops accepting, lets
running transfers finish for up to -shutdown-grace, and exits 0. SIGHUP
reopens the -transfer-log file, reads the -config file again and applies
its keys anonymous, anonymous-write, passwd, gridmap, cert, key (and a
striped server's movers), and reads the password file, the grid-mapfile,
the host credential and the trust directory with its CRLs again. New
logins follow the new files; logged-in sessions and their transfers carry
on. A file that cannot be used is refused with an error in the log and the
current one kept; a password file or grid-mapfile that was removed revokes
what it granted (a warning in the log). A trust directory whose CA lost
its CRL, or got an older one, is refused (dropping a CRL needs a restart).
Other keys need a restart; the log names those changed.
`

// serveFlags are the flags of ferry serve; -config files use the same keys.
type serveFlags struct {
	listen, root, storage, passwd, dataIface, portRange, logLevel, config string
	cert, key, gridmap                                                    string
	movers, moverSecret                                                   string
	metrics, transferLog                                                  string
	moverHeartbeat, moverTimeout                                          time.Duration
	anonymous, anonWrite, allowForeign, asUser, inPlace                   bool
	allowedModules, directIO                                              string
	moduleMaxBytes                                                        int64
	idle, stall                                                           time.Duration
	maxSessions, maxPerSource, moversMin                                  int
	shutdownGrace                                                         time.Duration
	keytab, krbMap, krbService                                            string // Kerberos (AUTH GSSAPI with krb5)
	s3                                                                    s3Flags
}

// s3Flags are the settings of -storage s3; unset ones come from the
// standard AWS variables (s3.ConfigFromEnv).
type s3Flags struct {
	endpoint, bucket, prefix, region, accessKey, secretKey string
	pathStyle                                              bool
	partSize, maxSpill                                     int64
}

// register adds the -s3-* flags to fs (ferry serve and ferry mover).
func (f *s3Flags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "s3-endpoint", "", "-storage s3: the store's `URL` (http://HOST:PORT or https://...; default: $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL)")
	fs.StringVar(&f.bucket, "s3-bucket", "", "-storage s3: the `BUCKET` served (it must exist)")
	fs.StringVar(&f.prefix, "s3-prefix", "", "-storage s3: serve only the keys under `PREFIX` (default: the whole bucket)")
	fs.StringVar(&f.region, "s3-region", "", "-storage s3: the bucket's `REGION` (default: $AWS_REGION, else $AWS_DEFAULT_REGION, else asked of the store)")
	fs.StringVar(&f.accessKey, "s3-access-key", "", "-storage s3: the access key `ID` (default: $AWS_ACCESS_KEY_ID); keep it and s3-secret-key in the -config file (ferry serve) or the environment, not on the command line")
	fs.StringVar(&f.secretKey, "s3-secret-key", "", "-storage s3: the secret `KEY` (default: $AWS_SECRET_ACCESS_KEY); best in the -config file (ferry serve) or the environment")
	fs.BoolVar(&f.pathStyle, "s3-path-style", false, "-storage s3: path-style requests (http://HOST/BUCKET/KEY), which most stores other than AWS want; default: the client's choice")
	fs.Int64Var(&f.maxSpill, "s3-max-spill", s3.DefaultMaxSpill, "-storage s3: the most `BYTES` all uploads together buffer in temporary files (parts not yet whole); a write past it fails")
	fs.Int64Var(&f.partSize, "s3-part-size", s3.DefaultPartSize, "-storage s3: multipart upload part `BYTES` (at least 5 MiB); MODE E blocks are buffered per part until it is whole")
}

// open opens the storage of -storage s3.
func (f *s3Flags) open(ctx context.Context) (*s3.FS, error) {
	s3cfg := s3.ConfigFromEnv(s3.Config{
		Endpoint: f.endpoint, Bucket: f.bucket, Prefix: f.prefix, Region: f.region,
		AccessKey: f.accessKey, SecretKey: f.secretKey, PathStyle: f.pathStyle, PartSize: f.partSize, MaxSpill: f.maxSpill,
	})
	switch {
	case s3cfg.Endpoint == "" && s3cfg.Bucket == "":
		return nil, usagef("-storage s3 needs -s3-endpoint URL (or $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL) and -s3-bucket NAME")
	case s3cfg.Endpoint == "":
		return nil, usagef("-storage s3 needs -s3-endpoint URL (or $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)")
	case s3cfg.Bucket == "":
		return nil, usagef("-storage s3 needs -s3-bucket NAME")
	}
	return s3.New(ctx, s3cfg)
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", ":2811", "control channel address `HOST:PORT` (port 0 picks a free port)")
	fs.StringVar(&f.root, "root", ".", "served `DIR` (posix storage)")
	fs.StringVar(&f.storage, "storage", "posix", "storage back-end `NAME`: posix, memory, null (paths like /1G read as zeros; writes are discarded), or s3 (a bucket of an S3 store: see -s3-endpoint)")
	f.s3.register(fs)
	fs.BoolVar(&f.anonymous, "anonymous", false, "allow anonymous logins (user anonymous or ftp), read-only")
	fs.BoolVar(&f.anonWrite, "anonymous-write", false, "let anonymous users write too")
	fs.StringVar(&f.passwd, "passwd", "", "password `FILE` written by 'ferry passwd'")
	fs.StringVar(&f.dataIface, "data-interface", "", "`ADDR` for data connections (default: the address the client connected to)")
	fs.StringVar(&f.portRange, "port-range", "", "passive data ports `LOW,HIGH` (default: $GLOBUS_TCP_PORT_RANGE, else any)")
	fs.DurationVar(&f.idle, "idle-timeout", 15*time.Minute, "close sessions idle this long (`DURATION`)")
	fs.DurationVar(&f.stall, "stall-timeout", 10*time.Minute, "fail a transfer whose data connections move nothing for this long (`DURATION`)")
	fs.IntVar(&f.maxSessions, "max-sessions", server.DefaultMaxSessions, "refuse sessions beyond `N` (421; 0: no limit)")
	fs.IntVar(&f.maxPerSource, "max-sessions-per-source", server.DefaultMaxSessionsPerSource, "refuse a client address more than `N` sessions at once (421; 0: no limit)")
	fs.StringVar(&f.allowedModules, "allowed-modules", "", "ERET/ESTO processing `MODULES` clients may use, comma-separated: "+strings.Join(dpm.Names(), ", ")+" (default: none; see docs/modules.md)")
	fs.Int64Var(&f.moduleMaxBytes, "module-max-bytes", dpm.DefaultMaxBytes, "the most `BYTES` an ERET/ESTO module chain produces (decompressed, unpacked or spooled); more fails the command")
	fs.StringVar(&f.directIO, "direct-io", "off", "posix storage: when uploads bypass the page cache (O_DIRECT, Linux; a file system that refuses it gets the page cache): `MODE` is off, auto (uploads from 256 MiB, announced by ALLO or written so far) or on (every upload)")
	fs.BoolVar(&f.inPlace, "upload-in-place", false, "write uploads straight into their target, as GCT does (default: a hidden part file, renamed over the target once complete)")
	fs.BoolVar(&f.allowForeign, "allow-foreign-data", false, "allow PORT/EPRT to hosts other than the client (disables FTP bounce protection)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `LEVEL`: debug, info, warn, error")
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM, how long (`DURATION`) running transfers may finish")
	fs.StringVar(&f.cert, "cert", "", "host certificate `FILE` for GSI (gsiftp://) and FTPS (default: $X509_USER_CERT, else /etc/grid-security/hostcert.pem if present)")
	fs.StringVar(&f.key, "key", "", "host key `FILE` (default: $X509_USER_KEY, else /etc/grid-security/hostkey.pem)")
	fs.StringVar(&f.gridmap, "gridmap", "", "grid-mapfile `FILE` mapping certificate DNs to accounts (default: $GRIDMAP, else /etc/grid-security/grid-mapfile); trusted CAs come from $X509_CERT_DIR, else /etc/grid-security/certificates")
	fs.StringVar(&f.keytab, "keytab", "", "Kerberos keytab `FILE` holding ftp/HOST@REALM: also accept AUTH GSSAPI with Kerberos 5 (data channels in clear, PROT C); without -krb-service a ticket for any ftp/HOST key in the keytab is accepted")
	fs.StringVar(&f.krbService, "krb-service", "", "the Kerberos service `PRINCIPAL` clients must hold a ticket for (ftp/host.example.org, or with @REALM); default: any ftp/HOST key in the -keytab")
	fs.StringVar(&f.krbMap, "krb-map", "", "`FILE` of 'PRINCIPAL ACCOUNT' lines mapping Kerberos principals to accounts (default: name@REALM of the server's realm maps to the local account name when its uid is at least UID_MIN and it has a login shell)")
	fs.BoolVar(&f.asUser, "run-as-mapped-user", true, "when running as root with posix storage, do a grid-mapped account's file operations as that local user (a helper process per account); mapping to root is refused. Off with -movers, and refused there")
	fs.StringVar(&f.movers, "movers", "", "striped server: data movers `HOST:PORT,...` (ferry mover), one stripe each, serving the same tree as -root; a transfer stripes over those up when it starts; with the list in -config, SIGHUP reloads it")
	fs.IntVar(&f.moversMin, "movers-min", 1, "striped server: refuse transfers (425 naming the movers down) while fewer than `N` movers are up")
	fs.StringVar(&f.moverSecret, "mover-secret", "", "`FILE` holding the shared secret of the movers (required with -movers)")
	fs.DurationVar(&f.moverHeartbeat, "mover-heartbeat", 2*time.Second, "how often (`DURATION`) the frontend and the movers ping each other")
	fs.DurationVar(&f.moverTimeout, "mover-timeout", 10*time.Second, "a mover silent this long (`DURATION`) is dead: its transfer fails")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (HOST:PORT; port 0 picks a free port)")
	fs.StringVar(&f.transferLog, "transfer-log", "", "append one JSON line per transfer (accounting: user, file, bytes, streams, code, rate...) to `FILE` (- for standard output); SIGHUP reopens it after a rotation")
	fs.StringVar(&f.config, "config", "", "config `FILE`: lines of 'key value' with the flag names as keys; flags given on the command line win")
}

func runServe(ctx context.Context, e *env, args []string) error {
	var f serveFlags
	fs := newFlagSet(commands["serve"], e)
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	moversOnCommandLine := false
	fs.Visit(func(fl *flag.Flag) { moversOnCommandLine = moversOnCommandLine || fl.Name == "movers" })
	if f.config != "" {
		if err := applyConfigFile(fs, f.config); err != nil {
			return err
		}
	}
	cfg, err := f.serverConfig(e)
	if err != nil {
		return err
	}
	asUserSet := false
	fs.Visit(func(fl *flag.Flag) { asUserSet = asUserSet || fl.Name == "run-as-mapped-user" })
	if f.movers != "" && f.asUser {
		// The movers open files as themselves: per-user storage on the
		// frontend alone would check access as one identity and move the
		// data as another.
		if asUserSet {
			return usagef("-movers cannot be used with -run-as-mapped-user: the movers do not act as the mapped user; pass -run-as-mapped-user=false")
		}
		f.asUser = false
		// Only a server with a host credential has grid-mapped accounts.
		if f.storage == "posix" && os.Geteuid() == 0 && cfg.HostCert != "" {
			cfg.Logger.Warn("striped server: grid-mapped accounts are served with the server's and the movers' own identity (-run-as-mapped-user is off with -movers)")
		}
	}
	// Without per-user helpers, a server running as root serves mapped
	// accounts as root only when told to (-run-as-mapped-user=false, or
	// -movers), or when its storage is not the host's files; the library
	// refuses them otherwise.
	cfg.ServeMappedAsServer = !f.asUser || f.storage != "posix"
	obs, err := newServeObservers(f.metrics, f.transferLog, e.stdout, cfg.Logger)
	if err != nil {
		return err
	}
	defer obs.close()
	cfg.Observers = obs.observers
	var helpers *userHelpers
	if f.asUser && f.storage == "posix" && os.Geteuid() == 0 {
		root, _ := filepath.Abs(f.root)
		helpers = &userHelpers{root: root, log: cfg.Logger, started: obs.privsep(func() int { return helpers.count() })}
		defer helpers.close()
		cfg.UserStorage = helpers.storage
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	stopObs, err := obs.start(srv, f.metrics, e.stdout, cfg.Logger)
	if err != nil {
		return err
	}
	defer stopObs()
	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	// One SIGHUP handler for everything that reloads.
	rl := &reloader{args: args, cur: f, values: flagValues(fs), moversFromFlag: moversOnCommandLine, srv: srv, obs: obs, log: cfg.Logger, authenticate: cfg.Authenticate}
	defer rl.onHangup()()
	fmt.Fprintf(e.stdout, "Server listening at %s\n", l.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	cfg.Logger.Info("shutting down", "grace", f.shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownGrace)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-errc; !errors.Is(err, server.ErrServerClosed) {
		return err
	}
	return nil
}

func (f *serveFlags) serverConfig(e *env) (server.Config, error) {
	var cfg server.Config
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return cfg, usagef("bad -log-level %q", f.logLevel)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	switch f.storage {
	case "posix":
		root, err := filepath.Abs(f.root)
		if err != nil {
			return cfg, err
		}
		dio, err := posix.ParseDirectIO(f.directIO)
		if err != nil {
			return cfg, usagef("bad -direct-io %q: want off, auto or on", f.directIO)
		}
		st, err := posix.NewWithOptions(root, posix.Options{DirectIO: dio})
		if err != nil {
			return cfg, err
		}
		cfg.Storage = st
	case "memory":
		cfg.Storage = memory.New()
	case "null":
		cfg.Storage = null.New()
	case "s3":
		// With -movers, every mover serves the same bucket (ferry
		// mover -storage s3): they write one multipart upload that
		// this frontend starts and completes (internal/stripe/s3.go).
		st, err := f.s3.open(context.Background())
		if err != nil {
			return cfg, err
		}
		cfg.Storage = st
	default:
		return cfg, usagef("unknown -storage %q (posix, memory, null, s3)", f.storage)
	}
	cfg.Anonymous, cfg.AnonymousWrite = f.anonymous || f.anonWrite, f.anonWrite
	if f.passwd != "" {
		pw, err := auth.Load(f.passwd)
		if err != nil {
			return cfg, err
		}
		cfg.Authenticate = passwdAuthenticate(pw)
		for _, u := range pw.Users() {
			if u.Home == "/" {
				continue
			}
			if fi, err := cfg.Storage.Stat(context.Background(), u.Home); err != nil || !fi.IsDir() {
				cfg.Logger.Warn("a password user's home is not a directory of the served tree: that user cannot log in", "user", u.Name, "home", u.Home)
			}
		}
	}
	cfg.HostCert, cfg.HostKey = hostCredentialFiles(f.cert, f.key)
	cfg.GridMap = f.gridmap
	cfg.Keytab, cfg.KrbMap, cfg.KrbService = f.keytab, f.krbMap, f.krbService
	if !cfg.Anonymous && cfg.Authenticate == nil && cfg.HostCert == "" && cfg.Keytab == "" {
		return cfg, usagef("nobody could log in: give -anonymous, -passwd FILE, a host credential (-cert/-key) for GSI, or -keytab for Kerberos")
	}
	if f.dataIface != "" {
		a, err := netip.ParseAddr(f.dataIface)
		if err != nil {
			return cfg, usagef("bad -data-interface: %v", err)
		}
		cfg.DataInterface = a
	}
	pr := f.portRange
	if pr == "" {
		pr = os.Getenv("GLOBUS_TCP_PORT_RANGE")
	}
	if pr != "" {
		lo, hi, err := parsePortRange(pr)
		if err != nil {
			return cfg, usagef("bad port range %q: %v", pr, err)
		}
		cfg.PortLow, cfg.PortHigh = lo, hi
	}
	cfg.IdleTimeout = f.idle
	cfg.StallTimeout = f.stall
	cfg.MaxSessions = noLimit(f.maxSessions)
	cfg.MaxSessionsPerSource = noLimit(f.maxPerSource)
	cfg.AllowForeignDataAddress = f.allowForeign
	cfg.UploadInPlace = f.inPlace
	if f.moduleMaxBytes <= 0 {
		return cfg, usagef("-module-max-bytes must be positive")
	}
	cfg.ModuleMaxBytes = f.moduleMaxBytes
	for _, m := range strings.Split(f.allowedModules, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if _, known := dpm.Lookup(m); !known {
			return cfg, usagef("-allowed-modules: unknown module %q (known: %s)", m, strings.Join(dpm.Names(), ", "))
		}
		cfg.AllowedModules = append(cfg.AllowedModules, m)
	}
	if f.movers != "" {
		var err error
		if cfg.Movers, err = parseMovers(f.movers); err != nil {
			return cfg, usagef("%v", err)
		}
		secret, err := readSecret(f.moverSecret)
		if err != nil {
			return cfg, err
		}
		cfg.MoverSecret = secret
		cfg.MoverHeartbeat, cfg.MoverTimeout = f.moverHeartbeat, f.moverTimeout
		if f.moversMin < 1 {
			return cfg, usagef("-movers-min must be at least 1")
		}
		cfg.MinMovers = f.moversMin
	}
	return cfg, nil
}

// noLimit maps a flag's 0 ("no limit") to server.Config's negative.
func noLimit(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// parseMovers splits a -movers list into its HOST:PORT entries.
func parseMovers(list string) ([]string, error) {
	var movers []string
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m != "" {
			if _, _, err := net.SplitHostPort(m); err != nil {
				return nil, fmt.Errorf("bad -movers entry %q: %v", m, err)
			}
			movers = append(movers, m)
		}
	}
	return movers, nil
}

// passwdAuthenticate is the server's password check over a password file.
func passwdAuthenticate(pw *auth.Passwd) func(ctx context.Context, user, pass string) (*server.Account, error) {
	return func(ctx context.Context, user, pass string) (*server.Account, error) {
		u, good := pw.Verify(user, pass)
		if !good {
			return nil, server.ErrLoginDenied
		}
		return &server.Account{Name: u.Name, Home: u.Home, Writable: true}, nil
	}
}

// helperStartTimeout bounds a privsep helper's start (exec and hello): a
// helper that does not answer by then (stopped by its own account, say)
// fails that login only.
var helperStartTimeout = 2 * time.Second

// helperFS is a running privsep helper's storage (*privsep.FS).
type helperFS interface {
	dsi.Storage
	// Err is nil while the helper runs, and why it ended afterwards.
	Err() error
	Close() error
}

// userHelpers runs one privilege-separated storage helper per local account
// (dsi/privsep), shared by that account's sessions. Accounts never wait for
// each other: mu guards the map only, briefly, and a helper is started
// holding its own account's slot alone.
type userHelpers struct {
	root    string
	log     *slog.Logger
	started func(err error) // told of each helper start, when not nil
	// start starts an account's helper; nil means privsep.Start.
	start func(ctx context.Context, exe, root, account string) (helperFS, error)

	mu    sync.Mutex
	slots map[string]*helperSlot // guarded by mu
}

// helperSlot is one account's helper.
type helperSlot struct {
	lock chan struct{}            // a token: held while the account's helper is (re)started
	fs   atomic.Pointer[helperFS] // the running helper; nil before the first start
}

// count is how many helpers run.
func (h *userHelpers) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.slots {
		if f := s.fs.Load(); f != nil && (*f).Err() == nil {
			n++
		}
	}
	return n
}

// slot returns the account's slot, adding it when new.
func (h *userHelpers) slot(name string) *helperSlot {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.slots == nil {
		h.slots = map[string]*helperSlot{}
	}
	s := h.slots[name]
	if s == nil {
		s = &helperSlot{lock: make(chan struct{}, 1)}
		h.slots[name] = s
	}
	return s
}

func (h *userHelpers) storage(ctx context.Context, name string) (dsi.Storage, error) {
	u, err := user.Lookup(name)
	if err != nil {
		// A typo in the grid-mapfile must not become root access.
		return nil, fmt.Errorf("mapped account %q is not a user of this host", name)
	}
	if u.Uid == "0" {
		return nil, fmt.Errorf("mapping to %s (uid 0) is refused", name)
	}
	s := h.slot(name)
	if f := s.fs.Load(); f != nil && (*f).Err() == nil {
		return *f, nil
	}
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-s.lock }()
	if f := s.fs.Load(); f != nil {
		err := (*f).Err()
		if err == nil {
			return *f, nil // started meanwhile by another login
		}
		// A helper that died (killed, crashed) is replaced at the
		// account's next login; the sessions it served have failed.
		h.log.Warn("privsep helper ended; starting a new one", "account", name, "err", err)
		(*f).Close()
		s.fs.Store(nil)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	start := h.start
	if start == nil {
		start = func(ctx context.Context, exe, root, account string) (helperFS, error) {
			return privsep.Start(ctx, exe, root, account)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, helperStartTimeout)
	defer cancel()
	f, err := start(sctx, exe, h.root, name)
	if h.started != nil {
		h.started(err)
	}
	if err != nil {
		return nil, err
	}
	s.fs.Store(&f)
	return f, nil
}

func (h *userHelpers) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.slots {
		if f := s.fs.Load(); f != nil {
			(*f).Close()
		}
	}
}

// hostCredentialFiles finds the host credential as GCT does: the flags, else
// $X509_USER_CERT/$X509_USER_KEY, else /etc/grid-security/host{cert,key}.pem
// when present. No credential means no GSI and no FTPS.
func hostCredentialFiles(cert, key string) (string, string) {
	switch {
	case cert != "" || key != "":
		if key == "" {
			key = cert
		}
		return cert, key
	case os.Getenv("X509_USER_CERT") != "" && os.Getenv("X509_USER_KEY") != "":
		return os.Getenv("X509_USER_CERT"), os.Getenv("X509_USER_KEY")
	}
	const c, k = "/etc/grid-security/hostcert.pem", "/etc/grid-security/hostkey.pem"
	if _, err := os.Stat(c); err == nil {
		return c, k
	}
	return "", ""
}

// parsePortRange reads "LOW,HIGH" (GCT's GLOBUS_TCP_PORT_RANGE form; a space also separates).
func parsePortRange(s string) (uint16, uint16, error) {
	a, b, found := strings.Cut(strings.TrimSpace(s), ",")
	if !found {
		a, b, found = strings.Cut(strings.TrimSpace(s), " ")
	}
	if !found {
		return 0, 0, errors.New("want LOW,HIGH")
	}
	lo, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	hi, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if err1 != nil || err2 != nil || lo == 0 || lo > hi {
		return 0, 0, errors.New("want 1 <= LOW <= HIGH <= 65535")
	}
	return uint16(lo), uint16(hi), nil
}

// applyConfigFile sets each "key value" line of file as the flag named key,
// unless that flag was given on the command line. Spaces and tabs separate
// the key from the value, with an optional '=' ("key = value"); '#' starts
// a comment line. Every key needs a value: a boolean one too ("anonymous
// true"), so that a line cut short ("anonymous" of "anonymous false")
// cannot turn a setting on. A file whose last line does not end with a
// newline is refused whole: it may have been read while being written, and
// a missing line (a gridmap, cert or key) would fall back to the defaults.
func applyConfigFile(fs *flag.FlagSet, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return fmt.Errorf("%s: the last line does not end with a newline: refused as possibly written halfway (end the file with a newline)", file)
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value := line, ""
		if i := strings.IndexAny(line, " \t="); i >= 0 {
			key, value = line[:i], strings.TrimSpace(line[i:])
		}
		value = strings.TrimSpace(strings.TrimPrefix(value, "="))
		fl := fs.Lookup(key)
		if key == "config" || fl == nil {
			return fmt.Errorf("%s:%d: unknown key %q", file, n, key)
		}
		if value == "" {
			if b, isBool := fl.Value.(interface{ IsBoolFlag() bool }); isBool && b.IsBoolFlag() {
				return fmt.Errorf("%s:%d: %s needs a value: write %q or %q", file, n, key, key+" true", key+" false")
			}
			return fmt.Errorf("%s:%d: %s needs a value", file, n, key)
		}
		if given[key] {
			continue
		}
		if err := fs.Set(key, strings.Trim(value, `"`)); err != nil {
			return fmt.Errorf("%s:%d: %s: %v", file, n, key, err)
		}
	}
	return sc.Err()
}
