package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// Defaults of RetryPolicy.
const (
	DefaultRetryInterval    = 2 * time.Second
	DefaultMaxRetryInterval = time.Minute
)

// ErrStalled is the cause of an attempt that moved no data for the
// RetryPolicy's StallTimeout.
var ErrStalled = errors.New("client: transfer stalled: no data moved within the stall timeout")

// ErrRetryTimeout is the cause when a Session's total Timeout expires.
var ErrRetryTimeout = errors.New("client: restart timeout expired")

// DialFunc dials a server and logs in, returning a ready Conn. A Session
// calls it again after a failure.
type DialFunc func(ctx context.Context) (*Conn, error)

// RetryPolicy says how a Session retries a failed transfer. The zero value
// tries once, without a stall timeout.
type RetryPolicy struct {
	// Retries is how many more attempts follow a failed one.
	Retries int

	// Interval is the wait before the first retry; it doubles after each
	// further failure up to MaxInterval. Zero means DefaultRetryInterval
	// and DefaultMaxRetryInterval; a MaxInterval below Interval is
	// Interval, so MaxInterval == Interval is a fixed wait (as
	// globus-url-copy -rst-interval N). The doubling saturates: a
	// MaxInterval of math.MaxInt64 is a back-off without bound.
	Interval, MaxInterval time.Duration

	// Timeout, when positive, bounds the whole transfer, retries
	// included.
	Timeout time.Duration

	// Deadline, when not zero, is the time after which a failed
	// attempt is not retried; unlike Timeout it cuts no attempt short
	// (globus-url-copy's -rst-timeout, counted from its start).
	Deadline time.Time

	// StallTimeout, when positive, ends an attempt in which no data
	// moved for that long (ErrStalled); it is retried like any failure.
	StallTimeout time.Duration

	// OnRetry, when not nil, is called before each retry with the number
	// of the attempt that failed (0 for the first), its error and the
	// wait before the next attempt.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// Session is a restartable client: it dials with Dial when it needs a
// connection, and when a transfer fails on the network (a broken control
// or data connection, a stall, a server going away) it dials again and
// resumes where the transfer stopped, as Retry allows. MODE E transfers
// resume with REST of the ranges already at the receiver: for a download
// the ranges the client committed, for an upload the union of the
// server's 111 range markers. Stream-mode downloads resume after the
// contiguous prefix received; stream-mode uploads after the size the
// server reports (SIZE).
//
// A Session keeps its Conn between transfers, so with Reuse the data
// connections are reused too. It is not safe for concurrent use.
type Session struct {
	Dial  DialFunc
	Retry RetryPolicy

	conn *Conn
}

// Conn returns the Session's connection, dialing a new one when there is
// none or the last one broke.
func (s *Session) Conn(ctx context.Context) (*Conn, error) {
	if s.conn != nil && s.conn.err == nil {
		return s.conn, nil
	}
	s.conn = nil
	c, err := s.Dial(ctx)
	if err != nil {
		return nil, err
	}
	s.conn = c
	return c, nil
}

// Connect is Conn, but a dial that fails is tried again as Retry allows
// a failed transfer to be: up to Retry.Retries more times, waiting
// Retry.Interval (doubled up to Retry.MaxInterval) in between, and not
// after Retry.Deadline or Retry.Timeout; a refusal such as a bad login
// is final. The first connection of a copy is made with Connect, so that
// a server that cannot be reached yet is waited for, as
// globus-url-copy's restart plugin does; once it is up, the transfers'
// own attempts redial with Conn.
func (s *Session) Connect(ctx context.Context) (*Conn, error) {
	c, err := s.Conn(ctx)
	if err == nil || s.Retry.Retries <= 0 {
		return c, err
	}
	pol := s.Retry.withDefaults()
	if pol.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, pol.Timeout, ErrRetryTimeout)
		defer cancel()
	}
	wait := pol.Interval
	for attempt := 0; attempt < pol.Retries; attempt++ {
		late := !pol.Deadline.IsZero() && time.Now().After(pol.Deadline)
		if late || ctx.Err() != nil || !retryable(err, false) {
			return nil, err
		}
		if werr := pol.pause(ctx, attempt, err, wait); werr != nil {
			return nil, werr
		}
		wait = nextWait(wait, pol.MaxInterval)
		if c, err = s.Conn(ctx); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// Close ends the Session's connection with QUIT.
func (s *Session) Close(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	c := s.conn
	s.conn = nil
	if ctx.Err() != nil {
		return c.Close()
	}
	return c.Quit(ctx)
}

// drop closes the connection after a failed attempt: its data channel
// state is unknown.
func (s *Session) drop() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// attemptFunc runs one attempt on c; prog must receive its progress.
type attemptFunc func(ctx context.Context, c *Conn, attempt int, prog func(Progress), interval time.Duration) (int64, error)

// run runs attempts until one succeeds or the policy gives up, and
// returns the bytes moved by all of them.
func (s *Session) run(ctx context.Context, pol RetryPolicy, userProg func(Progress), userInterval time.Duration, f attemptFunc) (int64, error) {
	pol = pol.withDefaults()
	if pol.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, pol.Timeout, ErrRetryTimeout)
		defer cancel()
	}
	interval := userInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	if pol.StallTimeout > 0 {
		interval = min(interval, max(pol.StallTimeout/4, time.Millisecond))
	}
	var total int64
	var first error // the first attempt's failure
	wait := pol.Interval
	for attempt := 0; ; attempt++ {
		n, moved, err := s.attempt(ctx, pol.StallTimeout, attempt, total, userProg, interval, f)
		total += n
		if err == nil {
			return total, nil
		}
		if attempt == 0 {
			first = err
		} else {
			err = withFirst(err, first)
		}
		s.drop()
		late := !pol.Deadline.IsZero() && time.Now().After(pol.Deadline)
		if attempt >= pol.Retries || late || ctx.Err() != nil || !retryable(err, moved) {
			if ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
				err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
			}
			return total, err
		}
		if werr := pol.pause(ctx, attempt, err, wait); werr != nil {
			return total, werr
		}
		wait = nextWait(wait, pol.MaxInterval)
	}
}

// nextWait is the wait after wait: twice as long, at most maxWait, without
// withDefaults fills in the intervals pol leaves at zero.
func (pol RetryPolicy) withDefaults() RetryPolicy {
	if pol.Interval <= 0 {
		pol.Interval = DefaultRetryInterval
	}
	if pol.MaxInterval <= 0 {
		pol.MaxInterval = DefaultMaxRetryInterval
	}
	pol.MaxInterval = max(pol.MaxInterval, pol.Interval)
	return pol
}

// pause announces the retry after err (OnRetry) and waits wait; it
// returns err with ctx's cause when ctx ends first.
func (pol RetryPolicy) pause(ctx context.Context, attempt int, err error, wait time.Duration) error {
	if pol.OnRetry != nil {
		pol.OnRetry(attempt, err, wait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w (%w)", err, context.Cause(ctx))
	case <-t.C:
		return nil
	}
}

// overflowing.
func nextWait(wait, maxWait time.Duration) time.Duration {
	if wait > maxWait/2 {
		return maxWait
	}
	return wait * 2
}

// withFirst adds the first attempt's failure to a later one's when the
// first was the server's reply and the later is not: the server's reason
// (426 ... server shutting down) must not be hidden by what the retries
// met (connection refused).
func withFirst(last, first error) error {
	var re *ReplyError
	if first == nil || errors.As(last, &re) || !errors.As(first, &re) {
		return last
	}
	return fmt.Errorf("%w (first attempt: %v)", last, first)
}

// attempt runs f once with a stall watchdog; moved reports whether data
// moved.
func (s *Session) attempt(ctx context.Context, stall time.Duration, attempt int, before int64, userProg func(Progress), interval time.Duration, f attemptFunc) (n int64, moved bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var last atomic.Int64 // bytes of this attempt, as last reported
	prog := func(p Progress) {
		last.Store(p.Bytes)
		if userProg != nil {
			p.Bytes += before
			p.Attempt = attempt
			userProg(p)
		}
	}
	stopWatch := dtp.WatchStall(actx, stall, func() uint64 { return uint64(last.Load()) }, func() { cancel(ErrStalled) })
	defer stopWatch()
	c, err := s.Conn(actx)
	if err != nil {
		return 0, false, err
	}
	n, err = f(actx, c, attempt, prog, interval)
	return n, n > 0 || last.Load() > 0, err
}

// retryable reports whether a failed attempt is worth another: network
// trouble and stalls are, a refusal by the server before any data moved
// (no such file, permission denied, bad login) and local storage errors
// are not.
func retryable(err error, moved bool) bool {
	var se *xfer.StorageError
	var re *ReplyError
	var ce *ServerCertError
	switch {
	case errors.Is(err, ErrBadCommand), errors.As(err, &se):
		return false
	case errors.As(err, &ce), errors.Is(err, ErrThirdPartyFTPS):
		// Asking again gets the same certificate, or the same refusal.
		return false
	case errors.As(err, &re):
		return re.Reply.Code/100 == 4 || moved
	}
	return true
}

// received is what the receiver of a copy already has, shared by the
// copy's attempts: each starts from a snapshot (REST), and the receiver's
// reports (committed ranges, 111 markers) replace it as they come.
type received struct {
	mu sync.Mutex
	rs RangeSet // guarded by mu
}

func newReceived(start RangeSet) *received { return &received{rs: start.Clone()} }

func (r *received) snapshot() RangeSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rs.Clone()
}

func (r *received) add(rg Range) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rs.Add(rg)
}

// record returns a callback that stores a report and passes it on to next.
func (r *received) record(next func(RangeSet)) func(RangeSet) {
	return func(rs RangeSet) {
		r.mu.Lock()
		r.rs = rs.Clone()
		r.mu.Unlock()
		if next != nil {
			next(rs)
		}
	}
}

// Download retrieves path into dst (see Conn.RetrieveAt), retrying and
// resuming after failures as the Session's RetryPolicy allows. It returns
// the bytes moved by all attempts. opts.Committed sees every range stored
// so far, which a caller may record to resume after its own crash.
func (s *Session) Download(ctx context.Context, path string, dst io.WriterAt, opts *RetrieveOptions) (int64, error) {
	var o RetrieveOptions
	if opts != nil {
		o = *opts
	}
	have := newReceived(o.Restart)
	return s.run(ctx, s.Retry, o.Progress, o.ProgressInterval, func(ctx context.Context, c *Conn, attempt int, prog func(Progress), interval time.Duration) (int64, error) {
		ao := o
		ao.Restart = have.snapshot()
		if o.Module != "" {
			// A module chain's output is made anew for each attempt:
			// it is fetched again whole.
			ao.Restart = RangeSet{}
		}
		ao.Committed = have.record(o.Committed)
		ao.Progress, ao.ProgressInterval = prog, interval
		return c.RetrieveAt(ctx, path, dst, &ao)
	})
}

// Upload stores size bytes of src from opts.Offset on at the same offsets
// of path (see Conn.StoreAt), retrying and resuming after failures as the
// Session's RetryPolicy allows. It returns the bytes moved by all
// attempts. In MODE E it asks for 111 markers every second unless
// opts.MarkerInterval says otherwise; opts.Acknowledged sees every range
// the server confirmed.
func (s *Session) Upload(ctx context.Context, src io.ReaderAt, size int64, path string, opts *StoreOptions) (int64, error) {
	var o StoreOptions
	if opts != nil {
		o = *opts
	}
	modeE := o.Parallel > 1 || o.ModeE
	if modeE && o.MarkerInterval == 0 {
		o.MarkerInterval = time.Second
	}
	have := newReceived(o.Restart)
	var started atomic.Bool // an attempt moved data: the server's file is ours
	return s.run(ctx, s.Retry, o.Progress, o.ProgressInterval, func(ctx context.Context, c *Conn, attempt int, prog func(Progress), interval time.Duration) (int64, error) {
		ao := o
		if !modeE && started.Load() && o.Offset == 0 {
			// Stream mode has no markers: the server's file size is what
			// arrived.
			if sz := uploadedSize(ctx, c, path); sz > 0 {
				have.add(Range{Start: 0, End: min(sz, size)})
			}
		}
		ao.Restart = have.snapshot()
		if o.Module != "" {
			// The server runs a module chain over the whole data only:
			// a retry sends it all again.
			ao.Restart = RangeSet{}
		}
		ao.Acknowledged = have.record(o.Acknowledged)
		ao.Progress = func(p Progress) {
			if p.Bytes > 0 {
				started.Store(true)
			}
			prog(p)
		}
		ao.ProgressInterval = interval
		n, err := c.StoreAt(ctx, path, src, size, &ao)
		if n > 0 {
			started.Store(true)
		}
		return n, err
	})
}

// uploadedSize is how much of an interrupted stream-mode upload to path a
// server kept: the size of path (GCT writes in place), else of the hidden
// part file a Ferry server keeps until an upload completes
// (docs/extensions.md); 0 when there is neither.
func uploadedSize(ctx context.Context, c *Conn, path string) int64 {
	if sz, err := c.Size(ctx, path); err == nil {
		return sz
	}
	if sz, err := c.Size(ctx, xfer.PartName(path)); err == nil {
		return sz
	}
	return 0
}

// ThirdParty copies srcPath on s's server to dstPath on dst's server
// directly between the servers (see the function ThirdParty), retrying
// after failures as s's RetryPolicy allows. A retry dials both servers
// again and resumes as globus-url-copy -restart does (protocol.md §8.3):
// in MODE E, REST of the union of the destination's 111 range markers
// goes to the destination before STOR and to the source before RETR; in
// stream mode the destination's size (SIZE) is skipped. In MODE E the
// destination is asked for 111 markers every second unless
// opts.MarkerInterval says otherwise. Stream mode has no markers, so the
// policy's StallTimeout does not apply there. It returns the bytes moved
// by all attempts.
func (s *Session) ThirdParty(ctx context.Context, srcPath string, dst *Session, dstPath string, opts *ThirdPartyOptions) (int64, error) {
	var o ThirdPartyOptions
	if opts != nil {
		o = *opts
	}
	pol := s.Retry
	modeE := o.modeE()
	if modeE && o.MarkerInterval == 0 {
		o.MarkerInterval = time.Second
	}
	if !modeE {
		pol.StallTimeout = 0
	}
	partial := o.Offset > 0 || o.Length > 0
	modules := o.SrcModule != "" || o.DstModule != ""
	have := newReceived(o.Restart)
	var started atomic.Bool // the destination accepted a STOR: its file is ours
	return s.run(ctx, pol, o.Progress, o.ProgressInterval, func(ctx context.Context, c *Conn, attempt int, prog func(Progress), interval time.Duration) (int64, error) {
		dc, err := dst.Conn(ctx)
		if err != nil {
			return 0, err
		}
		if !modeE && !partial && !modules && started.Load() {
			if sz := uploadedSize(ctx, dc, dstPath); sz > 0 {
				have.add(Range{Start: 0, End: sz})
			}
		}
		ao := o
		ao.Restart = have.snapshot()
		if modules {
			// Module chains run over the whole data: a retry moves it
			// all again.
			ao.Restart = RangeSet{}
		}
		ao.Acknowledged = have.record(o.Acknowledged)
		ao.Progress, ao.ProgressInterval = prog, interval
		ao.begun = func() { started.Store(true) }
		n, err := ThirdParty(ctx, c, srcPath, dc, dstPath, &ao)
		if err != nil {
			dst.drop()
		}
		return n, err
	})
}
