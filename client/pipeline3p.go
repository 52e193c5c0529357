package client

// Third-party batches: many files copied between two servers over one
// control connection to each and one set of cached MODE E data
// connections between them (protocol.md §5.5, §14), with the commands of
// later files sent before the earlier ones are answered (§1.1).
//
// The danger is the shared data stream: the source writes file after file
// into the cached connections and the destination reads file after file
// out of them, each in the order it executes its commands. If one side
// skips a file the other does not, the next file's bytes land in the
// wrong file. So a command is sent to the second server only once the
// first has started the same file (its 125/150), and who goes first
// depends on what a refusal costs:
//
//   - Destination offers STOR-DRAIN (Ferry, docs/extensions.md): the
//     source leads. RETRs go out with a window; each RETR's 125/150 sends
//     that file's STOR. A RETR the source refuses puts nothing on the
//     stream and gets no STOR; a STOR the destination refuses drains the
//     file's blocks. No round trip per file.
//   - Otherwise (GCT) the destination leads: STORs go out with a window,
//     each STOR's 125/150 sends that file's RETR. A refused STOR gets no
//     RETR. A refused RETR leaves the destination waiting for data that
//     will not come; only ABOR gets it out, which ends a GCT session
//     (§12), so the batch stops and both connections are closed. One
//     round trip per file (the 125 to the client, the RETR to the source).
//
// globus-url-copy -pp sends its STORs and RETRs ahead without such an
// order and fails the whole pipeline on any refusal.
//
// The first file sets the data connections up as ThirdParty does (PASV on
// the destination, PORT on the source, STOR before RETR); a file that
// fails there leaves nothing cached, and the next file tries again.
//
// A batch that ended with every file copied leaves the connections cached
// on both servers, and the two Conns remember it (tpChannel): the next
// batch between the same two Conns, in the same direction and with the
// same options, starts with its first file pipelined, without the set-up
// (about eight round trips). Anything else that could have changed the
// servers' data channel state forgets it: a failed file, a closed Conn,
// any other transfer on either Conn (dropCache), MODE S, a raw command
// (Do), or a batch between another pair. DCAU and PROT are sent at
// login, and DCAU around a transfer with a server without GSI
// (GSIConfig.PlainPeerNoDCAU). Both GCT and Ferry keep cached
// connections across transfers in one direction until the next
// PASV/PORT/DCAU (protocol.md §5.5).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ThirdPartyFile is one file of a ThirdPartyFiles batch.
type ThirdPartyFile struct {
	Src string // the path on the source server
	Dst string // the path on the destination server

	// Size is the source file's size when KnownSize is set (from a
	// listing): a file set up on its own (ThirdParty) then skips SIZE.
	Size      int64
	KnownSize bool
}

// ThirdPartyFiles copies a batch of files from the server of src to the
// server of dst, directly between the two, and returns one error per file
// (nil: both servers confirmed it with 226). The destination listens, the
// source connects, once; later files reuse the MODE E data connections,
// and so does the next call with the same Conns, direction, Parallel and
// TCPBuffer after a call in which every file went through (see the top
// of this file for what else forgets them).
// Of BatchOptions it uses Window, Parallel, TCPBuffer, StreamMode (each
// file on its own, as ThirdParty), Done and StallTimeout.
//
// A file either server refuses gets a *ReplyError and the batch goes on,
// except a source refusal while the destination already waits (servers
// without STOR-DRAIN), which stops it. A failure after a file started, of
// a control connection, or a cancelled ctx stops the batch and closes
// both Conns: that file gets the failure, the files not yet done an error
// wrapping ErrBatchStopped.
func ThirdPartyFiles(ctx context.Context, src, dst *Conn, files []ThirdPartyFile, opts *BatchOptions) []error {
	var o BatchOptions
	if opts != nil {
		o = *opts
	}
	errs := make([]error, len(files))
	if len(files) == 0 {
		return errs
	}
	if src == dst {
		return fillErrs(errs, 0, errors.New("client: third party: source and destination are the same Conn"), o.Done)
	}
	if err := checkThirdPartyFTPS(src, dst); err != nil {
		return fillErrs(errs, 0, err, o.Done)
	}
	restore, err := plainPeerDCAU(ctx, src, dst)
	if err != nil {
		return fillErrs(errs, 0, err, o.Done)
	}
	if restore != nil {
		defer restore()
	}
	var progress *batchProgress
	if o.StallTimeout > 0 {
		var stop func()
		ctx, progress, stop = watchStall(ctx, o.StallTimeout)
		defer stop()
	}
	done := func(i int, err error) {
		errs[i] = err
		progress.touch()
		if o.Done != nil {
			o.Done(i, err)
		}
	}
	ch := &tpChannel{src: src, dst: dst, parallel: max(o.Parallel, 1), tcpBuffer: o.TCPBuffer}
	i := 0
	if !o.StreamMode && ch.cachedOn(src, dst) {
		return b3p(ctx, src, dst, files, progress, 0, &o, done, errs)
	}
	one := func(modeE bool) error {
		// A file going alone can be big: its 111 markers (data stored)
		// count as progress, so the stall watch does not end it while
		// it moves.
		_, err := ThirdParty(ctx, src, files[i].Src, dst, files[i].Dst,
			&ThirdPartyOptions{ModeE: modeE, Parallel: max(o.Parallel, 1), TCPBuffer: o.TCPBuffer,
				Size: files[i].Size, KnownSize: files[i].KnownSize,
				Acknowledged: func(RangeSet) { progress.touch() }})
		done(i, err)
		i++
		return cmpErr(src.err, dst.err, ctx.Err())
	}
	// Set up: until one file went through with MODE E, each goes alone.
	for i < len(files) && !o.StreamMode {
		if err := one(true); err != nil {
			return fillErrs(errs, i, stopCause(ctx, err), o.Done)
		}
		if errs[i-1] == nil {
			break
		}
		if !src.modeE || !dst.modeE {
			src.log.Debug("MODE E refused; third-party copies one by one in stream mode", "err", errs[i-1])
			o.StreamMode = true
		}
	}
	if o.StreamMode {
		for i < len(files) {
			if err := one(false); err != nil {
				return fillErrs(errs, i, stopCause(ctx, err), o.Done)
			}
		}
		return errs
	}
	// The set-up went through: the servers keep the connections.
	src.tp, dst.tp = ch, ch
	if i == len(files) {
		return errs
	}
	return b3p(ctx, src, dst, files, progress, i, &o, done, errs)
}

// b3p runs the pipelined part of a batch from file from on, over data
// connections the servers keep, and forgets them unless every file went
// through.
func b3p(ctx context.Context, src, dst *Conn, files []ThirdPartyFile, progress *batchProgress, from int, o *BatchOptions, done func(int, error), errs []error) []error {
	b := &tpBatch{src: src, dst: dst, files: files, progress: progress}
	if dst.offersStorDrain() {
		if err := dst.setStorDrain(ctx, true); err != nil {
			src.close()
			dst.close()
			return fillErrs(errs, from, err, o.Done)
		}
		b.drain = dst.drainOn
	}
	b.run(ctx, from, o, done)
	for _, err := range errs {
		if err != nil {
			// A refusal leaves the stream in step, but a batch
			// that saw one starts the next afresh, to be safe.
			src.tp, dst.tp = nil, nil
			break
		}
	}
	return errs
}

// tpChannel is a third-party MODE E data channel both servers keep
// cached after a batch: src's server sends on it to dst's server, with
// these options. Both Conns point to the same tpChannel while it holds.
type tpChannel struct {
	src, dst  *Conn
	parallel  int
	tcpBuffer int
}

// cachedOn reports whether the channel src and dst remember is the one
// ch describes, and both are still in the state that made it.
func (ch *tpChannel) cachedOn(src, dst *Conn) bool {
	t := src.tp
	return t != nil && t == dst.tp && *t == *ch &&
		src.err == nil && dst.err == nil && src.modeE && dst.modeE &&
		len(src.cache) == 0 && len(dst.cache) == 0
}

// cmpErr is the first non-nil error.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// stopCause is why a batch stopped: the context's cause when it is done.
func stopCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// tpBatch is the pipelined part of a ThirdPartyFiles call.
type tpBatch struct {
	src, dst *Conn
	files    []ThirdPartyFile
	drain    bool           // the destination drains refused STORs: the source leads
	progress *batchProgress // may be nil

	ctx    context.Context
	cancel context.CancelCauseFunc
	slots  chan struct{}
	done   func(int, error)

	mu       sync.Mutex
	items    map[int]*tpItem // in flight; guarded by mu
	stopErr  error           // guarded by mu
	finished []bool          // guarded by mu
}

// tpItem is one file in flight.
type tpItem struct {
	i              int
	lead, follow   tpSide // guarded by tpBatch.mu
	leadL, followL string // the command lines
	leadT, followT ticket // their places in the reply streams, set before the item is queued for its reader
}

// tpSide is one server's part of a file.
type tpSide struct {
	started bool  // a 125/150 arrived
	got     bool  // the final reply (or err) arrived
	r       Reply // the final reply
	err     error // the control connection failed first
}

func (s *tpSide) ok() bool { return s.got && s.err == nil && s.r.Class() == 2 }

// conns returns the leading and the following server.
func (b *tpBatch) conns() (lead, follow *Conn) {
	if b.drain {
		return b.src, b.dst
	}
	return b.dst, b.src
}

// run copies files from..n-1 and reports each to done.
func (b *tpBatch) run(parent context.Context, from int, o *BatchOptions, done func(int, error)) {
	lead, follow := b.conns()
	_, stopWatch := watchAll(parent, lead.nc, follow.nc)
	b.ctx, b.cancel = context.WithCancelCause(parent)
	b.slots = make(chan struct{}, o.window())
	b.done = done
	b.items = map[int]*tpItem{}
	b.finished = make([]bool, len(b.files))
	leadOps := make(chan *tpItem, o.window()+1)
	followOps := make(chan *tpItem, o.window()+1)

	var wg sync.WaitGroup
	wg.Go(func() { b.read(parent, lead, leadOps, true, followOps) })
	wg.Go(func() { b.read(parent, follow, followOps, false, nil) })
	for i := from; i < len(b.files); i++ {
		select {
		case b.slots <- struct{}{}:
		case <-b.ctx.Done():
		}
		if b.stopped() != nil || b.ctx.Err() != nil {
			break
		}
		f := b.files[i]
		it := &tpItem{i: i, leadL: "STOR " + f.Dst, followL: "RETR " + f.Src}
		if b.drain {
			it.leadL, it.followL = it.followL, it.leadL
		}
		err := cmpErr(checkLine(it.leadL), checkLine(it.followL))
		if err == nil && b.drain && len("STOR "+f.Dst)+2 > maxDrainLine {
			err = fmt.Errorf("client: STOR %s: command longer than %d bytes", f.Dst, maxDrainLine)
		}
		if err != nil {
			b.mu.Lock()
			b.finishLocked(i, err)
			b.mu.Unlock()
			continue
		}
		b.mu.Lock()
		b.items[i] = it
		b.mu.Unlock()
		t, err := lead.request(parent, it.leadL)
		if err != nil {
			b.stop(plain(err))
			break
		}
		it.leadT = t
		leadOps <- it
	}
	if b.stopped() == nil && b.ctx.Err() != nil {
		b.stop(context.Cause(b.ctx))
	}
	close(leadOps)
	wg.Wait()
	b.cancel(nil)

	fired := stopWatch()
	b.mu.Lock()
	stopErr := b.stopErr
	for i := from; i < len(b.files); i++ {
		if !b.finished[i] {
			b.finished[i] = true
			b.done(i, stoppedError(stopErr))
		}
	}
	b.mu.Unlock()
	if stopErr != nil {
		// What either server has read of the data connections, or will
		// still do of its queued commands, is unknown.
		b.src.close()
		b.dst.close()
		return
	}
	if fired {
		_ = b.src.nc.SetDeadline(time.Time{})
		_ = b.dst.nc.SetDeadline(time.Time{})
	}
}

// read reads the replies of c's commands in order. The leading server's
// 125/150 for a file sends the file's command to the following server
// (queued on next).
func (b *tpBatch) read(ctx context.Context, c *Conn, ops <-chan *tpItem, isLead bool, next chan<- *tpItem) {
	if next != nil {
		defer close(next)
	}
	_, follow := b.conns()
	var broken error
	for it := range ops {
		for broken == nil {
			t := it.followT
			if isLead {
				t = it.leadT
			}
			r, err := c.rs.next(ctx, t)
			if err != nil {
				broken = plain(err)
				if cause := b.stopped(); cause != nil {
					broken = cause
				}
				break
			}
			b.progress.touch()
			if r.Class() == 1 {
				if isMarker(r) || !b.start(it, isLead) || !isLead {
					continue
				}
				ft, err := follow.request(ctx, it.followL)
				if err != nil {
					broken = plain(err)
					b.stop(broken)
					// The lead goes on to its final reply, which
					// the stop turns into a read error.
					continue
				}
				it.followT = ft
				next <- it
				continue
			}
			b.final(it, isLead, r, nil)
			break
		}
		if broken != nil {
			b.final(it, isLead, Reply{}, broken)
		}
	}
}

// line is the command of a file on one side.
func (b *tpBatch) line(it *tpItem, isLead bool) string {
	if isLead {
		return it.leadL
	}
	return it.followL
}

// start marks a side of the file started; it reports whether it was not
// already.
func (b *tpBatch) start(it *tpItem, isLead bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &it.follow
	if isLead {
		s = &it.lead
	}
	if s.started {
		return false
	}
	s.started = true
	return true
}

// final records a side's final reply (or control failure) and settles
// the file when its outcome is known.
func (b *tpBatch) final(it *tpItem, isLead bool, r Reply, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &it.follow
	if isLead {
		s = &it.lead
	}
	s.got, s.r, s.err = true, r, err
	// finishLocked and stopLocked act once: a file already settled (its
	// destination drained it) still stops the batch if its source
	// failed after it started.
	l, f := &it.lead, &it.follow
	fail := func(s *tpSide, line string) error {
		if s.err != nil {
			return s.err
		}
		if s.r.Class() == 2 {
			return fmt.Errorf("client: %s: final reply %d without a preliminary reply", verb(line), s.r.Code)
		}
		return &ReplyError{Reply: s.r}
	}
	switch {
	case s.err != nil:
		b.finishLocked(it.i, stoppedError(s.err))
		b.stopLocked(s.err)
	case s.started && !s.ok(), !s.started && s.r.Class() == 2:
		// Failed after it started, or ended without starting: what
		// the data connections carry is unknown.
		err := fail(s, b.line(it, isLead))
		b.finishLocked(it.i, err)
		b.stopLocked(err)
	case isLead && !s.started:
		// Refused before the other server heard of the file.
		b.finishLocked(it.i, fail(s, it.leadL))
	case !isLead && !s.started:
		b.finishLocked(it.i, fail(s, it.followL))
		if !b.drain {
			// The destination waits for data the source will not
			// send.
			b.stopLocked(fmt.Errorf("client: %s refused while the destination waited: %w", verb(it.followL), fail(s, it.followL)))
		}
		// With STOR-DRAIN the destination drained the file's blocks;
		// the source's final reply only ends the item.
	case l.got && f.got:
		b.finishLocked(it.i, nil) // both started and ok
	}
}

// finishLocked reports file i's result once and frees its slot. b.mu
// must be held.
func (b *tpBatch) finishLocked(i int, err error) {
	if b.finished[i] {
		return
	}
	b.finished[i] = true
	delete(b.items, i)
	b.done(i, err)
	<-b.slots
}

// stop ends the batch with cause (the first wins): both control
// connections are interrupted, which fails every command in flight.
func (b *tpBatch) stop(cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked(cause)
}

func (b *tpBatch) stopLocked(cause error) {
	if b.stopErr != nil {
		return
	}
	b.stopErr = cause
	b.cancel(cause)
	_ = b.src.nc.SetDeadline(time.Unix(1, 0))
	_ = b.dst.nc.SetDeadline(time.Unix(1, 0))
}

func (b *tpBatch) stopped() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopErr
}
