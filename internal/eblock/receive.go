package eblock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// DefaultMaxConns bounds the data connections one receiver accepts.
const DefaultMaxConns = 64

// DefaultMaxRanges bounds the separate byte ranges a transfer's blocks
// may form. Blocks merge with their neighbours, so ranges stay separate
// only across gaps: streams out of step leave a few per connection, a
// restart (REST, at most 10,000 ranges) one per gap it fills, a Blocked
// striped layout one per stripe block (1 TiB in 1 MiB stripe blocks to
// two stripes: 512Ki). A peer that scatters tiny blocks would otherwise
// make the receiver keep a range per 18 bytes it sends; at the cap the
// receiver's two range sets hold 32 to 64 MiB.
const DefaultMaxRanges = 1 << 20

// ReceiveConfig tunes a Receiver.
type ReceiveConfig struct {
	// Base is added to block offsets to find the file offset (ESTO A, protocol.md §8.2).
	Base int64
	// Limit, if >= 0, is the size of the transfer (ALLO): a block reaching
	// past it is refused.
	Limit int64
	// MaxConns is how many connections may take part; 0 means
	// DefaultMaxConns. Twice as many more may wait for their first header
	// (candidates, see Receiver.Add); one more then evicts the oldest.
	MaxConns int
	// MaxRanges is how many separate (neither overlapping nor adjacent)
	// ranges the blocks received may form before the transfer fails with
	// ErrProtocol; 0 means DefaultMaxRanges.
	MaxRanges int
	// Received, when not nil, is increased by each stored block's size.
	Received *atomic.Int64
	// ConnReceived, when longer than k, is increased by the size of each
	// block stored from the k-th connection added (per-stream progress).
	ConnReceived []atomic.Int64
	// BeforeClose, when not nil, is called with k and the k-th connection
	// added just before the receiver closes it after the sender's CLOSE:
	// the last moment its socket can be read (TCP_INFO). It runs once per
	// such connection, on its reading goroutine, with no lock held.
	BeforeClose func(k int, c net.Conn)
	// Dropped, when not nil, is called with each candidate connection the
	// receiver closed before it delivered a valid first header (a stray:
	// see Receiver.Add), on its reading goroutine, with no lock held.
	Dropped func(c net.Conn)
}

// maxFirstBlock is the largest block a connection's first header may
// announce (see firstInvalidLocked).
const maxFirstBlock = 4 << 30

// ErrProtocol reports a sender that broke the MODE E rules.
var ErrProtocol = errors.New("eblock: protocol violation")

// errFragmented is the ErrProtocol of blocks past ReceiveConfig.MaxRanges.
var errFragmented = fmt.Errorf("%w: blocks scattered into too many separate ranges", ErrProtocol)

// Receiver reassembles one MODE E transfer from the connections handed to it
// with Add, storing each block at its offset as it arrives. Create it with
// NewReceiver and finish with Wait.
type Receiver struct {
	dst dsi.Writer
	rf  dsi.RangeReaderFrom // dst's zero-copy path, or nil
	cfg ReceiveConfig

	wg   sync.WaitGroup
	done chan struct{} // closed when complete or failed

	mu        sync.Mutex
	expected  int               // EOD count from the EOF header, -1 until seen
	seen      int               // EODs seen
	conns     []net.Conn        // connections taking part (valid first header seen)
	pending   []net.Conn        // candidates still waiting for their first header, oldest first
	dropped   error             // why the last candidate was dropped
	reading   map[net.Conn]bool // connections still being read, candidates too
	reusable  []net.Conn        // ended with EOD and no CLOSE
	claimed   xfer.RangeSet     // transfer-coordinate ranges announced by headers
	committed xfer.RangeSet     // ranges stored, not yet taken by TakeCommitted
	total     int64
	err       error
	finished  bool
}

// NewReceiver returns a Receiver storing into dst.
func NewReceiver(dst dsi.Writer, cfg ReceiveConfig) *Receiver {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxRanges <= 0 {
		cfg.MaxRanges = DefaultMaxRanges
	}
	r := &Receiver{dst: dst, cfg: cfg, done: make(chan struct{}), expected: -1, reading: map[net.Conn]bool{}}
	r.rf, _ = dst.(dsi.RangeReaderFrom)
	return r
}

// Add hands the receiver a data connection (a new one, or a cached one from
// the previous transfer). It reports false, and leaves c alone, when the
// transfer already has all the connections it may have or is over.
//
// The connection is a candidate until its first header arrives and is
// valid (it parses, and its block or EOF agrees with what the transfer
// has seen): only then does it take part, count towards MaxConns and the
// EOD count, and a failure on it fail the transfer. A candidate that ends,
// sends garbage or an impossible first header is closed and forgotten, so
// a stranger who reaches the data port (a port scanner on the peer's
// host, globus-toolkit#93) neither fails the transfer nor takes a
// peer's place. A stranger that sends well-formed blocks cannot be told
// from the peer without DCAU.
//
// At most 2×MaxConns candidates wait at once (room for all the peer's
// streams arriving in a burst, before any is read, beside as many
// strangers). When one more arrives the oldest is dropped: a peer's connection sends its first header at once,
// so the candidate that has waited longest is the likeliest stranger (one
// that holds its connection open or only reads), and refusing the
// newcomer instead would turn away the peer's last streams.
func (r *Receiver) Add(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished || len(r.conns) >= r.cfg.MaxConns || r.expected >= 0 && len(r.conns) >= r.expected {
		return false
	}
	if len(r.pending) >= 2*r.cfg.MaxConns {
		oldest := r.pending[0]
		r.pending = r.pending[1:]
		oldest.SetReadDeadline(time.Unix(1, 0)) // its first() fails and drops it
	}
	r.pending = append(r.pending, c)
	r.reading[c] = true
	c.SetReadDeadline(time.Time{})
	r.wg.Go(func() { r.read(c) })
	return true
}

// Conns reports how many connections take part (have delivered a valid
// first header).
func (r *Receiver) Conns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

// Done is closed when the transfer is complete or has failed.
func (r *Receiver) Done() <-chan struct{} { return r.done }

// Wait blocks until the transfer is complete (EOF seen and every EOD
// counted), has failed, or ctx is done; it returns the bytes stored. It does
// not return before every reading goroutine has stopped.
func (r *Receiver) Wait(ctx context.Context) (int64, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		r.fail(context.Cause(ctx))
	}
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total, r.err
}

// Reusable returns the connections that ended the transfer with EOD and no
// CLOSE; they may carry the next transfer. Valid after Wait returned nil.
func (r *Receiver) Reusable() []net.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reusable
}

// Candidates reports how many connections added wait for their first
// header.
func (r *Receiver) Candidates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// All returns every connection taking part.
func (r *Receiver) All() []net.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]net.Conn(nil), r.conns...)
}

// TakeCommitted returns the ranges (transfer coordinates) stored since the
// previous call, for incremental 111 range markers.
func (r *Receiver) TakeCommitted() []xfer.Range {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.committed.Ranges()
	r.committed = xfer.RangeSet{}
	return rs
}

// fail records the first error and stops every connection still reading.
func (r *Receiver) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.err = err
	r.finishLocked()
}

// finishLocked ends the transfer; connections still reading are stopped
// (those are extra connections after success, all of them after failure).
func (r *Receiver) finishLocked() {
	r.finished = true
	for c, reading := range r.reading {
		if reading {
			c.SetReadDeadline(time.Unix(1, 0))
		}
	}
	close(r.done)
}

func (r *Receiver) read(c net.Conn) {
	var hdr [HeaderSize]byte
	h, idx, ok := r.first(c, &hdr)
	if !ok {
		return
	}
	have := 0 // bytes of the next header already read behind a small block
	for {
		if h.Desc&DescEOF != 0 {
			if err := r.gotEOF(h.EODCount(), h.Desc&DescEOD != 0); err != nil {
				r.connFailed(c, err, "")
				return
			}
		} else if h.Count > 0 {
			// After a block with EOD (allowed, protocol.md §5.2) the
			// connection carries the next transfer: no reading ahead.
			next := &hdr
			if h.Desc&DescEOD != 0 {
				next = nil
			}
			var err error
			if have, err = r.block(c, idx, int64(h.Offset), int64(h.Count), next); err != nil {
				r.connFailed(c, err, "")
				return
			}
		}
		if h.Desc&DescEOD != 0 {
			closing := h.Desc&DescClose != 0
			if closing && r.cfg.BeforeClose != nil {
				r.cfg.BeforeClose(idx, c)
			}
			r.gotEOD(c, closing)
			return
		}
		if _, err := io.ReadFull(c, hdr[have:]); err != nil {
			r.connFailed(c, err, "reading a block header")
			return
		}
		have = 0
		var err error
		if h, err = ParseHeader(hdr[:]); err != nil {
			r.connFailed(c, fmt.Errorf("%w: %v", ErrProtocol, err), "")
			return
		}
	}
}

// first reads a candidate's first header and, when it is valid, makes c
// take part as connection idx; otherwise (c ended, sent garbage or a
// header the transfer cannot accept, or the transfer is over or has all
// its connections) it closes c and reports false.
func (r *Receiver) first(c net.Conn, hdr *[HeaderSize]byte) (h Header, idx int, ok bool) {
	_, err := io.ReadFull(c, hdr[:])
	if err == nil {
		h, err = ParseHeader(hdr[:])
	}
	r.mu.Lock()
	evicted := !r.unpendLocked(c)
	if err == nil && evicted {
		err = errors.New("evicted by a newer connection while waiting for its first header")
	}
	if err == nil {
		err = r.firstInvalidLocked(h)
	}
	switch {
	case r.finished:
	case err != nil:
		r.dropped = fmt.Errorf("a data connection was dropped at its first block header: %w", err)
	case len(r.conns) >= r.cfg.MaxConns || r.expected >= 0 && len(r.conns) >= r.expected:
	default:
		ok = true
		idx = len(r.conns)
		r.conns = append(r.conns, c)
	}
	if !ok {
		delete(r.reading, c)
	}
	r.mu.Unlock()
	if !ok {
		c.Close()
		if r.cfg.Dropped != nil {
			r.cfg.Dropped(c)
		}
	}
	return h, idx, ok
}

// unpendLocked removes c from the candidates waiting for their first
// header; it reports false when c was no longer there (Add evicted it).
func (r *Receiver) unpendLocked(c net.Conn) bool {
	for i, p := range r.pending {
		if p == c {
			r.pending = append(r.pending[:i:i], r.pending[i+1:]...)
			return true
		}
	}
	return false
}

// firstInvalidLocked returns why h may not open a connection, or nil:
// it must be a block inside the announced size that overlaps nothing
// received, or an EOF that agrees with the EOD count and the EODs seen.
// r.mu must be held.
func (r *Receiver) firstInvalidLocked(h Header) error {
	if h.Desc&DescEOF != 0 {
		count := h.EODCount()
		if (r.expected >= 0 && r.expected != count) || count > r.cfg.MaxConns || count <= r.seen || count <= len(r.conns) {
			return fmt.Errorf("%w: EOF with EOD count %d, after %d EODs on %d connections", ErrProtocol, count, r.seen, len(r.conns))
		}
		return nil
	}
	if h.Count == 0 {
		if h.Desc&DescEOD == 0 {
			return fmt.Errorf("%w: empty first block without EOD", ErrProtocol)
		}
		return nil
	}
	rg := xfer.Range{Start: int64(h.Offset), End: int64(h.Offset) + int64(h.Count)}
	switch {
	case h.Count > maxFirstBlock:
		// Without a size to check against (no ALLO), random bytes
		// from a stranger parse as a block about one time in ten; a
		// first block this large is sent by no sender.
		return fmt.Errorf("%w: a first block of %d bytes", ErrProtocol, h.Count)
	case r.cfg.Limit >= 0 && rg.End > r.cfg.Limit:
		return fmt.Errorf("%w: block %d-%d runs past the announced size %d", ErrProtocol, rg.Start, rg.End, r.cfg.Limit)
	case r.cfg.Base+rg.End < r.cfg.Base:
		return fmt.Errorf("%w: block %d-%d overflows the file offset", ErrProtocol, rg.Start, rg.End)
	case r.claimed.Overlaps(rg):
		return fmt.Errorf("%w: block %d-%d overlaps data already received", ErrProtocol, rg.Start, rg.End)
	}
	return nil
}

// LastDropped returns why the last candidate connection was dropped
// before it took part (see Add), or nil: the likely cause of a transfer
// that no connection joined.
func (r *Receiver) LastDropped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// block claims, stores and commits one block. A small block is read
// together with what follows it up to the next header, which lands in
// next (unless next is nil); have is how many bytes of it arrived (the
// rest is still to read).
func (r *Receiver) block(c net.Conn, idx int, off, n int64, next *[HeaderSize]byte) (have int, err error) {
	rg := xfer.Range{Start: off, End: off + n}
	r.mu.Lock()
	switch {
	case r.cfg.Limit >= 0 && rg.End > r.cfg.Limit:
		r.mu.Unlock()
		return 0, fmt.Errorf("%w: block %d-%d runs past the announced size %d", ErrProtocol, rg.Start, rg.End, r.cfg.Limit)
	case r.cfg.Base+rg.End < r.cfg.Base:
		r.mu.Unlock()
		return 0, fmt.Errorf("%w: block %d-%d overflows the file offset", ErrProtocol, rg.Start, rg.End)
	}
	if r.claimed.Overlaps(rg) {
		r.mu.Unlock()
		return 0, fmt.Errorf("%w: block %d-%d overlaps data already received", ErrProtocol, rg.Start, rg.End)
	}
	r.claimed.Add(rg)
	// committed is part of claimed (blocks in flight split it a little
	// more): the cap bounds both.
	if r.claimed.Len() > r.cfg.MaxRanges {
		r.mu.Unlock()
		return 0, fmt.Errorf("%w (more than %d, at block %d-%d)", errFragmented, r.cfg.MaxRanges, rg.Start, rg.End)
	}
	r.mu.Unlock()

	var got int64
	switch {
	case n <= smallBlock:
		// Zero-copy paths cost more syscalls than they save here (a
		// splice sets up a pipe), and the read can take the next header
		// along.
		got, have, err = readSmall(r.dst, c, r.cfg.Base+off, n, next)
	case r.rf != nil:
		got, err = r.rf.ReadRangeFrom(c, r.cfg.Base+off, n)
	default:
		got, err = copyBlock(r.dst, c, r.cfg.Base+off, n)
	}
	if err != nil {
		return 0, classify(err)
	}
	if got != n {
		return 0, &xfer.DataError{Err: io.ErrUnexpectedEOF}
	}
	r.mu.Lock()
	r.committed.Add(rg)
	r.total += n
	r.mu.Unlock()
	if r.cfg.Received != nil {
		r.cfg.Received.Add(n)
	}
	if idx < len(r.cfg.ConnReceived) {
		r.cfg.ConnReceived[idx].Add(n)
	}
	return have, nil
}

// smallBlock is the largest payload read through a buffer together with
// the header behind it: for small files (one block each) that halves the
// reads, and a block this small gains nothing from splice.
const smallBlock = 64 << 10

// readSmall reads the n-byte payload of a block and stores it at off,
// reading on into next (when not nil), up to the next header's end, in the
// same reads: a block without EOD is followed by a header on its
// connection (the connection ends with one), so nothing beyond this
// transfer is read. It never waits for header bytes once the payload is
// complete; have is how many it got.
func readSmall(dst io.WriterAt, c net.Conn, off, n int64, next *[HeaderSize]byte) (got int64, have int, err error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := (*bp)[:n]
	if next != nil {
		buf = (*bp)[:n+HeaderSize]
	}
	m := 0
	for int64(m) < n && err == nil {
		var k int
		k, err = c.Read(buf[m:])
		m += k
	}
	if int64(m) < n {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, &xfer.DataError{Err: err}
	}
	if _, werr := dst.WriteAt(buf[:n], off); werr != nil {
		return 0, 0, &xfer.StorageError{Err: werr}
	}
	// A read error after the payload is the next header's: read fails it
	// there (as "reading a block header"), after this block counted.
	if next != nil {
		have = copy(next[:], buf[n:m])
	}
	return n, have, nil
}

func copyBlock(dst io.WriterAt, c net.Conn, off, n int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var done int64
	for done < n {
		m, err := io.ReadFull(c, buf[:min(int64(len(buf)), n-done)])
		if m > 0 {
			if _, werr := dst.WriteAt(buf[:m], off+done); werr != nil {
				return done, &xfer.StorageError{Err: werr}
			}
			done += int64(m)
		}
		if err != nil {
			return done, &xfer.DataError{Err: err}
		}
	}
	return done, nil
}

// gotEOF records the EOD count. withEOD says the same header also carries
// an EOD (GCT's 0x48), which gotEOD counts next; it is part of the check.
func (r *Receiver) gotEOF(count int, withEOD bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.seen
	if withEOD {
		seen++
	}
	switch {
	case r.expected >= 0 && r.expected != count:
		return fmt.Errorf("%w: second EOF with a different EOD count", ErrProtocol)
	case count > r.cfg.MaxConns:
		return fmt.Errorf("%w: EOD count %d is above the %d connections allowed", ErrProtocol, count, r.cfg.MaxConns)
	case count < seen:
		return fmt.Errorf("%w: EOD count %d but %d EODs seen", ErrProtocol, count, seen)
	}
	r.expected = count
	if !withEOD {
		r.checkDoneLocked()
	}
	return nil
}

func (r *Receiver) gotEOD(c net.Conn, closing bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reading[c] = false
	if closing {
		c.Close()
	} else {
		r.reusable = append(r.reusable, c)
	}
	r.seen++
	if r.expected >= 0 && r.seen > r.expected {
		if !r.finished {
			r.err = fmt.Errorf("%w: more EODs than the EOD count %d", ErrProtocol, r.expected)
			r.finishLocked()
		}
		return
	}
	r.checkDoneLocked()
}

func (r *Receiver) checkDoneLocked() {
	if !r.finished && r.expected >= 0 && r.seen == r.expected {
		r.finishLocked()
	}
}

// connFailed ends the transfer with err, unless it already ended (an extra
// connection stopped after success is not a failure).
func (r *Receiver) connFailed(c net.Conn, err error, doing string) {
	r.mu.Lock()
	r.reading[c] = false
	finished := r.finished
	r.mu.Unlock()
	if finished {
		return
	}
	var se *xfer.StorageError
	switch {
	case errors.As(err, &se), errors.Is(err, ErrProtocol):
	default:
		if doing != "" {
			err = fmt.Errorf("%s: %w", doing, err)
		}
		err = &xfer.DataError{Err: err}
	}
	r.fail(err)
}

// classify sorts an error from a zero-copy path (which cannot tell us which
// side failed) into a data-channel or a storage failure.
func classify(err error) error {
	var se *xfer.StorageError
	var de *xfer.DataError
	var oe *net.OpError
	switch {
	case errors.As(err, &se), errors.As(err, &de):
		return err
	case errors.As(err, &oe), isConnErrno(err), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &xfer.DataError{Err: err}
	}
	return &xfer.StorageError{Err: err}
}

// isConnErrno reports errors that mean the peer or the socket failed.
func isConnErrno(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ETIMEDOUT) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded)
}

// bufSize is the copy buffer for paths the kernel cannot short-cut.
const bufSize = 1 << 20

// bufAlign is the alignment of the copy buffers' first byte: a page, so
// that a block read into one at an aligned file offset can be written
// with direct IO (dsi/posix), which wants aligned memory.
const bufAlign = 4096

var bufPool = sync.Pool{New: func() any { b := alignedBuf(bufSize, bufAlign); return &b }}

// alignedBuf returns n bytes starting at an address that is a multiple
// of align.
func alignedBuf(n, align int) []byte {
	b := make([]byte, n+align)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align)); r != 0 {
		skip = align - r
	}
	return b[skip : skip+n : skip+n]
}
