// Package server is Ferry's embeddable GridFTP server: give it a Config with
// a storage back-end, call Serve with a listener, stop it with Shutdown. It
// follows the net/http server shape.
//
// Inside, each control connection is a session of the protocol interpreter
// (internal/pi) with its own data mover (internal/dtp) over the configured
// storage (package dsi):
//
//	client ──control──▶ PI (session) ──DTP interface──▶ DTP ──▶ DSI storage
//	       ◀──data──────────────────────────────────────┘
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/user"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/stripe"
	"github.com/ferrygrid/ferry/internal/version"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// Account is what Authenticate grants a user.
type Account struct {
	// Name is the account's name (logs, SITE WHOAMI).
	Name string
	// Home is a directory of Config.Storage that becomes the user's root;
	// "" or "/" means all of it. It must exist.
	Home string
	// Writable permits changes; otherwise the account is read-only.
	Writable bool
	// LocalUser is the local account whose permissions the session's file
	// operations should carry ("" for virtual accounts, such as password
	// users). Config.UserStorage decides what that means.
	LocalUser string
}

// ErrLoginDenied is what Authenticate returns for bad credentials.
var ErrLoginDenied = errors.New("server: login denied")

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("server: closed")

// authBurst and authPerSecond bound how often one source starts AUTH
// (TLS or GSI handshakes): enough for a client opening many sessions at
// once, far below what would keep a core busy with signatures.
const (
	authBurst     = 64
	authPerSecond = 10
)

// Defaults of the Config limits.
const (
	DefaultMaxSessions          = 1000
	DefaultMaxSessionsPerSource = 100
	DefaultMaxHandshakes        = 32
)

// Config configures a Server. Only Storage is required; every other zero
// value is a working default.
type Config struct {
	// Storage is the served tree.
	Storage dsi.Storage
	// Anonymous allows logins as "anonymous" or "ftp" with any password,
	// read-only unless AnonymousWrite is set.
	Anonymous, AnonymousWrite bool
	// Authenticate checks other users; nil means only anonymous logins.
	// It returns ErrLoginDenied for bad credentials.
	Authenticate func(ctx context.Context, user, password string) (*Account, error)

	// HostCert and HostKey name the server's X.509 credential (PEM files).
	// With it the server offers AUTH GSSAPI (GSI, gsiftp://) and AUTH TLS
	// (FTPS), and refuses password logins on an unprotected control channel.
	HostCert, HostKey string
	// TrustDir is the CA directory (GCT layout: <hash>.0, .signing_policy,
	// .r0) that verifies GSI peers and client certificates; "" means
	// $X509_CERT_DIR, else /etc/grid-security/certificates.
	TrustDir string
	// GridMap is the grid-mapfile mapping certificate DNs to accounts; ""
	// means $GRIDMAP, else /etc/grid-security/grid-mapfile.
	GridMap string
	// AuthorizeCert maps a verified certificate identity (the end-entity
	// DN) and the user name the client asked for (":globus-mapping:" means
	// "map me") to an account; nil uses the grid-mapfile, granting the
	// mapped account the whole tree, writable. It returns ErrLoginDenied to refuse.
	AuthorizeCert func(ctx context.Context, dn, user string) (*Account, error)
	// Keytab, when set, is the keytab of the service principal
	// ftp/HOST@REALM: the server then also accepts AUTH GSSAPI with the
	// Kerberos 5 mechanism (kerberos.go). KrbMap is the file mapping
	// principals to accounts ("PRINCIPAL ACCOUNT" lines); "" maps only
	// name@REALM of the server's realm to the local account name (see
	// kerberos.go for which accounts).
	Keytab, KrbMap string
	// KrbService pins the service principal clients must hold a ticket
	// for, "ftp/host.example.org" or "ftp/host.example.org@REALM"; the
	// keytab must hold its key. "" accepts a ticket for any ftp/HOST
	// principal whose key is in the keytab.
	KrbService string
	// DataInterface is the address data connections use; invalid means the
	// address the client reached the control channel on.
	DataInterface netip.Addr
	// PortLow and PortHigh bound passive data ports; 0,0 means any.
	PortLow, PortHigh uint16
	// IdleTimeout closes idle sessions with 421; 0 means 15 minutes.
	IdleTimeout time.Duration
	// StallTimeout fails a transfer whose data connections move no byte
	// for this long; 0 means 10 minutes, negative means never.
	StallTimeout time.Duration
	// MaxSessions refuses sessions beyond this many with 421; 0 means
	// DefaultMaxSessions, negative means no limit.
	MaxSessions int
	// MaxSessionsPerSource refuses a client address more sessions than
	// this at once (421); 0 means DefaultMaxSessionsPerSource, negative
	// means no limit.
	MaxSessionsPerSource int
	// MaxHandshakes bounds the GSI handshake work in progress (each ADAT
	// step, not the client's time between them), an eighth of it for one
	// source; beyond it ADAT gets 431. 0 means DefaultMaxHandshakes.
	MaxHandshakes int
	// MaxPasswordChecks bounds the Authenticate calls running at once,
	// and MaxPasswordChecksPerSource those for one client address (others
	// wait their turn): password hashing is made to be slow, and must not
	// become a lever on the CPU. 0 means the number of CPUs and 1.
	MaxPasswordChecks, MaxPasswordChecksPerSource int
	// LoginFailureDelay is how long a failed login waits before its 530
	// reply (the third failure in a session also closes it); 0 means 1s,
	// negative means none.
	LoginFailureDelay time.Duration
	// LoginTimeout closes a session that has not logged in this long after
	// it connected (421), whatever it sends meanwhile; 0 means 60s. A full
	// server also closes the session that waits to log in from the source
	// with the most of them, to admit a new one.
	LoginTimeout time.Duration
	// AllowForeignDataAddress disables FTP bounce protection (RFC 2577):
	// PORT/EPRT may then name hosts other than the client.
	AllowForeignDataAddress bool
	// UploadInPlace makes STOR write straight into its target (as GCT
	// does). Off, an upload goes to a hidden part file beside the target,
	// renamed over it once complete, so that an interrupted upload never
	// looks complete and never spoils the file it would replace.
	UploadInPlace bool
	// AllowedModules names the ERET/ESTO processing modules clients may
	// use (package internal/dpm: gzip, zstd, tar, cat, cksum); nil
	// allows none.
	AllowedModules []string
	// ModuleMaxBytes bounds the bytes a module chain produces (ESTO:
	// written after decompressing or unpacking; ERET: spooled); zero
	// means 64 GiB.
	ModuleMaxBytes int64
	// Banner replaces the 220 greeting text.
	Banner string
	// UserStorage, when set, gives the storage for an account with a
	// LocalUser, e.g. one whose operations run as that user (dsi/privsep,
	// when the server runs as root). An error, or a nil storage, refuses
	// the login. It is called only for accounts that exist on this host
	// and are not uid 0.
	UserStorage func(ctx context.Context, localUser string) (dsi.Storage, error)
	// ServeMappedAsServer lets a server running as root without
	// UserStorage serve accounts with a LocalUser (grid-mapped ones) with
	// its own identity, root. Off, such logins are refused: a mapping
	// must never silently become root access. Whatever it says, mapped
	// accounts must exist on the host when the server runs as root, and
	// mappings to uid 0 are refused.
	ServeMappedAsServer bool
	// Movers makes the server a striped frontend (not with UserStorage:
	// the movers do not act as the mapped user): the data of every
	// transfer moves through these data movers ("host:port" of ferry mover),
	// one stripe each, which must serve the same tree as Storage (a shared
	// file system). A transfer stripes over the movers that are up when
	// its data channel is set up: SPAS answers one address per such mover;
	// PASV, EPSV and stream mode use the first. SetMovers changes the list
	// while the server runs.
	Movers []string
	// MinMovers is how many movers must be up for a transfer to start; 0
	// means 1. len(Movers) makes any mover that is down an error (425
	// naming it) rather than a slower transfer over the others.
	MinMovers int
	// MoverSecret is the shared secret the movers and the frontend prove to
	// each other. Required with Movers.
	MoverSecret []byte
	// MoverHeartbeat is how often the frontend and the movers ping each
	// other; MoverTimeout how long a silent mover lives before its transfer
	// fails. Zero means 2s and five heartbeats.
	MoverHeartbeat, MoverTimeout time.Duration
	// Observers are told of sessions, logins, replies, handshakes and
	// transfers, for metrics and accounting (see Observer); none by
	// default.
	Observers []Observer
	// Logger receives server and session events; nil discards.
	Logger *slog.Logger
}

// Server is a GridFTP server. Create it with New.
type Server struct {
	cfg    Config
	pi     pi.Config
	log    *slog.Logger
	movers *stripe.Pool // nil unless striped
	obs    Observer     // nil when Config.Observers is empty

	ctx    context.Context // cancelled by Shutdown: sessions end after their command
	cancel context.CancelFunc
	abort  context.CancelFunc // cancels pi.Config.Abort: running transfers stop (426, then 421)

	passwords *checkLimiter // bounds concurrent Authenticate calls

	// policy decides logins; Reload replaces it (under reloadMu), each
	// new session and each login reads it.
	policy   atomic.Pointer[loginPolicy]
	reloadMu sync.Mutex

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]*connState
	perSource map[netip.Prefix]int // open sessions per source (xfer.Source); guarded by mu
	closed    bool
	wg        sync.WaitGroup // one per session
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Storage == nil {
		return nil, errors.New("server: Config.Storage is required")
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]*connState{},
		perSource: map[netip.Prefix]int{},
		passwords: newCheckLimiter(cmp.Or(cfg.MaxPasswordChecks, runtime.NumCPU()), cmp.Or(cfg.MaxPasswordChecksPerSource, 1)),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Observers) > 0 {
		s.obs = observers(slices.Clone(cfg.Observers))
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	abortCtx, abort := context.WithCancel(context.Background())
	s.abort = abort
	banner := cfg.Banner
	if banner == "" {
		host, _ := os.Hostname()
		banner = fmt.Sprintf("%s Ferry GridFTP Server %s ready.", host, version.Version)
	}
	sec, err := cfg.security()
	if err != nil {
		return nil, err
	}
	if len(cfg.Movers) > 0 && cfg.UserStorage != nil {
		// The frontend would check access as the user, the movers would
		// open the files as themselves.
		return nil, errors.New("server: Config.Movers cannot be used with Config.UserStorage: the movers do not act as the mapped user")
	}
	if len(cfg.Movers) > 0 {
		s.movers, err = stripe.NewPool(stripe.PoolConfig{
			Movers:           cfg.Movers,
			Secret:           cfg.MoverSecret,
			Heartbeat:        cfg.MoverHeartbeat,
			HeartbeatTimeout: cfg.MoverTimeout,
			MinUp:            cfg.MinMovers,
			Logger:           s.log,
		})
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if sec != nil {
		sec.Admit = s.admit
	}
	s.policy.Store(newPolicy(&cfg, sec))
	if p := s.policy.Load(); p.gridMapErr != nil {
		s.log.Warn("grid-mapfile not loaded: certificate logins are refused until it can be read (each login tries again)", "file", p.gridMapPath, "err", p.gridMapErr)
	}
	handshakes := cmp.Or(cfg.MaxHandshakes, DefaultMaxHandshakes)
	s.pi = pi.Config{
		Banner:                  banner,
		Version:                 "Ferry " + version.Version,
		Login:                   s.login,
		NewDTP:                  s.newDTP,
		IdleTimeout:             cfg.IdleTimeout,
		AllowForeignDataAddress: cfg.AllowForeignDataAddress,
		Handshakes:              pi.NewSlots(handshakes, max(handshakes/8, 1)),
		LoginFailureDelay:       cfg.LoginFailureDelay,
		LoginTimeout:            cfg.LoginTimeout,
		AuthRate:                pi.NewRate(authBurst, authPerSecond),
		OnLogin:                 s.loggedIn,
		OnLoginStep:             s.loginStep,
		UploadInPlace:           cfg.UploadInPlace,
		AllowedModules:          cfg.AllowedModules,
		ModuleMaxBytes:          cfg.ModuleMaxBytes,
		Uploads:                 &pi.Uploads{},
		Abort:                   abortCtx,
		Logger:                  s.log,
	}
	if s.obs != nil {
		s.pi.Observer = s.obs
	}
	return s, nil
}

// loginMethod is how a login request is to be checked.
type loginMethod int

const (
	denyLogin loginMethod = iota
	anonymousLogin
	passwordLogin
	certificateLogin
	kerberosLogin
)

// authorize is the one decision of which check, if any, a login request
// may pass through. It denies unless a rule allows; the order of the
// cases is the policy:
//   - anonymous names log in anonymously when the server allows it, and
//     so does ":globus-mapping:" without a certificate identity (as GCT);
//   - an identity proved on this (protected) channel is mapped to an
//     account, unless the client clearly asked for a password login;
//   - passwords need the Authenticate hook, and a protected channel on a
//     server that has a host credential (so that they never cross in
//     clear where protection is on offer).
func (p *loginPolicy) authorize(req pi.LoginRequest) (loginMethod, error) {
	anonName := req.User == "anonymous" || req.User == "ftp"
	mapMe := req.User == ":globus-mapping:"
	switch {
	case req.Principal != "":
		// A Kerberos session logs in as its principal's account or not
		// at all: never anonymously, never by password.
		if err := kerberosLoginAllowed(req); err != nil {
			return denyLogin, err
		}
		return kerberosLogin, nil
	case req.Mechanism == "krb5":
		return denyLogin, fmt.Errorf("%w: a Kerberos session without a principal", pi.ErrLoginDenied)
	case anonName && p.anonymous:
		return anonymousLogin, nil
	case mapMe && req.Identity == nil && p.anonymous:
		// GCT clients send it by default; without a certificate, GCT's
		// server takes it as an anonymous name.
		return anonymousLogin, nil
	case req.Identity != nil && req.Protected && (mapMe || req.Password == "" || p.authenticate == nil):
		return certificateLogin, nil
	case req.Identity != nil && !req.Protected:
		// Cannot happen through the PI; refuse rather than trust it.
		return denyLogin, fmt.Errorf("%w: an identity on an unprotected channel", pi.ErrLoginDenied)
	case mapMe:
		return denyLogin, fmt.Errorf("%w: no certificate identity to map", pi.ErrLoginDenied)
	case p.authenticate == nil:
		return denyLogin, fmt.Errorf("%w: no password logins on this server", pi.ErrLoginDenied)
	case p.sec != nil && !req.Protected:
		return denyLogin, pi.ErrProtectionRequired
	}
	return passwordLogin, nil
}

// login is pi.Config.Login: it checks a login request, and tells the
// observers of a refusal.
func (s *Server) login(ctx context.Context, req pi.LoginRequest) (*pi.Account, error) {
	p := s.policy.Load()
	method, err := p.authorize(req)
	if err == nil && method == certificateLogin {
		err = p.recheckIdentity(req.Identity)
	}
	if err == nil {
		var acct *pi.Account
		if acct, err = s.loginAs(ctx, p, req, method); err == nil {
			acct.Auth = authLabel(req, method)
			return acct, nil
		}
	}
	if s.obs != nil {
		s.obs.LoginRefused(authLabel(req, method))
	}
	return nil, err
}

// loginAs checks a login request that authorize let through as method.
func (s *Server) loginAs(ctx context.Context, p *loginPolicy, req pi.LoginRequest, method loginMethod) (*pi.Account, error) {
	var err error
	var a *Account
	switch method {
	case anonymousLogin:
		a = &Account{Name: "anonymous", Writable: p.anonymousWrite}
	case certificateLogin:
		a, err = p.authorizeCertificate(ctx, req.Identity.DN, req.User)
	case kerberosLogin:
		a, err = s.authorizePrincipal(ctx, req.Principal, req.Service, req.User)
	case passwordLogin:
		var release func()
		if release, err = s.passwords.acquire(ctx, req.Remote); err == nil {
			a, err = p.authenticate(ctx, req.User, req.Password)
			release()
		}
	default:
		return nil, pi.ErrLoginDenied
	}
	if errors.Is(err, ErrLoginDenied) {
		return nil, fmt.Errorf("%w: %v", pi.ErrLoginDenied, err)
	}
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("%w: the login hook granted no account", pi.ErrLoginDenied)
	}
	base := s.cfg.Storage
	if a.LocalUser != "" {
		if base, err = s.userStorage(ctx, a.LocalUser); err != nil {
			return nil, err
		}
	}
	st, err := dsi.Sub(base, a.Home)
	if err != nil {
		return nil, fmt.Errorf("%w: home %q of %s: %v", pi.ErrHomeUnavailable, a.Home, a.Name, err)
	}
	if fi, err := st.Stat(ctx, "/"); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: home %q of %s is not a directory: %v", pi.ErrHomeUnavailable, a.Home, a.Name, err)
	}
	if !a.Writable {
		st = dsi.ReadOnly(st)
	}
	return &pi.Account{Name: a.Name, Storage: st, Writable: a.Writable, Home: path.Clean("/" + a.Home), Anonymous: method == anonymousLogin}, nil
}

// userStorage is the storage of an account that names a local user. Every
// way it can fail refuses the login; none falls back to the server's own
// identity unless that identity is not root, or the configuration says so.
func (s *Server) userStorage(ctx context.Context, name string) (dsi.Storage, error) {
	root := os.Geteuid() == 0
	u, lookupErr := user.Lookup(name)
	switch {
	case lookupErr != nil && (root || s.cfg.UserStorage != nil):
		return nil, fmt.Errorf("%w: mapped account %q is not a user of this host (create the account, or map the DN to one that exists)", pi.ErrLoginDenied, name)
	case lookupErr == nil && u.Uid == "0":
		return nil, fmt.Errorf("%w: mapping to %s (uid 0) is refused", pi.ErrLoginDenied, name)
	case s.cfg.UserStorage != nil:
		st, err := s.cfg.UserStorage(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("%w: storage of %s: %v", pi.ErrLoginDenied, name, err)
		}
		if st == nil {
			return nil, fmt.Errorf("%w: no storage for %s", pi.ErrLoginDenied, name)
		}
		return st, nil
	case root && !s.cfg.ServeMappedAsServer:
		return nil, fmt.Errorf("%w: %s would be served as root (no per-user storage; see Config.ServeMappedAsServer)", pi.ErrLoginDenied, name)
	}
	return s.cfg.Storage, nil
}

// admit is asked before a GSI delegation: only an identity that could log
// in is worth a key generation. A custom AuthorizeCert decides at login.
func (s *Server) admit(id *gsi.Identity) error {
	p := s.policy.Load()
	if p.authorizeCert != nil {
		return nil
	}
	gm, err := p.grid()
	if err != nil {
		return err
	}
	if accounts, found := gm.Lookup(id.DN); !found || len(accounts) == 0 {
		return fmt.Errorf("%s is not in the grid-mapfile", id.DN)
	}
	return nil
}

// authorizeCert maps a certificate identity to an account: through the
// AuthorizeCert hook, or the grid-mapfile.
func (p *loginPolicy) authorizeCertificate(ctx context.Context, dn, user string) (*Account, error) {
	if p.authorizeCert != nil {
		return p.authorizeCert(ctx, dn, user)
	}
	gm, err := p.grid()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	accounts, found := gm.Lookup(dn)
	if !found || len(accounts) == 0 {
		return nil, fmt.Errorf("%w: %s is not in the grid-mapfile", ErrLoginDenied, dn)
	}
	name := accounts[0]
	if user != "" && user != ":globus-mapping:" {
		if !slices.Contains(accounts, user) {
			return nil, fmt.Errorf("%w: %s may not log in as %s", ErrLoginDenied, dn, user)
		}
		name = user
	}
	return &Account{Name: name, Writable: true, LocalUser: name}, nil
}

// security loads the host credential and trust directory, and the
// Kerberos keytab, when configured.
func (cfg *Config) security() (*pi.Security, error) {
	krb, err := cfg.kerberosAcceptor()
	if err != nil {
		return nil, err
	}
	if cfg.HostCert == "" && cfg.HostKey == "" {
		if krb != nil {
			return &pi.Security{Kerberos: krb, RequireProtection: true}, nil
		}
		return nil, nil
	}
	cred, err := gsi.LoadCredential(cfg.HostCert, cfg.HostKey)
	if err != nil {
		return nil, fmt.Errorf("server: host credential: %w", err)
	}
	trust, err := gsi.LoadTrustDir(trustDir(cfg.TrustDir))
	if err != nil {
		return nil, fmt.Errorf("server: trust directory: %w", err)
	}
	return &pi.Security{Host: cred, Trust: trust, RequireProtection: true, Kerberos: krb}, nil
}

func (s *Server) newDTP(control net.Conn) pi.DTP {
	local, _ := control.LocalAddr().(*net.TCPAddr)
	remote, _ := control.RemoteAddr().(*net.TCPAddr)
	if s.movers != nil {
		sc := stripe.SessionConfig{AllowForeign: s.cfg.AllowForeignDataAddress, Stall: s.cfg.StallTimeout}
		if remote != nil {
			sc.ControlPeer = remote.AddrPort()
		}
		return s.movers.NewFrontend(sc)
	}
	cfg := dtp.Config{
		ListenIP:          s.cfg.DataInterface,
		PortLow:           s.cfg.PortLow,
		PortHigh:          s.cfg.PortHigh,
		AllowForeignPeers: s.cfg.AllowForeignDataAddress,
		StallTimeout:      s.cfg.StallTimeout,
		Logger:            s.log,
	}
	if local != nil {
		cfg.ControlLocal = local.AddrPort()
	}
	if remote != nil {
		cfg.ControlPeer = remote.AddrPort()
	}
	return dtp.New(cfg)
}

// ListenAndServe listens on addr ("host:port", ":2811") and serves.
func (s *Server) ListenAndServe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Serve accepts control connections on l until Shutdown or Close, and
// always returns a non-nil error (ErrServerClosed after Shutdown/Close).
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()
	var backoff time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			// Resource exhaustion (EMFILE, ENFILE) is worth waiting out.
			var t interface{ Temporary() bool }
			if errors.As(err, &t) && t.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.start(conn)
	}
}

func (s *Server) start(conn net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return
	}
	src := xfer.Source(remoteAddr(conn))
	maxAll, maxPer := limit(s.cfg.MaxSessions, DefaultMaxSessions), limit(s.cfg.MaxSessionsPerSource, DefaultMaxSessionsPerSource)
	var refuse string
	var evict net.Conn
	switch {
	case maxPer > 0 && s.perSource[src] >= maxPer:
		refuse = "too many sessions from this address"
	case maxAll > 0 && len(s.conns) >= maxAll:
		// A full server makes room by closing a session that has not
		// logged in, from the source that holds the most of those: idle
		// connections from a few hosts cannot keep everyone else out.
		if evict = s.evictableLocked(); evict == nil {
			refuse = "too many sessions"
		}
	}
	if refuse != "" {
		s.mu.Unlock()
		s.log.Warn("session refused: "+refuse, "remote", conn.RemoteAddr().String(), "max", maxAll, "max-per-source", maxPer)
		conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		conn.Write([]byte("421 " + strings.ToUpper(refuse[:1]) + refuse[1:] + "; try again later.\r\n"))
		conn.Close()
		return
	}
	if evict != nil {
		delete(s.conns, evict) // its handler's cleanup finds it gone
		s.log.Info("session closed to make room: not logged in", "remote", evict.RemoteAddr().String())
		evict.Close()
	}
	s.conns[conn] = &connState{src: src, auth: AuthNone}
	s.perSource[src]++
	s.wg.Add(1)
	s.mu.Unlock()
	if s.obs != nil {
		s.obs.Session("", AuthNone)
	}
	go s.handle(conn)
}

// connState is what the server knows of one control connection.
type connState struct {
	src      netip.Prefix
	step     time.Time // the last step towards a login; zero: none yet
	loggedIn bool
	auth     string // the session's auth method (Observer.Session)
}

// evictableLocked picks the session to close for a newcomer on a full
// server: one of those not logged in, from the source with the most of
// them; first one that has taken no step of a GSI exchange (ADAT, which
// costs the client a handshake's work) at random, else the one whose last
// step is oldest. A client in the middle of a GSI login keeps taking
// steps, so a flood of idle connections from many addresses pushes out its
// own members first.
// Nil when every session has logged in.
func (s *Server) evictableLocked() net.Conn {
	waiting := map[netip.Prefix]int{}
	most := 0
	for _, st := range s.conns {
		if !st.loggedIn {
			waiting[st.src]++
			most = max(most, waiting[st.src])
		}
	}
	var victim net.Conn
	var vst *connState
	idle := 0
	for c, st := range s.conns {
		if st.loggedIn || waiting[st.src] < most {
			continue
		}
		switch {
		case st.step.IsZero():
			// Reservoir sampling among those that never took a step.
			if idle++; rand.IntN(idle) == 0 {
				victim, vst = c, st
			}
		case idle == 0 && (vst == nil || st.step.Before(vst.step)):
			victim, vst = c, st
		}
	}
	return victim
}

// loginStep notes that c's session took a step towards a login.
func (s *Server) loginStep(c net.Conn) {
	s.mu.Lock()
	if st := s.conns[c]; st != nil {
		st.step = time.Now()
	}
	s.mu.Unlock()
}

// loggedIn marks c's session as logged in (pi.Config.OnLogin).
func (s *Server) loggedIn(c net.Conn, acct *pi.Account) {
	s.mu.Lock()
	st := s.conns[c]
	if st != nil {
		st.loggedIn = true
		st.auth = acct.Auth
	}
	s.mu.Unlock()
	if st != nil && s.obs != nil {
		s.obs.Session(AuthNone, acct.Auth)
	}
}

// limit turns a Config limit into a bound: 0 is the default, negative is
// none (0).
func limit(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// remoteAddr is the client's address of a control connection.
func remoteAddr(c net.Conn) netip.Addr {
	if a, isTCP := c.RemoteAddr().(*net.TCPAddr); isTCP {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

func (s *Server) handle(conn net.Conn) {
	defer s.wg.Done()
	auth := AuthNone
	defer func() {
		s.mu.Lock()
		if st := s.conns[conn]; st != nil {
			auth = st.auth
		}
		delete(s.conns, conn)
		src := xfer.Source(remoteAddr(conn))
		if s.perSource[src]--; s.perSource[src] <= 0 {
			delete(s.perSource, src)
		}
		s.mu.Unlock()
		if s.obs != nil {
			s.obs.Session(auth, "")
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("session panicked", "remote", conn.RemoteAddr().String(), "panic", p)
			conn.Close()
		}
	}()
	s.log.Debug("session started", "remote", conn.RemoteAddr().String())
	// The session keeps the host credential and trust directory of its
	// start: a Reload affects the sessions that begin after it.
	cfg := s.pi
	cfg.Security = s.policy.Load().sec
	err := pi.Serve(s.ctx, conn, &cfg)
	s.log.Debug("session ended", "remote", conn.RemoteAddr().String(), "err", err)
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Sessions reports how many sessions are open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Shutdown stops accepting, lets running commands (transfers) finish, ends
// each session with 421 and waits for them, or until ctx is done, when it
// closes what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.closeMovers()
		return nil
	case <-ctx.Done():
	}
	// The grace period is over: abort what still runs, so that every
	// session can say why (426, then 421) before it is closed.
	s.abort()
	select {
	case <-done:
	case <-time.After(abortGrace):
	}
	s.Close()
	<-done
	return ctx.Err()
}

// abortGrace is how long sessions get, after their transfers were
// aborted, to send their last replies before their connections close.
const abortGrace = 2 * time.Second

// MoverStatus is one line per data mover of a striped server (nil if not
// striped): stripe, address, health.
func (s *Server) MoverStatus() []string {
	if s.movers == nil {
		return nil
	}
	return s.movers.Status()
}

// SetMovers replaces a striped server's data movers ("host:port", in
// stripe order): new ones join and are used once up, those left out leave
// once their running transfers end. It reports which joined and which
// left; a server started without movers cannot become striped.
func (s *Server) SetMovers(addrs []string) (joined, left []string, err error) {
	if s.movers == nil {
		return nil, nil, errors.New("server: not a striped server (started without movers)")
	}
	return s.movers.SetMovers(addrs)
}

// Movers reports how many of a striped server's data movers are up, of
// how many; 0, 0 when the server is not striped.
func (s *Server) Movers() (up, total int) {
	if s.movers == nil {
		return 0, 0
	}
	return s.movers.Up(), len(s.movers.Status())
}

func (s *Server) closeMovers() {
	if s.movers != nil {
		s.movers.Close()
	}
}

// Close closes listeners and every session's connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.abort()
	s.closeMovers()
	return nil
}
