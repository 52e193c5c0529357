package main

// ferry cp -sources N lfn:/PATH LOCAL: byte ranges of one file read from
// several replicas at once.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/client"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/transfer"
)

// multiTarget is how long a span should take its reader, at the rate it
// measured so far: short enough to re-balance often, long enough that a
// span's round trips do not dominate.
const multiTarget = 2 * time.Second

// offsetWriter hides the *os.File of a download from client.RetrieveAt,
// which would move the file's shared offset in stream mode: every
// reader writes at its own offsets. It records what it wrote in got,
// and counts it in moved (for the progress display).
type offsetWriter struct {
	w     io.WriterAt
	got   *replica.Written
	moved *atomic.Int64
}

func (o offsetWriter) WriteAt(p []byte, off int64) (int, error) {
	n, err := o.w.WriteAt(p, off)
	o.got.Add(off, int64(n))
	o.moved.Add(int64(n))
	return n, err
}

// multiReader is one replica's reader of a multi-source download.
type multiReader struct {
	src   transfer.Location
	url   string       // the catalogue's
	moved atomic.Int64 // bytes written so far, also of a span not finished
	// Guarded by the mutex of copyMulti:
	start time.Time     // when it started
	bytes int64         // of the spans fetched, and what arrived of one that failed
	busy  time.Duration // fetching spans
	err   error         // why it stopped, nil when it ran out of spans
	done  bool          // it stopped
}

func (r *multiReader) rate() float64 {
	if r.busy <= 0 {
		return 0
	}
	return float64(r.bytes) / r.busy.Seconds()
}

// copyMulti downloads en to the local file dst reading from up to n of
// its ranked replicas at once: each takes spans sized by its measured
// rate (replica.Splitter, replica.ChunkFor) with ERET/REST ranges in
// MODE E; a reader that fails gives back what it did not fetch of its
// span and is replaced by the next replica not yet used. The whole file's checksum must match the
// catalogue's; when it does not (one replica sent wrong bytes, and which
// one is unknown), the file is fetched again replica by replica, which
// finds and marks the wrong one.
func (lc *lfnCopy) copyMulti(ctx context.Context, en replica.Entry, dst location, jf jobFlags, n int) error {
	e, f := lc.e, lc.f
	if dst.kind != locLocal {
		return usagef("-sources reads into a local file; %s is not one", dst)
	}
	srcs, urls, err := lc.candidates(en, dst)
	if err != nil {
		return err
	}
	if jf.createDirs {
		if err := os.MkdirAll(filepath.Dir(dst.path), 0o755); err != nil {
			return err
		}
	}
	removeStaleMulti(dst.path)
	tmp, err := os.CreateTemp(filepath.Dir(dst.path), multiTempPrefix(dst.path)+"*")
	if err != nil {
		return err
	}
	// Held while the download runs, released by the kernel when the
	// process dies: a later run removes the files of runs that died.
	_ = syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Truncate(en.Size); err != nil {
		return err
	}
	split := replica.NewSplitter(en.Size)
	first := min(max(en.Size/int64(8*n), replica.MinChunk), replica.MaxChunk)

	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	next := 0   // the next of srcs to start; guarded by mu
	active := 0 // readers running; guarded by mu
	var failures []string
	var readers []*multiReader
	note := func(s string) {
		if !f.quiet {
			fmt.Fprintf(e.stderr, "ferry %s: %s\n", lc.name, s)
		}
	}
	// busyRate is the sum of the measured rates of the readers still
	// running; the caller holds mu.
	busyRate := func() float64 {
		var sum float64
		for _, r := range readers {
			if !r.done {
				sum += r.rate()
			}
		}
		return sum
	}
	start := time.Now()
	// run reads spans from one replica after another until none is left
	// or no replica is left to start.
	var run func()
	run = func() {
		for {
			mu.Lock()
			if next >= len(srcs) || split.Left() == 0 {
				mu.Unlock()
				return
			}
			r := &multiReader{src: srcs[next], url: urls[srcs[next].Display], start: time.Now()}
			next++
			active++
			readers = append(readers, r)
			mu.Unlock()
			err := lc.readSpans(ctx, r, split, tmp, first, &mu, cond, &active, busyRate)
			mu.Lock()
			r.err, r.done = err, true
			active--
			cond.Broadcast()
			mu.Unlock()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			failures = append(failures, r.src.Display+": "+describe(err))
			more := next < len(srcs)
			mu.Unlock()
			if more {
				note(fmt.Sprintf("%s: %s; its ranges go to the others, and a new source", r.src, describe(err)))
			} else {
				note(fmt.Sprintf("%s: %s; its ranges go to the others", r.src, describe(err)))
			}
		}
	}
	stop := lc.multiProgress(en, &mu, &readers, start)
	var wg sync.WaitGroup
	for range min(n, len(srcs)) {
		wg.Go(run)
	}
	wg.Wait()
	stop()
	lc.recordMulti(en, dst, readers)
	if err := ctx.Err(); err != nil {
		return err
	}
	if left := split.Left(); left > 0 {
		return fmt.Errorf("%s: every replica failed with %d of %d bytes to go; the last: %s", replica.Format(en.LFN), left, en.Size, failures[len(failures)-1])
	}
	if f.fsync {
		if err := tmp.Sync(); err != nil {
			return err
		}
	}
	sum, err := localSum(ctx, tmp.Name(), en.Alg)
	if err != nil {
		return err
	}
	if sum != en.Sum {
		note(fmt.Sprintf("%s: the file read from %d replicas has %s %s, not %s; fetching it again replica by replica", replica.Format(en.LFN), len(readers), en.Alg, sum, en.Sum))
		_, _, err := lc.copyFrom(ctx, en, dst, jf, false)
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst.path); err != nil {
		return err
	}
	keep = true
	now := time.Now()
	for _, r := range readers {
		if r.bytes > 0 {
			_ = lc.cat.Mark(ctx, en.LFN, r.url, replica.OK, en.Size, en.Sum, now, "")
		}
	}
	if f.verbose && !f.quiet {
		d := time.Since(start)
		fmt.Fprintf(e.stderr, "%s -> %s: %d bytes in %v (%s/s) from %d replicas, %s verified\n", replica.Format(en.LFN), dst, en.Size,
			d.Round(time.Millisecond), humanBytes(float64(en.Size)/max(d.Seconds(), 1e-6)), len(readers), en.Alg)
		for _, r := range readers {
			fmt.Fprintf(e.stderr, "  %s: %d bytes (%s/s)\n", r.src, r.bytes, humanBytes(r.rate()))
		}
	}
	return nil
}

// multiTempPrefix is the name prefix of the hidden temporary files of
// multi-source downloads to p.
func multiTempPrefix(p string) string { return "." + filepath.Base(p) + ".ferry-multi-" }

// removeStaleMulti removes the temporary files of multi-source downloads
// to p whose process is gone (killed before it could remove them): no
// process holds their lock.
func removeStaleMulti(p string) {
	dir, prefix := filepath.Dir(p), multiTempPrefix(p)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, e.Name())
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(name)
		}
		f.Close()
	}
}

// readSpans reads spans of the file from r's replica into w until none
// is left. When a span fails, the parts of it that did not arrive are
// given back, and the error returned. Each span's size follows r's
// measured rate.
//
// A reader that finds nothing left waits while others are busy: a span
// one of them fails on comes back for it. active counts the readers
// busy, and cond (of mu) signals a change of it or of split.
func (lc *lfnCopy) readSpans(ctx context.Context, r *multiReader, split *replica.Splitter, w io.WriterAt, first int64,
	mu *sync.Mutex, cond *sync.Cond, active *int, busyRate func() float64) error {
	l := importLocation(r.src)
	conn, err := connect(ctx, l, clientOptions{active: lc.f.active, gsi: lc.f.gsi})
	if err != nil {
		return err
	}
	defer hangUp(ctx, conn)
	for {
		mu.Lock()
		rate := r.rate()
		var sp replica.Span
		var ok bool
		for {
			// At most r's share of what is left, in proportion to its
			// rate among the busy readers, so that all of them finish
			// together: an even share would leave the fast replicas
			// idle while a slow one fetches the tail of the file.
			share := replica.TailShare(split.Left(), rate, busyRate(), *active)
			if sp, ok = split.Take(min(replica.ChunkFor(rate, multiTarget, first), share)); ok {
				break
			}
			if *active <= 1 || ctx.Err() != nil {
				mu.Unlock()
				return nil // nothing left, and no one who could give some back
			}
			*active--
			cond.Wait()
			*active++
		}
		mu.Unlock()
		t0 := time.Now()
		var got replica.Written
		_, err := retrieveSpan(ctx, conn, l.path, offsetWriter{w, &got, &r.moved}, sp, lc.f.stallTimeout)
		if err != nil {
			// Only what did not arrive goes back: a reader that dies
			// costs the others the blocks it had in flight, not its
			// whole span.
			left := sp.Len
			for _, m := range got.Missing(sp) {
				split.Return(m)
				left -= m.Len
			}
			mu.Lock()
			r.bytes += left
			cond.Broadcast()
			mu.Unlock()
			if errors.Is(err, context.Canceled) {
				return err
			}
			return &opError{What: fmt.Sprintf("bytes %d-%d of %s", sp.Off, sp.Off+sp.Len-1, l), Err: err}
		}
		mu.Lock()
		r.bytes += sp.Len
		r.busy += time.Since(t0)
		mu.Unlock()
	}
}

// errSpanStalled ends a span on which no data moved for the stall
// timeout.
var errSpanStalled = errors.New("no data moved for the stall timeout (-stall-timeout)")

// retrieveSpan retrieves the span sp of path into w in MODE E, ended
// when no data moves for stall (0: never).
func retrieveSpan(ctx context.Context, conn *client.Conn, p string, w io.WriterAt, sp replica.Span, stall time.Duration) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	opts := &client.RetrieveOptions{Offset: sp.Off, Length: sp.Len, ModeE: true,
		Progress: func(client.Progress) { last.Store(time.Now().UnixNano()) }, ProgressInterval: 250 * time.Millisecond}
	if stall > 0 {
		done := make(chan struct{})
		defer close(done)
		go func() {
			t := time.NewTicker(min(stall/4, time.Second))
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if time.Since(time.Unix(0, last.Load())) > stall {
						cancel(errSpanStalled)
						return
					}
				}
			}
		}()
	}
	n, err := conn.RetrieveAt(ctx, p, w, opts)
	if err != nil && context.Cause(ctx) == errSpanStalled {
		err = errSpanStalled
	}
	return n, err
}

// multiProgress shows the progress of a multi-source download of en as
// a single-source one's (ferry cp -vb, or the live display on a
// terminal), each replica's reader as one stream, until the returned
// function is called. readers (guarded by mu) grows as readers start.
func (lc *lfnCopy) multiProgress(en replica.Entry, mu *sync.Mutex, readers *[]*multiReader, start time.Time) (stop func()) {
	pp := startProgress(lc.e, lc.f, location{kind: locRemote, path: en.LFN}, en.Size)
	if pp == nil {
		return func() {}
	}
	report := func() {
		var pr client.Progress
		mu.Lock()
		for _, r := range *readers {
			n := r.moved.Load()
			pr.Streams = append(pr.Streams, n)
			pr.Bytes += n
		}
		mu.Unlock()
		var eta time.Duration
		if pr.Bytes > 0 && pr.Bytes < en.Size {
			eta = time.Duration(float64(en.Size-pr.Bytes) / float64(pr.Bytes) * float64(time.Since(start)))
		}
		pp.updateETA(pr, eta)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				report()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		report() // the last state
		pp.done()
	}
}

// recordMulti writes a history record of each replica's part of a
// multi-source download of en to dst, as a download of its own (its
// bytes, over the time it spent fetching them), so that the advisor
// learns every replica's rate.
func (lc *lfnCopy) recordMulti(en replica.Entry, dst location, readers []*multiReader) {
	h := lc.eng.History
	if h == nil {
		return
	}
	if _, off := h.(hist.Off); off {
		return
	}
	host, user := transfer.ClientIdentity()
	// Not the copy's context: a cancelled copy is recorded too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range readers {
		if r.bytes == 0 && r.err == nil {
			continue // it found nothing left to take
		}
		rec := &hist.Record{Start: r.start, End: r.start.Add(r.busy), Kind: "download", Tool: lc.eng.Tool,
			Src: r.src.HistoryEndpoint(), Dst: dst.export().HistoryEndpoint(), SrcPath: r.src.Path, DstPath: dst.path,
			Size: en.Size, Bytes: r.bytes, Duration: r.busy, Outcome: hist.OK,
			Params: hist.Params{Mode: "E", Parallel: 1}, Link: hist.Link{Retransmits: -1}, ClientHost: host, User: user}
		switch {
		case errors.Is(r.err, context.Canceled):
			rec.Outcome, rec.Error = hist.Cancelled, r.err.Error()
		case r.err != nil:
			rec.Outcome, rec.Error = hist.Failed, describe(r.err)
		}
		_, _ = h.Add(ctx, rec)
	}
}
