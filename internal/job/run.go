package job

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultWorkers is the concurrency of a job when the caller does not
// choose one: four sessions keep a tree of small files moving while a
// server's per-user session limits (often 10) leave room.
const DefaultWorkers = 4

// DefaultMaxBatch is how many pairs a BatchCopier gets at most at once.
const DefaultMaxBatch = 64

// DefaultMinBatch is the least a BatchCopier gets while the queue holds
// that many for every worker.
const DefaultMinBatch = 16

// Observer sees the files of a job. Its methods are called from the
// workers' goroutines, concurrently; they must be quick.
type Observer interface {
	// FileStarted is called when a copy starts; size is the source's
	// size, -1 if unknown.
	FileStarted(p Pair, size int64)
	// FileProgress reports the bytes of p moved so far.
	FileProgress(p Pair, bytes int64)
	// FileDone is called once per pair of the plan, copied or failed
	// (err not nil); also for entries that failed in planning.
	FileDone(p Pair, bytes int64, err error)
}

// Worker copies pairs with its own sessions: one control connection per
// endpoint, kept (logged in, with cached MODE E data connections under
// -fast) from one pair to the next. A Worker is used by one goroutine at
// a time.
type Worker interface {
	// Copy copies one file; progress, when called, gets the bytes moved
	// so far. It returns the bytes moved.
	Copy(ctx context.Context, p Pair, progress func(bytes int64)) (int64, error)
	// FS is the worker's access to an endpoint's name space (for
	// directories, links, -preserve and -delete).
	FS(end string) FS
	// Close ends the worker's sessions.
	Close(ctx context.Context) error
}

// BatchCopier is a Worker that copies several pairs of the same two
// endpoints, in the same direction, at once: pipelined transfers on its
// sessions. It reports every pair through obs (FileStarted,
// FileProgress, FileDone) and returns one Result per pair, in order.
// Workers that are no BatchCopier get their pairs one by one.
type BatchCopier interface {
	CopyBatch(ctx context.Context, pairs []Pair, obs Observer) []Result
}

// Runner runs plans over concurrent workers.
type Runner struct {
	// Workers is the number of concurrent workers; zero means
	// DefaultWorkers. A plan with fewer pairs uses fewer.
	Workers int
	// NewWorker makes a worker; Run calls it for all workers but the
	// first, which the caller passes (it planned with it).
	NewWorker func() Worker
	// Observer, when not nil, sees every file.
	Observer Observer
	// Preserve sets each copied file's (and directory's) modification
	// time and permission bits to the source's.
	Preserve bool
	// MaxBatch bounds the pairs a BatchCopier takes at once; zero means
	// DefaultMaxBatch.
	MaxBatch int
}

// Summary is what a job did.
type Summary struct {
	Files   int   // files and links copied
	Bytes   int64 // bytes of the files copied (not those of failed ones, which are gone or incomplete)
	Skipped int   // up to date (sync)
	Ignored int   // links and directories left out
	Dirs    int   // directories created
	Deleted int   // extras removed (-delete)
	// Failed holds every failure with its reason: copies, entries that
	// could not be planned, directories, deletions.
	Failed  []Result
	Elapsed time.Duration
}

// OK reports whether nothing failed.
func (s *Summary) OK() bool { return len(s.Failed) == 0 }

// nopObserver is the Observer of a Runner without one.
type nopObserver struct{}

func (nopObserver) FileStarted(Pair, int64)     {}
func (nopObserver) FileProgress(Pair, int64)    {}
func (nopObserver) FileDone(Pair, int64, error) {}

// run is one Run's shared state.
type run struct {
	r   *Runner
	obs Observer

	mu      sync.Mutex
	queue   []Pair   // guarded by mu
	sum     *Summary // guarded by mu
	badDirs []Loc    // destination directories that could not be made; guarded by mu
	badErrs []error  // their reasons; guarded by mu
}

// DirError is the reason a pair fails that lies under a destination
// directory that could not be created: Dir, which failed with Err (that
// failure is in the Summary too, once). The directories below Dir are
// not tried.
type DirError struct {
	Dir Loc
	Err error
}

func (e *DirError) Error() string {
	return "destination directory " + e.Dir.String() + " could not be created: " + e.Err.Error()
}
func (e *DirError) Unwrap() error { return e.Err }

// Run carries out plan: it creates the directories, copies the pairs
// over the workers, removes the extras, and with Preserve sets the
// directories' times last. first is the worker that planned (its
// sessions are reused); Run does not close it but closes the others.
// Failures of single entries do not stop the job; they are in the
// Summary, and cancelling ctx fails the pairs not yet copied.
func (r *Runner) Run(ctx context.Context, plan *Plan, first Worker) *Summary {
	start := time.Now()
	obs := r.Observer
	if obs == nil {
		obs = nopObserver{}
	}
	st := &run{r: r, obs: obs, sum: &Summary{Skipped: len(plan.Skipped), Ignored: len(plan.Ignored)}}
	for _, f := range plan.Failed {
		st.fail(f.Pair, 0, f.Err)
	}
	for _, d := range plan.Dirs {
		if !d.Create || st.underBadDir(d.Dst) != nil {
			// Below a directory that could not be made: that failure
			// is the one to report, not one per directory under it.
			continue
		}
		err := first.FS(d.Dst.End).Mkdir(ctx, d.Dst.Path)
		switch {
		case err == nil:
			st.sum.Dirs++
		case errors.Is(err, fs.ErrExist):
		default:
			st.badDirs = append(st.badDirs, d.Dst)
			st.badErrs = append(st.badErrs, err)
			st.fail(Pair{Src: d.Src, Dst: d.Dst, Size: -1}, 0, err)
		}
	}
	// Links come last: a server such as GCT refuses a link whose target
	// is not there yet.
	var links []Pair
	for _, p := range plan.Pairs {
		if p.Link != "" {
			links = append(links, p)
		} else {
			st.queue = append(st.queue, p)
		}
	}
	n := r.Workers
	if n <= 0 {
		n = DefaultWorkers
	}
	n = max(1, min(n, len(st.queue)))
	var wg sync.WaitGroup
	for i := range n {
		w := first
		if i > 0 {
			w = r.NewWorker()
		}
		wg.Go(func() {
			st.work(ctx, w, n)
			if i > 0 {
				w.Close(ctx)
			}
		})
	}
	wg.Wait()
	// Whatever is left was not started: the job was cancelled.
	for _, p := range st.queue {
		st.fail(p, 0, context.Cause(ctx))
	}
	st.queue = nil
	for _, p := range links {
		switch {
		case ctx.Err() != nil:
			st.fail(p, 0, context.Cause(ctx))
		case st.underBadDir(p.Dst) != nil:
			st.fail(p, 0, st.underBadDir(p.Dst))
		default:
			st.link(ctx, first, p)
		}
	}
	for _, d := range plan.Deletes {
		if err := ctx.Err(); err != nil {
			st.fail(Pair{Dst: d.Loc, Size: -1}, 0, err)
			continue
		}
		if err := first.FS(d.Loc.End).Remove(ctx, d.Loc.Path, d.Dir); err != nil {
			st.fail(Pair{Dst: d.Loc, Size: -1}, 0, err)
			continue
		}
		st.sum.Deleted++
	}
	if r.Preserve {
		for _, d := range slices.Backward(plan.Dirs) {
			if d.Src == (Loc{}) || ctx.Err() != nil || st.underBadDir(d.Dst) != nil {
				continue
			}
			if err := preserve(ctx, first.FS(d.Dst.End), d.Dst.Path, d.ModTime, d.Mode); err != nil {
				st.fail(Pair{Src: d.Src, Dst: d.Dst, Size: -1}, 0, err)
			}
		}
	}
	st.sum.Elapsed = time.Since(start)
	return st.sum
}

// fail records a failure and tells the observer.
func (st *run) fail(p Pair, n int64, err error) {
	st.mu.Lock()
	st.sum.Failed = append(st.sum.Failed, Result{Pair: p, Bytes: n, Err: err})
	st.mu.Unlock()
	st.obs.FileDone(p, n, err)
}

// done records a pair's result; the observer was told by the copier.
func (st *run) done(res Result) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if res.Err != nil {
		st.sum.Failed = append(st.sum.Failed, res)
		return
	}
	st.sum.Bytes += res.Bytes
	st.sum.Files++
}

// underBadDir returns the error of a destination directory that could
// not be created and holds l, or nil.
func (st *run) underBadDir(l Loc) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	for i, d := range st.badDirs {
		sep := "/"
		if d.Local() {
			sep = string(filepath.Separator)
		}
		if d.End == l.End && (l.Path == d.Path || strings.HasPrefix(l.Path, strings.TrimSuffix(d.Path, sep)+sep)) {
			return &DirError{Dir: d, Err: st.badErrs[i]}
		}
	}
	return nil
}

// take removes up to n pairs from the head of the queue that join the
// same endpoints as the first.
func (st *run) take(n int) []Pair {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.queue) == 0 {
		return nil
	}
	k := 1
	for k < n && k < len(st.queue) && st.queue[k].sameEnds(st.queue[0]) {
		k++
	}
	b := slices.Clone(st.queue[:k])
	st.queue = st.queue[k:]
	return b
}

// batchSize is how many pairs a BatchCopier takes now.
func (st *run) batchSize(workers int) int {
	st.mu.Lock()
	left := len(st.queue)
	st.mu.Unlock()
	m := st.r.MaxBatch
	if m <= 0 {
		m = DefaultMaxBatch
	}
	return batchSize(left, workers, m, min(DefaultMinBatch, m))
}

// batchSize is the batch of a worker when left pairs remain: half of its
// share, so that the batches shrink as the queue does and the workers
// finish together, but no fewer than floor unless that is more than its
// share (each batch costs a round trip or two to fill and drain its
// pipeline, and a tail of one-file batches pays that for every file).
func batchSize(left, workers, ceiling, floor int) int {
	share := (left + workers - 1) / workers
	return max(1, min(ceiling, max(left/(2*workers), min(floor, share))))
}

// work is one worker's loop.
func (st *run) work(ctx context.Context, w Worker, workers int) {
	bc, batches := w.(BatchCopier)
	for ctx.Err() == nil {
		size := 1
		if batches {
			size = st.batchSize(workers)
		}
		pairs := st.take(size)
		if len(pairs) == 0 {
			return
		}
		var ready []Pair
		for _, p := range pairs {
			if err := st.underBadDir(p.Dst); err != nil {
				st.fail(p, 0, err)
				continue
			}
			ready = append(ready, p)
		}
		if len(ready) == 0 {
			continue
		}
		if batches {
			// A batch of one still saves the data channel set-up.
			for _, res := range bc.CopyBatch(ctx, ready, st.obs) {
				st.finish(ctx, w, res, false)
			}
			continue
		}
		for _, p := range ready {
			st.obs.FileStarted(p, p.Size)
			n, err := w.Copy(ctx, p, func(b int64) { st.obs.FileProgress(p, b) })
			st.finish(ctx, w, Result{Pair: p, Bytes: n, Err: err}, true)
		}
	}
}

// finish applies -preserve to a copied file and records the result;
// tell says whether the observer still needs to hear of it.
func (st *run) finish(ctx context.Context, w Worker, res Result, tell bool) {
	if res.Err == nil && st.r.Preserve {
		p := res.Pair
		if err := preserve(ctx, w.FS(p.Dst.End), p.Dst.Path, p.ModTime, p.Mode); err != nil {
			res.Err = err
			if !tell {
				// The copier reported success; the failure is news.
				st.fail(res.Pair, res.Bytes, err)
				return
			}
		}
	}
	if tell {
		st.obs.FileDone(res.Pair, res.Bytes, res.Err)
	}
	st.done(res)
}

// link creates a symbolic link (-links copy), replacing an existing
// destination file.
func (st *run) link(ctx context.Context, w Worker, p Pair) {
	st.obs.FileStarted(p, 0)
	fsys := w.FS(p.Dst.End)
	err := fsys.Symlink(ctx, p.Link, p.Dst.Path)
	if err != nil && !errors.Is(err, ErrNotSupported) {
		if in, serr := fsys.Stat(ctx, p.Dst.Path); serr == nil && in.Type != TypeDir {
			if rerr := fsys.Remove(ctx, p.Dst.Path, false); rerr == nil {
				err = fsys.Symlink(ctx, p.Link, p.Dst.Path)
			}
		}
	}
	if err != nil {
		err = &linkError{err: err}
	}
	st.obs.FileDone(p, 0, err)
	st.done(Result{Pair: p, Err: err})
}

// linkError is a failed -links copy.
type linkError struct{ err error }

func (e *linkError) Error() string { return "cannot create the symbolic link: " + e.err.Error() }
func (e *linkError) Unwrap() error { return e.err }

// preserve sets the modification time and permission bits of p.
func preserve(ctx context.Context, fsys FS, p string, mt time.Time, mode fs.FileMode) error {
	var errs []error
	if mode != 0 {
		if err := fsys.Chmod(ctx, p, mode); err != nil {
			errs = append(errs, err)
		}
	}
	if !mt.IsZero() {
		if err := fsys.SetModTime(ctx, p, mt); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return &preserveError{err: errors.Join(errs...)}
	}
	return nil
}

// preserveError is a copy whose time or mode could not be set.
type preserveError struct{ err error }

func (e *preserveError) Error() string {
	return "copied, but -preserve failed: " + strings.ReplaceAll(e.err.Error(), "\n", "; ")
}
func (e *preserveError) Unwrap() error { return e.err }
