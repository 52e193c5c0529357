package dtp

// Extended block mode (MODE E) transfers: the sending side always connects
// and the receiving side always listens (protocol.md §3.3); connections are
// cached between transfers in the same direction (§5.5); progress and
// committed ranges are reported as events the PI turns into 112 and 111
// markers (§7).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// ErrWrongDirection reports a MODE E transfer whose data channel was set up
// the wrong way round: the sender must connect, the receiver listen.
var ErrWrongDirection = errors.New("in MODE E the sending side connects: use PORT/EPRT before RETR and PASV/EPSV before STOR")

// errCachedOtherWay reports a transfer reusing connections cached by a
// transfer in the other direction.
var errCachedOtherWay = errors.New("the cached data connections carry data the other way; set up a new data channel")

// senderConns returns the connections a MODE E send uses, one set per
// part of the plan: the cached ones, or n new connections to each part's
// address. A striped sender's data node (req.Senders > 1) never reuses
// cached connections: the next transfer may deal the file differently.
func (d *Local) senderConns(ctx context.Context, req *xfer.Request, ranges []xfer.Range) (plan []sendPart, stripes [][]net.Conn, reused bool, err error) {
	striped := req.Senders > 1
	d.mu.Lock()
	switch {
	case len(d.cache) > 0 && d.cacheDir == dirSend && !striped:
		stripes, d.cache, d.cacheDir = d.cache, nil, dirNone
		plan = planSend(ranges, len(stripes), req)
		d.mu.Unlock()
		return plan, stripes, true, nil
	case len(d.cache) > 0 && d.cacheDir != dirSend:
		d.mu.Unlock()
		return nil, nil, false, &xfer.DataError{Open: true, Err: errCachedOtherWay}
	case d.ln != nil:
		d.mu.Unlock()
		return nil, nil, false, &xfer.DataError{Open: true, Err: ErrWrongDirection}
	case len(d.remotes) == 0:
		d.mu.Unlock()
		return nil, nil, false, xfer.ErrNoDataAddress
	}
	d.dropCacheLocked()
	remotes, sec := d.remotes, d.sec
	d.mu.Unlock()

	// Every address must pass before any is dialed: no stripe starts
	// towards an allowed one when another is refused.
	for _, remote := range remotes {
		if err := d.dataPeerAllowed(remote, sec, true); err != nil {
			d.log.Warn("refused to connect a data channel", "to", remote, "err", err)
			return nil, nil, false, &xfer.DataError{Open: true, Err: err}
		}
	}
	plan = planSend(ranges, len(remotes), req)
	n := max(req.Parallelism, 1)
	dialCtx, cancel := context.WithTimeout(ctx, d.cfg.ConnectTimeout)
	defer cancel()
	stripes = make([][]net.Conn, len(plan))
	errs := make([]error, len(plan)*n)
	var wg sync.WaitGroup
	for s, part := range plan {
		remote := remotes[part.remote]
		stripes[s] = make([]net.Conn, n)
		for i := range n {
			// Each connection dials and does its own handshake, in parallel.
			wg.Go(func() {
				c, err := d.dial(dialCtx, remote, sec)
				if err != nil {
					errs[s*n+i] = err
					return
				}
				stripes[s][i], errs[s*n+i] = secure(ctx, c, true, sec)
			})
		}
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		for _, stripe := range stripes {
			for _, c := range stripe {
				if c != nil {
					c.Close()
				}
			}
		}
		return nil, nil, false, err
	}
	return plan, stripes, false, nil
}

// sendPart is what one set of connections of a send carries: ranges for
// the receiving stripe remote. eofCount is the connection count its EOF
// announces (0: its own connections), noEOF leaves the EOF to another
// sender of the same receiving stripe.
type sendPart struct {
	remote   int
	ranges   []xfer.Range
	eofCount int
	noEOF    bool
}

// planSend deals the transfer's ranges to the receiving stripes. A single
// sender sends part i to stripe i. A striped sender's data node deals the
// file into k = max(senders, receivers) parts, sends the parts whose
// number is its index modulo senders, part v to stripe v modulo receivers;
// when several nodes feed one receiving stripe, the one with the lowest
// part sends the EOF, counting everybody's connections.
func planSend(ranges []xfer.Range, receivers int, req *xfer.Request) []sendPart {
	senders := max(req.Senders, 1)
	if senders == 1 {
		parts := xfer.StripeRanges(ranges, receivers, req.Offset, req.StripeLayout, req.StripeBlockSize)
		plan := make([]sendPart, receivers)
		for i := range plan {
			plan[i] = sendPart{remote: i, ranges: parts[i]}
		}
		return plan
	}
	k := max(senders, receivers)
	parts := xfer.StripeRanges(ranges, k, req.Offset, req.StripeLayout, req.StripeBlockSize)
	n := max(req.Parallelism, 1)
	var plan []sendPart
	for v := req.SenderIndex; v < k; v += senders {
		r := v % receivers
		feeders := 0
		for w := r; w < k; w += receivers {
			feeders++
		}
		plan = append(plan, sendPart{remote: r, ranges: parts[v], eofCount: feeders * n, noEOF: v >= receivers})
	}
	return plan
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// keep caches the stripes' connections for the next transfer in direction
// dir, unless the DTP was closed meanwhile.
func (d *Local) keep(stripes [][]net.Conn, dir direction) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropCacheLocked()
	if d.closed {
		for _, c := range stripes {
			closeAll(c)
		}
		return
	}
	d.cache, d.cacheDir = stripes, dir
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

func (d *Local) sendEBlock(ctx context.Context, req *xfer.Request, src dsi.Reader, notify func(xfer.Event)) (int64, error) {
	plan, stripes, reused, err := d.senderConns(ctx, req, sendRanges(req, src.Size()))
	if err != nil {
		return 0, err
	}
	all := slices.Concat(stripes...)
	t := newTally()
	t.addAll(stripes, reused)
	notify(xfer.Event{Kind: xfer.EventStarted, Time: time.Now(), Reused: reused})
	var sent atomic.Int64
	stopMarkers := d.markers(req, notify, sent.Load, nil)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopWatch := watchConns(ctx, cancel, d.cfg.StallTimeout, func() []net.Conn { return all })
	striped := req.Senders > 1
	total, errs := SendStripes(ctx, cancel, stripes, src, func(i int) ([]xfer.Range, eblock.SendConfig) {
		return plan[i].ranges, eblock.SendConfig{
			BlockSize:   req.BlockSize,
			Base:        req.Offset,
			Sent:        &sent,
			EOFCount:    plan[i].eofCount,
			NoEOF:       plan[i].noEOF,
			Close:       striped,
			BeforeClose: func(_ int, c net.Conn) { t.closing(c) },
		}
	})
	stopWatch()
	stopMarkers()
	conns := t.event(len(stripes))
	defer notify(conns)
	if err := firstErr(errs); err != nil {
		closeAll(all)
		return total, classify(ctx, err)
	}
	if !striped {
		d.keep(stripes, dirSend)
	}
	return total, nil
}

// Drain reads one MODE E upload from the data channel and discards it:
// the file's blocks up to its EOF and EOD count, on the cached connections
// and any new ones to the passive listener, exactly as Receive would read
// them (STOR-DRAIN, docs/extensions.md). The PI calls it for an upload it
// refused before the data channel started, so that the blocks a client
// sent right behind the command are not taken for the next file's.
//
// It is bounded like a transfer: the blocks must obey the MODE E rules
// and req.Size (ALLO), the stall timeout and ctx (ABOR) apply, and when
// no connection is cached and no listener waits there is nothing to read
// and it returns at once. It reports no events and writes nothing. On
// failure the connections are closed, so the next transfer cannot read a
// stream that is out of step.
func (d *Local) Drain(ctx context.Context, req *xfer.Request) (int64, error) {
	if req.Mode != xfer.ModeEBlock {
		return 0, nil
	}
	d.mu.Lock()
	idle := len(d.cache) == 0 && d.ln == nil
	d.mu.Unlock()
	if idle {
		return 0, nil
	}
	r := *req
	r.PerfInterval, r.RangeInterval = 0, 0
	r.StoreOffset = 0
	return d.receiveEBlock(ctx, &r, discard{}, func(xfer.Event) {})
}

// discard is the destination of a drained upload.
type discard struct{}

func (discard) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discard) Close() error                           { return nil }

func (d *Local) receiveEBlock(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error) {
	var received atomic.Int64
	t := newTally()
	rcv := eblock.NewReceiver(dst, eblock.ReceiveConfig{
		Base:        req.StoreOffset,
		Limit:       req.Size,
		Received:    &received,
		BeforeClose: func(_ int, c net.Conn) { t.closing(c) },
		// A stray (no valid first header) is no stream of the transfer.
		Dropped: t.drop,
	})
	d.mu.Lock()
	ln, dir, sec := d.ln, d.cacheDir, d.sec
	var cached []net.Conn
	if len(d.cache) > 0 {
		cached = d.cache[0] // a receiver has one stripe
	}
	switch {
	case len(cached) > 0 && dir != dirReceive:
		d.mu.Unlock()
		return 0, &xfer.DataError{Open: true, Err: errCachedOtherWay}
	case len(cached) == 0 && ln == nil && len(d.remotes) > 0:
		d.mu.Unlock()
		return 0, &xfer.DataError{Open: true, Err: ErrWrongDirection}
	case len(cached) == 0 && ln == nil:
		d.mu.Unlock()
		return 0, xfer.ErrNoDataAddress
	}
	d.cache, d.cacheDir = nil, dirNone
	d.mu.Unlock()
	for _, c := range cached {
		t.add(c, true)
		if !rcv.Add(c) {
			t.drop(c)
			c.Close()
		}
	}
	notify(xfer.Event{Kind: xfer.EventStarted, Time: time.Now(), Reused: len(cached) > 0})

	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	acc := d.acceptor(sec)
	if ln != nil {
		// Until the transfer ends, every connection dataPeerAllowed admits
		// and that completes its handshake joins the receiver; strangers
		// (refused, failing or stalling their handshake) never reach it,
		// so they take none of the connections the EOD count expects.
		wg.Go(func() {
			acc.Serve(ctx, ctx, ln, func(c net.Conn) bool {
				t.add(c, false) // before its reader can close it
				if !rcv.Add(c) {
					t.drop(c)
					return false
				}
				return true
			})
		})
	}
	stopExpecting := acc.ExpectConn(d.cfg.ConnectTimeout, rcv, cancel, func(last error) error {
		err := errors.New("no data connection arrived")
		if last != nil {
			err = fmt.Errorf("no data connection arrived; the last one was refused: %w", last)
		}
		return &xfer.DataError{Open: true, Err: err}
	})
	stopMarkers := d.markers(req, notify, received.Load, rcv)
	stopWatch := watchConns(ctx, cancel, d.cfg.StallTimeout, rcv.All)
	n, err := rcv.Wait(ctx)
	stopExpecting()
	stopWatch()
	stopMarkers()
	cancel(nil)
	wg.Wait()
	defer notify(t.event(1))
	if err != nil {
		closeAll(rcv.All())
		return n, classify(parent, err)
	}
	d.keep([][]net.Conn{rcv.Reusable()}, dirReceive)
	return n, nil
}

// markers reports progress (and, for a receiver, committed ranges) every
// interval while a transfer runs, plus a start marker now and final ones
// when the returned stop function is called. The periodic markers come
// from timers, so that a transfer shorter than the interval (many small
// files, issue 17) starts no goroutine for them.
func (d *Local) markers(req *xfer.Request, notify func(xfer.Event), bytes func() int64, rcv *eblock.Receiver) (stop func()) {
	perf, ranges := req.PerfInterval, req.RangeInterval
	if rcv == nil {
		ranges = 0
	}
	if perf <= 0 && ranges <= 0 {
		return func() {}
	}
	progress := func() {
		notify(xfer.Event{Kind: xfer.EventProgress, Time: time.Now(), Bytes: bytes()})
	}
	committed := func() {
		if rs := rcv.TakeCommitted(); len(rs) > 0 {
			notify(xfer.Event{Kind: xfer.EventRanges, Time: time.Now(), Ranges: rs})
		}
	}
	if perf > 0 {
		progress()
	}
	// mu orders the timers' markers with stop: none runs once stop has
	// begun, and stop's final markers come after any running one.
	var (
		mu      sync.Mutex
		stopped bool // guarded by mu
		timers  []*time.Timer
	)
	every := func(interval time.Duration, mark func()) {
		var t *time.Timer
		t = time.AfterFunc(interval, func() {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return
			}
			mark()
			t.Reset(interval)
		})
		timers = append(timers, t)
	}
	mu.Lock()
	if perf > 0 {
		every(perf, progress)
	}
	if ranges > 0 {
		every(ranges, committed)
	}
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		for _, t := range timers {
			t.Stop()
		}
		mu.Unlock()
		if perf > 0 {
			progress()
		}
		if ranges > 0 {
			committed()
		}
	}
}
