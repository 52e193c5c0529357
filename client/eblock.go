package client

// MODE E (extended block mode) transfers over parallel data connections,
// protocol.md §5. The sending side always connects and the receiving side
// listens (§3.3): a download listens and sends PORT/EPRT, an upload sends
// PASV/EPSV and connects. Connections may be kept for the next transfer
// in the same direction (§5.5).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// direction says which way cached MODE E connections carry data.
type direction int

const (
	dirNone     direction = iota
	dirRetrieve           // the server sends
	dirStore              // the client sends
)

// errNoDataConn reports a MODE E download to which the server never
// connected.
var errNoDataConn = errors.New("client: the server opened no data connection")

// dropCache closes the MODE E connections kept from the last transfer.
// It is called before any new data channel, so it also forgets the
// third-party channel the server kept.
func (c *Conn) dropCache() {
	for _, dc := range c.cache {
		dc.Close()
	}
	c.cache, c.cacheDir, c.tp = nil, dirNone, nil
}

// setMode switches the server to MODE E or back to MODE S when it is not
// in that mode already. It runs inside a transfer's watch.
func (c *Conn) setMode(ctx context.Context, e bool) error {
	return c.burst(ctx, c.modeStep(e))
}

// softCommands sends commands whose refusal does not matter (buffer
// sizes, marker periods).
func (c *Conn) softCommands(ctx context.Context, lines []string) error {
	for _, s := range c.softSteps(lines) {
		if err := c.burst(ctx, []step{s}); err != nil {
			return err
		}
	}
	return nil
}

// RetrieveAt downloads path into w at the file's own offsets (with
// Offset, byte Offset of the file is written at offset Offset of w) and
// returns the number of bytes written by this call.
//
// With Parallel above 1 (or ModeE) it uses MODE E: the server opens
// Parallel connections to a listener of the client and sends blocks in
// any order; only connections from the server's control address are
// accepted. Otherwise it uses stream mode. Restart ranges are not asked
// for again. When w is an *os.File in stream mode, its file offset is
// moved (the kernel's splice needs it).
func (c *Conn) RetrieveAt(ctx context.Context, path string, w io.WriterAt, opts *RetrieveOptions) (int64, error) {
	var o RetrieveOptions
	if opts != nil {
		o = *opts
	}
	if o.Offset < 0 {
		return 0, fmt.Errorf("client: RETR %s: negative offset %d", path, o.Offset)
	}
	if err := checkRetrieveModule(&o); err != nil {
		return 0, err
	}
	if o.Parallel > 1 || o.ModeE {
		return c.retrieveEBlock(ctx, path, w, &o)
	}
	return c.retrieveStreamAt(ctx, path, w, &o)
}

// prefixFrom returns how many bytes from off on rs holds without a gap.
func prefixFrom(rs RangeSet, off int64) int64 {
	for _, r := range rs.Ranges() {
		if r.Start <= off && off < r.End {
			return r.End - off
		}
	}
	return 0
}

func (c *Conn) retrieveStreamAt(ctx context.Context, path string, w io.WriterAt, o *RetrieveOptions) (int64, error) {
	have := prefixFrom(o.Restart, o.Offset)
	if o.Length > 0 {
		have = min(have, o.Length)
	}
	start := o.Offset + have
	so := *o
	so.Offset = start
	var moved atomic.Int64
	report := func() {
		if o.Committed != nil {
			rs := o.Restart.Clone()
			rs.Add(Range{Start: start, End: start + moved.Load()})
			o.Committed(rs)
		}
	}
	if o.Length > 0 {
		if so.Length = o.Length - have; so.Length == 0 {
			report()
			return 0, nil
		}
	}
	var dst io.Writer
	if f, ok := w.(*os.File); ok {
		// A pipe or terminal cannot seek, and needs not at offset 0.
		if _, err := f.Seek(start, io.SeekStart); err != nil && start != 0 {
			return 0, fmt.Errorf("client: %w", err)
		}
		dst = f
	} else {
		dst = io.NewOffsetWriter(w, start)
	}
	var m *meter
	if o.Committed != nil {
		m = startTicker(o.ProgressInterval, report)
	} else {
		report = func() {}
	}
	n, err := c.retrieveStream(ctx, path, dst, &so, &moved)
	m.stop()
	return n, err
}

// writerAt makes an io.WriterAt a dsi.Writer for the MODE E receiver.
type writerAt struct{ io.WriterAt }

func (writerAt) Close() error { return nil }

// fileWriter is the MODE E receiver's destination when it is an *os.File:
// its ReadRangeFrom moves each block from a plain TCP data connection
// into the file inside the kernel (splice(2), see posix.SpliceAt), at the
// block's offset; secured connections are copied through a buffer.
type fileWriter struct {
	f      *os.File
	shared *posix.SharedFile // the streams' writes, one at a time
}

func (w fileWriter) WriteAt(p []byte, off int64) (int, error) { return w.f.WriteAt(p, off) }

// Close does nothing: the caller owns the file.
func (fileWriter) Close() error { return nil }

// ReadRangeFrom implements dsi.RangeReaderFrom.
func (w fileWriter) ReadRangeFrom(r io.Reader, off, n int64) (int64, error) {
	return w.shared.ReadRangeFrom(r, off, n)
}

// destination adapts a download's io.WriterAt for the MODE E receiver.
func destination(w io.WriterAt) dsi.Writer {
	if f, ok := w.(*os.File); ok {
		return fileWriter{f, posix.NewSharedFile(f)}
	}
	return writerAt{w}
}

// final is the final reply of a transfer, read by its own goroutine.
type final struct {
	r   Reply
	err error
}

// shiftRanges moves every range of rs by delta and keeps what lies inside
// clip.
func shiftRanges(rs RangeSet, delta int64, clip Range) RangeSet {
	var out RangeSet
	for _, r := range rs.Ranges() {
		r.Start, r.End = max(r.Start+delta, clip.Start), min(r.End+delta, clip.End)
		out.Add(r)
	}
	return out
}

func (c *Conn) retrieveEBlock(ctx context.Context, path string, dst io.WriterAt, o *RetrieveOptions) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	command := "RETR " + path
	var base int64
	limit := int64(-1)
	var rest RangeSet
	if o.Length > 0 {
		// ERET: a virtual file of Length bytes whose offset 0 is byte
		// Offset; REST ranges are in its coordinates (protocol.md §8.1).
		command = fmt.Sprintf("ERET P %d %d %s", o.Offset, o.Length, path)
		base, limit = o.Offset, o.Length
		rest = shiftRanges(o.Restart, -o.Offset, Range{Start: 0, End: o.Length})
	} else {
		rest = o.Restart.Clone()
		rest.Add(Range{Start: 0, End: o.Offset})
	}
	if o.Module != "" {
		// REST ranges apply to the module chain's output.
		var err error
		if command, err = moduleCommand("ERET", o.Module, o.ModuleParams, path); err != nil {
			return 0, err
		}
	}
	if err := checkLine(command); err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("client: %s: %w", verb(command), context.Cause(ctx))
	}
	n := max(o.Parallel, 1)
	w, stopWatch := watchAll(ctx, c.nc)

	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	counters := make([]atomic.Int64, eblock.DefaultMaxConns)
	var received atomic.Int64
	cw := newConnWatch(o.Progress)
	cfg := eblock.ReceiveConfig{
		Base:         base,
		Limit:        limit,
		Received:     &received,
		ConnReceived: counters,
	}
	if cw != nil {
		cfg.BeforeClose = cw.closing
	}
	rcv := eblock.NewReceiver(destination(dst), cfg)
	var wg sync.WaitGroup
	// The server's connections are accepted (and secured) from before the
	// transfer command on: GCT finishes a data channel's security
	// handshake before it sends 150.
	// Accepting, and handshakes under way, stop with the listener.
	acc := c.acceptor(c.dataPeer())
	actx, stopAccepting := context.WithCancel(tctx)
	defer stopAccepting()
	acceptFrom := func(ln *net.TCPListener) {
		w.add(ln)
		wg.Go(func() { acc.Serve(actx, actx, ln, rcv.Add) })
	}
	c.dataBuf = o.TCPBuffer
	ln, cached, err := c.retrieveSetup(ctx, n, o, rest, command, acceptFrom)
	c.dataBuf = 0
	if err != nil {
		if ctx.Err() == nil {
			err = withHandshakeError(err, cmp.Or(context.Cause(tctx), acc.LastRefused()))
		}
		cancel(err)
		if ln != nil {
			ln.Close()
		}
		wg.Wait()
		closeConns(cached)
		closeConns(rcv.All())
		return 0, c.endTransfer(ctx, stopWatch, command, err)
	}
	for _, dc := range cached {
		if !rcv.Add(dc) {
			dc.Close()
		}
	}
	if ln != nil {
		defer acc.ExpectConn(c.dialTimeout(), rcv, cancel, noDataConn)()
	}

	var mu sync.Mutex
	stored := o.Restart.Clone() // guarded by mu
	report := func() {
		if o.Committed != nil {
			mu.Lock()
			for _, r := range rcv.TakeCommitted() {
				stored.Add(Range{Start: r.Start + base, End: r.End + base})
			}
			rs := stored.Clone()
			mu.Unlock()
			o.Committed(rs)
		}
		if o.Progress != nil {
			k := min(rcv.Conns(), len(counters))
			p := Progress{Streams: make([]int64, k), Bytes: received.Load()}
			for i := range k {
				p.Streams[i] = counters[i].Load()
			}
			cw.set(rcv.All())
			cw.fill(&p)
			o.Progress(p)
		}
	}
	var m *meter
	if o.Committed != nil || o.Progress != nil {
		m = startTicker(o.ProgressInterval, report)
	}

	replyc := make(chan final, 1)
	transferCmd := c.rs.last()
	wg.Go(func() {
		r, err := c.rs.final(ctx, transferCmd, nil)
		replyc <- final{r, err}
	})
	fin, gotFin, failure := waitBoth(tctx, rcv.Done(), func() error {
		_, err := rcv.Wait(tctx)
		return err
	}, replyc)
	if failed(fin, gotFin, failure) {
		cancel(failure)
	}
	got, _ := rcv.Wait(tctx)
	if ln != nil {
		stopAccepting()
		ln.Close()
	}
	err = c.finishData(ctx, command, fin, gotFin, failure, replyc)
	wg.Wait()
	m.stop()
	if err != nil {
		closeConns(rcv.All())
	} else if o.Reuse {
		keep := rcv.Reusable()
		for _, dc := range rcv.All() {
			if !containsConn(keep, dc) {
				dc.Close()
			}
		}
		c.cache, c.cacheDir = keep, dirRetrieve
	} else {
		closeConns(rcv.All())
	}
	return got, c.endTransfer(ctx, stopWatch, command, err)
}

// retrieveSetup runs the commands of a MODE E download up to the
// transfer command's preliminary reply. It returns the listener (nil when
// cached connections are reused) and the cached connections.
func (c *Conn) retrieveSetup(ctx context.Context, n int, o *RetrieveOptions, rest RangeSet, command string, accept func(*net.TCPListener)) (*net.TCPListener, []net.Conn, error) {
	if err := c.setMode(ctx, true); err != nil {
		return nil, nil, err
	}
	if err := c.softCommands(ctx, bufferCommand("SITE RETRBUFSIZE", o.TCPBuffer)); err != nil {
		return nil, nil, err
	}
	var ln *net.TCPListener
	var cached []net.Conn
	if o.Reuse && len(c.cache) > 0 && c.cacheDir == dirRetrieve {
		cached, c.cache, c.cacheDir = c.cache, nil, dirNone
	} else {
		c.dropCache()
		opts := fmt.Sprintf("Parallelism=%d,%d,%d;", n, n, n)
		if o.StripeBlockSize > 0 {
			opts = fmt.Sprintf("StripeLayout=Blocked;BlockSize=%d;", o.StripeBlockSize) + opts
		}
		if err := c.exchange2(ctx, "OPTS RETR "+opts, 2); err != nil {
			return nil, nil, err
		}
		var err error
		if ln, err = c.listenData(); err != nil {
			return nil, nil, err
		}
		ap := ln.Addr().(*net.TCPAddr).AddrPort()
		ok, err := c.announce(ctx, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		if err != nil || !ok {
			return ln, nil, err
		}
		accept(ln)
	}
	if err := c.restCommand(ctx, rest); err != nil {
		return ln, cached, err
	}
	if err := c.exchange2(ctx, command, 1); err != nil {
		return ln, cached, err
	}
	return ln, cached, nil
}

// exchange2 sends a command whose reply must be of class want.
func (c *Conn) exchange2(ctx context.Context, line string, want int) error {
	return c.burst(ctx, []step{{line: line, check: wantClass(want)}})
}

// restCommand sends REST with a range list, when there is one.
func (c *Conn) restCommand(ctx context.Context, rest RangeSet) error {
	if rest.Len() == 0 {
		return nil
	}
	return c.burst(ctx, []step{restStep(rest)})
}

// restStep is REST with a range list as a step: 350 (or 2xx) accepts it.
func restStep(rest RangeSet) step {
	return step{line: "REST " + rest.String(), check: accepted}
}

// accepted is a step check for a 2xx or 3xx reply.
func accepted(r Reply) error {
	if cl := r.Class(); cl != 3 && cl != 2 {
		return &ReplyError{Reply: r}
	}
	return nil
}

// noDataConn is the error of a MODE E download to which no data
// connection came, with the last one refused (a stranger's, or one that
// failed its handshake), if any.
func noDataConn(last error) error {
	if last != nil {
		return fmt.Errorf("%w; the last one was refused: %w", errNoDataConn, last)
	}
	return errNoDataConn
}

// waitBoth waits until the data side is done (done closed; result
// reports its error) and the final reply has arrived, or until one of
// them fails or ctx is done. gotFin says whether fin arrived; failure is
// the data side's (or ctx's) error.
func waitBoth(ctx context.Context, done <-chan struct{}, result func() error, replyc <-chan final) (fin final, gotFin bool, failure error) {
	for done != nil || !gotFin {
		select {
		case <-done:
			done = nil
			if err := result(); err != nil {
				return fin, gotFin, err
			}
		case fin = <-replyc:
			gotFin = true
			if fin.err != nil || fin.r.Class() != 2 {
				return fin, true, nil
			}
		case <-ctx.Done():
			return fin, gotFin, context.Cause(ctx)
		}
	}
	return fin, true, nil
}

// failed reports whether a transfer must stop its data side.
func failed(fin final, gotFin bool, failure error) bool {
	return failure != nil || gotFin && (fin.err != nil || fin.r.Class() != 2)
}

// finishData ends the control side of a MODE E transfer once the data
// side has stopped. fin is the final reply if gotFin; failure is the data
// side's error. A missing final reply is waited for (only briefly after a
// failure); if it never comes, the transfer is aborted and the Conn
// closed. The result is nil, a *ReplyError (the Conn stays usable), a
// plain error (data failed, the Conn stays usable) or a *brokenError.
func (c *Conn) finishData(ctx context.Context, command string, fin final, gotFin bool, failure error, replyc <-chan final) error {
	if !gotFin {
		if failure != nil && ctx.Err() == nil {
			// The server usually explains a data failure; give it a moment.
			_ = c.nc.SetReadDeadline(time.Now().Add(abortTimeout))
		}
		fin = <-replyc
		if fin.err == nil && ctx.Err() == nil {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
	}
	switch {
	case fin.err != nil && failure != nil:
		return &brokenError{err: fmt.Errorf("client: %s: data connections: %w", verb(command), failure), abort: true}
	case fin.err != nil:
		return fin.err
	case fin.r.Class() != 2:
		return &ReplyError{Reply: fin.r}
	case failure != nil:
		// 226, but the data did not all arrive: the control channel is
		// in step, the transfer failed.
		return fmt.Errorf("client: %s: data connections: %w", verb(command), failure)
	}
	return nil
}

// endTransfer cleans up the control side after a MODE E transfer: a
// broken exchange aborts (or just closes) the Conn.
func (c *Conn) endTransfer(ctx context.Context, stopWatch func() bool, command string, err error) error {
	fired := stopWatch()
	var be *brokenError
	if !errors.As(err, &be) {
		if fired {
			_ = c.nc.SetDeadline(time.Time{})
		}
		return err
	}
	if be.abort {
		c.abort(ctx)
	} else {
		c.close()
	}
	if ctx.Err() != nil {
		return fmt.Errorf("client: %s: %w", verb(command), context.Cause(ctx))
	}
	return be.err
}

func closeConns(cs []net.Conn) {
	for _, dc := range cs {
		dc.Close()
	}
}

func containsConn(cs []net.Conn, c net.Conn) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// StoreAt uploads size bytes of r, from byte Offset on, to the same
// offsets of path and returns the number of bytes sent by this call.
//
// With Parallel above 1 (or ModeE) it uses MODE E: PASV/EPSV, ALLO, then
// STOR (ESTO A Offset with an offset), with Parallel connections to the
// server sending blocks of BlockSize bytes; 111 range markers are
// reported to Acknowledged. Otherwise it uses stream mode. Restart
// ranges are not sent again. When r is an *os.File in stream mode, its
// file offset is moved (the kernel's sendfile needs it).
func (c *Conn) StoreAt(ctx context.Context, path string, r io.ReaderAt, size int64, opts *StoreOptions) (int64, error) {
	var o StoreOptions
	if opts != nil {
		o = *opts
	}
	if o.Offset < 0 || size < 0 {
		return 0, fmt.Errorf("client: STOR %s: negative offset or size", path)
	}
	if err := checkStoreModule(&o); err != nil {
		return 0, err
	}
	if o.Parallel > 1 || o.ModeE || o.Part.End > o.Part.Start {
		return c.storeEBlock(ctx, path, r, size, &o)
	}
	have := min(prefixFrom(o.Restart, o.Offset), size)
	start := o.Offset + have
	var src io.Reader
	if f, ok := r.(*os.File); ok {
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return 0, fmt.Errorf("client: %w", err)
		}
		src = &io.LimitedReader{R: f, N: size - have}
	} else {
		src = io.NewSectionReader(r, start, size-have)
	}
	so := o
	so.Offset, so.Size, so.Append = start, size-have, false
	return c.storeStream(ctx, path, src, &so)
}

func (c *Conn) storeEBlock(ctx context.Context, path string, src io.ReaderAt, size int64, o *StoreOptions) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.setStorDrain(ctx, false); err != nil {
		return 0, err
	}
	window := Range{Start: o.Offset, End: o.Offset + size}
	missing := o.Restart.Missing(window)
	if o.Part.End > o.Part.Start {
		if err := c.checkPart(o, size); err != nil {
			return 0, err
		}
		missing = o.Restart.Missing(o.Part)
	}
	command := "STOR " + path
	var base int64
	var rest RangeSet
	if o.Offset > 0 {
		// ESTO writes block offset 0 at Offset and never truncates: only
		// the missing blocks need to travel, no REST.
		command = fmt.Sprintf("ESTO A %d %s", o.Offset, path)
		base = o.Offset
	} else {
		// STOR in MODE E truncates unless REST says what is there.
		rest = shiftRanges(o.Restart, 0, window)
	}
	if o.Module != "" {
		var err error
		if command, err = moduleCommand("ESTO", o.Module, o.ModuleParams, path); err != nil {
			return 0, err
		}
	}
	if err := checkLine(command); err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("client: %s: %w", verb(command), context.Cause(ctx))
	}
	n := max(o.Parallel, 1)
	w, stopWatch := watchAll(ctx, c.nc)
	c.dataBuf = o.TCPBuffer
	conns, stripes, err := c.storeSetup(ctx, w, n, size, o, rest, command)
	c.dataBuf = 0
	if err != nil {
		closeConns(conns)
		return 0, c.endTransfer(ctx, stopWatch, command, err)
	}

	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	counters := make([]atomic.Int64, len(conns))
	var sent atomic.Int64
	var mu sync.Mutex
	acked := o.Restart.Clone() // guarded by mu
	prelim := func(r Reply) {
		if r.Code != 111 {
			return
		}
		rs, err := parseRangeMarker(r)
		if err != nil {
			c.log.Debug("bad range marker", "text", r.Text(), "err", err)
			return
		}
		mu.Lock()
		for _, x := range rs.Ranges() {
			acked.Add(Range{Start: x.Start + base, End: x.End + base})
		}
		all := acked.Clone()
		mu.Unlock()
		if o.Acknowledged != nil {
			o.Acknowledged(all)
		}
	}
	cw := newConnWatch(o.Progress)
	cw.set(conns)
	m := startMeter(o.Progress, o.ProgressInterval, func() Progress {
		p := Progress{Streams: make([]int64, len(counters)), Bytes: sent.Load()}
		for i := range counters {
			p.Streams[i] = counters[i].Load()
		}
		cw.fill(&p)
		return p
	})

	var wg sync.WaitGroup
	replyc := make(chan final, 1)
	transferCmd := c.rs.last()
	wg.Go(func() {
		r, err := c.rs.final(ctx, transferCmd, prelim)
		replyc <- final{r, err}
	})
	sendDone := make(chan struct{})
	var sendErr error
	wg.Go(func() {
		defer close(sendDone)
		parts := xfer.StripeRanges(missing, stripes, base, xfer.LayoutBlocked, o.StripeBlockSize)
		per := len(conns) / stripes
		sets := make([][]net.Conn, stripes)
		for i := range sets {
			sets[i] = conns[i*per : (i+1)*per]
		}
		_, errs := dtp.SendStripes(tctx, cancel, sets, src, func(i int) ([]xfer.Range, eblock.SendConfig) {
			cfg := eblock.SendConfig{
				BlockSize: o.BlockSize,
				Base:      base,
				Close:     !o.Reuse,
				Sent:      &sent,
				ConnSent:  counters[i*per : (i+1)*per],
			}
			if cw != nil {
				cfg.BeforeClose = func(j int, c net.Conn) { cw.closing(i*per+j, c) }
			}
			return parts[i], cfg
		})
		sendErr = errors.Join(errs...)
	})
	fin, gotFin, failure := waitBoth(tctx, sendDone, func() error { return sendErr }, replyc)
	if failed(fin, gotFin, failure) {
		cancel(failure)
	}
	<-sendDone
	err = c.finishData(ctx, command, fin, gotFin, failure, replyc)
	if err == nil && sendErr != nil {
		err = fmt.Errorf("client: %s: data connections: %w", verb(command), sendErr)
	}
	wg.Wait()
	m.stop()
	if err == nil && o.Reuse {
		c.cache, c.cacheDir = conns, dirStore
	} else {
		closeConns(conns)
	}
	return sent.Load(), c.endTransfer(ctx, stopWatch, command, err)
}

// checkPart refuses an upload of o.Part of a file of size bytes that the
// server or the options cannot take.
func (c *Conn) checkPart(o *StoreOptions, size int64) error {
	switch {
	case !c.hasFeature("PART"):
		return fmt.Errorf("client: the server does not take uploads in parts (no PART in FEAT)")
	case o.Offset != 0:
		return fmt.Errorf("client: an upload in parts starts at offset 0, not %d", o.Offset)
	case o.Part.Start < 0 || o.Part.End > size:
		return fmt.Errorf("client: part %d-%d outside the file's %d bytes", o.Part.Start, o.Part.End, size)
	}
	return nil
}

// storeSetup runs the commands of a MODE E upload up to the transfer
// command's preliminary reply and returns the data connections.
func (c *Conn) storeSetup(ctx context.Context, w *watcher, n int, size int64, o *StoreOptions, rest RangeSet, command string) (conns []net.Conn, stripes int, err error) {
	if err := c.setMode(ctx, true); err != nil {
		return nil, 0, err
	}
	soft := bufferCommand("SITE STORBUFSIZE", o.TCPBuffer)
	if s := o.MarkerInterval / time.Second; s >= 1 {
		soft = append(soft, fmt.Sprintf("TREV RESTART %d", s))
	}
	if err := c.softCommands(ctx, soft); err != nil {
		return nil, 0, err
	}
	stripes = 1
	reused := o.Reuse && len(c.cache) > 0 && c.cacheDir == dirStore && !o.Striped
	if reused {
		conns, c.cache, c.cacheDir = c.cache, nil, dirNone
	} else {
		c.dropCache()
		var addrs []netip.AddrPort
		if o.Striped {
			addrs, err = c.passiveAddrs(ctx, true)
		} else {
			var ap netip.AddrPort
			ap, err = c.passive(ctx)
			addrs = []netip.AddrPort{ap}
		}
		if err != nil {
			return nil, 0, err
		}
		stripes = len(addrs)
		conns = make([]net.Conn, n*stripes)
		errs := make([]error, n*stripes)
		var wg sync.WaitGroup
		for i := range n * stripes {
			wg.Go(func() {
				tc, err := c.dialData(ctx, addrs[i/n])
				if err == nil {
					w.add(tc)
					conns[i] = tc
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			var ok []net.Conn
			for _, dc := range conns {
				if dc != nil {
					ok = append(ok, dc)
				}
			}
			return ok, stripes, err
		}
	}
	if size > 0 {
		if err := c.exchange2(ctx, fmt.Sprintf("ALLO %d", size), 2); err != nil {
			return conns, stripes, err
		}
	}
	if err := c.restCommand(ctx, rest); err != nil {
		return conns, stripes, err
	}
	if o.Part.End > o.Part.Start {
		if err := c.burst(ctx, []step{{line: fmt.Sprintf("PART %d-%d", o.Part.Start, o.Part.End), check: accepted}}); err != nil {
			return conns, stripes, err
		}
	}
	if c.dsec == nil || reused {
		return conns, stripes, c.exchange2(ctx, command, 1)
	}
	// GCT finishes the data channels' security handshakes before it sends
	// 150: run them while waiting for the reply.
	sec := c.secureAllAsync(ctx, conns)
	err = c.exchange2(ctx, command, 1)
	conns, herr := sec.wait(err != nil)
	switch {
	case err != nil:
		return conns, stripes, withHandshakeError(err, herr)
	case herr != nil:
		return conns, stripes, &brokenError{err: herr, abort: true}
	}
	return conns, stripes, nil
}

// withHandshakeError puts a data channel handshake's failure in front of
// the server's refusal of the transfer, which it likely caused.
func withHandshakeError(err, herr error) error {
	var re *ReplyError
	if herr != nil && errors.As(err, &re) {
		var be *brokenError
		if !errors.As(err, &be) {
			return fmt.Errorf("%w (server: %w)", herr, err)
		}
	}
	return err
}

// securing is the data channel handshakes of an upload's connections,
// running in the background.
type securing struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    []net.Conn
	errs   []error
}

// secureAllAsync starts securing conns (we dialed them) in parallel; wait
// must be called.
func (c *Conn) secureAllAsync(ctx context.Context, conns []net.Conn) *securing {
	hctx, cancel := context.WithCancel(ctx)
	s := &securing{cancel: cancel, out: make([]net.Conn, len(conns)), errs: make([]error, len(conns))}
	for i, dc := range conns {
		s.wg.Go(func() { s.out[i], s.errs[i] = c.secureData(hctx, dc, true) })
	}
	return s
}

// wait waits for the handshakes, after stopping them when abandon is set,
// and returns the secured connections (failed ones are closed) and the
// first failure not caused by abandoning.
func (s *securing) wait(abandon bool) ([]net.Conn, error) {
	if abandon {
		s.cancel()
	}
	s.wg.Wait()
	s.cancel()
	var ok []net.Conn
	var first error
	for i, dc := range s.out {
		if dc != nil {
			ok = append(ok, dc)
		}
		if err := s.errs[i]; err != nil && first == nil && !(abandon && errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	return ok, first
}

// parseRangeMarker reads the ranges of a 111 restart marker ("111 Range
// Marker a-b,c-d", protocol.md §7.2), in transfer coordinates.
func parseRangeMarker(r Reply) (RangeSet, error) {
	list, err := wire.RangeMarker(r)
	if err != nil {
		return RangeSet{}, err
	}
	return xfer.ParseRangeList(list)
}

var _ dsi.RangeReaderFrom = fileWriter{}
