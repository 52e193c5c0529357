package main

// Many-file jobs of ferry cp (-r, wildcards, -f, -sync, -delete) and
// ferry sync: the glue between the command line and internal/job, whose
// workers copy with the copier of cp.go and keep their sessions.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/atomicfile"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/transfer"
)

func init() {
	register(&command{
		name:    "sync",
		summary: "make a destination tree like a source tree (cp -r -sync; -delete removes extras)",
		usage:   "[flags] SRC DST",
		run:     runSync,
	})
}

const syncHelp = `
ferry sync SRC DST is ferry cp -r -sync SRC DST: it copies the files of the
tree SRC that DST lacks or that differ at -sync-level (default 2: a
different size, or a destination older than the source), and with -delete
removes what DST has and SRC has not. -dry-run prints what would change.
A second run changes nothing. The other flags are those of ferry cp.
`

func runSync(ctx context.Context, e *env, args []string) error {
	return runCopy(ctx, e, args, true)
}

// jobFlags are the flags of many-file copies.
type jobFlags struct {
	recursive   bool
	createDirs  bool
	cdSet       bool // -cd given explicitly
	listFile    string
	dumpFile    string
	concurrency int
	pipeline    bool
	sync        bool
	syncLevel   int
	del         bool
	dryRun      bool
	links       string
	preserve    bool
	json        bool
	mirror      bool // ferry sync: a source directory becomes DST
}

// wanted reports whether the flags ask for a job rather than a single
// copy.
func (f *jobFlags) wanted() bool {
	return f.recursive || f.listFile != "" || f.dumpFile != "" || f.sync || f.del || f.dryRun || f.preserve || f.json || f.links != ""
}

// isPattern reports whether a command-line location holds wildcards.
func isPattern(arg string) bool {
	l, err := parseLocation(arg)
	return err == nil && l.kind != locStdio && strings.ContainsAny(l.path, "*?[")
}

// runJob plans and runs the copies reqs.
func runJob(ctx context.Context, e *env, f cpFlags, jf jobFlags, reqs []job.URLPair) error {
	f.concurrency, f.pipeline = jf.concurrency, jf.pipeline
	if f.concurrency == 0 && !f.options().Auto {
		// Automatic: the engine asks the advisor (JobRun.Run).
		f.concurrency = job.DefaultWorkers
	}
	tool := "cp"
	if jf.mirror {
		tool = "sync"
	}
	links := job.LinksFollow
	if jf.links != "" {
		var err error
		if links, err = job.ParseLinkPolicy(jf.links); err != nil {
			return usagef("-links: %v", err)
		}
	}
	eng := newEngine(e, f, false, tool)
	defer closeEngine(eng)
	jr, err := eng.PlanJob(ctx, transfer.JobRequest{
		Pairs:    reqs,
		FromList: jf.listFile != "",
		Options:  f.options(),
		Plan: job.Options{
			Recursive:   jf.recursive,
			CreateDirs:  jf.createDirs,
			Links:       links,
			Sync:        jf.sync,
			SyncLevel:   jf.syncLevel,
			ChecksumAlg: f.checksumAlg,
			Delete:      jf.del,
			Mirror:      jf.mirror,
		},
		Preserve: jf.preserve,
		// globus-url-copy without -c copies the lines of its -f list
		// before a bad one; its lists hold URLs only.
		StopAtFailure: e.stopAtFailure,
		URLsOnly:      e.gucOutput,
	})
	if err != nil {
		return err
	}
	// After Ctrl-C (ctx done) the sessions close without QUIT.
	defer jr.Close(ctx)
	plan := jr.Plan
	if jf.dryRun {
		return printPlan(e, plan, jf.json, f.verbose)
	}
	obs := newJobObserver(e, f, jf, len(plan.Pairs), plan.Bytes())
	defer obs.stop()
	jr.OnAuto = obs.onAuto
	var sum *job.Summary
	if e.stopAtFailure && len(plan.Failed) > 0 && jf.listFile != "" {
		sum = runListUntilFailure(ctx, jr, obs)
	} else if e.stopAtFailure && len(plan.Failed) > 0 {
		sum = &job.Summary{Failed: plan.Failed}
		for _, p := range plan.Pairs {
			sum.Failed = append(sum.Failed, job.Result{Pair: p, Err: errStoppedAtFailure})
		}
	} else {
		sum = jr.Run(ctx, obs)
	}
	obs.stop()
	if jf.dumpFile != "" {
		if err := writeDumpFile(jf.dumpFile, sum); err != nil {
			return err
		}
	}
	obs.summary(sum)
	if !sum.OK() {
		return exitError{code: 1}
	}
	return nil
}

// runListUntilFailure runs a list job whose planning stopped at a bad
// pair (env.stopAtFailure): the pairs of the lines before it are copied
// first, then the bad pair's failure ends the job and the lines after it
// are not copied, as globus-url-copy without -c does. When a copy fails
// first, the bad pair is not reached either.
func runListUntilFailure(ctx context.Context, jr *transfer.JobRun, obs job.Observer) *job.Summary {
	bad := jr.Plan.Failed
	jr.Plan.Failed = nil
	sum := jr.Run(ctx, obs)
	if sum.OK() {
		for _, f := range bad {
			obs.FileDone(f.Pair, 0, f.Err)
		}
		sum.Failed = append(sum.Failed, bad...)
	} else {
		for _, f := range bad {
			sum.Failed = append(sum.Failed, job.Result{Pair: f.Pair, Err: errStoppedAtFailure})
		}
	}
	for _, p := range jr.NotPlanned {
		sum.Failed = append(sum.Failed, job.Result{Pair: p, Err: errStoppedAtFailure})
	}
	return sum
}

// errStoppedAtFailure is the reason of the files a job did not copy
// because an earlier one failed (env.stopAtFailure; the drop-in's
// observer, env.jobFiles, cancels the job with it).
var errStoppedAtFailure = errors.New("not copied: an earlier file failed (without -c, the copy stops at the first failure)")

// reason renders a failure for the user: a server's reply as "CODE text".
func reason(err error) string {
	var oe *opError
	var re *client.ReplyError
	if !errors.As(err, &oe) && errors.As(err, &re) {
		s := err.Error()
		if s == re.Error() {
			return describe(err)
		}
		return strings.Replace(s, re.Error(), describe(re), 1)
	}
	return progress.Printable(strings.ReplaceAll(err.Error(), "\n", "; "))
}

// printPlan prints what a job would do (-dry-run).
func printPlan(e *env, plan *job.Plan, asJSON, verbose bool) error {
	var enc *json.Encoder
	if asJSON {
		enc = json.NewEncoder(e.stdout)
	}
	out := func(action string, src, dst job.Loc, size int64, extra string, facts ...any) {
		if enc != nil {
			rec := map[string]any{"type": "plan", "action": action}
			for i := 0; i+1 < len(facts); i += 2 {
				rec[facts[i].(string)] = facts[i+1]
			}
			if src != (job.Loc{}) {
				rec["src"] = src.String()
			}
			if dst != (job.Loc{}) {
				rec["dst"] = dst.String()
			}
			if size >= 0 && action == "copy" {
				rec["bytes"] = size
			}
			if extra != "" {
				rec["detail"] = extra
			}
			enc.Encode(rec)
			return
		}
		pr := func(l job.Loc) string { return progress.Printable(l.String()) }
		switch action {
		case "copy":
			fmt.Fprintf(e.stdout, "copy %s -> %s (%d bytes)\n", pr(src), pr(dst), size)
		case "link":
			fmt.Fprintf(e.stdout, "link %s -> %s\n", pr(dst), progress.Printable(extra))
		case "fail":
			fmt.Fprintf(e.stdout, "fail %s: %s\n", pr(orLoc(src, dst)), progress.Printable(extra))
		case "skip", "ignore":
			fmt.Fprintf(e.stdout, "%s %s\n", action, pr(orLoc(dst, src)))
		default:
			fmt.Fprintf(e.stdout, "%s %s\n", action, pr(dst))
		}
	}
	var mkdirs int
	for _, d := range plan.Dirs {
		if d.Create {
			mkdirs++
			out("mkdir", job.Loc{}, d.Dst, -1, "")
		}
	}
	for _, p := range plan.Pairs {
		if p.Link != "" {
			out("link", p.Src, p.Dst, -1, p.Link)
		} else {
			// The source's facts, when known, as globus-url-copy's
			// dump files have them (guc.go -do).
			var facts []any
			if !p.ModTime.IsZero() {
				facts = append(facts, "modify", p.ModTime.Unix())
			}
			if p.Mode != 0 {
				facts = append(facts, "mode", fmt.Sprintf("%04o", p.Mode.Perm()))
			}
			out("copy", p.Src, p.Dst, p.Size, "", facts...)
		}
	}
	for _, d := range plan.Deletes {
		out("delete", job.Loc{}, d.Loc, -1, "")
	}
	if verbose || asJSON {
		for _, p := range plan.Skipped {
			out("skip", p.Src, p.Dst, -1, "up to date")
		}
		for _, l := range plan.Ignored {
			out("ignore", l, job.Loc{}, -1, "")
		}
	}
	for _, f := range plan.Failed {
		out("fail", f.Pair.Src, f.Pair.Dst, -1, reason(f.Err))
	}
	if enc != nil {
		return enc.Encode(map[string]any{"type": "plan-summary", "files": len(plan.Pairs), "bytes": plan.Bytes(),
			"mkdirs": mkdirs, "deletes": len(plan.Deletes), "skipped": len(plan.Skipped), "failed": len(plan.Failed)})
	}
	fmt.Fprintf(e.stdout, "dry run: %s (%s) to copy, %s to create, %d to delete, %d up to date, %d failed\n",
		plural(len(plan.Pairs), "file", "files"), humanBytes(float64(plan.Bytes())), plural(mkdirs, "directory", "directories"), len(plan.Deletes), len(plan.Skipped), len(plan.Failed))
	return nil
}

func orLoc(a, b job.Loc) job.Loc {
	if a != (job.Loc{}) {
		return a
	}
	return b
}

// writeDumpFile writes the failed pairs of a job to name (-df) in the -f
// format, or removes name when nothing failed.
func writeDumpFile(name string, sum *job.Summary) error {
	if sum.OK() {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	var b bytes.Buffer
	err := job.WriteList(&b, sum.Failed)
	if err == nil {
		err = atomicfile.Write(name, b.Bytes())
	}
	if err != nil {
		return fmt.Errorf("write -df file: %w", err)
	}
	return nil
}

// readListFile reads a -f file ("-" is standard input).
func readListFile(e *env, name string) ([]job.URLPair, error) {
	var r io.Reader = e.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	pairs, err := job.ParseList(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pairs, nil
}

// jobObserver reports a job's files: failures (and with -v every file)
// on stderr, or with -json one record per file on stdout; with -vb the
// total progress every second.
type jobObserver struct {
	e      *env
	f      cpFlags
	jf     jobFlags
	files  int
	bytes  int64
	enc    *json.Encoder
	ticker *time.Ticker
	quit   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	pp     *progressPrinter
	live   *progress.Display // on a terminal, unless -q or -json

	mu        sync.Mutex
	done      int64                    // bytes of finished files; guarded by mu
	running   map[runKey]int64         // bytes of running files; guarded by mu
	predicted map[runKey]time.Duration // the automatic choice's ETA of a file; guarded by mu
	start     time.Time
}

// onAuto takes the automatic choice of a file (transfer.JobRequest.OnAuto):
// its predicted ETA goes into the file's -json record.
func (o *jobObserver) onAuto(p job.Pair, a *transfer.AutoChoice) {
	if a.ETA <= 0 {
		return
	}
	o.mu.Lock()
	o.predicted[pairKey(p)] = a.ETA
	o.mu.Unlock()
}

// progressJSON writes a -json -vb progress object: the bytes so far, the
// mean rate and the ETA at that rate (0: unknown).
func (o *jobObserver) progressJSON() {
	n := o.total()
	secs := max(time.Since(o.start).Seconds(), 1e-6)
	rate := float64(n) / secs
	eta := 0.0
	if o.bytes > 0 && rate > 0 && n < o.bytes {
		eta = float64(o.bytes-n) / rate
	}
	o.mu.Lock()
	o.enc.Encode(map[string]any{"type": "progress", "bytes": n, "total_bytes": o.bytes, "bytes_per_second": rate, "eta": eta})
	o.mu.Unlock()
}

func newJobObserver(e *env, f cpFlags, jf jobFlags, files int, bytes int64) *jobObserver {
	o := &jobObserver{e: e, f: f, jf: jf, files: files, bytes: bytes, running: map[runKey]int64{}, quit: make(chan struct{}),
		predicted: map[runKey]time.Duration{}, start: time.Now()}
	if jf.json {
		o.enc = json.NewEncoder(e.stdout)
	}
	tty, _ := terminal(e.stderr)
	switch {
	case tty && !f.quiet && !jf.json:
		o.live = newProgressDisplay(e.stderr, f.progress, false)
		o.live.AddTotal(int64(files), bytes)
		o.live.Start()
	case f.progress && !f.quiet && jf.json:
		// -json -vb: progress objects with the live ETA on stdout.
		o.everySecond(o.progressJSON)
	case f.progress && !f.quiet:
		o.pp = newProgressPrinter(e.stderr)
		o.everySecond(func() { o.pp.update(client.Progress{Bytes: o.total()}) })
	}
	return o
}

// everySecond calls report once a second until stop.
func (o *jobObserver) everySecond(report func()) {
	o.ticker = time.NewTicker(time.Second)
	o.wg.Go(func() {
		for {
			select {
			case <-o.quit:
				return
			case <-o.ticker.C:
				report()
			}
		}
	})
}

// liveName is a file's key in the live display: its source path (or its
// destination's when it has no source), cheap to make for every event.
func liveName(p job.Pair) string {
	if p.Src.Path != "" {
		return p.Src.Path
	}
	return p.Dst.Path
}

// stop ends the -vb reports.
func (o *jobObserver) stop() {
	o.once.Do(func() {
		close(o.quit)
		if o.ticker != nil {
			o.ticker.Stop()
		}
		o.wg.Wait()
		if o.live != nil {
			o.live.Close()
		}
		if o.pp != nil {
			o.pp.update(client.Progress{Bytes: o.total()})
			o.pp.done()
		}
	})
}

func (o *jobObserver) total() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.done
	for _, b := range o.running {
		n += b
	}
	return n
}

// runKey names a running file. (Loc.URL would make a local path
// absolute, which costs system calls three times per file.)
type runKey struct{ src, dst job.Loc }

func pairKey(p job.Pair) runKey { return runKey{p.Src, p.Dst} }

func (o *jobObserver) FileStarted(p job.Pair, size int64) {
	if o.e.jobFiles != nil {
		o.e.jobFiles.FileStarted(p, size)
	}
	if o.live != nil {
		o.live.FileStarted(liveName(p), size)
	}
	o.mu.Lock()
	o.running[pairKey(p)] = 0
	o.mu.Unlock()
}

func (o *jobObserver) FileProgress(p job.Pair, bytes int64) {
	if o.e.jobFiles != nil {
		o.e.jobFiles.FileProgress(p, bytes)
	}
	if o.live != nil {
		o.live.FileProgress(liveName(p), bytes)
	}
	o.mu.Lock()
	if _, ok := o.running[pairKey(p)]; ok {
		o.running[pairKey(p)] = bytes
	}
	o.mu.Unlock()
}

func (o *jobObserver) FileDone(p job.Pair, bytes int64, err error) {
	if o.live != nil {
		o.live.FileDone(liveName(p), bytes, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.running, pairKey(p))
	o.done += bytes
	if o.e.jobFiles != nil {
		o.e.jobFiles.FileDone(p, bytes, err)
	}
	switch {
	case o.enc != nil:
		rec := map[string]any{"type": "file", "bytes": bytes, "ok": err == nil}
		if d, ok := o.predicted[pairKey(p)]; ok {
			rec["predicted_eta"] = d.Seconds()
			delete(o.predicted, pairKey(p))
		}
		if p.Src != (job.Loc{}) {
			rec["src"] = p.Src.String()
		}
		if p.Dst != (job.Loc{}) {
			rec["dst"] = p.Dst.String()
		}
		if p.Link != "" {
			rec["link"] = p.Link
		}
		if err != nil {
			rec["error"] = reason(err)
		}
		o.enc.Encode(rec)
	case err != nil && o.f.verbose && !o.f.quiet:
		fmt.Fprintf(o.e.stderr, "failed: %s: %s\n", pairText(p), reason(err))
	case err == nil && o.f.verbose && !o.f.quiet:
		fmt.Fprintf(o.e.stderr, "%s: %d bytes\n", pairText(p), bytes)
	}
}

// pairText names a pair in messages.
func pairText(p job.Pair) string {
	switch {
	case p.Src == (job.Loc{}):
		return progress.Printable(p.Dst.String())
	case p.Dst == (job.Loc{}):
		return progress.Printable(p.Src.String())
	}
	return progress.Printable(p.Src.String() + " -> " + p.Dst.String())
}

// maxListedFailures bounds the failures the text summary lists.
const maxListedFailures = 50

// summary prints the end of a job: one JSON object with -json, else
// a line of totals and the failures with their reasons on stderr.
func (o *jobObserver) summary(s *job.Summary) {
	secs := max(s.Elapsed.Seconds(), 1e-6)
	failed := append([]job.Result(nil), s.Failed...)
	sort.SliceStable(failed, func(a, b int) bool { return pairText(failed[a].Pair) < pairText(failed[b].Pair) })
	if o.enc != nil {
		fails := make([]map[string]string, 0, len(failed))
		for _, f := range failed {
			fails = append(fails, map[string]string{"src": locText(f.Pair.Src), "dst": locText(f.Pair.Dst), "error": reason(f.Err)})
		}
		o.mu.Lock()
		o.enc.Encode(map[string]any{"type": "summary", "files": s.Files, "bytes": s.Bytes, "skipped": s.Skipped,
			"ignored": s.Ignored, "dirs_created": s.Dirs, "deleted": s.Deleted, "failed": len(failed),
			"seconds": s.Elapsed.Seconds(), "bytes_per_second": float64(s.Bytes) / secs, "failures": fails})
		o.mu.Unlock()
		return
	}
	w := o.e.stderr
	// Files under a directory that could not be made are counted under
	// that directory's failure, not listed one by one.
	var under []string
	belowBad := map[string]int{}
	listed := failed[:0:0]
	for _, f := range failed {
		var de *job.DirError
		if errors.As(f.Err, &de) {
			k := de.Dir.String()
			if belowBad[k] == 0 {
				under = append(under, k)
			}
			belowBad[k]++
			continue
		}
		listed = append(listed, f)
	}
	if !o.f.quiet || len(failed) > 0 {
		fmt.Fprintf(w, "%s, %s in %v (%s/s)", plural(s.Files, "file", "files"), humanBytes(float64(s.Bytes)), s.Elapsed.Round(time.Millisecond), humanBytes(float64(s.Bytes)/secs))
		if s.Skipped > 0 {
			fmt.Fprintf(w, ", %d up to date", s.Skipped)
		}
		if s.Ignored > 0 {
			fmt.Fprintf(w, ", %d ignored", s.Ignored)
		}
		if s.Dirs > 0 {
			fmt.Fprintf(w, ", %s created", plural(s.Dirs, "directory", "directories"))
		}
		if s.Deleted > 0 {
			fmt.Fprintf(w, ", %d deleted", s.Deleted)
		}
		if len(listed) > 0 {
			fmt.Fprintf(w, ", %d FAILED", len(listed))
		}
		if n := len(failed) - len(listed); n > 0 {
			fmt.Fprintf(w, ", %d not copied", n)
		}
		fmt.Fprintln(w)
	}
	for _, d := range under {
		n := belowBad[d]
		fmt.Fprintf(w, "not copied: %s below %s (it could not be created)\n", plural(n, "file", "files"), progress.Printable(d))
	}
	for i, f := range listed {
		if i == maxListedFailures {
			more := fmt.Sprintf("... and %d more", len(listed)-i)
			if o.jf.dumpFile != "" {
				more += " (all are in " + o.jf.dumpFile + ")"
			}
			fmt.Fprintln(w, more)
			break
		}
		fmt.Fprintf(w, "failed: %s: %s\n", pairText(f.Pair), reason(f.Err))
	}
}

func locText(l job.Loc) string {
	if l == (job.Loc{}) {
		return ""
	}
	return l.String()
}

// runList lists a directory like globus-url-copy -list: the URL, then
// one name per line, directories with a trailing "/".
func runList(ctx context.Context, e *env, f cpFlags, arg string) error {
	l, err := parseLocation(arg)
	if err != nil {
		return usagef("%v", err)
	}
	if l.kind == locStdio {
		return usagef("-list wants a URL or a local directory")
	}
	f.history = hist.OffDSN // lists, copies nothing
	eng := newEngine(e, f, false, "cp")
	defer closeEngine(eng)
	j := eng.NewJob(f.options(), false)
	j.AddEndpoint(l.export())
	k := endpointKey(l)
	w := j.NewWorker()
	defer w.Close(ctx)
	fsys := w.FS(k)
	in, err := fsys.Stat(ctx, l.path)
	if err != nil {
		return &opError{What: l.String(), Err: err}
	}
	entries := []job.Info{in}
	if in.Type == job.TypeDir {
		if entries, err = fsys.ReadDir(ctx, l.path); err != nil {
			return &opError{What: l.String(), Err: err}
		}
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].Name < entries[b].Name })
	fmt.Fprintln(e.stdout, l.String())
	for _, en := range entries {
		if in.Type == job.TypeDir && strings.HasPrefix(en.Name, ".") {
			continue // hidden, as ferry ls without -a shows them
		}
		name := en.Name
		if en.Type == job.TypeDir {
			name += "/"
		}
		fmt.Fprintf(e.stdout, "    %s\n", name)
	}
	return nil
}
