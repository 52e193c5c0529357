package dtp

// The data channel's connections, for either role: a GridFTP server's
// passive listener and active dials, and a client's active listener
// (downloads, PORT/EPRT) and passive dials (uploads, PASV/EPSV). As
// x/crypto/ssh runs one transport for client and server, the accept loop
// below is the same code on both sides; each side brings its policy: who
// may connect (Acceptor.Allow: the server's dataPeerAllowed, the client's
// "the server's host"), how a connection is secured (Acceptor.Secure:
// dcsec as DCAU and PROT say) and how errors are reported.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/netopt"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// Listen opens a data listener on ip, on a free port in [lo, hi] tried
// from a random one, or any port when lo and hi are 0. Its sockets get
// TCP buffers of buf bytes (0: the kernel's autotuning), which accepted
// connections inherit. With a port range, running out of ports is an
// error that names the range; otherwise the error is the listen's own.
func Listen(ctx context.Context, ip netip.Addr, lo, hi uint16, buf int) (*net.TCPListener, error) {
	lc := net.ListenConfig{Control: netopt.BufferControl(buf)}
	if lo == 0 && hi == 0 {
		l, err := lc.Listen(ctx, "tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			return nil, err
		}
		return l.(*net.TCPListener), nil
	}
	n := int(hi) - int(lo) + 1
	start := rand.IntN(n)
	var last error
	for i := range n { // bounded: each port in the range at most once
		port := int(lo) + (start+i)%n
		l, err := lc.Listen(ctx, "tcp", netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return l.(*net.TCPListener), nil
		}
		last = err
	}
	return nil, fmt.Errorf("dtp: no free port in %d-%d: %w", lo, hi, last)
}

// Dial makes one data connection to remote with a copy of d (nil: the
// zero net.Dialer), whose sockets get TCP buffers of buf bytes before
// the handshake when buf is positive. The error is the dial's own.
func Dial(ctx context.Context, d *net.Dialer, remote netip.AddrPort, buf int) (*net.TCPConn, error) {
	var dialer net.Dialer
	if d != nil {
		dialer = *d
	}
	if buf > 0 {
		dialer.Control = netopt.BufferControl(buf)
	}
	c, err := dialer.DialContext(ctx, "tcp", remote.String())
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("a %T, not TCP", c)
	}
	return tc, nil
}

// maxStrays bounds how many connections one accept loop takes in all. It
// is far above anything a transfer needs: strays that are refused or
// closed cost an accept each, and must not end the transfer by their
// number (the accept deadline ends the loop first).
const maxStrays = 1 << 20

// loudRefusals is how many refused connections an accept loop logs as
// warnings; the rest go to the debug log, so a flood cannot flood it.
const loudRefusals = 10

// maxCandidates bounds the security handshakes one listener runs at
// once, and maxCandidatesPerSource those from one address (one /64 for
// IPv6; as many as a transfer may open streams): a source over its share
// is closed at once, so strangers on a few hosts cannot fill the listener
// while the peer waits behind them, and waiting handshakes cost little
// (the TLS work starts with the peer's first flight). The control peer's
// host is outside maxCandidates. Connections beyond wait in the kernel's
// listen queue until a handshake ends (each within its handshake
// timeout).
const (
	maxCandidates          = 256
	maxCandidatesPerSource = 64
)

// Acceptor admits and secures the connections a data listener receives,
// for a server's passive listener and a client's active one alike. Every
// connection Allow admits is a candidate: without Secure it is taken at
// once; otherwise its handshake runs in a goroutine of its own, and one
// that fails, sends garbage or stalls is dropped, so a stranger who
// reaches the port first can neither take the transfer's place nor fail
// it. Refusals are logged and remembered (LastRefused), never returned
// as the transfer's error. An Acceptor serves one transfer and must not
// be copied.
type Acceptor struct {
	// Allow decides whether a connection from peer may be a candidate;
	// its error says why not. Nil admits every peer.
	Allow func(peer netip.AddrPort) error
	// Secure runs the data channel's security handshake on an admitted
	// connection, as the side that accepted it, bounded by ctx (and its
	// own handshake timeout); on failure it closes c. Nil means plain TCP.
	Secure func(ctx context.Context, c net.Conn) (net.Conn, error)
	// Control is the control connection's peer: its candidates do not
	// count against maxCandidates.
	Control netip.Addr
	// Log receives refusals; nil discards.
	Log *slog.Logger

	refused lastError
}

// LastRefused returns the latest refusal of a connection (by Allow) or
// failed handshake, or nil: what to add to "no data connection came".
func (a *Acceptor) LastRefused() error { return a.refused.get() }

func (a *Acceptor) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// AcceptOne takes the first connection on ln that is admitted and
// completes its handshake; the other candidates are closed. The listener
// keeps accepting until timeout, and handshakes under way by then may
// still finish (bounded by ctx and their handshake timeout). The error
// is an *xfer.DataError (Open): ctx's cause, or that no connection came
// within timeout, with the last refusal.
func (a *Acceptor) AcceptOne(ctx context.Context, ln *net.TCPListener, timeout time.Duration) (net.Conn, error) {
	hsCtx, stopHandshakes := context.WithCancel(ctx)
	defer stopHandshakes()
	acceptCtx, stopAccepting := context.WithTimeoutCause(hsCtx, timeout,
		fmt.Errorf("no data connection within %v", timeout))
	defer stopAccepting()
	won := make(chan net.Conn, 1)
	take := func(c net.Conn) bool {
		select {
		case won <- c:
			stopAccepting()
			stopHandshakes() // the losers: their connections are closed
			return true
		default:
			return false
		}
	}
	err := a.Serve(acceptCtx, hsCtx, ln, take)
	select {
	case c := <-won:
		return c, nil
	default:
	}
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	} else if last := a.refused.get(); last != nil {
		err = fmt.Errorf("%w; the last one was refused: %w", err, last)
	}
	return nil, &xfer.DataError{Open: true, Err: err}
}

// Serve accepts connections on ln until acceptCtx ends and hands every
// admitted, secured one to take (handshakes bounded by hsCtx and their
// own timeout, at most maxCandidates at a time); take reports whether it
// kept the connection; if not, the connection is closed. Serve returns,
// with the reason it stopped accepting, once every handshake it started
// has ended; ln's deadline is then cleared (a MODE E listener serves the
// next transfer).
func (a *Acceptor) Serve(acceptCtx, hsCtx context.Context, ln *net.TCPListener, take func(net.Conn) bool) error {
	interrupted := make(chan struct{})
	stop := context.AfterFunc(acceptCtx, func() {
		ln.SetDeadline(time.Unix(1, 0))
		close(interrupted)
	})
	defer func() {
		if !stop() {
			<-interrupted
		}
		ln.SetDeadline(time.Time{})
	}()
	log := a.log()
	cands := candidates{control: xfer.Source(a.Control), bySrc: map[netip.Prefix][]net.Conn{}}
	var handshakes sync.WaitGroup
	defer handshakes.Wait() // they end with hsCtx or their timeout at the latest
	stopped := func(err error) error {
		if acceptCtx.Err() != nil {
			return context.Cause(acceptCtx)
		}
		return err
	}
	refusals := 0
	for range maxStrays {
		c, err := ln.AcceptTCP()
		if err != nil {
			return stopped(err)
		}
		peer := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		if a.Allow != nil {
			if err := a.Allow(peer); err != nil {
				if refusals++; refusals <= loudRefusals {
					log.Warn("refused a data connection", "from", peer, "err", err)
				} else {
					log.Debug("refused a data connection", "from", peer, "err", err)
				}
				a.refused.set(err)
				c.Close()
				continue
			}
		}
		if a.Secure == nil {
			if !take(c) {
				c.Close()
			}
			continue
		}
		src := xfer.Source(peer.Addr())
		if !cands.admit(src, c) {
			log.Debug("closed a data connection: its host has too many handshakes under way", "from", peer)
			c.Close()
			continue
		}
		handshakes.Go(func() {
			defer cands.release(src, c)
			sc, err := a.Secure(hsCtx, c)
			if err != nil {
				if hsCtx.Err() == nil {
					var de *xfer.DataError
					if errors.As(err, &de) {
						err = de.Err
					}
					a.refused.set(err)
					log.Warn("dropped a data connection that failed its security handshake", "from", peer, "err", err)
				}
				return
			}
			if !take(sc) {
				sc.Close()
			}
		})
	}
	return errors.New("too many data connections were refused")
}

// candidates are the connections of one accept loop still in their
// security handshake, by source. A source holds at most
// maxCandidatesPerSource; all sources but the control peer's hold at most
// maxCandidates together, and when they do, a newcomer takes the place of
// the oldest candidate of the source holding most (never of a source
// holding fewer than its own): strangers on a few hosts can neither fill
// the listener nor keep out a peer on another. Safe for concurrent use.
type candidates struct {
	control netip.Prefix

	mu     sync.Mutex
	shared int                         // candidates of sources other than control; guarded by mu
	bySrc  map[netip.Prefix][]net.Conn // oldest first; guarded by mu
}

// admit records c of src, making room as above; false means c must be
// closed.
func (cs *candidates) admit(src netip.Prefix, c net.Conn) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.bySrc[src]) >= maxCandidatesPerSource {
		return false
	}
	if src != cs.control && cs.shared >= maxCandidates {
		var busiest netip.Prefix
		for s, l := range cs.bySrc {
			if s != cs.control && len(l) > len(cs.bySrc[busiest]) {
				busiest = s
			}
		}
		if len(cs.bySrc[busiest]) <= len(cs.bySrc[src])+1 {
			return false // no source holds more than its share
		}
		oldest := cs.bySrc[busiest][0]
		cs.bySrc[busiest] = cs.bySrc[busiest][1:]
		cs.shared--
		oldest.Close() // its handshake fails; its release finds it gone
	}
	cs.bySrc[src] = append(cs.bySrc[src], c)
	if src != cs.control {
		cs.shared++
	}
	return true
}

// release forgets c of src once its handshake has ended.
func (cs *candidates) release(src netip.Prefix, c net.Conn) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	l := cs.bySrc[src]
	for i, x := range l {
		if x == c {
			cs.bySrc[src] = append(l[:i:i], l[i+1:]...)
			if len(cs.bySrc[src]) == 0 {
				delete(cs.bySrc, src)
			}
			if src != cs.control {
				cs.shared--
			}
			return
		}
	}
}

// lastError keeps the latest of a series of errors; safe for concurrent use.
type lastError struct{ p atomic.Pointer[error] }

func (l *lastError) set(err error) { l.p.Store(&err) }

func (l *lastError) get() error {
	if p := l.p.Load(); p != nil {
		return *p
	}
	return nil
}

// SendStripes sends one MODE E transfer to several receiving stripes at
// once, for a server's DTP (SPOR, striped data nodes) and a client's
// striped upload (SPAS) alike. Each stripe is its own MODE E transfer:
// its share of the blocks, its own connections, its own EOF and EOD count
// (protocol.md §5.2). Stripe i sends the ranges and config that part(i)
// returns over stripes[i]; the first failure cancels the others through
// cancel (ctx's). It returns the bytes all stripes sent and each stripe's
// error. A single stripe runs in the caller's goroutine: the common case
// costs no goroutine per file.
func SendStripes(ctx context.Context, cancel context.CancelCauseFunc, stripes [][]net.Conn, src io.ReaderAt,
	part func(i int) ([]xfer.Range, eblock.SendConfig)) (int64, []error) {
	var total atomic.Int64
	errs := make([]error, len(stripes))
	sendStripe := func(i int) {
		ranges, cfg := part(i)
		n, err := eblock.Send(ctx, stripes[i], src, ranges, cfg)
		total.Add(n)
		if err != nil {
			errs[i] = err
			cancel(err)
		}
	}
	if len(stripes) == 1 {
		sendStripe(0)
	} else {
		var wg sync.WaitGroup
		for i := range stripes {
			wg.Go(func() { sendStripe(i) })
		}
		wg.Wait()
	}
	return total.Load(), errs
}

// ExpectConn cancels a MODE E receive through cancel, with the error none
// makes of the last refusal (nil when there was none), if rcv has no data
// connection once timeout has passed: no connection at all is a failure.
// A candidate still waiting for its first header counts (a slow sender;
// a stray that holds its connection open ends with the stall timeout).
// The returned function stops the wait.
func (a *Acceptor) ExpectConn(timeout time.Duration, rcv *eblock.Receiver, cancel context.CancelCauseFunc, none func(lastRefused error) error) (stop func() bool) {
	t := time.AfterFunc(timeout, func() {
		if rcv.Conns() == 0 && rcv.Candidates() == 0 {
			cancel(none(cmp.Or(rcv.LastDropped(), a.LastRefused())))
		}
	})
	return t.Stop
}
