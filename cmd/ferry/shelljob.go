package main

// Many-file transfers of ferry shell (get -r, put -r, wildcards, mget,
// mput) through internal/job, as ferry cp -r runs them: the shell plans
// on its own connection, and the runner's workers copy with the copier
// of ferry cp, each with its own session made from the shell's
// connection settings.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/transfer"
)

// jobOptions are the word options of the many-file commands besides -r:
// -cd creates missing destination directories, -cc N copies N files at
// once.
var jobOptions = []string{"cd", "cc="}

// maxShellWorkers bounds -cc, as ferry cp does.
const maxShellWorkers = 256

// rpathDir is rpath keeping a trailing "/", which asks for a directory
// (or a directory's contents as a source).
func (s *shell) rpathDir(p string) string {
	r := s.rpath(p)
	if (strings.HasSuffix(p, "/") || p == ".") && !strings.HasSuffix(r, "/") {
		r += "/"
	}
	return r
}

// lpathDir is lpath keeping a trailing separator.
func (s *shell) lpathDir(p string) string {
	r := s.lpath(p)
	if (strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator))) && !strings.HasSuffix(r, string(filepath.Separator)) {
		r += string(filepath.Separator)
	}
	return r
}

// cpFlags are the ferry cp settings of the shell's transfers.
func (s *shell) cpFlags() cpFlags {
	return cpFlags{
		active:       s.opts.active,
		length:       -1,
		parallel:     s.parallel,
		retries:      defaultRetries,
		interval:     client.DefaultRetryInterval,
		stallTimeout: defaultStallTimeout,
		checksumAlg:  "MD5",
		gsi:          s.opts.gsi,
		history:      s.historyDB,
		concurrency:  max(s.workers, 1),
	}
}

// runJob copies srcs (paths, patterns) to dst, a directory unless one
// source names the tree or file dst becomes: downloads, or uploads with
// upload set. Every file is tried; the failures are listed on standard
// error, prefixed with the command's name, and the error counts them.
func (s *shell) runJob(ctx context.Context, cmd string, upload bool, o shellOpts, srcs []string, dst string) error {
	workers := s.workers
	if v, ok := o["cc"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxShellWorkers {
			return fmt.Errorf("-cc wants 1 to %d", maxShellWorkers)
		}
		workers = n
	}
	end := endpointKey(s.loc)
	remote := job.Remote{Conn: func(ctx context.Context) (*client.Conn, error) { return s.remote(ctx) }}
	pl := &job.Planner{Src: remote, Dst: job.Local{}, SrcEnd: end,
		Options: job.Options{Recursive: o.has("r"), CreateDirs: o.has("r") || o.has("cd")}}
	if upload {
		pl.Src, pl.Dst, pl.SrcEnd, pl.DstEnd = job.Local{}, remote, "", end
		defer s.changed()
	}
	plan := &job.Plan{}
	var problems []error
	for _, src := range srcs {
		if err := pl.Add(ctx, plan, src, dst); err != nil {
			if len(srcs) == 1 {
				return err
			}
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			fmt.Fprintf(s.env.stderr, "%s %s: %s\n", cmd, s.locName(job.Loc{End: pl.SrcEnd, Path: src}), describe(err))
			problems = append(problems, err)
		}
	}
	if len(problems) == len(srcs) {
		return failures(problems, len(problems))
	}

	xo := s.cpFlags().options()
	xo.Concurrency = workers
	j := s.engine().NewJob(xo, false)
	j.AddEndpoint(s.loc.export())
	first := j.NewWorker()
	// After Ctrl-C (ctx done) the sessions close without QUIT.
	defer first.Close(ctx)
	obs := s.newJobDisplay(int64(len(plan.Pairs)+len(plan.Failed)), plan.Bytes())
	r := &job.Runner{Workers: workers, NewWorker: j.NewWorker, Observer: obs}
	sum := r.Run(ctx, plan, first)
	obs.close()

	line := fmt.Sprintf("%s, %s", plural(sum.Files, "file", "files"), plural64(sum.Bytes, "byte", "bytes"))
	if s.interactiveMode {
		d := sum.Elapsed
		line += fmt.Sprintf(" in %s (%s/s)", d.Round(time.Millisecond), progress.Bytes(float64(sum.Bytes)/max(d.Seconds(), 1e-3)))
	}
	if sum.Ignored > 0 {
		line += ", " + plural(sum.Ignored, "directory or link", "directories or links") + " left out"
	}
	if n := len(sum.Failed); n > 0 {
		line += fmt.Sprintf(", %d failed", n)
	}
	fmt.Fprintln(s.env.stdout, line)
	if ctx.Err() != nil {
		// Interrupted: the files not copied all fail for that reason.
		return context.Cause(ctx)
	}
	failed := slices.Clone(sum.Failed)
	slices.SortStableFunc(failed, func(a, b job.Result) int {
		return strings.Compare(s.pairName(a.Pair), s.pairName(b.Pair))
	})
	for _, f := range failed {
		problems = append(problems, f.Err)
		fmt.Fprintf(s.env.stderr, "%s %s: %s\n", cmd, s.pairName(f.Pair), reason(f.Err))
	}
	return failures(problems, len(problems)+sum.Files)
}

// failures is the error of a command that tried all things: nil, the
// error of its only thing, or how many failed (each was reported).
func failures(errs []error, all int) error {
	switch {
	case len(errs) == 0:
		return nil
	case all == 1:
		return errs[0]
	}
	return fmt.Errorf("%d of %d failed", len(errs), all)
}

// locName names a location for the user: relative to the working
// directory where it is below it.
func (s *shell) locName(l job.Loc) string {
	dir, sep := s.cwd, "/"
	if l.Local() {
		dir, sep = s.lcwd, string(filepath.Separator)
	}
	if dir != "" {
		if rel, ok := strings.CutPrefix(l.Path, strings.TrimSuffix(dir, sep)+sep); ok && rel != "" {
			return progress.Printable(rel)
		}
	}
	return progress.Printable(l.Path)
}

// pairName names a pair of a job: its source, or the destination of a
// directory that could not be made.
func (s *shell) pairName(p job.Pair) string {
	if p.Src == (job.Loc{}) {
		return s.locName(p.Dst)
	}
	return s.locName(p.Src)
}

// jobDisplay shows a job of the shell: on a terminal one live display
// for all its files (files done of total, a line per file in flight);
// off a terminal with -vb a line per file.
type jobDisplay struct {
	s    *shell
	live *progress.Display
	mu   sync.Mutex // serializes the -vb lines
}

func (s *shell) newJobDisplay(files, bytes int64) *jobDisplay {
	d := &jobDisplay{s: s}
	if tty, width := terminal(s.env.stderr); tty {
		d.live = progress.New(progress.Options{Out: s.env.stderr, Live: true, Width: width, Clear: true})
		d.live.AddTotal(files, bytes)
		d.live.Start()
	}
	return d
}

func (d *jobDisplay) FileStarted(p job.Pair, size int64) {
	if d.live != nil {
		d.live.FileStarted(d.s.pairName(p), size)
	}
}

func (d *jobDisplay) FileProgress(p job.Pair, bytes int64) {
	if d.live != nil {
		d.live.FileProgress(d.s.pairName(p), bytes)
	}
}

func (d *jobDisplay) FileDone(p job.Pair, bytes int64, err error) {
	if d.live != nil {
		d.live.FileDone(d.s.pairName(p), bytes, err)
		return
	}
	if d.s.verbose && err == nil {
		d.mu.Lock()
		fmt.Fprintf(d.s.env.stderr, "%s: %d bytes\n", d.s.pairName(p), bytes)
		d.mu.Unlock()
	}
}

// close erases the live display.
func (d *jobDisplay) close() {
	if d.live != nil {
		d.live.Close()
	}
}

// engine is the copy engine of the shell's transfers, made on first
// use; runShell closes it.
func (s *shell) engine() *transfer.Engine {
	if s.eng == nil {
		s.eng = newEngine(s.env, s.cpFlags(), false, "shell")
	}
	return s.eng
}

// remoteLoc is the location of the path p on the shell's server.
func (s *shell) remoteLoc(p string) transfer.Location {
	l := s.loc
	l.path, l.display = p, p
	return l.export()
}

// track starts the history record of a get (or with upload a put) of
// size bytes (-1: unknown) between the remote path remote and the local
// file local, made on the shell's own connection.
func (s *shell) track(remote, local string, upload bool, size int64) *transfer.Tracker {
	src, dst := s.remoteLoc(remote), transfer.LocalLocation(local)
	if upload {
		src, dst = dst, src
	}
	return s.engine().Track(src, dst, s.cpFlags().options(), size)
}
