package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/version"
	"github.com/ferrygrid/ferry/internal/wire"
)

// Reply is one FTP reply: a three-digit code and its lines of text.
type Reply = wire.Reply

// ReplyError is the error for a negative or unexpected reply. Use
// errors.As to read its Reply.Code.
type ReplyError = wire.ReplyError

// Entry is one file or directory as a listing or MLST describes it. Numeric
// fields the server did not give are -1, strings are empty and Modify is
// the zero time.
type Entry = wire.Entry

// DefaultDialTimeout is the DialTimeout used when Config leaves it zero.
const DefaultDialTimeout = 30 * time.Second

// abortTimeout bounds the clean-up exchange (ABOR and its replies) after a
// transfer was interrupted.
const abortTimeout = 2 * time.Second

// abortGrace bounds the same exchange when the caller gave up (its
// context is done): the ABOR is sent, but its replies are not waited for
// long.
const abortGrace = 200 * time.Millisecond

// ErrClosed is returned by calls on a Conn that was closed, by Close or
// Quit, or because an earlier call failed on the network or was cancelled.
var ErrClosed = errors.New("client: connection closed")

// ErrBadCommand is returned for a command (or a path in it) that contains
// CR or LF, which would smuggle in a second command. The Conn stays usable.
var ErrBadCommand = errors.New("client: command contains CR or LF")

// Config configures a Conn. The zero value (or a nil *Config) works.
type Config struct {
	// DialTimeout bounds dialing the control connection and reading the
	// server's greeting, and dialing passive data connections. Zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration

	// Logger receives a Debug record for every command sent and reply
	// received (the PASS argument is masked). Nil discards.
	Logger *slog.Logger

	// Active makes the client listen for data connections and send EPRT
	// (or PORT) instead of connecting to the server after EPSV (or PASV).
	Active bool

	// StripedServer accepts data connections from any host, not only the
	// server's control address: a striped server's data movers connect
	// from their own hosts (MODE E downloads, where the client listens).
	StripedServer bool

	// DataInterface is the local address to listen on in active mode. The
	// zero Addr means the local address of the control connection.
	DataInterface netip.Addr

	// Dialer dials the control and data connections. Nil means a
	// net.Dialer with DialTimeout.
	Dialer *net.Dialer

	// DataAddrPolicy, when not nil, is asked before each data connection
	// the client dials (after EPSV, PASV or SPAS); an error refuses the
	// connection, and the transfer fails with it. Callers that must not
	// connect where a server points them (a web application, say) check
	// the address here. A third-party copy asks it too about each
	// address this connection's server names in its PASV or SPAS reply
	// before passing it to the other server (PORT, EPRT, SPOR). Nil
	// allows every address.
	DataAddrPolicy func(netip.AddrPort) error

	// GSI, when not nil, makes Dial and NewConn authenticate with GSI
	// (AUTH GSSAPI) right after the greeting, within DialTimeout; every
	// later command and reply is protected, and data connections are
	// secured as GSI.DataAuth and GSI.Protection say. See GSIConfig.
	GSI *GSIConfig

	// FTPS, when not nil, makes Dial and NewConn switch the control
	// connection to TLS (AUTH TLS, explicit FTPS) right after the
	// greeting, within DialTimeout, and Login protect the data channels
	// (PBSZ 0, PROT P); it fails rather than continue in clear. See
	// FTPSConfig. GSI and FTPS exclude each other.
	FTPS *FTPSConfig

	// Kerberos, when not nil, makes Dial authenticate with Kerberos 5
	// (AUTH GSSAPI, krb5.go) right after the greeting; later commands
	// and replies are protected, data channels are not (PROT C).
	Kerberos *KerberosConfig
}

// Conn is a client's control connection to a GridFTP server.
//
// A Conn is not safe for concurrent use: one call at a time. Its state is
// only known while every exchange completes, so a call that fails on the
// network or whose context is cancelled closes the Conn, and later calls
// return ErrClosed; a negative reply (*ReplyError) leaves the Conn usable.
// Cancelling a transfer sends ABOR and then closes the Conn, because GCT
// ends the session after ABOR of a running transfer.
type Conn struct {
	nc      net.Conn
	raw     *bufio.Reader // nc's bytes; under rs's reader, and under GSI's unwrapping
	rs      *replyStream  // the one reader of the replies
	gsi     *gsiState     // nil without GSI
	ftps    *ftpsState    // nil without FTPS (AUTH TLS)
	krb     *krbState     // nil without Kerberos (krb5.go)
	dsec    *dcsec.Config // data connection security; nil: plain TCP
	log     *slog.Logger
	dialer  *net.Dialer
	active  bool
	dataIf  netip.Addr
	anyData bool                       // StripedServer: data connections may come from any host
	dataPol func(netip.AddrPort) error // Config.DataAddrPolicy; nil: any

	feat   map[string]string
	noEPSV bool // EPSV was refused; use PASV
	noEPRT bool // EPRT was refused; use PORT
	err    error
	wbuf   []byte

	modeE    bool       // the server is in MODE E
	drainOn  bool       // OPTS PIPE STOR-DRAIN=ON was accepted (see pipeline.go)
	cache    []net.Conn // MODE E data connections kept for the next transfer
	cacheDir direction  // which way cache carries data
	tp       *tpChannel // the third-party channel the server keeps; nil: none known (see pipeline3p.go)
	dataBuf  int        // socket buffer size for this transfer's data connections; 0: kernel default
}

// Dial connects to the server at addr ("host:port") and reads its
// greeting; with cfg.GSI it also authenticates, checking the server's
// certificate against addr's host. Then call Login.
func Dial(ctx context.Context, addr string, cfg *Config) (*Conn, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateSecurity(time.Now()); err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	nc, err := cfg.Dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err // a *net.OpError: "dial tcp ADDR: ..."
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	return newConn(dctx, nc, cfg, host)
}

// NewConn makes a Conn of an established control connection nc and reads
// the server's greeting (and authenticates, with cfg.GSI: the server's
// certificate must name cfg.GSI.ServerName, by default the IP address nc
// is connected to). The Conn owns nc from then on, also on error.
func NewConn(ctx context.Context, nc net.Conn, cfg *Config) (*Conn, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateSecurity(time.Now()); err != nil {
		nc.Close()
		return nil, err
	}
	var host string
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		host = a.IP.String()
	}
	return newConn(ctx, nc, cfg, host)
}

func newConn(ctx context.Context, nc net.Conn, cfg *Config, host string) (*Conn, error) {
	raw := bufio.NewReader(nc)
	log := cfg.Logger.With("remote", nc.RemoteAddr().String())
	c := &Conn{
		nc:      nc,
		raw:     raw,
		rs:      newReplyStream(nc, wire.NewReplyReader(raw), log),
		log:     log,
		dialer:  cfg.Dialer,
		active:  cfg.Active,
		dataIf:  cfg.DataInterface,
		anyData: cfg.StripedServer,
		dataPol: cfg.DataAddrPolicy,
	}
	// 120 "service ready in nnn minutes" may precede 220.
	greeting := c.rs.enqueue("greeting")
	var r Reply
	var err error
	for range 8 {
		r, err = c.rs.next(ctx, greeting)
		if err != nil || r.Class() != 1 {
			break
		}
	}
	if err != nil {
		return nil, c.broke(err)
	}
	if r.Code != 220 {
		c.close()
		return nil, &ReplyError{Reply: r}
	}
	if cfg.GSI != nil {
		if err := c.authGSI(ctx, cfg.GSI, host); err != nil {
			c.close()
			return nil, err
		}
	}
	if cfg.FTPS != nil {
		if err := c.authTLS(ctx, cfg.FTPS, host); err != nil {
			c.close()
			return nil, err
		}
	}
	if cfg.Kerberos != nil {
		if err := c.authKrb(ctx, cfg.Kerberos, host); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

func (cfg *Config) withDefaults() *Config {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Dialer == nil {
		c.Dialer = &net.Dialer{Timeout: c.DialTimeout}
	}
	return &c
}

// Login authenticates with USER and PASS, then reads the server's features
// (FEAT; a failure is ignored), introduces the client (SITE CLIENTINFO;
// ignored if refused) and selects binary type (TYPE I).
//
// On a GSI Conn an empty user means GlobusMapping (the server maps the
// certificate's identity to its account), and the password is normally
// empty; after login, DCAU and PBSZ/PROT are sent as the GSIConfig asks.
// On an FTPS Conn PBSZ 0 and PROT P follow the login (a refusal is an
// error wrapping ErrDataProtectionRefused), and an empty user with
// FTPSConfig.Certificate means GlobusMapping too.
func (c *Conn) Login(ctx context.Context, user, pass string) error {
	if (c.gsi != nil || c.krb != nil || c.ftps != nil && c.ftps.cert != nil) && user == "" {
		user = GlobusMapping
	}
	r, err := c.cmd(ctx, "USER %s", user)
	if err != nil {
		return err
	}
	if r.Code == 331 || r.Code == 332 {
		r, err = c.cmd(ctx, "PASS %s", pass)
		if err != nil {
			return err
		}
	}
	// 232: logged in by the security exchange (RFC 2228, a TLS client
	// certificate).
	if r.Code != 230 && r.Code != 202 && r.Code != 232 {
		return &ReplyError{Reply: r}
	}
	scheme := "ftp"
	switch {
	case c.gsi != nil:
		scheme = "gsiftp"
	case c.ftps != nil:
		scheme = "ftps"
	}
	// Independent of each other: one round trip for the three (servers
	// execute queued commands in order, protocol.md §1.1).
	rs, err := c.cmds(ctx, "FEAT",
		fmt.Sprintf(`SITE CLIENTINFO appname="ferry";appver="%s";scheme="%s";`, version.Version, scheme),
		"TYPE I")
	if err != nil {
		return err
	}
	c.feat = map[string]string{}
	if rs[0].Code == 211 {
		c.feat = wire.ParseFeatures(rs[0])
	}
	if rs[2].Class() != 2 {
		return &ReplyError{Reply: rs[2]}
	}
	if c.gsi != nil {
		return c.gsiDataCommands(ctx)
	}
	if c.ftps != nil {
		return c.ftpsDataCommands(ctx)
	}
	return nil
}

// dialTimeout bounds dialing and securing one data connection.
func (c *Conn) dialTimeout() time.Duration {
	if c.dialer.Timeout > 0 {
		return c.dialer.Timeout
	}
	return DefaultDialTimeout
}

// Features returns the server's FEAT lines as read at Login: upper-case
// feature name → the rest of the line. It is empty before Login.
func (c *Conn) Features() map[string]string { return maps.Clone(c.feat) }

// hasFeature reports whether FEAT listed name (upper case).
func (c *Conn) hasFeature(name string) bool {
	_, ok := c.feat[name]
	return ok
}

// Do sends a raw command, formatted like fmt.Sprintf, and returns the next
// reply on the connection: the command's first reply, which may be
// preliminary (1xx: then read the next one with ReadReply), or, when an
// earlier command's final reply is still due (ABOR during a transfer),
// that one first. Do does not set up data connections. The error is only for the
// network, ctx, or a command with CR or LF in it: a negative reply is
// returned as a Reply, not as an error.
func (c *Conn) Do(ctx context.Context, format string, args ...any) (Reply, error) {
	// A raw command may change what the data channel is (PASV, DCAU):
	// the next third-party batch sets it up again.
	c.tp = nil
	if c.err != nil {
		return Reply{}, c.err
	}
	line := fmt.Sprintf(format, args...)
	if err := checkLine(line); err != nil {
		return Reply{}, err
	}
	if ctx.Err() != nil {
		return Reply{}, fmt.Errorf("client: %s: %w", verb(line), context.Cause(ctx))
	}
	if _, err := c.request(ctx, line); err != nil {
		return Reply{}, c.broke(err)
	}
	r, err := c.rs.nextRaw(ctx, verb(line))
	if err != nil {
		return Reply{}, c.broke(err)
	}
	return r, nil
}

// Quit sends QUIT, reads the reply and closes the connection.
func (c *Conn) Quit(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	_, err := c.cmd(ctx, "QUIT")
	if cerr := c.close(); err == nil && cerr != nil {
		err = fmt.Errorf("client: %w", cerr)
	}
	return err
}

// Close closes the connection without QUIT.
func (c *Conn) Close() error {
	if c.err != nil {
		return nil
	}
	return c.close()
}

func (c *Conn) close() error {
	if c.err == nil {
		c.err = ErrClosed
	}
	c.rs.close(c.err)
	c.dropCache()
	err := c.nc.Close()
	if c.gsi != nil {
		c.gsi.sec.Close()
	}
	return err
}

// cmd sends a command and reads the first reply.
func (c *Conn) cmd(ctx context.Context, format string, args ...any) (Reply, error) {
	rs, err := c.cmds(ctx, fmt.Sprintf(format, args...))
	if err != nil {
		return Reply{}, err
	}
	return rs[0], nil
}

// cmds sends the lines at once and then reads one reply to each: for
// commands whose replies are all final and none of which depends on
// another's outcome. A failed exchange closes the Conn.
func (c *Conn) cmds(ctx context.Context, lines ...string) ([]Reply, error) {
	if c.err != nil {
		return nil, c.err
	}
	for _, l := range lines {
		if err := checkLine(l); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("client: %s: %w", verb(lines[0]), context.Cause(ctx))
	}
	rs, err := c.exchangeAll(ctx, lines)
	if err != nil {
		return nil, c.broke(err)
	}
	return rs, nil
}

// exchangeAll sends the lines back to back, then reads one reply to each,
// in order: the servers queue pipelined commands (protocol.md §1.1), so
// this costs one round trip instead of one per command. Errors are
// *brokenError; they leave the Conn open for the caller to abort or
// close.
func (c *Conn) exchangeAll(ctx context.Context, lines []string) ([]Reply, error) {
	ts := make([]ticket, len(lines))
	for i, l := range lines {
		t, err := c.request(ctx, l)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	rs := make([]Reply, len(lines))
	for i, t := range ts {
		r, err := c.rs.next(ctx, t)
		if err != nil {
			return nil, err
		}
		rs[i] = r
	}
	return rs, nil
}

// exchange sends one command and reads its first reply. Errors are
// *brokenError.
func (c *Conn) exchange(ctx context.Context, line string) (Reply, error) {
	rs, err := c.exchangeAll(ctx, []string{line})
	if err != nil {
		return Reply{}, err
	}
	return rs[0], nil
}

// broke closes the Conn after the failed exchange err and returns err
// without its *brokenError.
func (c *Conn) broke(err error) error {
	c.close()
	return plain(err)
}

// expect sends a command and returns its reply if the reply's class is
// class, else a *ReplyError.
func (c *Conn) expect(ctx context.Context, class int, format string, args ...any) (Reply, error) {
	r, err := c.cmd(ctx, format, args...)
	if err != nil {
		return r, err
	}
	if r.Class() != class {
		return r, &ReplyError{Reply: r}
	}
	return r, nil
}

// ReadReply reads one more reply, such as the final reply after a
// preliminary one returned by Do.
func (c *Conn) ReadReply(ctx context.Context) (Reply, error) {
	if c.err != nil {
		return Reply{}, c.err
	}
	r, err := c.rs.nextRaw(ctx, "reply")
	if err != nil {
		return Reply{}, c.broke(err)
	}
	return r, nil
}

func checkLine(line string) error {
	if strings.ContainsAny(line, "\r\n") {
		return fmt.Errorf("%w: %q", ErrBadCommand, line)
	}
	return nil
}

// request sends one command, which ctx interrupts, and returns its
// ticket. Errors are *brokenError.
func (c *Conn) request(ctx context.Context, line string) (ticket, error) {
	t := c.rs.enqueue(line)
	if err := interruptible(ctx, c.nc, func() error { return c.send(line) }); err != nil {
		c.rs.abandon(t)
		return t, fail(ctx, t, err)
	}
	return t, nil
}

// masked is a command line as the log shows it: without the argument of
// PASS (a password), ADAT (a security token: a Kerberos ticket, a GSI
// handshake message) or DCSC (a credential with its private key).
func masked(line string) string {
	verb, _, found := strings.Cut(line, " ")
	switch v := strings.ToUpper(verb); {
	case found && (v == "PASS" || v == "ADAT" || v == "DCSC"):
		return v + " ****"
	}
	return line
}

// send writes one command line; request is send with a ticket for the
// replies.
func (c *Conn) send(line string) error {
	if err := checkLine(line); err != nil {
		return err
	}
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("send", "cmd", masked(line))
	}
	if c.gsi != nil {
		return c.sendWrapped(line)
	}
	if c.krb != nil {
		return c.sendKrb(line)
	}
	c.wbuf = append(appendTelnet(c.wbuf[:0], line), '\r', '\n')
	_, err := c.nc.Write(c.wbuf)
	return err
}

// appendTelnet appends line to b as the control connection carries it
// (RFC 959's Telnet): a 0xFF byte (IAC) doubled, so that a name holding
// one reaches the server whole.
func appendTelnet(b []byte, line string) []byte {
	for {
		i := strings.IndexByte(line, 0xff)
		if i < 0 {
			return append(b, line...)
		}
		b = append(append(b, line[:i+1]...), 0xff)
		line = line[i+1:]
	}
}

// verb returns the command word of line, for error messages.
func verb(line string) string {
	v, _, _ := strings.Cut(line, " ")
	if strings.EqualFold(v, "SITE") {
		rest := strings.TrimPrefix(line[len(v):], " ")
		w, _, _ := strings.Cut(rest, " ")
		return "SITE " + w
	}
	return v
}

// deadliner is what watch interrupts: connections and listeners.
type deadliner interface{ SetDeadline(time.Time) error }

// watcher interrupts the I/O of its connections when a context is done, by
// setting their deadlines into the past.
type watcher struct {
	mu    sync.Mutex
	fired bool        // guarded by mu
	ds    []deadliner // guarded by mu
}

// add makes w interrupt d too (at once if ctx is already done).
func (w *watcher) add(d deadliner) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ds = append(w.ds, d)
	if w.fired {
		_ = d.SetDeadline(time.Unix(1, 0))
	}
}

func (w *watcher) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fired = true
	for _, d := range w.ds {
		_ = d.SetDeadline(time.Unix(1, 0))
	}
}

// watchAll starts interrupting ds when ctx is done. stop ends the watch,
// waits for a running interruption to finish, and returns whether one
// happened.
func watchAll(ctx context.Context, ds ...deadliner) (w *watcher, stop func() bool) {
	w = &watcher{ds: ds}
	done := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		defer close(done)
		w.fire()
	})
	return w, func() bool {
		if stopAfter() {
			return false
		}
		<-done
		return true
	}
}
