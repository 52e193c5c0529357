package client

// Batches of small files over one control connection (issue 7): the
// commands of later files go out before the earlier ones are answered
// (pipelining; the server queues them and answers in order, protocol.md
// §1.1), and one set of MODE E data connections carries every file of the
// batch (connection caching, §5.5), so a file costs no round trip of its
// own for data channel set-up.
//
// Downloads pipeline fully: the server starts sending file k+1 as soon as
// file k is done, because RETR k+1 is already queued. The client reads a
// file's blocks only after the file's 125/150 reply, so the data of a
// refused RETR (there is none) can never be mistaken for the next file's.
//
// Uploads to a server that offers the STOR-DRAIN extension (FEAT line
// "PIPE STOR-DRAIN", enabled with OPTS PIPE STOR-DRAIN=ON; Ferry's server,
// docs/extensions.md) pipeline fully too: a file's blocks follow its STOR
// at once, and a STOR the server refuses has its blocks read and
// discarded there, so the stream stays in step and the refusal lands on
// that file alone.
//
// Other servers (GCT's) get a file's blocks only after its 125/150: a
// STOR they refuse before reading (no such directory, no permission)
// reads nothing from the cached connections, and blocks written ahead
// would be taken for the next file's. The STOR and ALLO of later files
// are still sent ahead, which leaves one round trip per file
// (globus-url-copy -pp -fast waits for each 226 before the next ALLO,
// then for that reply before STOR: three).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// DefaultWindow is how many files of a batch may be in flight on one
// control connection when BatchOptions.Window is zero. It hides a round
// trip of about Window times the server's time per file.
const DefaultWindow = 64

// ErrBatchStopped is the error of the files of a batch that were not
// transferred because the batch stopped early: its context was cancelled,
// the control connection broke, or another file's data connections failed
// (which closes the Conn). errors.Is tells these apart from files the
// server refused; retry them on a new Conn.
var ErrBatchStopped = errors.New("client: batch stopped before this file was transferred")

// Get is one file of a GetFiles batch.
type Get struct {
	// Path is the file on the server.
	Path string
	// Open returns where the file's bytes go (at the file's offsets). It
	// is called when the server starts sending the file, not before; the
	// result is closed, when it is an io.Closer, as soon as the file is
	// complete or has failed. If Open fails the file's data is read and
	// dropped, and the file gets Open's error.
	Open func() (io.WriterAt, error)
}

// Put is one file of a PutFiles batch.
type Put struct {
	// Path is the destination on the server.
	Path string
	// Size is the number of bytes to send (from offset 0 of what Open
	// returns). Negative: Open must return an *os.File, whose size is
	// used.
	Size int64
	// Open returns the bytes to send. It is called just before the file's
	// commands are sent (when it fails, nothing is sent for the file); the
	// result is closed, when it is an io.Closer, as soon as the file is
	// complete or has failed.
	Open func() (io.ReaderAt, error)
}

// BatchOptions tunes GetFiles and PutFiles. The zero value (or nil) works.
type BatchOptions struct {
	// Window is how many files may have their commands sent and not yet
	// be complete; zero means DefaultWindow, 1 turns pipelining off.
	Window int

	// Parallel is the number of MODE E data connections; zero means one,
	// which suits small files (globus-url-copy -fast uses one too).
	Parallel int

	// TCPBuffer, when positive, is the TCP buffer size for the data
	// connections (SITE RETRBUFSIZE / STORBUFSIZE and the client's
	// sockets).
	TCPBuffer int

	// BlockSize is the payload of the MODE E blocks an upload sends; zero
	// means eblock.DefaultBlockSize.
	BlockSize int

	// StreamMode transfers each file in stream mode with a data
	// connection of its own (what is used anyway when the server refuses
	// MODE E). Slow for small files; for servers without MODE E.
	StreamMode bool

	// Done, when not nil, is called once for every file as it completes
	// (err nil) or fails, with its index in the batch; calls come from
	// other goroutines, one at a time.
	Done func(i int, err error)

	// StallTimeout, when positive, stops the batch when for that long
	// no data block moved, no reply arrived and no file finished: the
	// file in flight fails with ErrStalled, the rest with errors
	// wrapping ErrBatchStopped and ErrStalled.
	StallTimeout time.Duration

	progress *batchProgress // set by runBatch for StallTimeout
}

func (o *BatchOptions) window() int {
	if o.Window > 0 {
		return o.Window
	}
	return DefaultWindow
}

// GetFiles downloads a batch of files over this Conn and returns one error
// per file (nil: the file arrived complete). It uses MODE E with cached
// data connections and keeps up to Window RETR commands in flight; if the
// server refuses MODE E (or StreamMode is set) it downloads the files one
// by one in stream mode.
//
// A file the server refuses (550, or 500 for a missing file on GCT) gets
// a *ReplyError and the batch goes on. A failure of the data connections
// or of the control connection, or a cancelled ctx, stops the batch and
// closes the Conn: that file gets the failure and the files not yet done
// get an error wrapping ErrBatchStopped. The data connections stay open
// for the next batch in the same direction on this Conn.
func (c *Conn) GetFiles(ctx context.Context, files []Get, opts *BatchOptions) []error {
	return c.runBatch(ctx, len(files), opts, "downloading",
		func(ctx context.Context, w *watcher, stopWatch func() bool, o *BatchOptions, errs []error) []error {
			return c.getEBlock(ctx, w, stopWatch, files, o, errs)
		},
		func(ctx context.Context, i int, o *BatchOptions) error { return c.getOne(ctx, files[i], o) })
}

// runBatch is the part GetFiles and PutFiles share: it answers an empty
// batch and a broken Conn, switches to MODE E and hands the batch to
// modeE, or (MODE E refused, or StreamMode) transfers the n files one by
// one with one, reporting each to Done.
func (c *Conn) runBatch(ctx context.Context, n int, opts *BatchOptions, doing string,
	modeE func(ctx context.Context, w *watcher, stopWatch func() bool, o *BatchOptions, errs []error) []error,
	one func(ctx context.Context, i int, o *BatchOptions) error) []error {
	var o BatchOptions
	if opts != nil {
		o = *opts
	}
	errs := make([]error, n)
	if n == 0 {
		return errs
	}
	if o.StallTimeout > 0 {
		var stop func()
		ctx, o.progress, stop = watchStall(ctx, o.StallTimeout)
		defer stop()
		if done := o.Done; done != nil {
			o.Done = func(i int, err error) { o.progress.touch(); done(i, err) }
		} else {
			o.Done = func(int, error) { o.progress.touch() }
		}
	}
	if c.err != nil {
		return fillErrs(errs, 0, c.err, nil)
	}
	if !o.StreamMode {
		w, stopWatch := watchAll(ctx, c.nc)
		err := c.setMode(ctx, true)
		if err == nil {
			return modeE(ctx, w, stopWatch, &o, errs)
		}
		c.endBatch(ctx, stopWatch, err)
		if c.err != nil {
			return fillErrs(errs, 0, c.err, o.Done)
		}
		c.log.Debug("MODE E refused; "+doing+" in stream mode", "err", err)
	}
	for i := range n {
		errs[i] = one(ctx, i, &o)
		if o.Done != nil {
			o.Done(i, errs[i])
		}
		if c.err != nil {
			cause := c.err
			if ctx.Err() != nil {
				cause = context.Cause(ctx) // ErrStalled, say, not "closed"
			}
			return fillErrs(errs, i+1, cause, o.Done)
		}
	}
	return errs
}

// progressFunc is the Progress of a stream-mode file: it feeds the stall
// watch.
func (o *BatchOptions) progressFunc() func(Progress) {
	if o.progress == nil {
		return nil
	}
	last := int64(-1)
	return func(p Progress) {
		if p.Bytes != last {
			last = p.Bytes
			o.progress.touch()
		}
	}
}

// getOne downloads one file in stream mode.
func (c *Conn) getOne(ctx context.Context, g Get, o *BatchOptions) error {
	w, err := g.Open()
	if err != nil {
		return err
	}
	_, err = c.RetrieveAt(ctx, g.Path, w, &RetrieveOptions{TCPBuffer: o.TCPBuffer, Progress: o.progressFunc()})
	return closeItem(w, err)
}

// PutFiles uploads a batch of files over this Conn and returns one error
// per file (nil: the server confirmed the file with 226). It uses MODE E
// with cached data connections and sends ALLO and STOR of up to Window
// files ahead. A file's blocks go right behind its STOR when the server
// offers STOR-DRAIN, else when the server has answered the STOR with 125
// or 150 (see the top of pipeline.go). Without MODE E (refused, or
// StreamMode) the files go one by one in stream mode. Errors are as for
// GetFiles.
func (c *Conn) PutFiles(ctx context.Context, files []Put, opts *BatchOptions) []error {
	return c.runBatch(ctx, len(files), opts, "uploading",
		func(ctx context.Context, w *watcher, stopWatch func() bool, o *BatchOptions, errs []error) []error {
			return c.putEBlock(ctx, w, stopWatch, files, o, errs)
		},
		func(ctx context.Context, i int, o *BatchOptions) error { return c.putOne(ctx, files[i], o) })
}

// putOne uploads one file in stream mode.
func (c *Conn) putOne(ctx context.Context, p Put, o *BatchOptions) error {
	r, size, err := openPut(p)
	if err != nil {
		return err
	}
	_, err = c.StoreAt(ctx, p.Path, r, size, &StoreOptions{TCPBuffer: o.TCPBuffer, Progress: o.progressFunc()})
	return closeItem(r, err)
}

// openPut opens an upload's source and finds its size.
func openPut(p Put) (io.ReaderAt, int64, error) {
	r, err := p.Open()
	if err != nil {
		return nil, 0, err
	}
	size := p.Size
	if size < 0 {
		f, ok := r.(*os.File)
		if !ok {
			closeItem(r, nil)
			return nil, 0, fmt.Errorf("client: %s: size unknown (Put.Size < 0 and not an *os.File)", p.Path)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("client: %w", err)
		}
		size = fi.Size()
	}
	return r, size, nil
}

// closeItem closes a file's local end, when it can be closed, and
// returns err or else the close error.
func closeItem(x any, err error) error {
	if cl, ok := x.(io.Closer); ok {
		if cerr := cl.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("client: %w", cerr)
		}
	}
	return err
}

// fillErrs gives every file from i on that has no result yet an error
// wrapping ErrBatchStopped and cause.
func fillErrs(errs []error, i int, cause error, done func(int, error)) []error {
	for ; i < len(errs); i++ {
		if errs[i] == nil {
			errs[i] = stoppedError(cause)
			if done != nil {
				done(i, errs[i])
			}
		}
	}
	return errs
}

func stoppedError(cause error) error {
	if cause == nil || errors.Is(cause, ErrBatchStopped) {
		return ErrBatchStopped
	}
	return fmt.Errorf("%w: %w", ErrBatchStopped, cause)
}

// endBatch ends the watch of a batch's control connection; when the
// batch broke (err is a *brokenError or ctx is done) the Conn is closed.
func (c *Conn) endBatch(ctx context.Context, stopWatch func() bool, err error) {
	fired := stopWatch()
	var be *brokenError
	if errors.As(err, &be) || ctx.Err() != nil {
		c.close()
		return
	}
	if fired {
		_ = c.nc.SetDeadline(time.Time{})
	}
}

// batchOp is one command of a batch in flight: a transfer command of file
// item, or a set-up command (item < 0, e.g. ALLO) whose reply only needs
// reading.
type batchOp struct {
	item    int
	line    string
	t       ticket        // the command's place in the reply stream
	started bool          // a 125/150 arrived; set before the op goes to the data side
	final   Reply         // the final reply, once fin is closed
	err     error         // the control connection failed before the final reply
	fin     chan struct{} // closed when final or err is known

	// unstartedErr is the file's error when it never started, set
	// before fin is closed.
	unstartedErr error
}

// ok reports a positive final reply.
func (op *batchOp) ok() bool { return op.err == nil && op.final.Class() == 2 }

// failure is the op's error after fin is closed: the control failure, or
// the negative reply.
func (op *batchOp) failure() error {
	switch {
	case op.err != nil:
		return op.err
	case op.final.Class() != 2:
		return &ReplyError{Reply: op.final}
	}
	return nil
}

// batch is the shared state of one GetFiles or PutFiles call in MODE E.
type batch struct {
	c      *Conn
	parent context.Context // the caller's
	ctx    context.Context // cancelled when the batch stops
	cancel context.CancelCauseFunc
	slots  chan struct{} // one per file in flight
	sentc  chan *batchOp // sent commands, to the reply reader
	startc chan *batchOp // started transfers, to the data side
	w      *watcher      // the control watch; data connections join it

	// unstarted, when not nil, releases what file i held when its
	// transfer command was answered without starting (reply reader).
	unstarted func(i int)

	// eager hands each transfer to the data side as soon as its command
	// is sent, not at its 125/150; the data side then finishes every
	// file (uploads with STOR-DRAIN).
	eager bool

	mu       sync.Mutex
	errs     []error // guarded by mu
	finished []bool  // guarded by mu
	stopErr  error   // guarded by mu: why the batch stopped; nil while it runs
	done     func(int, error)
	progress *batchProgress // counts what moves (StallTimeout); may be nil
}

func (c *Conn) newBatch(ctx context.Context, w *watcher, errs []error, o *BatchOptions) *batch {
	bctx, cancel := context.WithCancelCause(ctx)
	win := o.window()
	return &batch{
		c:      c,
		parent: ctx,
		ctx:    bctx,
		cancel: cancel,
		slots:  make(chan struct{}, win),
		// A command is sent only with a slot, so win (plus the set-up
		// commands of as many files) bounds what the channels hold.
		sentc:    make(chan *batchOp, 2*win+2),
		startc:   make(chan *batchOp, win+1),
		w:        w,
		errs:     errs,
		finished: make([]bool, len(errs)),
		done:     o.Done,
		progress: o.progress,
	}
}

// stop ends the batch with cause (the first cause wins): the data side is
// cancelled and the control connection interrupted, which fails every
// command in flight. The Conn is closed when the batch returns.
func (b *batch) stop(cause error) {
	b.mu.Lock()
	first := b.stopErr == nil
	if first {
		b.stopErr = cause
	}
	b.mu.Unlock()
	if first {
		b.cancel(cause)
		_ = b.c.nc.SetDeadline(time.Unix(1, 0))
	}
}

func (b *batch) stopped() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopErr
}

// finish records file i's result and frees its slot.
func (b *batch) finish(i int, err error) {
	b.mu.Lock()
	b.errs[i], b.finished[i] = err, true
	if b.done != nil {
		b.done(i, err)
	}
	b.mu.Unlock()
	<-b.slots
}

// send sends one command and queues it for the reply reader.
func (b *batch) send(item int, line string) (*batchOp, error) {
	t, err := b.c.request(b.parent, line)
	if err != nil {
		err = plain(err)
		b.stop(err)
		return nil, err
	}
	op := &batchOp{item: item, line: line, t: t, fin: make(chan struct{})}
	b.sentc <- op
	return op, nil
}

// isMarker reports the preliminary replies that accompany a running
// transfer: 111 restart, 112 performance, 113 status markers.
func isMarker(r Reply) bool { return r.Code >= 110 && r.Code <= 119 }

// readReplies reads the replies of the sent commands in order. A
// transfer command's 125/150 hands it to the data side; one that never
// started is finished here.
func (b *batch) readReplies() {
	defer close(b.startc)
	var broken, broke error
	for op := range b.sentc {
		for broken == nil {
			r, err := b.c.rs.next(b.parent, op.t)
			if err != nil {
				broken = plain(err)
				if cause := b.stopped(); cause != nil {
					broken = cause
				} else if b.parent.Err() != nil {
					// The parent, not b.ctx: the watch that broke the
					// read may run before the cancel reaches b.ctx.
					broken = fmt.Errorf("client: %s: %w", verb(op.line), context.Cause(b.parent))
				}
				b.stop(broken)
				break
			}
			b.progress.touch()
			if r.Class() == 1 {
				if op.item >= 0 && !op.started && !isMarker(r) {
					op.started = true
					if !b.eager {
						b.startc <- op
					}
				}
				continue
			}
			op.final = r
			break
		}
		if broken != nil {
			op.err = broken
		}
		if op.item >= 0 && op.started && broke == nil && op.failure() != nil {
			// A transfer that started and failed stops the batch (the
			// data side sees to it), and the server may fail the
			// queued ones for it before that.
			broke = fmt.Errorf("client: %s: %w", verb(op.line), op.failure())
		}
		if op.item >= 0 && !op.started {
			op.unstartedErr = b.unstartedErr(op, broke)
		}
		close(op.fin)
		if op.item >= 0 && !op.started && !b.eager {
			if b.unstarted != nil {
				b.unstarted(op.item)
			}
			b.finish(op.item, op.unstartedErr)
		} else if op.item < 0 && op.err == nil && op.final.Class() != 2 {
			b.c.log.Debug("command refused; going on", "cmd", verb(op.line), "code", op.final.Code)
		}
	}
}

// unstartedErr is the error of a transfer answered without a 125/150;
// broke is why the batch broke, if it did.
func (b *batch) unstartedErr(op *batchOp, broke error) error {
	err := op.failure()
	switch {
	case err == nil:
		// 2xx without 125/150: no data came, and the data connections
		// are in an unknown state.
		err = fmt.Errorf("client: %s: final reply %d without a preliminary reply", verb(op.line), op.final.Code)
		b.stop(err)
	case op.err != nil:
		err = stoppedError(op.err)
	default:
		if cause := cmp.Or(b.stopped(), broke); cause != nil {
			// Refused after the batch broke, most likely because its
			// data connections are gone (425, 426): the file never had
			// its chance.
			err = fmt.Errorf("%w (%w)", stoppedError(cause), err)
		}
	}
	return err
}

// run sends the commands of files 0..n-1 (cmds gives them; ok false skips
// a file, which must then be finished by cmds) with the reply reader and
// the data side running, and waits for all of them.
func (b *batch) run(n int, cmds func(i int) (lines []string, ok bool), data func()) {
	var wg sync.WaitGroup
	wg.Go(b.readReplies)
	wg.Go(data)
	i := 0
	for ; i < n; i++ {
		select {
		case b.slots <- struct{}{}:
		case <-b.ctx.Done():
		}
		if b.stopped() != nil || b.ctx.Err() != nil {
			break
		}
		lines, ok := cmds(i)
		if !ok {
			continue
		}
		var err error
		var op *batchOp
		for k, l := range lines {
			item := -1
			if k == len(lines)-1 {
				item = i
			}
			if op, err = b.send(item, l); err != nil {
				break
			}
		}
		if err == nil && b.eager {
			b.startc <- op
		}
		if err != nil {
			if b.unstarted != nil && len(lines) > 0 {
				b.unstarted(i)
			}
			if cause := b.stopped(); cause != nil {
				// The write failed because the batch was stopped (its
				// deadline interrupts the connection): this file never
				// started, and may be tried again.
				err = stoppedError(cause)
			}
			b.finish(i, err)
			i++
			break
		}
	}
	if i < n && b.stopped() == nil {
		b.stop(context.Cause(b.ctx))
	}
	close(b.sentc)
	wg.Wait()
	b.cancel(nil)
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, ok := range b.finished {
		if !ok {
			b.errs[i] = stoppedError(b.stopErr)
			if b.done != nil {
				b.done(i, b.errs[i])
			}
		}
	}
}

// getEBlock is GetFiles in MODE E.
func (c *Conn) getEBlock(ctx context.Context, w *watcher, stopWatch func() bool, files []Get, o *BatchOptions, errs []error) []error {
	n := max(o.Parallel, 1)
	var ln *net.TCPListener
	var conns []net.Conn
	err := c.softCommands(ctx, bufferCommand("SITE RETRBUFSIZE", o.TCPBuffer))
	if err == nil {
		if len(c.cache) > 0 && c.cacheDir == dirRetrieve {
			conns, c.cache, c.cacheDir = c.cache, nil, dirNone
		} else {
			c.dropCache()
			ln, err = c.getChannel(ctx, n, o.TCPBuffer)
		}
	}
	if err != nil {
		c.endBatch(ctx, stopWatch, err)
		return fillErrs(errs, 0, err, o.Done)
	}
	if ln != nil {
		w.add(ln)
	}
	b := c.newBatch(ctx, w, errs, o)
	var keep []net.Conn
	b.run(len(files), func(i int) ([]string, bool) {
		line := "RETR " + files[i].Path
		if err := checkLine(line); err != nil {
			b.finish(i, err)
			return nil, false
		}
		return []string{line}, true
	}, func() {
		keep = b.receiveAll(files, ln, conns)
	})
	return c.endBatchData(ctx, stopWatch, b, keep, dirRetrieve)
}

// getChannel sends what a download's new data connections need (OPTS
// RETR Parallelism, EPRT/PORT) and returns the listener the server will
// connect to.
func (c *Conn) getChannel(ctx context.Context, n, buf int) (*net.TCPListener, error) {
	if err := c.exchange2(ctx, fmt.Sprintf("OPTS RETR Parallelism=%d,%d,%d;", n, n, n), 2); err != nil {
		return nil, err
	}
	c.dataBuf = buf
	ln, err := c.listenData()
	c.dataBuf = 0
	if err != nil {
		return nil, err
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	ok, err := c.announce(ctx, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	if err != nil || !ok {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// endBatchData ends a MODE E batch: the data connections are kept for the
// next batch when it ran to the end, else the Conn is closed.
func (c *Conn) endBatchData(ctx context.Context, stopWatch func() bool, b *batch, keep []net.Conn, dir direction) []error {
	b.mu.Lock()
	stopErr := b.stopErr
	b.mu.Unlock()
	if stopErr != nil {
		closeConns(keep)
		stopWatch()
		c.close()
		return b.errs
	}
	c.endBatch(ctx, stopWatch, nil)
	if len(keep) > 0 {
		c.cache, c.cacheDir = keep, dir
	}
	return b.errs
}

// discardWriter takes the blocks of a file whose destination could not be
// opened.
type discardWriter struct{}

func (discardWriter) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discardWriter) Close() error                           { return nil }

// receiveAll is the data side of a download batch: it reads each started
// file from the data connections in order, the first one from the
// connections the server opens to ln. It returns the connections to keep.
func (b *batch) receiveAll(files []Get, ln *net.TCPListener, conns []net.Conn) []net.Conn {
	c := b.c
	defer func() {
		if ln != nil {
			ln.Close()
		}
	}()
	for op := range b.startc {
		if b.stopped() != nil {
			b.finish(op.item, stoppedError(b.stopped()))
			continue
		}
		g := files[op.item]
		dst, openErr := g.Open()
		var sink dsi.Writer = discardWriter{}
		if openErr == nil {
			sink = destination(dst)
		}
		rcv := eblock.NewReceiver(b.progress.sink(sink), eblock.ReceiveConfig{Limit: -1})
		for _, dc := range conns {
			if !rcv.Add(dc) {
				dc.Close()
			}
		}
		tctx, cancel := context.WithCancelCause(b.ctx)
		var wg sync.WaitGroup
		var stopExpecting func() bool
		if ln != nil {
			acc := c.acceptor(c.controlPeer()) // a batch takes the control host's connections only
			wg.Go(func() { acc.Serve(tctx, tctx, ln, rcv.Add) })
			stopExpecting = acc.ExpectConn(c.dialTimeout(), rcv, cancel, noDataConn)
		}
		err := waitReceiver(tctx, rcv, op)
		if err != nil {
			cancel(err)
		}
		if _, rerr := rcv.Wait(tctx); err == nil {
			err = rerr
		}
		if ln != nil {
			stopExpecting()
			ln.Close()
			ln = nil
		}
		cancel(nil)
		wg.Wait()
		<-op.fin
		if f := op.failure(); f != nil {
			// When both sides failed, the server's reply (451 with its
			// reason) goes first: what the data connections saw (often
			// just EOF) is the consequence.
			if err != nil {
				f = fmt.Errorf("%w; %w", f, err)
			}
			err = f
		}
		if err != nil {
			// The data connections' state is unknown: the batch ends,
			// before they close (the server fails the next files
			// then, which must count as stopped).
			err = fmt.Errorf("client: RETR %s: %w", g.Path, err)
			b.stop(err)
			closeConns(rcv.All())
			conns = nil
			if openErr == nil {
				closeItem(dst, nil)
			}
			b.finish(op.item, err)
			continue
		}
		conns = rcv.Reusable()
		for _, dc := range rcv.All() {
			if !containsConn(conns, dc) {
				dc.Close()
			}
		}
		if openErr != nil {
			err = openErr
		} else {
			err = closeItem(dst, nil)
		}
		b.finish(op.item, err)
	}
	if b.stopped() != nil {
		closeConns(conns)
		return nil
	}
	return conns
}

// waitReceiver waits until the receiver has the whole file, or the
// transfer's final reply is negative, or ctx is done.
func waitReceiver(ctx context.Context, rcv *eblock.Receiver, op *batchOp) error {
	fin := op.fin
	for {
		// A batch already stopped takes no more files, even one whose
		// data is all there: select would pick at random.
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		select {
		case <-rcv.Done():
			_, err := rcv.Wait(ctx)
			return err
		case <-fin:
			fin = nil
			if err := op.failure(); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// putEBlock is PutFiles in MODE E.
func (c *Conn) putEBlock(ctx context.Context, w *watcher, stopWatch func() bool, files []Put, o *BatchOptions, errs []error) []error {
	n := max(o.Parallel, 1)
	var conns []net.Conn
	var sec *securing
	err := c.softCommands(ctx, bufferCommand("SITE STORBUFSIZE", o.TCPBuffer))
	if err == nil {
		if len(c.cache) > 0 && c.cacheDir == dirStore {
			conns, c.cache, c.cacheDir = c.cache, nil, dirNone
		} else {
			c.dropCache()
			conns, err = c.putChannel(ctx, w, n, o.TCPBuffer)
			if err == nil && c.dsec != nil {
				// GCT finishes the handshakes before its first 150; they
				// run while the commands go out.
				sec = c.secureAllAsync(ctx, conns)
			}
		}
	}
	eager := false
	if err == nil && c.offersStorDrain() {
		// Refused: the server keeps the standard behaviour.
		err = c.setStorDrain(ctx, true)
		eager = c.drainOn
	}
	if err != nil {
		closeConns(conns)
		c.endBatch(ctx, stopWatch, err)
		return fillErrs(errs, 0, err, o.Done)
	}
	b := c.newBatch(ctx, w, errs, o)
	b.eager = eager
	srcs := make([]io.ReaderAt, len(files))
	sizes := make([]int64, len(files))
	b.unstarted = func(i int) {
		if srcs[i] != nil {
			closeItem(srcs[i], nil)
			srcs[i] = nil
		}
	}
	var keep []net.Conn
	b.run(len(files), func(i int) ([]string, bool) {
		p := files[i]
		line := "STOR " + p.Path
		if err := checkLine(line); err != nil {
			b.finish(i, err)
			return nil, false
		}
		if eager && len(line)+2 > maxDrainLine {
			// The server might not read it as a STOR, and would not
			// drain the blocks behind it.
			b.finish(i, fmt.Errorf("client: STOR %s: command longer than %d bytes", p.Path, maxDrainLine))
			return nil, false
		}
		r, size, err := openPut(p)
		if err != nil {
			b.finish(i, err)
			return nil, false
		}
		// The data side reads these after the op it gets through
		// startc, which the channel orders after this write.
		srcs[i], sizes[i] = r, size
		if size > 0 {
			return []string{fmt.Sprintf("ALLO %d", size), line}, true
		}
		return []string{line}, true
	}, func() {
		if eager {
			keep = b.sendEager(files, srcs, sizes, conns, sec, o)
		} else {
			keep = b.sendAll(files, srcs, sizes, conns, sec, o)
		}
	})
	// Sources of files that never started are still open.
	for i, r := range srcs {
		if r != nil {
			closeItem(r, nil)
			srcs[i] = nil
		}
	}
	return c.endBatchData(ctx, stopWatch, b, keep, dirStore)
}

// putChannel asks for a passive address and dials n data connections.
func (c *Conn) putChannel(ctx context.Context, w *watcher, n, buf int) ([]net.Conn, error) {
	ap, err := c.passive(ctx)
	if err != nil {
		return nil, err
	}
	c.dataBuf = buf
	defer func() { c.dataBuf = 0 }()
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tc, err := c.dialData(ctx, ap)
			if err == nil {
				w.add(tc)
				conns[i] = tc
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var ok []net.Conn
	for _, dc := range conns {
		if dc != nil {
			ok = append(ok, dc)
		}
	}
	return ok, errors.Join(errs...)
}

// secured waits, before the first file of an upload batch is sent, for
// the data connections' security handshakes; a failure stops the batch.
// Later calls (sec nil) return conns as they are.
func (b *batch) secured(conns []net.Conn, sec *securing) ([]net.Conn, *securing) {
	if sec == nil {
		return conns, nil
	}
	conns, err := sec.wait(false)
	if err != nil {
		b.stop(err)
	}
	return conns, nil
}

// wholeFile is the range list that sends a file of size bytes: none for
// an empty file.
func wholeFile(size int64) []xfer.Range {
	if size <= 0 {
		return nil
	}
	return []xfer.Range{{Start: 0, End: size}}
}

// sendAll is the data side of an upload batch without STOR-DRAIN: it
// sends each started file's blocks over the data connections, in order. It returns the
// connections to keep.
func (b *batch) sendAll(files []Put, srcs []io.ReaderAt, sizes []int64, conns []net.Conn, sec *securing, o *BatchOptions) []net.Conn {
	for op := range b.startc {
		i := op.item
		src, ranges := srcs[i], wholeFile(sizes[i])
		srcs[i] = nil
		conns, sec = b.secured(conns, sec)
		if cause := b.stopped(); cause != nil {
			closeItem(src, nil)
			b.finish(i, stoppedError(cause))
			continue
		}
		_, err := eblock.Send(b.ctx, conns, b.progress.source(src), ranges, eblock.SendConfig{BlockSize: o.BlockSize})
		if err != nil {
			err = fmt.Errorf("client: STOR %s: data connections: %w", files[i].Path, err)
			b.stop(err)
		}
		<-op.fin
		if err == nil {
			err = op.failure()
			if err != nil && op.err == nil {
				// Refused after it started: what the server read of the
				// data connections is unknown.
				b.stop(err)
			}
		}
		b.finish(i, closeItem(src, err))
	}
	if sec != nil {
		conns, _ = sec.wait(true)
	}
	if b.stopped() != nil {
		closeConns(conns)
		return nil
	}
	return conns
}

// maxDrainLine is the longest upload command (with CRLF) sent with its
// data behind it: a server offering STOR-DRAIN reads lines this long.
const maxDrainLine = 4096

// offersStorDrain reports whether FEAT listed "PIPE STOR-DRAIN".
func (c *Conn) offersStorDrain() bool {
	v, ok := c.feat["PIPE"]
	if !ok {
		return false
	}
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ';' || r == ',' }) {
		if strings.EqualFold(f, "STOR-DRAIN") {
			return true
		}
	}
	return false
}

// setStorDrain turns the server's STOR-DRAIN on or off when it is not so
// already. A refused ON leaves it off (the batch waits for each 150); a
// refused OFF is an error, as the server would wait for data no upload
// outside a batch sends.
func (c *Conn) setStorDrain(ctx context.Context, on bool) error {
	if c.drainOn == on {
		return nil
	}
	line := "OPTS PIPE STOR-DRAIN=OFF"
	if on {
		line = "OPTS PIPE STOR-DRAIN=ON"
	}
	r, err := c.exchange(ctx, line)
	if err != nil {
		return err
	}
	switch {
	case r.Class() == 2:
		c.drainOn = on
	case on:
		c.log.Debug("STOR-DRAIN refused; uploads wait for each 150", "code", r.Code)
	default:
		return &ReplyError{Reply: r}
	}
	return nil
}

// eagerDone is a file whose blocks were sent (or failed to go) and whose
// reply is awaited.
type eagerDone struct {
	op  *batchOp
	src io.ReaderAt
	err error
}

// sendEager is the data side of an upload batch with STOR-DRAIN: it sends
// each file's blocks as soon as its STOR is sent, in order, while
// finishFiles collects the replies. It returns the connections to keep.
func (b *batch) sendEager(files []Put, srcs []io.ReaderAt, sizes []int64, conns []net.Conn, sec *securing, o *BatchOptions) []net.Conn {
	// Every file in startc holds a slot, so the window bounds this.
	sent := make(chan eagerDone, cap(b.slots)+1)
	var wg sync.WaitGroup
	wg.Go(func() { b.finishFiles(files, sent) })
	for op := range b.startc {
		i := op.item
		src, ranges := srcs[i], wholeFile(sizes[i])
		srcs[i] = nil
		conns, sec = b.secured(conns, sec)
		if cause := b.stopped(); cause != nil {
			sent <- eagerDone{op: op, src: src, err: stoppedError(cause)}
			continue
		}
		_, err := eblock.Send(b.ctx, conns, b.progress.source(src), ranges, eblock.SendConfig{BlockSize: o.BlockSize})
		if err != nil {
			if cause := b.stopped(); cause != nil {
				// The batch broke first (an earlier file failed after
				// it started, and the server closed the connections).
				err = stoppedError(cause)
			} else {
				err = fmt.Errorf("client: STOR %s: data connections: %w", files[i].Path, err)
				b.stop(err)
			}
		}
		sent <- eagerDone{op: op, src: src, err: err}
	}
	close(sent)
	wg.Wait()
	if sec != nil {
		conns, _ = sec.wait(true)
	}
	if b.stopped() != nil {
		closeConns(conns)
		return nil
	}
	return conns
}

// finishFiles finishes the files of sendEager in order as their final
// replies come. A refusal without 125/150 is that file's error alone: the
// server drained its blocks. A failure after the start stops the batch:
// what the server read of the connections is unknown.
func (b *batch) finishFiles(files []Put, sent <-chan eagerDone) {
	for d := range sent {
		<-d.op.fin
		err := d.err
		if err == nil {
			if d.op.started {
				err = d.op.failure()
				if err != nil && d.op.err == nil {
					b.stop(err)
				}
			} else {
				err = d.op.unstartedErr
			}
		}
		b.finish(d.op.item, closeItem(d.src, err))
	}
}
