package stripe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Movers are the data movers' addresses ("host:port"), in stripe order.
	Movers []string
	// Secret is the shared secret both sides prove. Required.
	Secret []byte
	// Heartbeat is how often links ping; HeartbeatTimeout how long a
	// silent mover lives. Zero means 2s and five heartbeats.
	Heartbeat, HeartbeatTimeout time.Duration
	// RequestTimeout bounds the wait for a mover's answer to a request
	// (PASV, SPAS); 0 means the heartbeat timeout.
	RequestTimeout time.Duration
	// DialTimeout bounds connecting to a mover; 0 means 5s.
	DialTimeout time.Duration
	// MaxBackoff bounds the wait between reconnections to a mover that
	// is down; 0 means 5s.
	MaxBackoff time.Duration
	// MinUp is how many movers must be up for a transfer to start; 0
	// means 1. A transfer stripes over the movers up at its start, so
	// with fewer than all a striped server goes on at a lower rate while
	// a mover is down; MinUp = len(Movers) makes any mover down an error.
	MinUp int
	// Logger receives mover health changes; nil discards.
	Logger *slog.Logger
}

// Pool is the frontend's view of its movers: it watches their health over
// a monitor link each (reconnecting with backoff) and makes a Frontend for
// each control session. Movers may join and leave (SetMovers); a transfer
// stripes over the movers that are up when its data channel is set up.
//
// A control session's links to the movers outlive it: when it ends they
// go back to the pool, idle, and the next session takes them (take), and
// the pool keeps one authenticated link per mover ready. So a new control
// session needs no handshake with the movers, and strangers that hold a
// mover's handshake slots cannot keep it from working; only sessions
// beyond those the idle links serve at once dial, and then they win a slot
// (Mover.admitLocked) or dial again (dial).
type Pool struct {
	cfg PoolConfig
	hb  heartbeat
	log *slog.Logger
	seq atomic.Uint64 // numbers requests across sessions: a reused link's late replies never match

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	movers    []*moverState // in stripe order; replaced, never changed in place
	frontends map[*Frontend]struct{}
}

// moverState is one mover's health, and its idle links.
type moverState struct {
	addr    string
	ctx     context.Context    // ends when it leaves the pool or the pool closes
	stop    context.CancelFunc // ends its monitor
	retired atomic.Bool        // it left the pool

	mu        sync.Mutex
	up        bool
	err       error      // why it is down
	since     time.Time  // of the last change
	idle      []idleLink // authenticated, no session's; guarded by mu
	refilling bool       // a link for idle is being dialled; guarded by mu
}

// idleLink is a link in moverState.idle; taking it closes taken, which
// ends its watcher (keepLocked).
type idleLink struct {
	l     *link
	taken chan struct{}
}

// maxIdle bounds the idle links a pool keeps per mover.
const maxIdle = 8

// NewPool starts watching the movers of cfg.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if err := checkMovers(cfg.Movers); err != nil {
		return nil, err
	}
	if len(cfg.Secret) == 0 {
		return nil, errors.New("stripe: a pool needs the movers' shared secret")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	p := &Pool{cfg: cfg, hb: heartbeat{cfg.Heartbeat, cfg.HeartbeatTimeout}.withDefaults(), log: cfg.Logger, frontends: map[*Frontend]struct{}{}}
	if p.cfg.RequestTimeout <= 0 {
		p.cfg.RequestTimeout = p.hb.timeout
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.mu.Lock()
	for _, a := range cfg.Movers {
		p.movers = append(p.movers, p.watch(a))
	}
	p.mu.Unlock()
	return p, nil
}

// maxMovers bounds a pool's movers, and so a striped session's stripes.
const maxMovers = 64

func checkMovers(addrs []string) error {
	if len(addrs) == 0 || len(addrs) > maxMovers {
		return fmt.Errorf("stripe: a pool needs 1 to %d movers", maxMovers)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			return fmt.Errorf("stripe: mover %s listed twice", a)
		}
		seen[a] = true
	}
	return nil
}

// watch starts monitoring a mover at addr. Called with p.mu held.
func (p *Pool) watch(addr string) *moverState {
	ctx, stop := context.WithCancel(p.ctx)
	ms := &moverState{addr: addr, ctx: ctx, stop: stop, err: errors.New("not yet connected"), since: time.Now()}
	p.wg.Go(func() { p.monitor(ctx, ms) })
	return ms
}

// SetMovers replaces the pool's movers with addrs, in stripe order: movers
// already in the pool keep their links and health, new ones join (and are
// used once up), and those not in addrs leave. A transfer already running
// on a mover that leaves goes on to its end; later transfers do not use it.
func (p *Pool) SetMovers(addrs []string) (joined, left []string, err error) {
	if err := checkMovers(addrs); err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return nil, nil, errors.New("stripe: the pool is closed")
	}
	old := map[string]*moverState{}
	for _, ms := range p.movers {
		old[ms.addr] = ms
	}
	movers := make([]*moverState, 0, len(addrs))
	for _, a := range addrs {
		if ms, ok := old[a]; ok {
			movers = append(movers, ms)
			delete(old, a)
			continue
		}
		movers = append(movers, p.watch(a))
		joined = append(joined, a)
		p.log.Info("mover joined", "mover", a)
	}
	for _, ms := range p.movers {
		if _, gone := old[ms.addr]; gone {
			ms.retired.Store(true)
			ms.stop()
			ms.dropIdle()
			left = append(left, ms.addr)
			p.log.Info("mover left", "mover", ms.addr)
		}
	}
	p.movers = movers
	return joined, left, nil
}

// current is the pool's movers, in stripe order.
func (p *Pool) current() []*moverState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.movers
}

// upMovers is the movers that are up, in stripe order, or an error
// naming those down if fewer than MinUp are up.
func (p *Pool) upMovers() ([]*moverState, error) {
	var up []*moverState
	var down []string
	movers := p.current()
	for _, ms := range movers {
		if isUp, why := ms.health(); isUp {
			up = append(up, ms)
		} else {
			down = append(down, fmt.Sprintf("mover %s down (%v)", ms.addr, why))
		}
	}
	if need := min(max(p.cfg.MinUp, 1), len(movers)); len(up) < need {
		return nil, &xfer.DataError{Open: true, Err: fmt.Errorf("%d of %d data movers up, %d needed: %s",
			len(up), len(movers), need, strings.Join(down, "; "))}
	}
	return up, nil
}

// Close stops watching, ends every Frontend's links and waits.
func (p *Pool) Close() error {
	p.cancel()
	p.mu.Lock()
	fs := make([]*Frontend, 0, len(p.frontends))
	for f := range p.frontends {
		fs = append(fs, f)
	}
	p.mu.Unlock()
	for _, f := range fs {
		f.Close()
	}
	for _, ms := range p.current() {
		// Whoever keeps or refills links started its goroutine under
		// ms.mu after checking ms.ctx: after this, none starts.
		ms.mu.Lock()
		ms.mu.Unlock() //nolint:staticcheck // a barrier
	}
	p.wg.Wait()
	for _, ms := range p.current() {
		ms.dropIdle()
	}
	return nil
}

// dropIdle closes the mover's idle links.
func (ms *moverState) dropIdle() {
	ms.mu.Lock()
	idle := ms.idle
	ms.idle = nil
	ms.mu.Unlock()
	for _, il := range idle {
		close(il.taken)
		il.l.close()
	}
}

// take returns an idle link to the mover, else a new one; either way it
// makes sure one stays ready for the next session.
func (p *Pool) take(ctx context.Context, ms *moverState) (*link, error) {
	for {
		ms.mu.Lock()
		n := len(ms.idle)
		if n == 0 {
			ms.mu.Unlock()
			break
		}
		il := ms.idle[n-1] // the newest: the likeliest to live
		ms.idle = ms.idle[:n-1]
		ms.mu.Unlock()
		close(il.taken)
		l := il.l
		if l.Err() == nil {
			p.refill(ms)
			return l, nil
		}
		l.close()
	}
	p.refill(ms)
	return p.dial(ctx, ms)
}

// put keeps l, a link to ms that a session no longer uses and whose
// transfers have all ended, for the next session; the mover drops the
// session's listener and data connections now, and the rest of its
// state with the next session's description (TypeSession).
func (p *Pool) put(ms *moverState, l *link) {
	if l.Err() != nil || l.send(&Msg{Type: TypeReset}) != nil {
		l.close()
		return
	}
	ms.mu.Lock()
	if ms.ctx.Err() != nil || len(ms.idle) >= maxIdle {
		ms.mu.Unlock()
		l.close()
		return
	}
	p.keepLocked(ms, l)
	ms.mu.Unlock()
}

// keepLocked adds l to ms.idle and watches it there: a link that dies idle
// leaves it (logged if its peer's frames were refused), and another is
// dialled. ms.mu must be held, and ms.ctx checked under it: Close relies on
// that to see every goroutine of p.wg started.
func (p *Pool) keepLocked(ms *moverState, l *link) {
	il := idleLink{l, make(chan struct{})}
	ms.idle = append(ms.idle, il)
	p.wg.Go(func() {
		select {
		case <-l.dead:
		case <-il.taken:
			return
		case <-ms.ctx.Done():
			return
		}
		ms.mu.Lock()
		i := slices.IndexFunc(ms.idle, func(x idleLink) bool { return x.l == l })
		if i >= 0 {
			ms.idle = slices.Delete(ms.idle, i, i+1)
		}
		ms.mu.Unlock()
		if i < 0 { // taken or dropped meanwhile
			return
		}
		if err := l.Err(); errors.Is(err, ErrTampered) || errors.Is(err, ErrReplay) {
			p.log.Warn("idle link to a mover dropped", "mover", ms.addr, "err", err)
		}
		l.close()
		p.refill(ms)
	})
}

// refill dials a link for ms.idle in the background if it has none.
func (p *Pool) refill(ms *moverState) {
	ms.mu.Lock()
	if len(ms.idle) > 0 || ms.refilling || ms.ctx.Err() != nil {
		ms.mu.Unlock()
		return
	}
	ms.refilling = true
	defer ms.mu.Unlock()
	p.wg.Go(func() {
		l, err := p.dial(ms.ctx, ms)
		ms.mu.Lock()
		ms.refilling = false
		keep := err == nil && ms.ctx.Err() == nil && len(ms.idle) < maxIdle
		if keep {
			p.keepLocked(ms, l)
		}
		ms.mu.Unlock()
		if err != nil {
			p.log.Debug("no spare link to a mover", "mover", ms.addr, "err", err)
		} else if !keep {
			l.close()
		}
	})
}

// dialAttempts bounds how often dial tries a mover that closes the
// connection during the handshake (it may have given the slot to a newer
// connection, see Mover.admitLocked).
const dialAttempts = 3

// dial connects and authenticates to a mover.
func (p *Pool) dial(ctx context.Context, ms *moverState) (*link, error) {
	var err error
	for attempt := range dialAttempts {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt) * 25 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, err
			}
		}
		var l *link
		if l, err = p.dialOnce(ctx, ms); err == nil || !droppedEarly(err) {
			return l, err
		}
	}
	return nil, err
}

// droppedEarly reports whether the mover closed a connection during the
// handshake without a refusal.
func droppedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dialOnce connects and authenticates to a mover, once.
func (p *Pool) dialOnce(ctx context.Context, ms *moverState) (*link, error) {
	addr := ms.addr
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mover %s unreachable: %w", addr, err)
	}
	keys, err := frontendHandshake(ctx, c, p.cfg.Secret, min(p.cfg.DialTimeout, p.hb.timeout))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("mover %s: %w", addr, err)
	}
	return newLink(c, "mover "+addr, p.hb, keys), nil
}

// monitor keeps a link to one mover until ctx ends, logging when it goes
// up or down.
func (p *Pool) monitor(ctx context.Context, ms *moverState) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		l, err := p.dial(ctx, ms)
		if err == nil {
			p.setHealth(ms, true, nil)
			p.refill(ms)
			start := time.Now()
			select {
			case <-l.dead:
				err = l.Err()
			case <-ctx.Done():
			}
			l.close()
			if ctx.Err() != nil {
				if ms.retired.Load() { // not when the pool closes: no mover went down
					p.setHealth(ms, false, errors.New("left the pool"))
				}
				return
			}
			if time.Since(start) > p.cfg.MaxBackoff {
				backoff = 100 * time.Millisecond
			}
		}
		if ctx.Err() != nil {
			return
		}
		p.setHealth(ms, false, err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, p.cfg.MaxBackoff)
	}
}

func (p *Pool) setHealth(ms *moverState, up bool, err error) {
	ms.mu.Lock()
	changed := ms.up != up || ms.since.IsZero()
	first := !up && !ms.up && ms.err != nil && ms.err.Error() == "not yet connected"
	ms.up, ms.err = up, err
	if changed {
		ms.since = time.Now()
	}
	ms.mu.Unlock()
	if ms.retired.Load() {
		return
	}
	switch {
	case up && changed:
		p.log.Info("mover up", "mover", ms.addr)
	case !up && (changed || first):
		p.log.Warn("mover down", "mover", ms.addr, "err", err)
	}
}

// Status is one line per mover: stripe, address, health, since when.
func (p *Pool) Status() []string {
	movers := p.current()
	lines := make([]string, len(movers))
	for i, ms := range movers {
		ms.mu.Lock()
		state := "up"
		if !ms.up {
			state = fmt.Sprintf("down (%v)", ms.err)
		}
		lines[i] = fmt.Sprintf("stripe %d %s %s since %s", i, ms.addr, state, ms.since.UTC().Format(time.RFC3339))
		ms.mu.Unlock()
	}
	return lines
}

// Up reports how many movers are up.
func (p *Pool) Up() int {
	n := 0
	for _, ms := range p.current() {
		if isUp, _ := ms.health(); isUp {
			n++
		}
	}
	return n
}

// health reports whether the mover is up, and if not why.
func (ms *moverState) health() (up bool, why error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.up, ms.err
}

// SessionConfig describes the control session a Frontend serves.
type SessionConfig struct {
	// ControlPeer is the client's address: data connections come only from
	// its host unless AllowForeign.
	ControlPeer  netip.AddrPort
	AllowForeign bool
	// Stall fails a transfer whose data connections move nothing this
	// long; 0 means the movers' default.
	Stall time.Duration
}

// NewFrontend returns the DTP of one control session.
func (p *Pool) NewFrontend(cfg SessionConfig) *Frontend {
	f := &Frontend{pool: p, cfg: cfg, links: map[*moverState]*link{}, unsettled: map[*link]bool{}}
	p.mu.Lock()
	p.frontends[f] = struct{}{}
	p.mu.Unlock()
	return f
}

// Frontend is a control session's DTP on a striped server: it implements
// the PI's DTP interface (and StripedDTP) by driving the movers over one
// link each, opened when first needed. Like any DTP it is called from one
// goroutine at a time; Close may come from anywhere.
type Frontend struct {
	pool *Pool
	cfg  SessionConfig

	mu        sync.Mutex // guards links, closed, using and unsettled against Close
	links     map[*moverState]*link
	closed    bool
	using     int            // calls under way that use links
	unsettled map[*link]bool // links told to transfer whose end was not seen

	home      string
	buf       int
	sec       *Security        // the movers' data channel security; nil: none
	cred      *Msg             // the session's delegated credential; nil: the movers' own
	credSent  map[*link]bool   // links that got cred
	secErr    error            // why the session's security cannot go to the movers
	listening []*moverState    // movers with a passive listener, in stripe order
	active    []netip.AddrPort // receivers' addresses after PORT/SPOR
}

// SetHome sets where the user's root lies in the movers' storage.
func (f *Frontend) SetHome(home string) { f.home = home }

// StripeStatus is the movers' health, one line each (SITE STRIPES).
func (f *Frontend) StripeStatus() []string { return f.pool.Status() }

// SetBuffer sets the TCP buffer of data sockets the movers make from now on.
func (f *Frontend) SetBuffer(size int) { f.buf = size }

// SetSecurity records the data channel security; the movers get it (the
// DCAU check, and the session's credential if delegated) with requests. Settings that
// cannot be passed on fail the next transfers with a clear reply.
func (f *Frontend) SetSecurity(cfg *dcsec.Config) {
	f.sec, f.cred, f.secErr = securityOf(cfg)
	f.credSent = map[*link]bool{}
	if f.secErr != nil {
		f.secErr = fmt.Errorf("data channel security (DCAU/PROT) cannot be used on this striped server (%w); send DCAU N", f.secErr)
	}
}

// Close ends the session; the movers drop its listeners and
// connections. Its links go back to the pool for the next session when
// nothing uses them and their transfers have ended, else they close.
func (f *Frontend) Close() error {
	f.mu.Lock()
	links := f.links
	f.links = map[*moverState]*link{}
	f.closed = true
	reuse := f.using == 0
	unsettled := f.unsettled
	f.unsettled = map[*link]bool{}
	f.mu.Unlock()
	for ms, l := range links {
		if reuse && !unsettled[l] {
			f.pool.put(ms, l)
		} else {
			l.close()
		}
	}
	f.pool.mu.Lock()
	delete(f.pool.frontends, f)
	f.pool.mu.Unlock()
	return nil
}

// enter marks a call that uses links as under way (Close then closes them
// rather than hand them to another session); leave ends it.
func (f *Frontend) enter() {
	f.mu.Lock()
	f.using++
	f.mu.Unlock()
}

func (f *Frontend) leave() {
	f.mu.Lock()
	f.using--
	f.mu.Unlock()
}

// settle records whether l has a transfer whose end was not seen.
func (f *Frontend) settle(l *link, unsettled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if unsettled {
		f.unsettled[l] = true
	} else {
		delete(f.unsettled, l)
	}
}

// link returns the session's live link to a mover, taking one from the
// pool if needed.
func (f *Frontend) link(ctx context.Context, ms *moverState) (*link, error) {
	f.mu.Lock()
	l := f.links[ms]
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return nil, net.ErrClosed
	}
	if l != nil && l.Err() == nil {
		return l, nil
	}
	if l != nil {
		l.close()
		delete(f.credSent, l)
		f.settle(l, false) // gone: never handed on
		// A new link is a new session on the mover: a listener PASV or
		// SPAS opened there is gone, and the client was told its address.
		if f.dropListener(ms) {
			return nil, fmt.Errorf("mover %s lost its session since PASV/SPAS, and with it the data listener; send PASV or SPAS again", ms.addr)
		}
	}
	if ms.retired.Load() {
		return nil, fmt.Errorf("mover %s left the pool", ms.addr)
	}
	l, err := f.pool.take(ctx, ms)
	if err != nil {
		return nil, err
	}
	if err := l.send(&Msg{Type: TypeSession, ControlPeer: f.cfg.ControlPeer, AllowForeign: f.cfg.AllowForeign, Stall: f.cfg.Stall}); err != nil {
		l.close()
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		l.close()
		return nil, net.ErrClosed
	}
	f.links[ms] = l
	return l, nil
}

// dropListener forgets that ms listens for this session, reporting
// whether it did. f.listening is replaced, not changed in place: Send and
// Receive range over the slice they took.
func (f *Frontend) dropListener(ms *moverState) bool {
	i := slices.Index(f.listening, ms)
	if i < 0 {
		return false
	}
	f.listening = slices.Concat(f.listening[:i], f.listening[i+1:])
	return true
}

// prune ends the session's links to movers that left the pool, between
// transfers.
func (f *Frontend) prune() {
	f.mu.Lock()
	var gone []*link
	for ms, l := range f.links {
		if ms.retired.Load() {
			gone = append(gone, l)
			delete(f.links, ms)
			f.dropListener(ms)
		}
	}
	f.mu.Unlock()
	for _, l := range gone {
		l.close()
		delete(f.credSent, l)
	}
}

// call sends a request to mover i and waits for its reply, at most the
// request timeout: a mover that heartbeats but does not answer fails the
// request with an error naming it, and its link is dropped (a late answer
// must not pass for the next request's).
func (f *Frontend) call(ctx context.Context, ms *moverState, m *Msg) (*Msg, error) {
	l, err := f.link(ctx, ms)
	if err != nil {
		return nil, err
	}
	m.Seq = f.pool.seq.Add(1)
	if err := f.request(l, m); err != nil {
		return nil, err
	}
	wait := f.pool.cfg.RequestTimeout
	errLate := fmt.Errorf("mover %s did not answer the %v request within %v", ms.addr, m.Type, wait)
	rctx, cancel := context.WithTimeoutCause(ctx, wait, errLate)
	defer cancel()
	for range 1 << 16 { // bounded: stale messages of an aborted transfer
		r, err := l.recv(rctx)
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, errLate) {
				l.close()
			}
			return nil, err
		}
		if r.Seq != m.Seq {
			continue
		}
		if r.Type == TypeError {
			return nil, fmt.Errorf("mover %s: %s", ms.addr, r.Text)
		}
		return r, nil
	}
	return nil, fmt.Errorf("mover %s: no reply", ms.addr)
}

// request sends m on l, after the session's delegated credential if m
// needs it and l has not had it.
func (f *Frontend) request(l *link, m *Msg) error {
	if m.Sec != nil && m.Sec.Cred != nil && f.cred != nil && !f.credSent[l] {
		if err := l.send(f.cred); err != nil {
			return err
		}
		f.credSent[l] = true
	}
	return l.send(m)
}

// reset makes every listening mover drop its listener except keep.
func (f *Frontend) reset(keep []*moverState) {
	for _, ms := range f.listening {
		if slices.Contains(keep, ms) {
			continue
		}
		f.mu.Lock()
		l := f.links[ms]
		f.mu.Unlock()
		if l != nil {
			l.send(&Msg{Type: TypeReset})
		}
	}
	f.listening = nil
}

// Passive (PASV, EPSV) makes the first mover that is up listen, as a
// striped GCT server uses its first data node.
func (f *Frontend) Passive(ctx context.Context, ipv4 bool) (netip.AddrPort, error) {
	addrs, err := f.listen(ctx, ipv4, 1)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return addrs[0], nil
}

// PassiveStripes (SPAS) makes every mover that is up listen: one address
// per stripe.
func (f *Frontend) PassiveStripes(ctx context.Context, ipv4 bool) ([]netip.AddrPort, error) {
	return f.listen(ctx, ipv4, maxMovers)
}

// listen makes the first n movers that are up listen.
func (f *Frontend) listen(ctx context.Context, ipv4 bool, n int) ([]netip.AddrPort, error) {
	f.enter()
	defer f.leave()
	f.prune()
	f.active = nil
	movers, err := f.pool.upMovers()
	if err != nil {
		f.reset(nil)
		return nil, err
	}
	movers = movers[:min(n, len(movers))]
	f.reset(movers)
	addrs := make([]netip.AddrPort, len(movers))
	for k, ms := range movers {
		r, err := f.call(ctx, ms, &Msg{Type: TypePassive, IPv4: ipv4, Buffer: f.buf, Sec: f.sec})
		if err != nil {
			return nil, err
		}
		addrs[k] = r.Addr
		f.listening = append(f.listening, ms)
	}
	return addrs, nil
}

// Active (PORT, EPRT, SPOR) records the receivers' addresses; the movers
// get them with the transfer.
func (f *Frontend) Active(ctx context.Context, addrs []netip.AddrPort) error {
	if len(addrs) == 0 {
		return errors.New("stripe: no data address")
	}
	f.enter()
	defer f.leave()
	f.prune()
	f.reset(nil)
	f.active = append([]netip.AddrPort(nil), addrs...)
	return nil
}

// Send moves the file (or listing) to the data channel: every mover sends
// its stripes of a MODE E file to active receivers; listings, stream mode
// and passive set-ups go through the first mover.
func (f *Frontend) Send(ctx context.Context, req *xfer.Request, src dsi.Reader, notify func(xfer.Event)) (int64, error) {
	if f.secErr != nil {
		return 0, &xfer.DataError{Open: true, Err: f.secErr}
	}
	if len(f.active) == 0 && len(f.listening) == 0 {
		return 0, xfer.ErrNoDataAddress
	}
	var data []byte
	if req.Listing {
		var err error
		if data, err = readListing(src); err != nil {
			return 0, err
		}
	}
	movers := f.listening
	if len(movers) == 0 {
		var err error
		if movers, err = f.pool.upMovers(); err != nil {
			return 0, err
		}
	}
	if len(f.listening) > 0 || req.Mode != xfer.ModeEBlock || req.Listing {
		movers = movers[:1]
	}
	msgs := make([]*Msg, len(movers))
	for k := range movers {
		r := *req
		if len(movers) > 1 {
			r.Senders, r.SenderIndex = len(movers), k
		}
		msgs[k] = &Msg{Type: TypeSend, Buffer: f.buf, Addrs: f.active, Job: jobOf(&r, f.moverPath(req.Path)), Data: data, Sec: f.sec}
	}
	return f.run(ctx, movers, msgs, notify)
}

// Receive moves the data channel's bytes into the file: every listening
// mover writes what reaches it, at its offsets, through its own storage;
// dst (the frontend's own handle on the file) is not written. On S3, dst
// starts the multipart upload the movers write into, and its Close (by the
// caller, after Receive) completes it (s3.go).
func (f *Frontend) Receive(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error) {
	if f.secErr != nil {
		return 0, &xfer.DataError{Open: true, Err: f.secErr}
	}
	movers := f.listening
	if len(movers) == 0 {
		if len(f.active) == 0 {
			return 0, xfer.ErrNoDataAddress
		}
		var err error
		if movers, err = f.pool.upMovers(); err != nil {
			return 0, err
		}
	}
	if len(f.listening) == 0 || req.Mode == xfer.ModeStream {
		movers = movers[:1]
	}
	up, err := shareUpload(dst)
	if err != nil {
		return 0, &xfer.StorageError{Err: err}
	}
	if up != nil {
		// See s3.go: a failed shared upload keeps nothing to resume.
		next := notify
		notify = func(ev xfer.Event) {
			if ev.Kind != xfer.EventRanges {
				next(ev)
			}
		}
	}
	msgs := make([]*Msg, len(movers))
	for k := range movers {
		msgs[k] = &Msg{Type: TypeReceive, Buffer: f.buf, Addrs: f.active, Job: jobOf(req, f.moverPath(req.Path)), Sec: f.sec, Upload: up}
	}
	n, err := f.run(ctx, movers, msgs, notify)
	if want := req.Missing(); err == nil && len(movers) > 1 && req.Size >= 0 && n < want {
		// Every stripe saw its EOF, yet bytes announced with ALLO and not
		// held already (REST) are missing: a sender that ended some
		// stripes early. Never call that complete.
		err = &xfer.DataError{Err: fmt.Errorf("the stripes ended after %d of the %d bytes announced (ALLO) and not already stored (REST)", n, want)}
	}
	return n, err
}

// readListing reads a listing whole, for the mover that sends it; a
// listing shorter than its size is an error, never padding.
func readListing(src dsi.Reader) ([]byte, error) {
	size := src.Size()
	if size > MaxListing {
		return nil, &xfer.StorageError{Err: fmt.Errorf("listing of %d bytes is too long for a striped server (at most %d)", size, MaxListing)}
	}
	data := make([]byte, size)
	n, err := src.ReadAt(data, 0)
	if n == len(data) {
		return data, nil
	}
	if err == nil || err == io.EOF {
		err = fmt.Errorf("the listing shrank while it was read: %d of %d bytes", n, size)
	}
	return nil, &xfer.StorageError{Err: err}
}

func (f *Frontend) moverPath(p string) string {
	return path.Join("/", f.home, p)
}

// run starts msgs[k] on movers[k] and gathers their events until all are
// done. The first failure stops the others; a mover that dies or stops
// answering fails the transfer with an error naming it.
func (f *Frontend) run(ctx context.Context, movers []*moverState, msgs []*Msg, notify func(xfer.Event)) (int64, error) {
	f.enter()
	defer f.leave()
	seq := f.pool.seq.Add(1)
	links := make([]*link, len(movers))
	for k, ms := range movers {
		l, err := f.link(ctx, ms)
		if err != nil {
			f.abort(links[:k], seq)
			return 0, &xfer.DataError{Open: true, Err: err}
		}
		links[k] = l
		msgs[k].Seq = seq
		f.settle(l, true) // until its TypeDone
		if err := f.request(l, msgs[k]); err != nil {
			f.abort(links[:k], seq)
			return 0, &xfer.DataError{Open: true, Err: err}
		}
	}
	stripes := 0
	if len(movers) > 1 {
		stripes = len(movers)
	}
	var started atomic.Int32
	var total atomic.Int64
	var connsMu sync.Mutex
	conns := xfer.Event{Kind: xfer.EventConns, Stripes: len(movers), Retransmits: -1} // the movers' together; guarded by connsMu
	errs := make([]error, len(movers))
	var failed sync.Once
	stopAll := make(chan struct{})
	var wg sync.WaitGroup
	for k, l := range links {
		wg.Go(func() {
			n, err := f.follow(ctx, l, seq, movers[k], stopAll, func(ev xfer.Event) {
				switch ev.Kind {
				case xfer.EventStarted:
					if int(started.Add(1)) == len(movers) {
						notify(ev)
					}
				case xfer.EventProgress:
					ev.Stripe, ev.Stripes = k, stripes
					notify(ev)
				case xfer.EventRanges:
					notify(ev)
				case xfer.EventConns:
					connsMu.Lock()
					conns.Streams += ev.Streams
					conns.Opened += ev.Opened
					if ev.Retransmits >= 0 {
						conns.Retransmits = max(conns.Retransmits, 0) + ev.Retransmits
					}
					connsMu.Unlock()
				}
			})
			total.Add(n)
			if err != nil {
				errs[k] = err
				failed.Do(func() { close(stopAll) })
			}
		})
	}
	wg.Wait()
	if conns.Streams > 0 {
		notify(conns)
	}
	if ctx.Err() != nil {
		return total.Load(), context.Cause(ctx)
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, errStopped) {
			return total.Load(), err
		}
	}
	return total.Load(), nil
}

// errStopped marks a mover stopped because another one failed.
var errStopped = errors.New("stopped")

// follow waits for a mover's transfer seq to end, passing its events on.
// When ctx ends or stop closes it aborts the mover's transfer and waits a
// heartbeat timeout for it to confirm.
func (f *Frontend) follow(ctx context.Context, l *link, seq uint64, ms *moverState, stop <-chan struct{}, notify func(xfer.Event)) (int64, error) {
	addr := ms.addr
	waitCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	aborted := false
	abort := func() {
		if aborted {
			return
		}
		aborted = true
		l.send(&Msg{Type: TypeAbort})
		t := time.AfterFunc(l.hb.timeout, func() { cancel(errors.New("no answer to abort")) })
		context.AfterFunc(waitCtx, func() { t.Stop() })
	}
	stopCtx, stopCancel := context.WithCancel(ctx)
	defer stopCancel()
	go func() {
		select {
		case <-stop:
			stopCancel()
		case <-stopCtx.Done():
		}
	}()
	for range 1 << 24 { // bounded: events of one transfer
		var m *Msg
		var err error
		if aborted {
			m, err = l.recv(waitCtx)
		} else {
			m, err = l.recv(stopCtx)
			if err != nil && l.Err() == nil {
				abort()
				continue
			}
		}
		if err != nil {
			if aborted && l.Err() == nil {
				l.close() // the mover did not confirm: start afresh next time
			}
			if ctx.Err() != nil {
				return 0, context.Cause(ctx)
			}
			if aborted {
				return 0, errStopped
			}
			return 0, &xfer.DataError{Err: fmt.Errorf("%w", err)}
		}
		if m.Seq != seq {
			continue
		}
		if m.Type == TypeDone || m.Type == TypeError {
			f.settle(l, false) // the mover's transfer ended
		}
		switch m.Type {
		case TypeEvent:
			if m.Event != nil && !aborted {
				notify(*m.Event)
			}
		case TypeDone:
			if m.Text == "" && m.Kind == KindOther {
				return m.N, nil
			}
			if aborted && m.Kind == KindAborted {
				return m.N, errStopped
			}
			return m.N, moverError(addr, m)
		case TypeError:
			return 0, moverError(addr, m)
		}
	}
	return 0, &xfer.DataError{Err: fmt.Errorf("mover %s: too many events", addr)}
}

// moverError rebuilds a mover's failure as the error the PI maps to a reply.
func moverError(addr string, m *Msg) error {
	err := fmt.Errorf("mover %s: %s", addr, m.Text)
	switch m.Kind {
	case KindOpen:
		return &xfer.DataError{Open: true, Err: err}
	case KindData, KindAborted:
		return &xfer.DataError{Err: err}
	case KindNoSpace:
		return &xfer.StorageError{Err: fmt.Errorf("%w: %w", dsi.ErrNoSpace, err)}
	case KindStorage:
		return &xfer.StorageError{Err: err}
	case KindNoAddress:
		return xfer.ErrNoDataAddress
	}
	return err
}

// abort stops transfer seq on links that were already told to start it.
func (f *Frontend) abort(links []*link, seq uint64) {
	for _, l := range links {
		l.send(&Msg{Type: TypeAbort, Seq: seq})
	}
}
