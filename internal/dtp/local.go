// Package dtp is the Data Transfer Process: the box of the Globus
// architecture that moves bytes between storage (the DSI) and the data
// channel, driven by the protocol interpreter (PI).
//
// Local is the in-process DTP of a single-host server. It owns a session's
// data-channel set-up (a passive listener or an active peer address, RFC 959
// §3.2, RFC 2428) and runs one transfer at a time, reporting progress as
// xfer.Events. The data-channel protocols (stream mode now, extended block
// mode next) are separate files of this package.
//
// The data channel's connection handling is role-neutral (channel.go),
// the way x/crypto/ssh runs one transport for client and server: Listen,
// Dial, the Acceptor that admits and secures what a listener receives,
// SendStripes and the stall watchdog WatchStall serve this package's
// Local and the client library alike; each side brings its policy.
//
// Data-channel security (DCAU, PROT) is internal/dcsec's: SetSecurity
// gives the configuration, and every new data connection goes through
// dcsec.Secure before it carries a byte (a passive listener runs each
// handshake in its own goroutine, so one slow peer delays nobody). Plain
// TCP and GSI PROT C connections keep the zero-copy paths; TLS connections
// take the buffered ones.
//
// Data-channel authorization is one rule, dataPeerAllowed, applied with
// the security in force when a connection is made, to connections accepted
// and dialed alike: the peer must be the control connection's host (and,
// dialed, on a port >= 1024: FTP bounce protection, RFC 2577), unless the
// data channel authenticates its peer (GSI DCAU A or S) or the server
// allows foreign peers. A passive listener closes and ignores connections
// the rule refuses, so a port scan never breaks a transfer, and accepts
// only for as long as the transfer waits. When a handshake must follow,
// every admitted connection is a candidate: the handshakes run side by
// side (a bounded number at a time) and one that fails or stalls is
// dropped, so a stranger who reaches the port first cannot take the
// transfer's place.
package dtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/netopt"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// Config configures a Local DTP. The zero value works (any port, listeners on
// the control connection's local address, data connections only from the
// control peer).
type Config struct {
	// ListenIP is the address passive listeners bind to and active
	// connections come from. Invalid means ControlLocal's address.
	ListenIP netip.Addr
	// ControlLocal and ControlPeer are the control connection's addresses.
	ControlLocal, ControlPeer netip.AddrPort
	// PortLow and PortHigh bound passive ports; 0,0 means any port.
	PortLow, PortHigh uint16
	// AllowForeignPeers lets data connections come from hosts other than the
	// control peer (third-party transfers through a proxy). Off by default.
	AllowForeignPeers bool
	// ConnectTimeout bounds waiting for or making a data connection; 0 means 60s.
	ConnectTimeout time.Duration
	// StallTimeout fails a transfer that moves no byte for this long; 0
	// means 10 minutes, negative means never.
	StallTimeout time.Duration
	// Logger receives debug events; nil discards.
	Logger *slog.Logger
}

// Local is the in-process DTP for one session. Its methods are called by the
// session's executor only, one at a time; Close may come from anywhere.
type Local struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex       // guards the fields below against Close
	ln      *net.TCPListener // passive listener, nil when none
	remotes []netip.AddrPort // active peers, one per stripe; nil when none
	closed  bool
	bufSize int           // TCP buffer size for new data sockets; 0 = kernel autotuning
	sec     *dcsec.Config // security of new data connections; nil = plain TCP

	// MODE E connections kept from the last transfer (protocol.md §5.5):
	// reused by the next transfer in the same direction unless a new
	// PASV/PORT (or DCAU) comes first.
	cache    [][]net.Conn // per stripe
	cacheDir direction
}

type direction int

const (
	dirNone direction = iota
	dirSend
	dirReceive
)

// New returns a Local DTP.
func New(cfg Config) *Local {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 60 * time.Second
	}
	if cfg.StallTimeout == 0 {
		cfg.StallTimeout = 10 * time.Minute
	}
	if !cfg.ListenIP.IsValid() {
		cfg.ListenIP = cfg.ControlLocal.Addr()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Local{cfg: cfg, log: log}
}

// Passive opens a listener for the next transfer (PASV, EPSV) and returns
// its address. A previous listener or active address is dropped. With ipv4
// set (PASV), the listener must have an IPv4 address.
func (d *Local) Passive(ctx context.Context, ipv4 bool) (netip.AddrPort, error) {
	ip := d.cfg.ListenIP.Unmap()
	if ipv4 && !ip.Is4() {
		return netip.AddrPort{}, fmt.Errorf("dtp: data interface %s is not IPv4; use EPSV", ip)
	}
	d.reset()
	ln, err := d.listen(ctx, ip)
	if err != nil {
		return netip.AddrPort{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		ln.Close()
		return netip.AddrPort{}, net.ErrClosed
	}
	d.ln = ln
	return netip.AddrPortFrom(ip, uint16(ln.Addr().(*net.TCPAddr).Port)), nil
}

func (d *Local) listen(ctx context.Context, ip netip.Addr) (*net.TCPListener, error) {
	ln, err := Listen(ctx, ip, d.cfg.PortLow, d.cfg.PortHigh, d.buffer())
	if err != nil && d.cfg.PortLow == 0 && d.cfg.PortHigh == 0 {
		err = fmt.Errorf("dtp: listen: %w", err)
	}
	return ln, err
}

// Active records the addresses the next transfer connects to: one (PORT,
// EPRT) or one per stripe of a striped receiver (SPOR).
func (d *Local) Active(ctx context.Context, addrs []netip.AddrPort) error {
	if len(addrs) == 0 {
		return errors.New("dtp: no data address")
	}
	d.reset()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remotes = slices.Clone(addrs)
	return nil
}

// SetBuffer sets the TCP send and receive buffer size of data sockets made
// from now on (SBUF, SITE RETRBUFSIZE/STORBUFSIZE); 0 restores autotuning.
func (d *Local) SetBuffer(size int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bufSize = size
}

func (d *Local) buffer() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bufSize
}

// SetSecurity sets how data connections made from now on are
// authenticated and protected (DCAU, PROT); nil means plain TCP. Cached
// MODE E connections were secured under the old settings and are closed.
func (d *Local) SetSecurity(cfg *dcsec.Config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sec = cfg
	d.dropCacheLocked()
}

func (d *Local) security() *dcsec.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sec
}

// secure runs the data-channel security handshake of sec on a new
// connection; on failure c is closed.
func secure(ctx context.Context, c net.Conn, connector bool, sec *dcsec.Config) (net.Conn, error) {
	if sec == nil {
		return c, nil
	}
	sc, err := dcsec.Secure(ctx, c, connector, sec)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &xfer.DataError{Open: true, Err: err}
	}
	return sc, nil
}

// reset drops the listener, the active address and cached connections.
func (d *Local) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ln != nil {
		d.ln.Close()
		d.ln = nil
	}
	d.remotes = nil
	d.dropCacheLocked()
}

// Reset drops the passive listener, the active addresses and cached
// connections (a striped frontend moved the data channel elsewhere).
func (d *Local) Reset() { d.reset() }

// DropCache closes cached MODE E connections (DCAU, PROT changes).
func (d *Local) DropCache() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropCacheLocked()
}

func (d *Local) dropCacheLocked() {
	for _, stripe := range d.cache {
		closeAll(stripe)
	}
	d.cache, d.cacheDir = nil, dirNone
}

// Ready reports whether the MODE E transfer req (send: from this side)
// would report its data channel open at once, without waiting for the
// peer: a send on connections cached by the last send (not a striped
// data node's), a receive on cached connections or a passive listener.
// The PI holds pipelined replies back only then (issue 17).
func (d *Local) Ready(req *xfer.Request, send bool) bool {
	if req.Mode != xfer.ModeEBlock || send && req.Senders > 1 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if send {
		return len(d.cache) > 0 && d.cacheDir == dirSend
	}
	return len(d.cache) > 0 && d.cacheDir == dirReceive || len(d.cache) == 0 && d.ln != nil
}

// Close releases the listener. The DTP is unusable afterwards.
func (d *Local) Close() error {
	d.reset()
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return nil
}

// open establishes the data connection for one transfer: it accepts on the
// passive listener (then closes it) or dials the active address, then
// secures the connection. Both are single-use, as in RFC 959 stream mode.
// It returns the security the connection was made with.
func (d *Local) open(ctx context.Context) (net.Conn, *dcsec.Config, error) {
	d.mu.Lock()
	ln, remotes, sec := d.ln, d.remotes, d.sec
	d.ln, d.remotes = nil, nil
	d.mu.Unlock()
	if len(remotes) > 1 {
		return nil, nil, &xfer.DataError{Open: true, Err: errors.New("stream mode carries one stripe; use MODE E with SPOR")}
	}
	switch {
	case ln != nil:
		defer ln.Close()
		conn, err := d.acceptor(sec).AcceptOne(ctx, ln, d.cfg.ConnectTimeout)
		return conn, sec, err
	case len(remotes) == 1:
		dialCtx, cancel := context.WithTimeout(ctx, d.cfg.ConnectTimeout)
		defer cancel()
		c, err := d.dial(dialCtx, remotes[0], sec)
		if err != nil {
			return nil, nil, err
		}
		// The handshake has its own timeout; only the caller's ctx bounds it.
		conn, err := secure(ctx, c, true, sec)
		return conn, sec, err
	}
	return nil, nil, xfer.ErrNoDataAddress
}

// ErrDataPeerRefused reports a data connection to or from an address the
// session may not use (see dataPeerAllowed); it comes wrapped in a
// *xfer.DataError that says which address and why.
var ErrDataPeerRefused = errors.New("dtp: data channel peer refused (FTP bounce protection)")

// dataPeerAllowed is the data channel's authorization rule, the one place
// it is decided, for connections accepted (dialing false) and dialed
// (dialing true) alike. sec is the security the connection will be made
// with, read when it is made: settings changed after PORT (DCAU N) count.
// A data connection may go to or come from peer when
//
//   - the server allows foreign peers (Config.AllowForeignPeers); or
//   - sec authenticates the peer (GSI DCAU A or S, sec.AuthenticatesPeer):
//     its handshake proves who is there, so a third party's server may be
//     anywhere; a peer that fails the handshake is dropped; or
//   - peer is on the control connection's host and, when dialing, its port
//     is not privileged (RFC 2577: no FTP bounce to a system service). A
//     connection coming in from a privileged port harms nobody.
//
// The error wraps ErrDataPeerRefused.
func (d *Local) dataPeerAllowed(peer netip.AddrPort, sec *dcsec.Config, dialing bool) error {
	if d.cfg.AllowForeignPeers || sec.AuthenticatesPeer() {
		return nil
	}
	client := d.cfg.ControlPeer.Addr().Unmap()
	what := "a connection from"
	if dialing {
		what = "connecting to"
	}
	switch {
	case !client.IsValid():
		return fmt.Errorf("%w: %s %s: the client's address is unknown and the data channel does not authenticate its peer",
			ErrDataPeerRefused, what, peer)
	case peer.Addr().Unmap() != client:
		return fmt.Errorf("%w: %s %s: not the client's host %s, and the data channel does not authenticate its peer (DCAU N)",
			ErrDataPeerRefused, what, peer, client)
	case dialing && peer.Port() < 1024:
		return fmt.Errorf("%w: %s %s: privileged port %d", ErrDataPeerRefused, what, peer, peer.Port())
	}
	return nil
}

// dial makes one data connection to remote from the data interface, if
// dataPeerAllowed lets it go there with security sec.
func (d *Local) dial(ctx context.Context, remote netip.AddrPort, sec *dcsec.Config) (*net.TCPConn, error) {
	if err := d.dataPeerAllowed(remote, sec, true); err != nil {
		d.log.Warn("refused to connect a data channel", "to", remote, "err", err)
		return nil, &xfer.DataError{Open: true, Err: err}
	}
	var dialer net.Dialer
	if d.cfg.ListenIP.IsValid() && d.cfg.ListenIP.Unmap().Is4() == remote.Addr().Unmap().Is4() {
		dialer.LocalAddr = &net.TCPAddr{IP: d.cfg.ListenIP.AsSlice()}
	}
	c, err := Dial(ctx, &dialer, remote, d.buffer())
	if err != nil {
		return nil, &xfer.DataError{Open: true, Err: err}
	}
	return c, nil
}

// acceptor admits, as the passive side, the connections dataPeerAllowed
// allows under sec and secures them with sec.
func (d *Local) acceptor(sec *dcsec.Config) *Acceptor {
	a := &Acceptor{
		Allow:   func(peer netip.AddrPort) error { return d.dataPeerAllowed(peer, sec, false) },
		Control: d.cfg.ControlPeer.Addr(),
		Log:     d.log,
	}
	if sec != nil {
		a.Secure = func(ctx context.Context, c net.Conn) (net.Conn, error) { return secure(ctx, c, false, sec) }
	}
	return a
}

// Send moves bytes from src to the data channel (RETR, listings).
func (d *Local) Send(ctx context.Context, req *xfer.Request, src dsi.Reader, notify func(xfer.Event)) (int64, error) {
	if req.Mode == xfer.ModeEBlock {
		return d.sendEBlock(ctx, req, src, notify)
	}
	ctx, conn, sec, done, err := d.openStream(ctx, notify)
	if err != nil {
		return 0, err
	}
	defer done()
	t := newTally()
	t.add(conn, false)
	defer func() { notify(t.event(1)) }() // before done closes conn
	// Zero-copy sends count nothing themselves: markers read the kernel's
	// counter. A TLS connection has no zero-copy path and counts its
	// plaintext (the kernel would count the records' overhead too).
	var w io.Writer = conn
	var counted atomic.Int64
	bytesSent := func() int64 { return counted.Load() }
	if _, isTLS := conn.(*tls.Conn); isTLS {
		w = &countingWriter{w: conn, n: &counted}
	} else {
		base, _ := netopt.Moved(conn)
		bytesSent = func() int64 {
			n, _ := netopt.Moved(conn)
			return int64(n - base)
		}
	}
	var final atomic.Int64
	final.Store(-1)
	stopMarkers := d.markers(req, notify, func() int64 {
		if f := final.Load(); f >= 0 {
			return f // the final marker reports every byte sent
		}
		return bytesSent()
	}, nil)
	n, err := sendStream(ctx, conn, w, sec, req, src)
	final.Store(n)
	stopMarkers()
	return n, err
}

// Receive moves bytes from the data channel into dst (STOR, APPE, ESTO).
func (d *Local) Receive(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error) {
	if req.Mode == xfer.ModeEBlock {
		return d.receiveEBlock(ctx, req, dst, notify)
	}
	ctx, conn, _, done, err := d.openStream(ctx, notify)
	if err != nil {
		return 0, err
	}
	defer done()
	t := newTally()
	t.add(conn, false)
	defer func() { notify(t.event(1)) }() // before done closes conn
	return receiveStream(ctx, conn, req, dst)
}

// openStream opens a stream-mode data connection, reports the start and
// watches the connection for stalls; done releases all of it. The returned
// context is cancelled by the stall watchdog.
func (d *Local) openStream(ctx context.Context, notify func(xfer.Event)) (context.Context, net.Conn, *dcsec.Config, func(), error) {
	conn, sec, err := d.open(ctx)
	if err != nil {
		return ctx, nil, nil, nil, err
	}
	notify(xfer.Event{Kind: xfer.EventStarted, Time: time.Now()})
	ctx, cancel := context.WithCancelCause(ctx)
	stopWatch := watchConns(ctx, cancel, d.cfg.StallTimeout, func() []net.Conn { return []net.Conn{conn} })
	return ctx, conn, sec, func() {
		stopWatch()
		cancel(nil)
		conn.Close()
	}, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
