package transfer

// Many-file copies from request to summary: planning the pairs of a
// request, then running the plan with a job.Runner.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/job"
)

// JobRequest is a many-file copy: trees, wildcards, lists of pairs, sync.
type JobRequest struct {
	// Pairs are the sources and destinations, as ParseLocation reads
	// them; standard input and output cannot be used.
	Pairs []job.URLPair
	// FromList says the pairs come from a list file (ferry cp -f): a
	// pair that cannot be parsed or planned fails on its own, its error
	// naming its line, and the others are copied.
	FromList bool
	// Options are those of each copy. Options.Concurrency is the number
	// of workers (0: job.DefaultWorkers); Options.Pipeline copies small
	// files in pipelined batches.
	Options Options
	// Plan says what to copy (recursion, links, sync, delete).
	Plan job.Options
	// Preserve gives copies the source's modification time and
	// permission bits.
	Preserve bool
	// StopAtFailure, with FromList, stops planning at the first pair
	// that fails: it is in Plan.Failed, the pairs after it are
	// JobRun.NotPlanned, and the pairs before it are planned as usual
	// (globus-url-copy without -c copies the lines before a bad one,
	// then stops).
	StopAtFailure bool
	// URLsOnly, with FromList, fails a pair whose source or destination
	// is no URL (scheme://...), as globus-url-copy's -f does; otherwise
	// a local path is taken as a file:// URL.
	URLsOnly bool
}

// JobRun is a planned many-file copy. Plan may be looked at (a dry run)
// before Run copies it; Close ends its sessions.
type JobRun struct {
	Plan *job.Plan
	// OnAuto, when not nil, is called by Run with the automatic choice
	// (Options.Auto) of each file the job copies on its own, before its
	// transfer starts; files copied in pipelined batches get none. It
	// may be called from several goroutines at once.
	OnAuto func(job.Pair, *AutoChoice)

	// NotPlanned are the pairs of a list after the one that stopped
	// planning (JobRequest.StopAtFailure), in list order.
	NotPlanned []job.Pair

	req   JobRequest
	j     *Job
	first job.Worker // planned with; the first worker of Run
}

// PlanJob plans the copies of req. An error is that of the first pair
// that could not be parsed or planned (unless req.FromList: see there).
func (e *Engine) PlanJob(ctx context.Context, req JobRequest) (*JobRun, error) {
	j := e.NewJob(req.Options, req.Options.Pipeline)
	r := &JobRun{Plan: &job.Plan{}, req: req, j: j, first: j.NewWorker()}
	for i, p := range req.Pairs {
		err := r.add(ctx, p)
		if err == nil {
			continue
		}
		if !req.FromList {
			r.Close(ctx)
			return nil, err
		}
		// The failure line names the pair: a server's reply needs
		// only the list line, not the location again.
		var re *client.ReplyError
		if errors.As(err, &re) {
			err = re
		}
		r.Plan.Failed = append(r.Plan.Failed, job.Result{Pair: listPair(p), Err: fmt.Errorf("line %d: %w", p.Line, err)})
		if req.StopAtFailure {
			for _, q := range req.Pairs[i+1:] {
				r.NotPlanned = append(r.NotPlanned, listPair(q))
			}
			break
		}
	}
	return r, nil
}

// isURL reports whether s starts with a URL scheme and "://".
func isURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return false
	}
	for i, c := range scheme {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// add plans the copy of one pair.
func (r *JobRun) add(ctx context.Context, p job.URLPair) error {
	if r.req.URLsOnly && r.req.FromList {
		for _, u := range []string{p.Src, p.Dst} {
			if !isURL(u) {
				return fmt.Errorf("%s: not a URL (scheme://host/path)", u)
			}
		}
	}
	src, err := ParseLocation(p.Src)
	if err != nil {
		return err
	}
	dst, err := ParseLocation(p.Dst)
	if err != nil {
		return err
	}
	if src.Kind == Stdio || dst.Kind == Stdio {
		return errors.New("standard input and output (-) cannot be used with -r, -f, -sync or wildcards")
	}
	return r.j.Plan(ctx, r.first, r.Plan, src, dst, r.req.Plan)
}

// Run copies the plan, obs (when not nil) seeing every file, and
// returns what happened.
func (r *JobRun) Run(ctx context.Context, obs job.Observer) *job.Summary {
	r.j.onAuto = r.OnAuto
	workers := r.req.Options.Concurrency
	if n := r.autoConcurrency(ctx); n > 0 {
		workers = n
	}
	run := &job.Runner{Workers: workers, NewWorker: r.j.NewWorker, Preserve: r.req.Preserve, MaxBatch: BatchMaxPairs}
	if obs != nil {
		run.Observer = obs
	}
	return run.Run(ctx, r.Plan, r.first)
}

// autoConcurrency is the number of workers the advisor suggests for the
// plan, with Options.Auto and no Concurrency given (0: none): from the
// history of the first pair's endpoints, the number of files and their
// mean size. The workers' options record it.
func (r *JobRun) autoConcurrency(ctx context.Context) int {
	o := &r.req.Options
	if !autoWanted(o) || o.Concurrency != 0 || len(r.Plan.Pairs) < 2 {
		return 0
	}
	p := r.Plan.Pairs[0]
	loc := func(l job.Loc) Location {
		if l.Local() {
			return LocalLocation(l.Path)
		}
		return r.j.ends[l.End]
	}
	src, dst := loc(p.Src), loc(p.Dst)
	if src.Kind != Remote && dst.Kind != Remote {
		return 0
	}
	base := r.j.e.autoBaseFor(ctx, src, dst)
	files := len(r.Plan.Pairs)
	in := advisor.Input{Src: src.HistoryEndpoint(), Dst: dst.HistoryEndpoint(), Size: max(r.Plan.Bytes(), 0) / int64(files), Files: files,
		Records: base.records, Probes: base.probes, Kernel: base.kernel}
	in.ClientHost, _ = ClientIdentity()
	n := advisor.Advise(in).Params.Concurrency
	if n < 1 {
		n = job.DefaultWorkers
	}
	n = min(n, files)
	r.j.o.Concurrency = n
	switch w := r.first.(type) {
	case *cpWorker:
		w.c.o.Concurrency = n
	case batchWorker:
		w.c.o.Concurrency = n
	}
	return n
}

// Close ends the sessions of the planning worker (without QUIT once ctx
// is done).
func (r *JobRun) Close(ctx context.Context) error {
	return r.first.Close(ctx)
}

// listPair is the pair of a list line that could not be parsed or
// planned, kept for -df in the URL form given.
func listPair(r job.URLPair) job.Pair {
	loc := func(s string) job.Loc {
		if l, err := ParseLocation(s); err == nil && l.Kind == Remote {
			return job.Loc{End: endpointKey(l), Path: l.Path}
		} else if err == nil && l.Kind == Local {
			return job.Loc{Path: l.Path}
		}
		return job.Loc{Path: s}
	}
	return job.Pair{Src: loc(r.Src), Dst: loc(r.Dst), Size: -1}
}
