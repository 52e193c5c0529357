package transfer

// Pipelined batches for many-file jobs (issue 7): a worker hands the
// small files of a batch to client.GetFiles or PutFiles on its session's
// connection, so that a tree of small files costs no round trip per
// file for downloads and one for uploads, instead of the several of a
// transfer with its own data channel set-up. Small files between two
// servers go to client.ThirdPartyFiles on the worker's two sessions: one
// data channel set-up for the batch, and no round trip per file when the
// destination is Ferry's server (one otherwise). Large files and local
// copies go one by one through the copier of cp.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
)

// batchMaxSize is the largest file a batch takes: bigger ones go one by
// one, with resume state on disk (resume.go), which a file re-copied
// whole after a failure would miss.
const batchMaxSize = 64 << 20

// batchMaxPairs bounds the pairs a worker takes from the queue at once:
// enough that a batch's start and drain (about a round trip each) are
// rare, while the pipeline's window (client.DefaultWindow) bounds what is
// in flight.
const batchMaxPairs = 256

// batchRetries is how many times the files of a batch that stopped early
// (client.ErrBatchStopped: they never started) are tried again on a new
// connection without -rst.
const batchRetries = 2

// progressEvery is the least time between two progress reports of a
// file in a batch.
const progressEvery = 200 * time.Millisecond

// batchWorker is a cpWorker that pipelines batches (the default; -pp=false
// turns it off).
type batchWorker struct {
	*cpWorker
}

var _ job.BatchCopier = batchWorker{}

// batchKind is the kind of transfer of a batch.
type batchKind int

const (
	batchNone batchKind = iota // not batched
	batchGet                   // download
	batchPut                   // upload
	batchTPT                   // third party, server to server
)

// batchable reports whether p can go into a pipelined batch, and of
// which kind. Third-party copies of parts of files (-off, -len), striped
// ones and those through this client (-notpt) go one by one.
func (w batchWorker) batchable(p job.Pair) batchKind {
	f := w.c.o
	switch {
	case p.Link != "" || p.Size > batchMaxSize:
		return batchNone
	case !p.Src.Local() && p.Dst.Local():
		return batchGet
	case p.Src.Local() && !p.Dst.Local():
		return batchPut
	case !p.Src.Local() && !p.Dst.Local() && !f.NoTPT && !f.Stripe && f.Offset == 0 && f.Length <= 0:
		return batchTPT
	}
	return batchNone
}

// CopyBatch copies pairs of the same endpoints: the small downloads or
// uploads in pipelined batches, the others one by one.
func (w batchWorker) CopyBatch(ctx context.Context, pairs []job.Pair, obs job.Observer) []job.Result {
	// The history's writer gathers the batch's records into a few
	// transactions while it runs.
	rec := w.j.e.recorder()
	rec.hold(1)
	defer rec.hold(-1)
	res := make([]job.Result, len(pairs))
	byKind := map[batchKind][]int{}
	for i, p := range pairs {
		res[i].Pair = p
		if k := w.batchable(p); k != batchNone {
			byKind[k] = append(byKind[k], i)
		}
	}
	for _, k := range []batchKind{batchGet, batchPut, batchTPT} {
		if len(byKind[k]) > 0 {
			w.runBatch(ctx, pairs, byKind[k], k, obs, res)
		}
	}
	for i, p := range pairs {
		if w.batchable(p) != batchNone {
			continue
		}
		obs.FileStarted(p, p.Size)
		n, err := w.Copy(ctx, p, func(b int64) { obs.FileProgress(p, b) })
		res[i].Bytes, res[i].Err = n, err
		obs.FileDone(p, n, err)
	}
	return res
}

// batchItem is one file of a batch in flight.
type batchItem struct {
	idx  int // in the pairs of CopyBatch
	pair job.Pair

	started bool      // FileStarted was called; set by Open, read after Done
	start   time.Time // when the file started (Open), or its batch did
	sink    *tempSink // download: where the bytes go
	moved   atomic.Int64
	last    atomic.Int64 // UnixNano of the last progress report
}

// report counts n bytes moved and reports the progress now and then.
func (it *batchItem) report(obs job.Observer, n int) {
	total := it.moved.Add(int64(n))
	now := time.Now().UnixNano()
	if last := it.last.Load(); now-last >= int64(progressEvery) && it.last.CompareAndSwap(last, now) {
		obs.FileProgress(it.pair, total)
	}
}

// runBatch copies the pairs at idx in batches on the worker's session of
// the remote endpoint (both sessions for third party), writing their
// results into res. Files of a batch that stopped early are tried again
// on a new connection (with -rst, also the file whose failure stopped
// it); the others are final. A round in which some file got its final
// result does not count against the retries: a third-party batch stops
// at a source that refuses a file, and the files after it go on.
func (w batchWorker) runBatch(ctx context.Context, pairs []job.Pair, idx []int, kind batchKind, obs job.Observer, res []job.Result) {
	remote := pairs[idx[0]].Src
	if kind == batchPut {
		remote = pairs[idx[0]].Dst
	}
	s := w.c.session(w.loc(remote))
	var ds *client.Session
	if kind == batchTPT {
		ds = w.c.tptDest(w.loc(remote), w.loc(pairs[idx[0]].Dst))
	}
	rounds := batchRetries
	if w.c.o.Restart {
		rounds = max(w.c.o.Retries, batchRetries)
	}
	opts := &client.BatchOptions{
		Parallel:  max(w.c.o.Parallel, 1),
		TCPBuffer: int(w.c.o.TCPBuffer),
		BlockSize: int(w.c.o.BlockSize),
		// Without it a server that starts a file and then sends
		// nothing would hang the batch.
		StallTimeout: w.c.o.StallTimeout,
	}
	wait, maxWait := w.c.o.retryWaits()
	todo := idx
	for round := 0; len(todo) > 0; round++ {
		last := round >= rounds || ctx.Err() != nil
		items := make([]*batchItem, len(todo))
		for k, i := range todo {
			items[k] = &batchItem{idx: i, pair: pairs[i], start: time.Now()}
		}
		if ds != nil {
			dialTogether(ctx, s, ds)
		}
		conn, err := s.Connect(ctx)
		failed := remote
		var dconn *client.Conn
		if err == nil && ds != nil {
			failed = pairs[idx[0]].Dst
			dconn, err = ds.Connect(ctx)
		}
		if err != nil {
			err = &OpError{What: "connect to " + w.loc(failed).String(), Err: err}
			for _, it := range items {
				w.finishItem(ctx, it, 0, err, obs, res)
			}
			return
		}
		var mu sync.Mutex
		var again []int
		var verify []*batchItem
		final := 0
		opts.Done = func(k int, err error) {
			it := items[k]
			err = w.settle(it, kind, err)
			if err != nil && !last && w.batchRetryable(it, err) {
				mu.Lock()
				again = append(again, it.idx)
				mu.Unlock()
				return
			}
			mu.Lock()
			final++
			mu.Unlock()
			if err == nil && w.c.o.Verify {
				mu.Lock()
				verify = append(verify, it)
				mu.Unlock()
				return
			}
			w.finishItem(ctx, it, it.moved.Load(), err, obs, res)
		}
		w.sendBatch(ctx, kind, conn, dconn, items, opts, obs)
		for _, it := range verify {
			err := w.verifyItem(ctx, kind, s, ds, it)
			w.finishItem(ctx, it, it.moved.Load(), err, obs, res)
		}
		if final > 0 && len(again) > 0 {
			round-- // progress: not a retry
		}
		todo = again
		if len(todo) > 0 && w.c.o.Restart && round > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			wait = nextWait(wait, maxWait)
		}
	}
}

// sendBatch copies the items of one round as one batch of kind on conn
// (and dconn, the destination's, for third party); opts.Done gets each
// file's result.
func (w batchWorker) sendBatch(ctx context.Context, kind batchKind, conn, dconn *client.Conn, items []*batchItem, opts *client.BatchOptions, obs job.Observer) {
	switch kind {
	case batchTPT:
		files := make([]client.ThirdPartyFile, len(items))
		for k, it := range items {
			files[k] = client.ThirdPartyFile{Src: it.pair.Src.Path, Dst: it.pair.Dst.Path, Size: it.pair.Size, KnownSize: it.pair.Size >= 0}
		}
		client.ThirdPartyFiles(ctx, conn, dconn, files, opts)
	case batchGet:
		gets := make([]client.Get, len(items))
		for k, it := range items {
			gets[k] = client.Get{Path: it.pair.Src.Path, Open: w.openGet(it, obs)}
		}
		conn.GetFiles(ctx, gets, opts)
	default:
		puts := make([]client.Put, len(items))
		for k, it := range items {
			size := it.pair.Size
			puts[k] = client.Put{Path: it.pair.Dst.Path, Size: max(size, 0), Open: w.openPut(it, obs)}
		}
		conn.PutFiles(ctx, puts, opts)
	}
}

// verifyItem compares the checksums (-verify-checksum) of a file a batch
// of kind copied: on both servers for third party (s the source's
// session, ds the destination's), else the server's with the local
// file's.
func (w batchWorker) verifyItem(ctx context.Context, kind batchKind, s, ds *client.Session, it *batchItem) error {
	switch l, r := w.loc(it.pair.Dst), w.loc(it.pair.Src); kind {
	case batchTPT:
		return w.c.verifyBoth(ctx, s, r, ds, l)
	case batchPut:
		return w.c.verify(ctx, s, l, LocalLocation(r.Path), 0, -1)
	default:
		return w.c.verify(ctx, s, r, LocalLocation(l.Path), 0, -1)
	}
}

// batchRetryable reports whether a file's failure in a batch is worth
// another try on a new connection: it never started because the batch
// stopped; or, with -rst, as for single files (client.Session): network
// trouble, a transient refusal (4xx), or a failure after data moved.
// Local errors and permanent refusals before any data are final.
func (w batchWorker) batchRetryable(it *batchItem, err error) bool {
	if errors.Is(err, client.ErrBatchStopped) {
		return true
	}
	var re *client.ReplyError
	var le *localError
	switch {
	case !w.c.o.Restart, errors.As(err, &le), errors.Is(err, context.Canceled), errors.Is(err, client.ErrBadCommand):
		return false
	case w.c.o.retryLate(time.Now()):
		return false // past RetryDeadline: failures are final
	case errors.As(err, &re):
		return re.Reply.Code/100 == 4 || it.moved.Load() > 0
	}
	return true
}

// finishItem records a file's result and tells the observer.
func (w batchWorker) finishItem(ctx context.Context, it *batchItem, n int64, err error, obs job.Observer, res []job.Result) {
	if !it.started {
		obs.FileStarted(it.pair, it.pair.Size)
	}
	if run := w.c.e.startRun(w.loc(it.pair.Src), w.loc(it.pair.Dst), w.c.o, it.pair.Size); run != nil {
		run.rec.Start = it.start
		run.rec.Params.Mode, run.rec.Params.Pipeline = "E", true
		w.c.e.finishRun(ctx, run, n, err)
	}
	res[it.idx].Bytes, res[it.idx].Err = n, err
	obs.FileDone(it.pair, n, err)
}

// settle finishes a file's local end once its transfer ended with err:
// a download is renamed into place or removed; an upload's source is
// checked for changes while it was read. It returns the file's error.
func (w batchWorker) settle(it *batchItem, kind batchKind, err error) error {
	if kind == batchTPT {
		if err != nil {
			return &OpError{What: fmt.Sprintf("third-party copy %s to %s", w.loc(it.pair.Src), w.loc(it.pair.Dst)), Err: err}
		}
		// The servers confirmed the whole file; its size is the plan's.
		it.moved.Store(max(it.pair.Size, 0))
		return nil
	}
	if kind == batchGet {
		if it.sink == nil && err == nil {
			// A started file always opens its sink; be safe anyway.
			var oerr error
			if it.sink, oerr = openTempSink(it.pair.Dst.Path); oerr != nil {
				return &localError{err: oerr}
			}
			it.sink.replace = it.sink.replace || w.c.o.Fsync
		}
		if it.sink != nil {
			if err == nil {
				if cerr := it.sink.commit(); cerr != nil {
					return &localError{err: fmt.Errorf("write %s: %w", it.pair.Dst.Path, cerr)}
				}
			} else {
				it.sink.abort()
			}
			it.sink = nil
		}
		if err != nil {
			return &OpError{What: "download " + w.loc(it.pair.Src).String(), Err: err}
		}
		return nil
	}
	if err != nil {
		return &OpError{What: "upload to " + w.loc(it.pair.Dst).String(), Err: err}
	}
	return sourceChanged(it.pair)
}

// sourceChanged reports a local source whose size or modification time
// differ from the plan's: it was written to while it was read.
func sourceChanged(p job.Pair) error {
	if !p.Src.Local() || p.Size < 0 {
		return nil
	}
	fi, err := os.Stat(p.Src.Path)
	switch {
	case err != nil:
		return fmt.Errorf("the source changed while it was copied: %w", err)
	case fi.Size() != p.Size || !fi.ModTime().Equal(p.ModTime):
		return fmt.Errorf("the source changed while it was copied (size %d, now %d); copy it again", p.Size, fi.Size())
	}
	return nil
}

// openGet returns the Open of a download: a temporary file beside the
// destination.
func (w batchWorker) openGet(it *batchItem, obs job.Observer) func() (io.WriterAt, error) {
	return func() (io.WriterAt, error) {
		it.started, it.start = true, time.Now()
		obs.FileStarted(it.pair, it.pair.Size)
		s, err := openTempSink(it.pair.Dst.Path)
		if err != nil {
			return nil, &localError{err: err}
		}
		if w.c.o.Fsync {
			s.replace = true // synced before its rename (Options.Fsync)
		}
		it.sink = s
		return &countingWriter{s: s, it: it, obs: obs}, nil
	}
}

// openPut returns the Open of an upload: the source, unless it changed
// since it was planned (its bytes would not match the size announced).
func (w batchWorker) openPut(it *batchItem, obs job.Observer) func() (io.ReaderAt, error) {
	return func() (io.ReaderAt, error) {
		it.started, it.start = true, time.Now()
		obs.FileStarted(it.pair, it.pair.Size)
		f, err := openRead(it.pair.Src.Path)
		if err != nil {
			return nil, &localError{err: err}
		}
		fi, err := f.Stat()
		if err == nil && it.pair.Size >= 0 && fi.Size() != it.pair.Size {
			err = fmt.Errorf("the source changed since it was listed (size %d, now %d); copy it again", it.pair.Size, fi.Size())
		}
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a regular file", it.pair.Src.Path)
		}
		if err != nil {
			f.Close()
			return nil, &localError{err: err}
		}
		return &countingReader{f: f, it: it, obs: obs}, nil
	}
}

// countingWriter counts a download's bytes for the observer.
type countingWriter struct {
	s   *tempSink
	it  *batchItem
	obs job.Observer
}

func (c *countingWriter) WriteAt(p []byte, off int64) (int, error) {
	n, err := c.s.f.WriteAt(p, off)
	c.it.report(c.obs, n)
	return n, err
}

// Close closes the file (synced if it replaces one); settle renames it.
func (c *countingWriter) Close() error { return c.s.close() }

// countingReader counts an upload's bytes for the observer.
type countingReader struct {
	f   *os.File
	it  *batchItem
	obs job.Observer
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.it.report(c.obs, n)
	return n, err
}

func (c *countingReader) Close() error { return c.f.Close() }

// tempSink is a download written under a temporary name beside its
// destination (.NAME.ferry-RANDOM) and renamed into place once complete,
// so that neither a failure nor a crash of ferry leaves a partial file
// under the destination's name. It needs no resume state: a small file
// that failed is copied again whole. Under a root, the file is created,
// renamed and removed through the destination directory opened once
// (localFS.dirOf), so that swapping that directory for a symbolic link
// meanwhile cannot leave the file behind.
type tempSink struct {
	f       *os.File
	fs      localFS // the destination directory's
	done    func()  // closes fs's directory; nil once done
	temp    string
	final   string
	replace bool // an existing file is replaced, or Options.Fsync: synced before the rename

	closed bool
	err    error // of close
}

// openTempSink opens the temporary file of a download to final. An
// existing regular file keeps its permission bits.
func openTempSink(final string) (*tempSink, error) { return openTempSinkIn(localFS{}, final) }

// openTempSinkIn is openTempSink in fsys.
func openTempSinkIn(fsys localFS, final string) (*tempSink, error) {
	fsys, done, err := fsys.dirOf(final)
	if err != nil {
		return nil, destError(final, err)
	}
	fi, err := fsys.Stat(final)
	switch {
	case err == nil && fi.IsDir():
		err = fmt.Errorf("%s is a directory", final)
	case err == nil && !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", final)
	case errors.Is(err, os.ErrNotExist):
		err = nil
	}
	if err != nil {
		done()
		return nil, err
	}
	dir, base := filepath.Split(final)
	var (
		f    *os.File
		name string
	)
	for range 10 {
		name = filepath.Join(dir, "."+base+".ferry-"+strconv.FormatUint(rand.Uint64()&0xffffffffff, 36))
		f, err = fsys.createExcl(name)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		done()
		return nil, destError(final, err)
	}
	s := &tempSink{f: f, fs: fsys, done: done, temp: name, final: final, replace: fi != nil}
	if s.replace {
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			s.abort()
			return nil, err
		}
	}
	return s, nil
}

// createExcl creates the file name for writing; it fails if name
// exists. os.OpenFile would offer the regular file to the runtime's
// poller (four fcntl and an epoll_ctl that fails, per file); os.NewFile
// of a blocking descriptor does not.
func createExcl(name string) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o666)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// openRead opens the file name for reading, as os.Open does but without
// offering it to the runtime's poller (see createExcl): a regular file
// gains nothing there, and a batch of small files pays five system
// calls a file for it.
func openRead(name string) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// close closes the file, first syncing it if it replaces one (so that a
// crash after the rename cannot leave an empty file where a complete one
// was).
func (s *tempSink) close() error {
	if s.closed {
		return s.err
	}
	s.closed = true
	if s.replace {
		s.err = s.f.Sync()
	}
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	return s.err
}

// commit renames the complete file into place.
func (s *tempSink) commit() error {
	err := s.close()
	if err == nil {
		err = s.fs.rename(s.temp, s.final)
	}
	if err != nil {
		s.fs.Remove(s.temp)
	}
	s.release()
	return err
}

// abort drops the file.
func (s *tempSink) abort() {
	s.close()
	s.fs.Remove(s.temp)
	s.release()
}

// release closes the destination directory, once.
func (s *tempSink) release() {
	if s.done != nil {
		s.done()
		s.done = nil
	}
}
