package transfer

import (
	"context"
	"strings"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
)

// BatchMaxPairs bounds the pairs a worker takes from the queue at once
// (job.Runner.MaxBatch): enough that a batch's start and drain (about a
// round trip each) are rare, while the pipeline's window
// (client.DefaultWindow) bounds what is in flight.
const BatchMaxPairs = batchMaxPairs

// Job is one run of a many-file copy: its workers (for a job.Runner)
// copy the pairs of a job.Plan with the engine's copier, each keeping one
// session per endpoint.
type Job struct {
	e *Engine
	o Options
	// pipeline makes the workers copy small files in pipelined batches
	// (-pp, on by default).
	pipeline bool
	// ends maps endpoint keys to a Location there, for its connection
	// settings; filled while planning, read-only while workers run.
	ends map[string]Location
	// onAuto, when not nil, sees the automatic choice of each file
	// copied on its own (JobRequest.OnAuto).
	onAuto func(job.Pair, *AutoChoice)
}

// NewJob returns a many-file copy with the options o; with pipeline
// its workers copy small files in pipelined batches.
func (e *Engine) NewJob(o Options, pipeline bool) *Job {
	return &Job{e: e, o: o, pipeline: pipeline, ends: map[string]Location{}}
}

// AddEndpoint makes the endpoint of the Remote location l known to the
// job's workers (Plan does it for its source and destination).
func (j *Job) AddEndpoint(l Location) {
	if k := endpointKey(l); k != "" {
		j.ends[k] = l
	}
}

// NewWorker makes a worker with its own sessions; with pipelining it
// copies small files in batches. It is the job.Runner's NewWorker.
func (j *Job) NewWorker() job.Worker {
	w := &cpWorker{j: j, c: &copier{e: j.e, o: j.o, sessions: map[string]*client.Session{}}}
	if j.pipeline {
		return batchWorker{w}
	}
	return w
}

// cpWorker copies pairs with the copier of ferry cp, keeping one session
// per endpoint (and role) between copies.
type cpWorker struct {
	j *Job
	c *copier
}

// loc turns a job Location into a command-line Location.
func (w *cpWorker) loc(l job.Loc) Location {
	if l.Local() {
		return LocalLocation(l.Path)
	}
	b := w.j.ends[l.End]
	b.Path, b.Display = l.Path, l.String()
	return b
}

func (w *cpWorker) FS(end string) job.FS {
	if end == "" {
		return job.Local{}
	}
	s := w.c.session(w.j.ends[end])
	return job.Remote{Conn: s.Conn}
}

func (w *cpWorker) Copy(ctx context.Context, p job.Pair, progress func(int64)) (int64, error) {
	src, dst := w.loc(p.Src), w.loc(p.Dst)
	w.c.prog = func(pr client.Progress) { progress(pr.Bytes) }
	orig := w.c.o
	defer func() { w.c.prog, w.c.o, w.c.sizes, w.c.auto = nil, orig, nil, nil }()
	size := p.Size
	if ch, n := w.c.chooseAuto(ctx, src, dst, size); ch != nil {
		size = n
		if w.j.onAuto != nil {
			w.j.onAuto(p, ch)
		}
	}
	n, err := w.c.copy(ctx, src, dst, size)
	if err == nil {
		// A file written to while it was read arrives torn.
		err = sourceChanged(p)
	}
	return n, err
}

func (w *cpWorker) Close(ctx context.Context) error {
	w.c.closeSessions(ctx)
	return nil
}

// Plan adds the copy of src to dst to plan, looking at both with the
// worker w (of NewWorker).
func (j *Job) Plan(ctx context.Context, w job.Worker, plan *job.Plan, src, dst Location, opts job.Options) error {
	sk, dk := endpointKey(src), endpointKey(dst)
	if sk != "" {
		j.ends[sk] = src
	}
	if dk != "" {
		j.ends[dk] = dst
	}
	// Two endpoints have two sessions: their logins and first looks overlap.
	pl := &job.Planner{Src: w.FS(sk), Dst: w.FS(dk), SrcEnd: sk, DstEnd: dk, Options: opts, Concurrent: sk != dk || sk == ""}
	err := pl.Add(ctx, plan, src.Path, dst.Path)
	if err == nil || strings.HasPrefix(err.Error(), src.String()+": ") || strings.HasPrefix(err.Error(), dst.String()+": ") {
		return err // nil, or it names the Location that failed
	}
	return &OpError{What: src.String() + " -> " + dst.String(), Err: err}
}
