// Package pi is the server Protocol Interpreter: the box of the Globus
// architecture that speaks the control channel. It reads commands (RFC 959,
// RFC 2389 FEAT/OPTS, RFC 2428 EPSV/EPRT, RFC 3659 SIZE/MDTM/MLST/MLSD/REST
// STREAM, GridFTP's CKSM), keeps the session's state, answers with replies
// shaped as GCT's server shapes them, and hands data movement to a DTP.
//
// Layout: session.go runs a session (the reader goroutine, an executor
// goroutine only while commands wait, reply writer, idle timeout, ABOR);
// commands.go is the command table, where every verb is found; files.go
// the namespace commands; transfer.go the data commands; replies.go maps
// errors to reply codes in one place.
//
// The PI never touches data sockets or storage bytes itself: it calls the
// DTP interface defined here, and the storage's metadata operations.
package pi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// DTP moves a session's data. The PI calls it from one goroutine at a time;
// cancelling ctx (ABOR, control connection lost) must stop a transfer promptly.
type DTP interface {
	// Passive prepares to accept the next transfer's data connection
	// (PASV, EPSV) and returns the address to announce. ipv4 requires an
	// IPv4 address (PASV).
	Passive(ctx context.Context, ipv4 bool) (netip.AddrPort, error)
	// Active sets the addresses the next transfer connects to: one (PORT,
	// EPRT), or one per stripe of a striped receiver (SPOR).
	Active(ctx context.Context, addrs []netip.AddrPort) error
	// Send moves the requested bytes of src to the data channel. It reports
	// xfer.EventStarted through notify once the channel is open.
	Send(ctx context.Context, req *xfer.Request, src dsi.Reader, notify func(xfer.Event)) (int64, error)
	// Receive moves the data channel's bytes into dst, likewise.
	Receive(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error)
	// SetBuffer sets the TCP buffer size of data sockets made from now on
	// (SBUF); 0 means the kernel's automatic tuning.
	SetBuffer(size int)
	// SetSecurity sets how later data connections are authenticated and
	// protected (DCAU, PROT); nil means plain TCP. It drops cached connections.
	SetSecurity(cfg *dcsec.Config)
	// Close releases listeners and connections.
	Close() error
}

// Drainer is a DTP that can read and discard the MODE E data of an upload
// the PI refused before its data channel started (the STOR-DRAIN
// extension, docs/extensions.md). Drain must read the file's blocks up to
// its EOF and EOD count from the connections the next upload would use,
// bounded by req.Size, the stall timeout and ctx, and close them when it
// cannot. A DTP without it gets no PIPE STOR-DRAIN line in FEAT.
type Drainer interface {
	Drain(ctx context.Context, req *xfer.Request) (int64, error)
}

// StripedDTP is a DTP whose data nodes listen on several hosts: SPAS
// announces one address per node. A DTP may also implement
// SetHome(storagePath string), called after login with Account.Home, and
// StripeStatus() []string, the lines of SITE STRIPES.
type StripedDTP interface {
	DTP
	// PassiveStripes prepares every node to accept the next transfer's
	// data connections and returns their addresses, in stripe order.
	PassiveStripes(ctx context.Context, ipv4 bool) ([]netip.AddrPort, error)
}

// Observer is told of what the sessions of a server do, for metrics and
// accounting. Its methods are called from the goroutines of every session
// at once, Reply for every reply written: they must return quickly, must
// not block, and must not keep or change their arguments.
type Observer interface {
	// Reply is told of each reply written to a client, by its code (the
	// code inside, for replies wrapped in 632).
	Reply(code int)
	// Handshake is told of each control-channel authentication that
	// ended: mech "gsi" (AUTH GSSAPI, from the AUTH to the last ADAT) or
	// "tls" (AUTH TLS), how long it took, and its error (nil: it
	// succeeded).
	Handshake(mech string, d time.Duration, err error)
	// Transfer is told of each file transfer (not listings) twice: when
	// it starts, with t.End zero, and when it has ended, with every field
	// filled in. The two calls get the same *Summary.
	Transfer(t *xfer.Summary)
}

// Account is a logged-in user's view of the server.
type Account struct {
	// Name is the user name reported by SITE WHOAMI and in logs.
	Name string
	// Storage is what the user sees; "/" is the user's root. Wrap it with
	// dsi.ReadOnly for read-only access and dsi.Sub for a home directory.
	Storage dsi.Storage
	// Writable reports whether the account may change the storage; it
	// shapes the Perm fact of listings.
	Writable bool
	// Home is where the user's root lies in the server's storage, for data
	// movers that open files themselves (a striped server's data nodes).
	Home string
	// Anonymous marks an anonymous login: it is shown less (no data node
	// addresses in SITE STRIPES).
	Anonymous bool
	// Auth names how the user logged in, for metrics: one of a few fixed
	// values chosen by Config.Login, never a user's name.
	Auth string
}

// ErrShuttingDown is the cause of transfers aborted by Config.Abort.
var ErrShuttingDown = errors.New("server shutting down")

// ErrLoginDenied is returned by Config.Login for bad credentials.
var ErrLoginDenied = errors.New("pi: login incorrect")

// ErrProtectionRequired is returned by Config.Login (wrapping
// ErrLoginDenied) for a password on a control channel that must be
// protected first; the reply then says so.
var ErrProtectionRequired = fmt.Errorf("%w: password logins need AUTH TLS or AUTH GSSAPI first", ErrLoginDenied)

// ErrHomeUnavailable is returned by Config.Login (wrapping ErrLoginDenied)
// when the credentials were good but the account's home directory cannot
// be served; the reply then says so.
var ErrHomeUnavailable = fmt.Errorf("%w: home directory unavailable", ErrLoginDenied)

// Config configures the PI for every session of a server. Fields are read
// only; the zero value of each optional field has the documented default.
type Config struct {
	// Banner is the text of the 220 greeting.
	Banner string
	// Version is reported by SITE VERSION.
	Version string
	// Login checks what the client presented (user and password, and the
	// certificate identity after GSI or TLS authentication) and returns the
	// account. Required.
	Login func(ctx context.Context, req LoginRequest) (*Account, error)
	// Security offers AUTH GSSAPI and AUTH TLS; nil offers neither.
	Security *Security
	// NewDTP returns the data mover for a session. Required.
	NewDTP func(control net.Conn) DTP
	// IdleTimeout closes a session that sends no command for this long
	// while no transfer runs (421). 0 means 15 minutes.
	IdleTimeout time.Duration
	// MaxLineLength bounds a command line; longer lines get 500. 0 means 16 KiB.
	MaxLineLength int
	// AllowForeignDataAddress permits PORT/EPRT to a host other than the
	// control peer (FTP bounce; RFC 2577). Off by default.
	AllowForeignDataAddress bool
	// Handshakes bounds the GSI handshake work in progress across
	// sessions (each ADAT step, where a delegation makes a key; not the
	// client's time between tokens), in all and per source; beyond it ADAT
	// gets 431. Nil means no bound.
	Handshakes *Slots
	// AuthRate bounds how often one source may start AUTH (each TLS or GSI
	// handshake costs the server a signature or more); beyond it 431. Nil
	// means no bound.
	AuthRate *Rate
	// LoginFailureDelay is how long a failed PASS waits before its 530;
	// 0 means 1s, negative means none.
	LoginFailureDelay time.Duration
	// LoginTimeout closes a session that has not logged in this long after
	// it connected (421), whatever it sends meanwhile; 0 means 60s.
	LoginTimeout time.Duration
	// OnLogin, when set, is told of each successful login, and
	// OnLoginStep of each step of a GSI exchange towards one (ADAT).
	OnLogin     func(control net.Conn, acct *Account)
	OnLoginStep func(control net.Conn)
	// Uploads, shared by the sessions of a server, keeps other sessions
	// out of the files an upload is writing (450). Nil keeps nobody out.
	Uploads *Uploads
	// UploadInPlace makes STOR write straight into its target, as GCT
	// does, instead of into a hidden part file renamed over the target
	// once complete; an interrupted upload then leaves a truncated file
	// under the target's name.
	UploadInPlace bool
	// AllowedModules names the processing modules (package dpm) that
	// ERET and ESTO may use (ERET NAME="PARAMS" PATH); others are
	// refused with 504. Nil allows none.
	AllowedModules []string
	// ModuleMaxBytes bounds what a module chain produces: what an ESTO
	// chain writes (after decompressing, unpacking), what it receives,
	// and what an ERET chain spools. Zero means dpm.DefaultMaxBytes.
	ModuleMaxBytes int64
	// Abort, when done, aborts running transfers (426, "server shutting
	// down"); the session then ends with 421 as on Serve's ctx. A server
	// cancels Serve's ctx to stop after the running commands, and Abort
	// when its grace period ends. Nil never aborts.
	Abort context.Context
	// Observer, when set, is told of replies, handshakes and transfers.
	Observer Observer
	// Logger receives session events; nil discards.
	Logger *slog.Logger
}

func (c *Config) idleTimeout() time.Duration {
	if c.IdleTimeout <= 0 {
		return 15 * time.Minute
	}
	return c.IdleTimeout
}

func (c *Config) loginFailureDelay() time.Duration {
	if c.LoginFailureDelay == 0 {
		return time.Second
	}
	return max(c.LoginFailureDelay, 0)
}

func (c *Config) loginTimeout() time.Duration {
	if c.LoginTimeout <= 0 {
		return time.Minute
	}
	return c.LoginTimeout
}

func (c *Config) maxLine() int {
	if c.MaxLineLength <= 0 {
		return 16 << 10
	}
	return c.MaxLineLength
}

// Serve runs one session on conn until the client quits, the connection
// fails or ctx is cancelled (then the session ends after its current command
// with 421). It closes conn before returning.
func Serve(ctx context.Context, conn net.Conn, cfg *Config) error {
	s := newSession(conn, cfg)
	return s.serve(ctx)
}
