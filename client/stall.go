package client

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dtp"
)

// batchProgress counts what a batch moves (replies, blocks, finished
// files) for BatchOptions.StallTimeout; a nil one counts nothing.
type batchProgress struct{ n atomic.Int64 }

func (p *batchProgress) touch() {
	if p != nil {
		p.n.Add(1)
	}
}

// moved is p's count, for the stall watchdog.
func (p *batchProgress) moved() uint64 { return uint64(p.n.Load()) }

// watchStall returns a ctx that is cancelled with ErrStalled once p has
// not moved for stall (dtp.WatchStall), and the function that ends the
// watch.
func watchStall(ctx context.Context, stall time.Duration) (context.Context, *batchProgress, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	p := new(batchProgress)
	stop := dtp.WatchStall(ctx, stall, p.moved, func() { cancel(ErrStalled) })
	return ctx, p, func() { stop(); cancel(nil) }
}

// countingSink counts the blocks written to a download's destination,
// keeping its zero-copy path.
func (p *batchProgress) sink(w dsi.Writer) dsi.Writer {
	if p == nil {
		return w
	}
	if rf, ok := w.(dsi.RangeReaderFrom); ok {
		return countingRangeSink{countingSink{w, p}, rf}
	}
	return countingSink{w, p}
}

type countingSink struct {
	dsi.Writer
	p *batchProgress
}

func (s countingSink) WriteAt(b []byte, off int64) (int, error) {
	s.p.touch()
	return s.Writer.WriteAt(b, off)
}

type countingRangeSink struct {
	countingSink
	rf dsi.RangeReaderFrom
}

func (s countingRangeSink) ReadRangeFrom(r io.Reader, off, n int64) (int64, error) {
	s.p.touch()
	return s.rf.ReadRangeFrom(r, off, n)
}

// source counts the blocks read from an upload's source, keeping its
// zero-copy path.
func (p *batchProgress) source(r io.ReaderAt) io.ReaderAt {
	if p == nil {
		return r
	}
	if wt, ok := r.(dsi.RangeWriterTo); ok {
		return countingRangeSource{countingSource{r, p}, wt}
	}
	return countingSource{r, p}
}

type countingSource struct {
	io.ReaderAt
	p *batchProgress
}

func (s countingSource) ReadAt(b []byte, off int64) (int, error) {
	s.p.touch()
	return s.ReaderAt.ReadAt(b, off)
}

type countingRangeSource struct {
	countingSource
	wt dsi.RangeWriterTo
}

func (s countingRangeSource) WriteRangeTo(w io.Writer, off, n int64) (int64, error) {
	s.p.touch()
	return s.wt.WriteRangeTo(w, off, n)
}
