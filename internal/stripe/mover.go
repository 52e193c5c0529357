package stripe

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// ErrMoverClosed is returned by Mover.Serve after Shutdown or Close.
var ErrMoverClosed = errors.New("stripe: mover closed")

// Mover is a data node of a striped server: it obeys authenticated
// frontends, moving its stripes between the data channel and Storage.
// Set the fields before Serve; the zero value of each optional one works.
type Mover struct {
	// Storage is the data node's view of the served tree; it must show the
	// same files as the frontend's storage. Required.
	Storage dsi.Storage
	// Secret is the shared secret frontends must prove. Required.
	Secret []byte
	// DataIP is the address data connections use; invalid means the address
	// the frontend reached this mover on.
	DataIP netip.Addr
	// PortLow and PortHigh bound passive data ports; 0,0 means any.
	PortLow, PortHigh uint16
	// Heartbeat is how often the mover pings a frontend; HeartbeatTimeout
	// how long a silent frontend lives (its transfer is then stopped).
	// Zero means 2s and five heartbeats.
	Heartbeat, HeartbeatTimeout time.Duration
	// Trust verifies the peers of secured data channels (DCAU A and S);
	// nil refuses every peer of a session with DCAU.
	Trust *gsi.TrustStore
	// Certificate is the mover's host credential: its secured data
	// channels use it for sessions without a delegated proxy (which the
	// frontend sends). nil refuses such sessions' secured data channels.
	Certificate *tls.Certificate
	// HandshakeTimeout bounds a connection's whole handshake; 0 means the
	// heartbeat timeout, at most 5s.
	HandshakeTimeout time.Duration
	// HelloTimeout bounds the wait for a new connection's first frame (a
	// frontend sends it as soon as it is connected); 0 means 2s. It is at
	// most HandshakeTimeout.
	HelloTimeout time.Duration
	// MaxHandshakes bounds the connections still in their handshake (not
	// yet proved to know the secret). When they are all taken, a new
	// connection takes the place of the oldest one from the source address
	// holding the most, which is closed. 0 means 16.
	MaxHandshakes int
	// Logger receives events; nil discards.
	Logger *slog.Logger
	// Observe, when set, is told of each transfer the mover runs, for
	// metrics: as it starts (End zero) and once it has ended (Code 226,
	// or 426 when it failed). It must return quickly; calls come from
	// several transfers at once.
	Observe func(t *xfer.Summary)

	mu        sync.Mutex
	lns       map[net.Listener]struct{}
	links     map[*link]struct{}
	strangers map[*stranger]struct{} // handshakes under way; guarded by mu
	arrivals  uint64                 // numbers strangers; guarded by mu
	ctx       context.Context
	cancel    context.CancelFunc
	closed    bool
	wg        sync.WaitGroup
	dropping  atomic.Bool // a drop was logged and none since
	// orphans counts transfers still running after their session's link
	// ended (their storage or data connections hang): while there are
	// any, new transfers are refused rather than piled up behind them.
	orphans atomic.Int32
}

func (m *Mover) log() *slog.Logger {
	if m.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Logger
}

func (m *Mover) hb() heartbeat {
	return heartbeat{m.Heartbeat, m.HeartbeatTimeout}.withDefaults()
}

// Serve accepts frontend connections on l until Shutdown or Close, and
// always returns a non-nil error (ErrMoverClosed after Shutdown/Close).
func (m *Mover) Serve(l net.Listener) error {
	if m.Storage == nil || len(m.Secret) == 0 {
		return errors.New("stripe: a mover needs Storage and Secret")
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrMoverClosed
	}
	if m.lns == nil {
		m.lns, m.links = map[net.Listener]struct{}{}, map[*link]struct{}{}
		m.strangers = map[*stranger]struct{}{}
		m.ctx, m.cancel = context.WithCancel(context.Background())
	}
	m.lns[l] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.lns, l)
		m.mu.Unlock()
		l.Close()
	}()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			m.mu.Lock()
			closed := m.closed
			m.mu.Unlock()
			if closed {
				return ErrMoverClosed
			}
			var t interface{ Temporary() bool }
			if errors.As(err, &t) && t.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			c.Close()
			return ErrMoverClosed
		}
		s := m.admitLocked(c)
		m.wg.Add(1)
		m.mu.Unlock()
		go func() {
			defer m.wg.Done()
			m.handle(c, s)
		}()
	}
}

// A stranger is a connection in its handshake: it has not proved the
// secret yet, and holds one of the MaxHandshakes slots.
type stranger struct {
	source  string // its address, an IPv6 one cut to its /64
	arrival uint64 // order of arrival: lower is older
	ctx     context.Context
	cancel  context.CancelCauseFunc // ends its handshake
}

// errEvicted ends the handshake of a stranger whose slot went to a newer
// connection.
var errEvicted = errors.New("stripe: every handshake slot was taken; this connection, the oldest of the busiest source, gave its slot to a new one")

// admitLocked gives c a handshake slot. When all are taken, the oldest
// stranger of the source holding the most slots loses its own (its
// handshake ends at once) rather than c being refused. m.mu must be held.
//
// Why not refuse the newcomer, as before: then whoever fills the slots
// first keeps them, and 16 idle connections lock every frontend out
// until they time out, again and again. Why not cap each source: a
// frontend host may run untrusted users, so an attacker can share the
// frontend's address, and a cap would then count the frontend's
// handshakes and the attacker's together and refuse the frontend all
// the same. Eviction keeps the bound on unauthenticated connections
// (never more than MaxHandshakes at once) and makes holding a slot cost
// the attacker a steady stream of new connections: a frontend sends its
// hello at once and its whole handshake takes one round trip, so only a
// connection flood faster than that from the frontend's own address can
// take its slot (and then the frontend dials again, see Pool.dial; its
// sessions mostly reuse links that are already authenticated, see
// Pool.take). Choosing the victim in the busiest source keeps a stranger
// on another address from ever taking the slot of a frontend that holds
// fewer slots than it.
func (m *Mover) admitLocked(c net.Conn) *stranger {
	if len(m.strangers) >= cmp.Or(m.MaxHandshakes, 16) {
		held := map[string]int{}
		for s := range m.strangers {
			held[s.source]++
		}
		var victim *stranger
		for s := range m.strangers {
			if victim == nil || held[s.source] > held[victim.source] ||
				held[s.source] == held[victim.source] && s.arrival < victim.arrival {
				victim = s
			}
		}
		delete(m.strangers, victim)
		victim.cancel(errEvicted)
		if !m.dropping.Swap(true) {
			m.log().Warn("every handshake slot taken; closing the oldest connection of the busiest source for each new one",
				"max", cmp.Or(m.MaxHandshakes, 16), "source", victim.source)
		}
	} else if len(m.strangers) < cmp.Or(m.MaxHandshakes, 16)/2 {
		m.dropping.Store(false)
	}
	m.arrivals++
	s := &stranger{source: sourceOf(c.RemoteAddr()), arrival: m.arrivals}
	s.ctx, s.cancel = context.WithCancelCause(m.ctx)
	m.strangers[s] = struct{}{}
	return s
}

// proved frees s's slot once its peer proved the secret; false means s
// lost its slot to a newer connection first (its handshake is ended).
func (m *Mover) proved(s *stranger) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.strangers[s]; !ok {
		return false
	}
	delete(m.strangers, s)
	return true
}

// sourceOf names the source of a connection: its IP address, an IPv6 one
// cut to its /64 (what one host usually has).
func sourceOf(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// Shutdown stops accepting and ends every frontend link, stopping their
// transfers; it waits for them or until ctx is done.
func (m *Mover) Shutdown(ctx context.Context) error {
	m.Close()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting and kills every link at once.
func (m *Mover) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.cancel != nil {
		m.cancel() // ends handshakes under way
	}
	for l := range m.lns {
		l.Close()
	}
	for l := range m.links {
		l.fail(errors.New("mover shutting down"))
	}
	return nil
}

// handle serves one connection, st while it is a stranger.
func (m *Mover) handle(c net.Conn, st *stranger) {
	log := m.log().With("frontend", c.RemoteAddr().String())
	hb := m.hb()
	timeout := m.HandshakeTimeout
	if timeout <= 0 {
		timeout = min(hb.timeout, 5*time.Second)
	}
	hello := cmp.Or(m.HelloTimeout, 2*time.Second)
	keys, err := acceptHandshake(st.ctx, c, m.Secret, timeout, hello, func() bool { return m.proved(st) })
	m.mu.Lock()
	delete(m.strangers, st) // when it failed before its proof
	m.mu.Unlock()
	st.cancel(nil)
	if err != nil {
		if errors.Is(err, errEvicted) {
			log.Debug("refused a frontend", "err", err) // logged once per attack in admitLocked
		} else {
			log.Warn("refused a frontend", "err", err)
		}
		c.Close()
		return
	}
	l := newLink(c, "frontend "+c.RemoteAddr().String(), hb, keys)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		l.close()
		return
	}
	m.links[l] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.links, l)
		m.mu.Unlock()
		l.close()
	}()
	s := &moverSession{m: m, l: l, log: log}
	if la, isTCP := c.LocalAddr().(*net.TCPAddr); isTCP {
		s.localIP = la.AddrPort().Addr()
	}
	s.run()
}

// moverSession serves one frontend link: one control session's data moves.
type moverSession struct {
	m       *Mover
	l       *link
	log     *slog.Logger
	localIP netip.Addr
	local   *dtp.Local // nil until the frontend describes its session
	sec     *Security  // the data channel security local has
	cred    *Msg       // the session's delegated credential, if sent
	credID  []byte     // its fingerprint

	cancel   context.CancelCauseFunc // of the last transfer; nil when none
	done     chan struct{}           // closed when the last transfer ends, before its TypeDone is sent
	stopping bool                    // the last transfer was told to stop
	wg       sync.WaitGroup          // transfer goroutines, until their TypeDone is sent
}

func (s *moverSession) run() {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	defer func() {
		// The link is gone, so nothing waits on this loop: wait for the
		// transfer (which may hang as long as its storage does).
		s.stop(errors.New("frontend link ended"))
		if s.busy() {
			s.m.orphans.Add(1)
			<-s.done
			s.m.orphans.Add(-1)
		}
		s.wg.Wait()
		if s.local != nil {
			s.local.Close()
		}
	}()
	for {
		msg, err := s.l.recv(ctx)
		if err != nil {
			switch {
			case errors.Is(err, ErrTampered), errors.Is(err, ErrReplay):
				s.log.Warn("refused a frame from the frontend", "err", err)
			case s.busy():
				s.log.Warn("frontend lost during a transfer; stopping it", "err", err)
			}
			return
		}
		switch msg.Type {
		case TypeSession:
			if s.busy() {
				// The transfer goroutine uses the DTP: it stays.
				s.reply(msg.Seq, errors.New("a transfer is running; the session cannot change now"))
				continue
			}
			if s.local != nil {
				s.local.Close()
			}
			// A frontend reuses a link for its next control session
			// (Pool.take): nothing of the last one stays.
			s.sec, s.cred, s.credID = nil, nil, nil
			ip := s.m.DataIP
			if !ip.IsValid() {
				ip = s.localIP
			}
			s.local = dtp.New(dtp.Config{
				ListenIP:          ip,
				ControlPeer:       msg.ControlPeer,
				AllowForeignPeers: msg.AllowForeign,
				PortLow:           s.m.PortLow,
				PortHigh:          s.m.PortHigh,
				StallTimeout:      msg.Stall,
				Logger:            s.log,
			})
		case TypeCredential:
			s.cred, s.credID = msg, fingerprint(msg)
		case TypeReset:
			if s.local != nil && !s.busy() {
				s.local.Reset()
			}
		case TypePassive:
			if err := s.ready(); err != nil {
				s.reply(msg.Seq, err)
				continue
			}
			if err := s.secure(msg.Sec); err != nil {
				s.reply(msg.Seq, err)
				continue
			}
			s.local.SetBuffer(msg.Buffer)
			ap, err := s.local.Passive(ctx, msg.IPv4)
			if err != nil {
				s.reply(msg.Seq, err)
				continue
			}
			s.l.send(&Msg{Type: TypeAddr, Seq: msg.Seq, Addr: ap})
		case TypeSend, TypeReceive:
			if err := s.ready(); err != nil || msg.Job == nil {
				if err == nil {
					err = errors.New("transfer without a job")
				}
				s.l.send(&Msg{Type: TypeDone, Seq: msg.Seq, Kind: KindOther, Text: err.Error()})
				continue
			}
			if err := s.secure(msg.Sec); err != nil {
				s.l.send(&Msg{Type: TypeDone, Seq: msg.Seq, Kind: KindOpen, Text: err.Error()})
				continue
			}
			s.start(ctx, s.local, msg)
		case TypeAbort:
			s.stop(xfer.ErrAborted)
		default:
			s.log.Warn("unexpected message from the frontend", "type", msg.Type)
		}
	}
}

// secure gives the local DTP the session's data channel security when it
// changed (which drops its cached connections).
func (s *moverSession) secure(sec *Security) error {
	if sec.equal(s.sec) {
		return nil
	}
	var cfg *dcsec.Config
	if sec != nil {
		cert := s.m.Certificate
		if sec.Cred != nil {
			if s.cred == nil || !bytes.Equal(sec.Cred, s.credID) {
				return errors.New("the session's credential did not arrive")
			}
			var err error
			if cert, err = parseCredential(s.cred); err != nil {
				return err
			}
		} else if cert == nil {
			return errors.New("this mover has no host credential for secured data channels (ferry mover -cert/-key, X509_USER_CERT/X509_USER_KEY or /etc/grid-security/hostcert.pem); delegate a proxy or send DCAU N")
		}
		cfg = sec.config(s.m.Trust, cert)
	}
	s.local.SetSecurity(cfg)
	s.sec = sec
	return nil
}

func (s *moverSession) ready() error {
	switch {
	case s.local == nil:
		return errors.New("no session set up")
	case s.busy() && s.stopping:
		return errors.New("busy: the previous transfer has not stopped yet (its storage or data connections do not answer)")
	case s.busy():
		return errors.New("busy: a transfer is running")
	case s.m.orphans.Load() > 0:
		return errors.New("busy: a transfer of an earlier session has not stopped yet (its storage or data connections do not answer)")
	}
	return nil
}

func (s *moverSession) reply(seq uint64, err error) {
	s.l.send(&Msg{Type: TypeError, Seq: seq, Text: err.Error()})
}

func (s *moverSession) busy() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// stop cancels the running transfer, if any, without waiting for it: the
// run loop must go on reading (and refusing with "busy") even when the
// transfer hangs in its storage. The transfer reports its end itself.
func (s *moverSession) stop(cause error) {
	if s.busy() {
		s.cancel(cause)
		s.stopping = true
	}
}

// start runs a transfer in its own goroutine, so that heartbeats and an
// abort are still read while it runs. The caller has checked that none
// is running (ready).
func (s *moverSession) start(ctx context.Context, local *dtp.Local, msg *Msg) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	s.cancel, s.done, s.stopping = cancel, done, false
	s.wg.Go(func() {
		sum := s.beginSummary(msg)
		n, err := s.transfer(ctx, local, msg, sum)
		cancel(nil)
		s.endSummary(sum, n, err)
		reply := &Msg{Type: TypeDone, Seq: msg.Seq, N: n}
		if err != nil {
			reply.Kind, reply.Text = classify(err)
			s.log.Info("transfer failed", "op", msg.Type, "path", msg.Job.Path, "bytes", n, "err", err)
		} else {
			s.log.Info("transfer", "op", msg.Type, "path", msg.Job.Path, "bytes", n, "stripe", msg.Job.Index, "stripes", max(msg.Job.Senders, 1))
		}
		// Not busy before the frontend hears of the end: a session
		// description it sends next (on a link it reuses) is obeyed.
		close(done)
		s.l.send(reply)
	})
}

// beginSummary starts the account of msg's transfer for Mover.Observe;
// nil when nobody observes.
func (s *moverSession) beginSummary(msg *Msg) *xfer.Summary {
	if s.m.Observe == nil {
		return nil
	}
	req := msg.Job.request()
	t := &xfer.Summary{Upload: msg.Type != TypeSend, Mode: req.Mode, Type: req.Type, Path: req.Path,
		Start: time.Now(), Stripes: 1, Buffer: msg.Buffer, Retransmits: -1}
	t.Op = "RETR"
	if t.Upload {
		t.Op = "STOR"
	}
	s.m.Observe(t)
	return t
}

// endSummary completes the account of a transfer that moved n bytes and
// ended with err.
func (s *moverSession) endSummary(t *xfer.Summary, n int64, err error) {
	if t == nil {
		return
	}
	t.End, t.Bytes, t.Code = time.Now(), n, 226
	if err != nil {
		t.Code = 426
	}
	s.m.Observe(t)
}

// transfer runs in its own goroutine: it touches no field of s the run
// loop writes, and uses the DTP it was given. What the DTP says of its
// data connections also goes into sum, when not nil.
func (s *moverSession) transfer(ctx context.Context, local *dtp.Local, msg *Msg, sum *xfer.Summary) (int64, error) {
	req := msg.Job.request()
	local.SetBuffer(msg.Buffer)
	if len(msg.Addrs) > 0 {
		if err := local.Active(ctx, msg.Addrs); err != nil {
			return 0, err
		}
	}
	notify := func(ev xfer.Event) {
		if ev.Kind == xfer.EventConns && sum != nil {
			sum.Streams, sum.Opened, sum.Retransmits = ev.Streams, ev.Opened, ev.Retransmits
		}
		s.l.send(&Msg{Type: TypeEvent, Seq: msg.Seq, Event: &ev})
	}
	st := s.m.Storage
	if msg.Type == TypeSend {
		var src dsi.Reader
		if req.Listing {
			src = memReader{bytes.NewReader(msg.Data)}
		} else {
			r, err := st.Open(ctx, req.Path)
			if err != nil {
				return 0, &xfer.StorageError{Err: err}
			}
			defer r.Close()
			src = r
			if sr, ok := r.(stripeReader); ok {
				if block, mine := ownBlocks(req, len(msg.Addrs)); mine != nil {
					sr.Stripe(req.Offset, block, mine)
				}
			}
		}
		return local.Send(ctx, req, src, notify)
	}
	// An upload's part file is a name the server chose: never written
	// through a link planted there (the frontend made it, with its mode).
	w, err := createForJob(ctx, st, req.Path, msg.Upload, dsi.CreateOptions{Size: -1, NoFollow: xfer.IsPartName(req.Path)})
	if err != nil {
		return 0, &xfer.StorageError{Err: err}
	}
	n, err := local.Receive(ctx, req, w, notify)
	if a, ok := w.(interface{ Abort() error }); ok && err != nil && msg.Upload != nil {
		// A writer of a shared S3 upload keeps nothing of a failed
		// transfer (the frontend aborts the upload): no fragments.
		a.Abort()
		return n, err
	}
	if cerr := w.Close(); cerr != nil && err == nil {
		err = &xfer.StorageError{Err: cerr}
	}
	return n, err
}

// classify says how the frontend should report err.
func classify(err error) (ErrKind, string) {
	var de *xfer.DataError
	var se *xfer.StorageError
	switch {
	case errors.Is(err, xfer.ErrAborted):
		return KindAborted, err.Error()
	case errors.Is(err, xfer.ErrNoDataAddress):
		return KindNoAddress, err.Error()
	case errors.As(err, &de) && de.Open:
		return KindOpen, de.Err.Error()
	case errors.As(err, &de):
		return KindData, de.Err.Error()
	case errors.As(err, &se) && errors.Is(err, dsi.ErrNoSpace):
		return KindNoSpace, se.Err.Error()
	case errors.As(err, &se):
		return KindStorage, se.Err.Error()
	}
	return KindOther, err.Error()
}

// memReader serves a listing's bytes as a dsi.Reader.
type memReader struct{ *bytes.Reader }

func (memReader) Close() error { return nil }

var _ dsi.Reader = memReader{}
