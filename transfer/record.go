package transfer

// Transfer history: every file transfer of the engine becomes one
// history.Record, written by a goroutine of the Engine so that a slow
// (or unreachable) database never slows a transfer, and a failing one
// costs one warning.

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/history"
)

// recorder writes the engine's records to its History in the order they
// were made.
type recorder struct {
	store history.Store
	log   *slog.Logger

	mu      sync.Mutex
	queue   []*history.Record // guarded by mu
	closed  bool              // guarded by mu; Close was called
	running bool              // guarded by mu; the writer was started
	holds   int               // guarded by mu; batches of small files running
	wake    chan struct{}     // a record was queued, or Close called
	closing chan struct{}     // closed by close: stop lingering
	done    chan struct{}     // closed when the writer has finished
	warned  bool              // only the writer touches it
}

// recorder returns the engine's recorder, nil when the engine records
// nothing.
func (e *Engine) recorder() *recorder {
	if e.History == nil {
		return nil
	}
	if _, off := e.History.(history.Off); off {
		return nil
	}
	e.recOnce.Do(func() {
		log := e.Log
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		e.rec = &recorder{store: e.History, log: log, wake: make(chan struct{}, 1),
			closing: make(chan struct{}), done: make(chan struct{})}
	})
	return e.rec
}

// add queues r for writing.
func (r *recorder) add(rec *history.Record) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.queue = append(r.queue, rec)
	if !r.running {
		r.running = true
		go r.run()
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run writes the queued records until Close.
func (r *recorder) run() {
	defer close(r.done)
	for {
		r.linger()
		r.mu.Lock()
		q, closed := r.queue, r.closed
		n := len(q)
		r.queue = nil
		r.mu.Unlock()
		for len(q) > 0 {
			k := min(len(q), recordBatch)
			r.write(q[:k])
			q = q[k:]
		}
		if closed && n == 0 {
			return
		}
		if n == 0 {
			<-r.wake
		}
	}
}

// recordBatch bounds the records written at once (in one transaction
// when the store allows it, history.AddAll).
const recordBatch = 512

// recordLinger bounds how long the writer waits for more records
// while batches of small files run (recorder.hold): they queue a record
// every few hundred microseconds, and a transaction of a few records
// costs about as much as one of hundreds (SQLite prepares and commits per
// batch), so waiting makes the history's share of a small file's cost
// small. Outside batches a record is written at once, so that it is
// seen as soon as its copy ends; the end of a batch and close end the
// wait.
const recordLinger = 100 * time.Millisecond

// hold counts a batch of small files starting (d = 1) or ending (-1).
func (r *recorder) hold(d int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.holds += d
	r.mu.Unlock()
	if d < 0 {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// linger waits, while batches run and fewer than recordBatch records are
// queued, for recordLinger at most.
func (r *recorder) linger() {
	var t *time.Timer
	for {
		r.mu.Lock()
		wait := r.holds > 0 && !r.closed && len(r.queue) > 0 && len(r.queue) < recordBatch
		r.mu.Unlock()
		if !wait {
			return
		}
		if t == nil {
			t = time.NewTimer(recordLinger)
			defer t.Stop()
		}
		select {
		case <-t.C:
			return
		case <-r.closing:
			return
		case <-r.wake: // a record, or the end of a batch
		}
	}
}

// write stores recs, the records queued while the previous ones were
// written: a tree of small files makes them faster than one transaction
// each could keep up with. The first failure is a warning, the others
// are dropped quietly.
func (r *recorder) write(recs []*history.Record) {
	// Not the copy's context: a cancelled copy is recorded too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if len(recs) == 1 {
		_, err = r.store.Add(ctx, recs[0])
	} else {
		err = history.AddAll(ctx, r.store, recs)
	}
	if err != nil && !r.warned {
		r.warned = true
		r.log.Warn("history: cannot record transfers", "err", err)
	}
}

// close waits (as long as ctx allows) for the queued records to be
// written.
func (r *recorder) close(ctx context.Context) {
	r.mu.Lock()
	if !r.closed {
		close(r.closing)
	}
	r.closed = true
	running := r.running
	r.mu.Unlock()
	if !running {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
	case <-ctx.Done():
	}
}

// Close waits until the records of the engine's transfers are written
// to History (or ctx is done), and stops recording. It does not close
// History.
func (e *Engine) Close(ctx context.Context) error {
	if r := e.recorder(); r != nil {
		r.close(ctx)
	}
	return nil
}

// fileRun follows one file transfer for its record.
type fileRun struct {
	rec   *history.Record
	whole bool // the whole file is copied: its size is the bytes moved

	mu   sync.Mutex
	last client.Progress // guarded by mu
	seen bool            // guarded by mu; last holds a report
	// peak is the largest sum of the connections' delivery rates seen,
	// bytes per second; guarded by mu.
	peak float64
}

// observe keeps what a progress report says of the data connections.
func (f *fileRun) observe(p client.Progress) {
	var sum float64
	for _, c := range p.Conns {
		sum += c.DeliveryRate
	}
	f.mu.Lock()
	f.last, f.seen = p, true
	f.peak = max(f.peak, sum)
	f.mu.Unlock()
}

// startRun begins the record of a copy of size bytes (-1: unknown) from
// src to dst; nil when the engine records nothing.
func (e *Engine) startRun(src, dst Location, o Options, size int64) *fileRun {
	if e.recorder() == nil {
		return nil
	}
	rec := &history.Record{
		Start:   time.Now(),
		Kind:    kindOf(src, dst),
		Tool:    e.Tool,
		Src:     src.HistoryEndpoint(),
		Dst:     dst.HistoryEndpoint(),
		SrcPath: src.Path,
		DstPath: dst.Path,
		Size:    size,
		Params:  e.params(src, dst, o),
		Link:    history.Link{Retransmits: -1},

		PredictedETA: o.PredictedETA,
	}
	rec.ClientHost, rec.User = ClientIdentity()
	return &fileRun{rec: rec, whole: o.Offset == 0 && o.Length < 0}
}

// finishRun completes the record of run (nil: none) with the outcome of
// its transfer, n bytes moved and err, and queues it.
func (e *Engine) finishRun(ctx context.Context, run *fileRun, n int64, err error) {
	if run == nil {
		return
	}
	rec := run.rec
	rec.End = time.Now()
	rec.Duration = rec.End.Sub(rec.Start)
	rec.Bytes = n
	rec.Outcome = history.OK
	switch {
	case err == nil:
		if rec.Size < 0 && run.whole {
			rec.Size = n
		}
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		rec.Outcome, rec.Error = history.Cancelled, err.Error()
	default:
		rec.Outcome, rec.Error = history.Failed, err.Error()
	}
	run.mu.Lock()
	if run.seen {
		rec.Link, rec.StreamRates = linkOf(run.last, run.peak, rec.Duration)
	}
	run.mu.Unlock()
	if rate := rec.Rate() * 8; rate > rec.Link.Bandwidth {
		rec.Link.Bandwidth = rate
	}
	e.recorder().add(rec)
}

// linkOf is what the data connections of a transfer measured, from its
// last progress report p, the peak sum of their delivery rates (bytes
// per second) and its duration d: the mean smoothed RTT, retransmits and
// loss rate over all connections, the bandwidth (bits per second), and
// each connection's mean rate.
func linkOf(p client.Progress, peak float64, d time.Duration) (history.Link, []float64) {
	l := history.Link{Retransmits: -1, Bandwidth: peak * 8}
	secs := d.Seconds()
	var rates []float64
	for _, n := range p.Streams {
		if secs > 0 {
			rates = append(rates, float64(n)/secs)
		}
	}
	if len(p.Conns) == 0 {
		return l, rates
	}
	var segs int64
	l.RTT, l.Retransmits, segs = connTotals(p.Conns)
	if segs > 0 {
		l.LossRate = float64(l.Retransmits) / float64(segs)
	}
	return l, rates
}

// connTotals is what the data connections cs measured together: their
// mean smoothed RTT (0: none measured), retransmits and segments sent.
func connTotals(cs []client.ConnStats) (rtt time.Duration, retrans, segs int64) {
	var withRTT int
	for _, c := range cs {
		if c.RTT > 0 {
			rtt += c.RTT
			withRTT++
		}
		retrans += c.Retransmits
		segs += c.SegsOut
	}
	if withRTT > 0 {
		rtt /= time.Duration(withRTT)
	}
	return rtt, retrans, segs
}

// kindOf is the Record.Kind of a copy from src to dst.
func kindOf(src, dst Location) string {
	switch {
	case src.Kind == Remote && dst.Kind == Remote:
		return "third-party"
	case src.Kind == Remote:
		return "download"
	case dst.Kind == Remote:
		return "upload"
	}
	return "local"
}

// HistoryEndpoint is the history.Endpoint of l: the local endpoint for a
// local file or standard I/O.
func (l Location) HistoryEndpoint() history.Endpoint {
	if l.Kind != Remote {
		return history.Endpoint{Scheme: "file"}
	}
	scheme := "ftp"
	switch {
	case l.GSI:
		scheme = "gsiftp"
	case l.FTPS:
		scheme = "ftps"
	}
	host, port, err := net.SplitHostPort(l.Addr)
	if err != nil {
		host = l.Host
	}
	p, _ := strconv.Atoi(port)
	return history.NewEndpoint(scheme, host, p)
}

// params are the recorded parameters of a copy from src to dst with o.
func (e *Engine) params(src, dst Location, o Options) history.Params {
	p := history.Params{
		Mode:        "S",
		Parallel:    max(o.Parallel, 1),
		TCPBuffer:   int(o.TCPBuffer),
		BlockSize:   int(o.BlockSize),
		Concurrency: max(o.Concurrency, 1),
		Pipeline:    o.Pipeline,
		Auto:        o.Auto,
	}
	if o.modeE() || o.Stripe {
		p.Mode = "E"
	}
	if src.GSI || dst.GSI {
		p.DCAU, p.Prot = e.DCAU, e.Prot
		if p.DCAU == "" {
			p.DCAU = "A"
		}
		if p.Prot == "" {
			p.Prot = "C"
		}
		if e.plainPeerNoDCAU(src, dst, o) && p.DCAU == "A" && p.Prot == "C" {
			// The GSI side ran this copy with DCAU N (the plain
			// side has no DCAU at all): the data connection between
			// them was not authenticated.
			p.DCAU = "N"
		}
	}
	return p
}

// plainPeerNoDCAU reports whether a copy from src to dst is a third-party
// transfer between a gsiftp:// server and a server without GSI or TLS
// (ftp://) that Engine.PlainPeerNoDCAU runs with DCAU N on the gsiftp://
// side (client.GSIConfig.PlainPeerNoDCAU).
func (e *Engine) plainPeerNoDCAU(src, dst Location, o Options) bool {
	plain := func(l Location) bool { return !l.GSI && !l.FTPS }
	return e.PlainPeerNoDCAU && !o.NoTPT && src.Kind == Remote && dst.Kind == Remote &&
		(src.GSI && plain(dst) || dst.GSI && plain(src))
}

// identity caches ClientIdentity.
var identity struct {
	once       sync.Once
	host, user string
}

// ClientIdentity is the host and local user running the client, as the
// history records them.
func ClientIdentity() (host, name string) {
	identity.once.Do(func() {
		identity.host, _ = os.Hostname()
		if u, err := user.Current(); err == nil {
			identity.user = u.Username
		} else {
			identity.user = os.Getenv("USER")
		}
	})
	return identity.host, identity.user
}

// Tracker records in the engine's history a transfer that its caller
// makes on a connection of its own (ferry shell's get and put). Its
// methods do nothing on a nil Tracker.
type Tracker struct {
	e   *Engine
	run *fileRun
}

// Track starts the record of a copy of size bytes (-1: unknown) from src
// to dst with the options o, made by the caller; it returns nil when
// the engine records nothing. The caller reports the transfer's
// progress to Progress and its end to Done.
func (e *Engine) Track(src, dst Location, o Options, size int64) *Tracker {
	run := e.startRun(src, dst, o, size)
	if run == nil {
		return nil
	}
	return &Tracker{e: e, run: run}
}

// Progress takes a progress report of the transfer (its data
// connections' statistics go into the record).
func (t *Tracker) Progress(p client.Progress) {
	if t != nil {
		t.run.observe(p)
	}
}

// Done records the end of the transfer: n bytes moved, and err.
func (t *Tracker) Done(ctx context.Context, n int64, err error) {
	if t != nil {
		t.e.finishRun(ctx, t.run, n, err)
	}
}
