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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/stripe"
	"github.com/ferrygrid/ferry/internal/version"
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
	// MaxSessions refuses sessions beyond this many with 421; 0 means no limit.
	MaxSessions int
	// AllowForeignDataAddress disables FTP bounce protection (RFC 2577):
	// PORT/EPRT may then name hosts other than the client.
	AllowForeignDataAddress bool
	// Banner replaces the 220 greeting text.
	Banner string
	// UserStorage, when set, gives the storage for an account with a
	// LocalUser, e.g. one whose operations run as that user (dsi/privsep,
	// when the server runs as root). A nil storage with a nil error means
	// Storage; an error refuses the login.
	UserStorage func(ctx context.Context, localUser string) (dsi.Storage, error)
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
	// Logger receives server and session events; nil discards.
	Logger *slog.Logger
}

// Server is a GridFTP server. Create it with New.
type Server struct {
	cfg    Config
	pi     pi.Config
	log    *slog.Logger
	movers *stripe.Pool // nil unless striped

	ctx    context.Context // cancelled by Shutdown: sessions end after their command
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
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
		conns:     map[net.Conn]struct{}{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
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
	s.pi = pi.Config{
		Banner:                  banner,
		Version:                 "Ferry " + version.Version,
		Login:                   s.login,
		Security:                sec,
		NewDTP:                  s.newDTP,
		IdleTimeout:             cfg.IdleTimeout,
		AllowForeignDataAddress: cfg.AllowForeignDataAddress,
		Logger:                  s.log,
	}
	return s, nil
}

func (s *Server) login(ctx context.Context, req pi.LoginRequest) (*pi.Account, error) {
	user, pass := req.User, req.Password
	var a *Account
	var err error
	switch {
	case s.cfg.Anonymous && (user == "anonymous" || user == "ftp"):
		a = &Account{Name: "anonymous", Writable: s.cfg.AnonymousWrite}
	case req.Identity != nil && (req.Protected && (pass == "" || user == ":globus-mapping:") || s.cfg.Authenticate == nil):
		// A verified certificate stands in for the password.
		a, err = s.authorizeCert(ctx, req.Identity.DN, user)
	case s.pi.Security != nil && s.pi.Security.RequireProtection && !req.Protected:
		return nil, fmt.Errorf("%w: password logins need AUTH TLS or AUTH GSSAPI first", pi.ErrLoginDenied)
	case s.cfg.Authenticate == nil:
		return nil, pi.ErrLoginDenied
	default:
		a, err = s.cfg.Authenticate(ctx, user, pass)
	}
	if errors.Is(err, ErrLoginDenied) {
		return nil, fmt.Errorf("%w: %v", pi.ErrLoginDenied, err)
	}
	if err != nil {
		return nil, err
	}
	base := s.cfg.Storage
	if a.LocalUser != "" && s.cfg.UserStorage != nil {
		us, err := s.cfg.UserStorage(ctx, a.LocalUser)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", pi.ErrLoginDenied, err)
		}
		if us != nil {
			base = us
		}
	}
	st := dsi.Sub(base, a.Home)
	if fi, err := st.Stat(ctx, "/"); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("server: home %q of %s is not a directory: %v", a.Home, a.Name, err)
	}
	if !a.Writable {
		st = dsi.ReadOnly(st)
	}
	return &pi.Account{Name: a.Name, Storage: st, Writable: a.Writable, Home: path.Clean("/" + a.Home)}, nil
}

// authorizeCert maps a certificate identity to an account: through the
// AuthorizeCert hook, or the grid-mapfile.
func (s *Server) authorizeCert(ctx context.Context, dn, user string) (*Account, error) {
	if s.cfg.AuthorizeCert != nil {
		return s.cfg.AuthorizeCert(ctx, dn, user)
	}
	gm, err := gsi.LoadGridMap(s.gridMapPath())
	if err != nil {
		return nil, fmt.Errorf("server: grid-mapfile: %w", err)
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

func (s *Server) gridMapPath() string {
	switch {
	case s.cfg.GridMap != "":
		return s.cfg.GridMap
	case os.Getenv("GRIDMAP") != "":
		return os.Getenv("GRIDMAP")
	}
	return "/etc/grid-security/grid-mapfile"
}

// security loads the host credential and trust directory, when configured.
func (cfg *Config) security() (*pi.Security, error) {
	if cfg.HostCert == "" && cfg.HostKey == "" {
		return nil, nil
	}
	cred, err := gsi.LoadCredential(cfg.HostCert, cfg.HostKey)
	if err != nil {
		return nil, fmt.Errorf("server: host credential: %w", err)
	}
	dir := cfg.TrustDir
	if dir == "" {
		dir = gsi.TrustDir()
	}
	trust, err := gsi.LoadTrustDir(dir)
	if err != nil {
		return nil, fmt.Errorf("server: trust directory: %w", err)
	}
	return &pi.Security{Host: cred, Trust: trust, RequireProtection: true}, nil
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
	if s.cfg.MaxSessions > 0 && len(s.conns) >= s.cfg.MaxSessions {
		s.mu.Unlock()
		s.log.Warn("session refused: too many sessions", "remote", conn.RemoteAddr().String(), "max", s.cfg.MaxSessions)
		conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		conn.Write([]byte("421 Too many sessions; try again later.\r\n"))
		conn.Close()
		return
	}
	s.conns[conn] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.handle(conn)
}

func (s *Server) handle(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("session panicked", "remote", conn.RemoteAddr().String(), "panic", p)
			conn.Close()
		}
	}()
	s.log.Debug("session started", "remote", conn.RemoteAddr().String())
	err := pi.Serve(s.ctx, conn, &s.pi)
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
		s.Close()
		<-done
		return ctx.Err()
	}
}

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
	s.closeMovers()
	return nil
}
