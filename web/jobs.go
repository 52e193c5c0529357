package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/probe"
	"github.com/ferrygrid/ferry/transfer"
)

// copyRequest names what a drag (or the copy button) copies: entries
// of the source pane's directory into the destination pane's directory.
type copyRequest struct {
	Src    string   `json:"src"`    // endpoint id
	SrcDir string   `json:"srcDir"` // directory of Names
	Names  []string `json:"names"`
	// Sync copies only the files missing at the destination or
	// different there (in size, or older).
	Sync   bool   `json:"sync,omitempty"`
	Dst    string `json:"dst"`
	DstDir string `json:"dstDir"`
	// Params, for a job, are the parameters the user confirmed.
	Params *jobParams `json:"params,omitempty"`
}

// jobParams are the editable parameters of a copy.
type jobParams struct {
	Parallel  int   `json:"parallel"`
	TCPBuffer int64 `json:"tcpBuffer"`
	BlockSize int64 `json:"blockSize"`
	// PredictedETA is the advisor's ETA in seconds, recorded with the copy.
	PredictedETA float64 `json:"predictedEta"`
}

// item is one file of a job.
type item struct {
	src, dst string
	size     int64
	mtime    time.Time // the source's; zero when unknown
}

// adviceReply is what the dialog shows before a copy starts.
type adviceReply struct {
	Files  int       `json:"files"`
	Bytes  int64     `json:"bytes"`
	Params jobParams `json:"params"`
	Mode   string    `json:"mode"`
	// Rate is the predicted rate in bytes per second, ETA and its range
	// in seconds; 0 when unknown.
	Rate    float64 `json:"rate"`
	ETA     float64 `json:"eta"`
	ETALow  float64 `json:"etaLow"`
	ETAHigh float64 `json:"etaHigh"`
	Basis   string  `json:"basis"`
	Reason  string  `json:"reason"`
}

// resolve checks a copy request against u's endpoints and expands its
// directories into files.
func (a *App) resolve(ctx context.Context, u *userState, req copyRequest) (src, dst *endpoint, items []item, err error) {
	if src, err = a.endpointByID(ctx, u, req.Src); err == nil {
		dst, err = a.endpointByID(ctx, u, req.Dst)
	}
	if errors.Is(err, errPinned) {
		return nil, nil, nil, fmt.Errorf("%w: %v", errNoEndpoint, err)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if src == nil || dst == nil {
		return nil, nil, nil, errNoEndpoint
	}
	if len(req.Names) == 0 {
		return nil, nil, nil, errors.New("nothing to copy")
	}
	if len(req.Names) > 10000 {
		return nil, nil, nil, errors.New("too many names")
	}
	srcDir, dstDir := src.clean(req.SrcDir), dst.clean(req.DstDir)
	if src.local {
		if _, err := src.rel(srcDir); err != nil {
			return nil, nil, nil, err
		}
	}
	if dst.local {
		if _, err := dst.rel(dstDir); err != nil {
			return nil, nil, nil, err
		}
	}
	// What the names are: one listing of their directory.
	es, err := src.list(ctx, srcDir)
	if err != nil {
		return nil, nil, nil, err
	}
	// The files' local ends are checked through their roots, opened
	// once for the whole tree.
	ends, err := openEnds(src, dst)
	if err != nil {
		return nil, nil, nil, err
	}
	defer ends.close()
	byName := map[string]entry{}
	for _, e := range es {
		byName[e.Name] = e
	}
	for _, n := range req.Names {
		if err := checkName(n); err != nil {
			return nil, nil, nil, err
		}
		e, ok := byName[n]
		if !ok {
			return nil, nil, nil, fmt.Errorf("%s: not found in %s", n, srcDir)
		}
		if err := a.expand(ctx, ends, src.join(srcDir, n), dst.join(dstDir, n), e, &items, 0); err != nil {
			return nil, nil, nil, err
		}
	}
	if req.Sync {
		items = a.unsynced(ctx, dst, items)
	}
	return src, dst, items, nil
}

// unsynced returns the items whose destination is missing, of another
// size, or older than the source.
func (a *App) unsynced(ctx context.Context, dst *endpoint, items []item) []item {
	dirs := map[string]map[string]entry{} // destination directory → its entries
	var out []item
	for _, it := range items {
		dir, name := path.Dir(it.dst), path.Base(it.dst)
		if dst.local {
			dir, name = filepath.Dir(it.dst), filepath.Base(it.dst)
		}
		es, ok := dirs[dir]
		if !ok {
			es = map[string]entry{}
			if list, err := dst.list(ctx, dir); err == nil {
				for _, e := range list {
					es[e.Name] = e
				}
			}
			dirs[dir] = es
		}
		e, ok := es[name]
		if ok && e.Type == "file" && e.Size == it.size && !it.mtime.IsZero() && !e.MTime.Before(it.mtime) {
			continue
		}
		out = append(out, it)
	}
	return out
}

var errNoEndpoint = errors.New("no such endpoint")

// maxItems bounds the files of one job.
const maxItems = 100000

func (a *App) expand(ctx context.Context, ends copyEnds, sp, dp string, e entry, items *[]item, depth int) error {
	if len(*items) >= maxItems || depth > 64 {
		return errors.New("too many files or too deep a tree")
	}
	src, dst := ends.src, ends.dst
	switch e.Type {
	case "file":
		if err := ends.check(sp, dp); err != nil {
			return err
		}
		*items = append(*items, item{src: sp, dst: dp, size: e.Size, mtime: e.MTime})
	case "dir":
		es, err := src.list(ctx, sp)
		if err != nil {
			return err
		}
		for _, c := range es {
			if checkName(c.Name) != nil {
				continue
			}
			if err := a.expand(ctx, ends, src.join(sp, c.Name), dst.join(dp, c.Name), c, items, depth+1); err != nil {
				return err
			}
		}
	default:
		// Symbolic links and others are not followed.
	}
	return nil
}

func (a *App) advise(ctx context.Context, u *userState, src, dst *endpoint, items []item) adviceReply {
	var total int64
	for _, it := range items {
		total += max(it.size, 0)
	}
	in := advisor.Input{Src: src.historyEndpoint(), Dst: dst.historyEndpoint(), Files: len(items), Kernel: probe.KernelLimits()}
	if len(items) > 0 {
		in.Size = total / int64(len(items))
	}
	in.ClientHost, _ = os.Hostname()
	// The advisor learns from the whole site's history: parameters and
	// rates, not paths, reach the user, and its reason names no host of
	// another user's transfers (in.User).
	in.User = u.name
	if recs, err := a.cfg.History.Records(ctx, history.Filter{Limit: 20000}); err == nil {
		in.Records = recs
	} else {
		a.cfg.Log.Warn("web: history not read", "err", err)
	}
	if ps, err := a.cfg.History.Probes(ctx, history.Filter{Limit: 2000}); err == nil {
		in.Probes = ps
	}
	adv := advisor.Advise(in)
	return adviceReply{
		Files: len(items), Bytes: total,
		Params: jobParams{Parallel: max(adv.Params.Parallel, 1), TCPBuffer: int64(adv.Params.TCPBuffer), BlockSize: int64(adv.Params.BlockSize), PredictedETA: adv.ETA.Seconds()},
		Mode:   adv.Params.Mode, Rate: adv.PredictedRate,
		ETA: adv.ETA.Seconds(), ETALow: adv.ETALow.Seconds(), ETAHigh: adv.ETAHigh.Seconds(),
		Basis: string(adv.Basis), Reason: adv.Reason,
	}
}

func (a *App) advice(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	var req copyRequest
	if !readJSON(w, r, &req) {
		return
	}
	ctx, cancel := resolveContext(r.Context())
	defer cancel()
	src, dst, items, err := a.resolve(ctx, u, req)
	if err != nil {
		resolveError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a.advise(ctx, u, src, dst, items))
}

func resolveError(w http.ResponseWriter, err error) {
	if errors.Is(err, errNoEndpoint) {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	opError(w, err)
}

// Job states.
const (
	stateQueued    = "queued"
	stateRunning   = "running"
	stateDone      = "done"
	stateFailed    = "failed"
	stateCancelled = "cancelled"
)

// job is one copy the user started: files from one pane to the other.
// Its fields are guarded by the owner's userState.mu.
type job struct {
	ID      string    `json:"id"`
	Src     string    `json:"src"`
	Dst     string    `json:"dst"`
	Names   []string  `json:"names"`
	State   string    `json:"state"`
	Error   string    `json:"error,omitempty"`
	Files   int       `json:"files"`
	Done    int       `json:"done"`
	Current string    `json:"current,omitempty"`
	Bytes   int64     `json:"bytes"`
	Total   int64     `json:"total"`
	Rate    float64   `json:"rate"`              // bytes per second, mean so far
	ETA     float64   `json:"eta"`               // seconds; 0 unknown
	Streams []float64 `json:"streams,omitempty"` // bytes per second of each data connection of the current file
	Params  jobParams `json:"params"`
	// Verified names the checksum algorithm that verified every file
	// of a finished job ("" when not verified: two local ends).
	Verified string `json:"verified,omitempty"`
	// Resume: a retry resumes partial files.
	Resume bool `json:"resume,omitempty"`
	// LFN, for the copy of a logical file (catalogue_copy.go), is its
	// name ("/cms/f"); Replica the replica being copied, or copied from
	// once done; Notes say why replicas tried before it failed.
	LFN     string    `json:"lfn,omitempty"`
	Replica string    `json:"replica,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
	Created time.Time `json:"created"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`

	cancel context.CancelFunc
	items  []item
	src    *endpoint // nil for an LFN copy
	dst    *endpoint
}

func (a *App) startJob(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	var req copyRequest
	if !readJSON(w, r, &req) {
		return
	}
	if !a.roomForJob(w, u) {
		return
	}
	ctx, cancel := resolveContext(r.Context())
	defer cancel()
	src, dst, items, err := a.resolve(ctx, u, req)
	if err != nil {
		resolveError(w, err)
		return
	}
	p := jobParams{Parallel: 1}
	if req.Params != nil {
		p = *req.Params
	}
	p.Parallel = min(max(p.Parallel, 1), 64)
	p.TCPBuffer = min(max(p.TCPBuffer, 0), 1<<30)
	p.BlockSize = min(max(p.BlockSize, 0), 64<<20)
	j := &job{
		ID: newToken()[:16], Src: src.Base + src.clean(req.SrcDir), Dst: dst.Base + dst.clean(req.DstDir), Names: req.Names,
		Params: p, items: items, src: src, dst: dst,
	}
	if a.site != nil {
		a.siteEnqueue(w, r, u, j)
		return
	}
	writeJSON(w, http.StatusOK, a.enqueue(u, j))
}

// siteEnqueue queues j of u in the site's database.
func (a *App) siteEnqueue(w http.ResponseWriter, r *http.Request, u *userState, j *job) {
	j.State, j.Files, j.Created = stateQueued, len(j.items), time.Now().UTC()
	for _, it := range j.items {
		j.Total += max(it.size, 0)
	}
	if err := a.site.insertJob(r.Context(), u.name, j); err != nil {
		writeError(w, http.StatusServiceUnavailable, "jobs: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// enqueue starts j for u and returns a snapshot of it.
func (a *App) enqueue(u *userState, j *job) job {
	j.State, j.Files, j.Created = stateQueued, len(j.items), time.Now().UTC()
	for _, it := range j.items {
		j.Total += max(it.size, 0)
	}
	ctx, cancel := context.WithCancel(a.ctx)
	j.cancel = cancel
	u.mu.Lock()
	u.jobs[j.ID] = j
	u.order = append(u.order, j.ID)
	u.forgetLocked()
	u.bumpLocked()
	snap := *j
	u.mu.Unlock()
	a.wg.Go(func() { a.run(ctx, u, j) })
	return snap
}

// copyEnds are the two endpoints of a copy, with the roots of the
// local ones open (nil for a server).
type copyEnds struct {
	src, dst         *endpoint
	srcRoot, dstRoot *os.Root
}

// openEnds opens the roots of src and dst that are local.
func openEnds(src, dst *endpoint) (copyEnds, error) {
	e := copyEnds{src: src, dst: dst}
	var err error
	if src.local {
		if e.srcRoot, err = src.openRoot(); err != nil {
			return copyEnds{}, err
		}
	}
	if dst.local {
		if e.dstRoot, err = dst.openRoot(); err != nil {
			e.close()
			return copyEnds{}, err
		}
	}
	return e, nil
}

// close closes the open roots.
func (e copyEnds) close() {
	for _, r := range []*os.Root{e.srcRoot, e.dstRoot} {
		if r != nil {
			r.Close()
		}
	}
}

// check checks the local ends of a copy of sp to dp against their roots
// (endpoint.checkLocal).
func (e copyEnds) check(sp, dp string) error {
	if e.src.local {
		if err := e.src.checkLocal(e.srcRoot, sp); err != nil {
			return err
		}
	}
	if e.dst.local {
		return e.dst.checkLocal(e.dstRoot, dp)
	}
	return nil
}

// retryJob runs a failed or cancelled job again, resuming its partial
// files.
func (a *App) retryJob(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	if a.site != nil {
		a.siteRetry(w, r, u)
		return
	}
	u.mu.Lock()
	old := u.jobs[r.PathValue("id")]
	var state string
	if old != nil {
		state = old.State
	}
	u.mu.Unlock()
	if old == nil {
		writeError(w, http.StatusNotFound, "no such job")
		return
	}
	if state != stateFailed && state != stateCancelled {
		writeError(w, http.StatusConflict, "only a failed or cancelled job can be retried")
		return
	}
	if !a.roomForJob(w, u) {
		return
	}
	if old.LFN != "" {
		// Its destination is checked again when it runs.
		j := &job{ID: newToken()[:16], Src: old.Src, Dst: old.Dst, Names: old.Names, LFN: old.LFN, items: old.items, dst: old.dst}
		writeJSON(w, http.StatusOK, a.enqueue(u, j))
		return
	}
	// The tree may have changed since: check the items again (the
	// engine confines every open to the roots all the same).
	ends, err := openEnds(old.src, old.dst)
	if err != nil {
		opError(w, err)
		return
	}
	defer ends.close()
	for _, it := range old.items {
		if err := ends.check(it.src, it.dst); err != nil {
			opError(w, err)
			return
		}
	}
	j := &job{
		ID: newToken()[:16], Src: old.Src, Dst: old.Dst, Names: old.Names,
		Params: old.Params, Resume: true, items: old.items, src: old.src, dst: old.dst,
	}
	writeJSON(w, http.StatusOK, a.enqueue(u, j))
}

// roomForJob answers 429 and returns false when u has
// Config.MaxJobsPerUser jobs queued or running.
func (a *App) roomForJob(w http.ResponseWriter, u *userState) bool {
	var n int
	if a.site != nil {
		var err error
		if n, err = a.site.active(a.ctx, u.name); err != nil {
			writeError(w, http.StatusServiceUnavailable, "jobs: "+err.Error())
			return false
		}
	} else {
		u.mu.Lock()
		n = u.activeLocked()
		u.mu.Unlock()
	}
	if n >= a.cfg.MaxJobsPerUser {
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%d copies are queued or running already: wait for some to finish", n))
		return false
	}
	return true
}

// run copies j's files one after the other with the user's engine. A
// job first takes one of its user's running slots, then one of the
// app's: a user's queue holds at most MaxRunningPerUser of the app's
// slots, and the users' jobs waiting for one take them in turn (in
// the order they came to wait, at most MaxRunningPerUser per user).
func (a *App) run(ctx context.Context, u *userState, j *job) {
	defer j.cancel()
	select {
	case u.running <- struct{}{}:
		defer func() { <-u.running }()
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		select {
		case a.slots <- struct{}{}:
			defer func() { <-a.slots }()
		case <-ctx.Done():
		}
	}
	if j.LFN != "" {
		a.executeLFN(ctx, u, j)
		return
	}
	a.execute(ctx, u, j)
}

// execute copies j's files with u's engine, updating j under u.mu as
// it goes, and leaves j in its final state.
func (a *App) execute(ctx context.Context, u *userState, j *job) {
	u.mu.Lock()
	j.State, j.Started = stateRunning, time.Now().UTC()
	u.bumpLocked()
	u.mu.Unlock()
	// Every local file of the job is opened through its endpoint's
	// root, at the moment the engine uses it.
	ends, err := openEnds(j.src, j.dst)
	if err != nil {
		u.mu.Lock()
		defer u.mu.Unlock()
		j.Ended = time.Now().UTC()
		j.State, j.Error = stateFailed, err.Error()
		u.bumpLocked()
		return
	}
	defer ends.close()
	o := transfer.Options{Length: -1, Parallel: j.Params.Parallel, TCPBuffer: j.Params.TCPBuffer, BlockSize: j.Params.BlockSize,
		Auto: true, PredictedETA: time.Duration(j.Params.PredictedETA * float64(time.Second)),
		Restart: j.Resume, Retries: 2, RetryInterval: time.Second}
	if !j.src.local || !j.dst.local {
		// Each file's checksum is compared after its copy.
		o.Verify, o.ChecksumAlg = true, verifyAlg
	}
	var before int64 // bytes of the files done
	for i, it := range j.items {
		if ctx.Err() != nil {
			break
		}
		u.mu.Lock()
		j.Current = it.src
		u.bumpLocked()
		u.mu.Unlock()
		if a.beforeItem != nil {
			a.beforeItem(i)
		}
		lastT := time.Now()
		var lastStreams []int64
		req := transfer.Request{Src: j.src.location(it.src, ends.srcRoot), Dst: j.dst.location(it.dst, ends.dstRoot), Options: o, CreateDirs: true}
		var res transfer.Result
		res, err = u.engine.Copy(ctx, req, func(e transfer.Event) {
			if e.Kind != transfer.EventProgress {
				return
			}
			now := time.Now()
			u.mu.Lock()
			defer u.mu.Unlock()
			j.Bytes = before + e.Progress.Bytes
			if el := now.Sub(j.Started).Seconds(); el > 0 {
				j.Rate = float64(j.Bytes) / el
				if j.Rate > 0 && j.Total > j.Bytes {
					j.ETA = float64(j.Total-j.Bytes) / j.Rate
				} else {
					j.ETA = 0
				}
			}
			// Each stream's rate since the last report (the file's start
			// for a stream new since then).
			if dt := now.Sub(lastT).Seconds(); dt > 0 {
				j.Streams = make([]float64, len(e.Progress.Streams))
				for k, b := range e.Progress.Streams {
					var prev int64
					if k < len(lastStreams) {
						prev = lastStreams[k]
					}
					j.Streams[k] = float64(max(b-prev, 0)) / dt
				}
			}
			lastT, lastStreams = now, append(lastStreams[:0], e.Progress.Streams...)
			u.bumpLocked()
		})
		before += max(res.Bytes, it.size)
		if err != nil {
			break
		}
		u.mu.Lock()
		j.Done = i + 1
		j.Bytes = before
		u.bumpLocked()
		u.mu.Unlock()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if j.endLocked(ctx, err) && o.Verify {
		j.Verified = o.ChecksumAlg
	}
	u.bumpLocked()
}

// endLocked ends j's run, which returned err: its end time and rate, no
// current file, and the state cancelled, failed (with the error) or done,
// which it reports. The caller holds the user's mu and fills in what a
// done job of its kind adds.
func (j *job) endLocked(ctx context.Context, err error) (done bool) {
	j.Ended = time.Now().UTC()
	j.Current, j.ETA, j.Streams = "", 0, nil
	if el := j.Ended.Sub(j.Started).Seconds(); el > 0 {
		j.Rate = float64(j.Bytes) / el
	}
	switch {
	case ctx.Err() != nil:
		j.State = stateCancelled
	case err != nil:
		j.State, j.Error = stateFailed, sanitize(transfer.Describe(err))
	default:
		j.State = stateDone
		return true
	}
	return false
}

// verifyAlg is the checksum algorithm of copies and of the checksum
// button: one GCT and Ferry servers both offer.
const verifyAlg = "MD5"

type checksumReply struct {
	Alg string `json:"alg"`
	Sum string `json:"sum"`
}

// checksum computes a file's checksum where it lies: on the server
// (CKSM), or here for a local file.
func (a *App) checksum(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	a.fileOp(w, r, u, func(ctx context.Context, ep *endpoint, req fileOpRequest) (any, error) {
		sum, err := ep.checksum(ctx, ep.join(req.Dir, req.Name))
		if err != nil {
			return nil, err
		}
		return checksumReply{Alg: verifyAlg, Sum: sum}, nil
	})
}

// maxJobs bounds the jobs a user's list keeps: the oldest finished ones
// go (the history keeps them).
const maxJobs = 200

// forgetLocked drops the oldest finished jobs beyond maxJobs; u.mu must
// be held.
func (u *userState) forgetLocked() {
	for i := 0; len(u.order) > maxJobs && i < len(u.order); {
		j := u.jobs[u.order[i]]
		if j.State == stateQueued || j.State == stateRunning {
			i++
			continue
		}
		delete(u.jobs, j.ID)
		u.order = append(u.order[:i], u.order[i+1:]...)
	}
}

// snapshotLocked copies u's jobs, oldest first; u.mu must be held.
func (u *userState) snapshotLocked() []job {
	out := make([]job, 0, len(u.order))
	for _, id := range u.order {
		j := *u.jobs[id]
		j.Names = append([]string(nil), j.Names...)
		j.Streams = append([]float64(nil), j.Streams...)
		j.Notes = append([]string(nil), j.Notes...)
		out = append(out, j)
	}
	return out
}

func (a *App) listJobs(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	if a.site != nil {
		jobs, err := a.site.jobs(r.Context(), u.name)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "jobs: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, jobs)
		return
	}
	u.mu.Lock()
	jobs := u.snapshotLocked()
	u.mu.Unlock()
	writeJSON(w, http.StatusOK, jobs)
}

func (a *App) cancelJob(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	if a.site != nil {
		ok, err := a.site.cancel(r.Context(), u.name, r.PathValue("id"))
		switch {
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, "jobs: "+err.Error())
		case !ok:
			writeError(w, http.StatusNotFound, "no such job")
		default:
			writeJSON(w, http.StatusOK, struct{}{})
		}
		return
	}
	u.mu.Lock()
	j := u.jobs[r.PathValue("id")]
	u.mu.Unlock()
	if j == nil {
		writeError(w, http.StatusNotFound, "no such job")
		return
	}
	j.cancel()
	writeJSON(w, http.StatusOK, struct{}{})
}

// events streams the user's jobs as Server-Sent Events: a "jobs" event
// with all of them at each change, at most every 200 ms.
func (a *App) events(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	live := func() bool {
		if a.site != nil {
			s2, err := a.site.session(r.Context(), s.token)
			return err != nil || s2 != nil // a database error does not end the stream
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.sessions[s.token] == s && time.Now().Before(s.expires)
	}
	u.mu.Lock()
	if u.streams >= maxStreamsPerUser {
		u.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "too many event streams open: close some tabs")
		return
	}
	u.streams++
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.streams--
		u.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	// The stream outlives the server's ReadTimeout, which is for
	// reading requests (a GET has no body to read).
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if a.site != nil {
		a.siteEvents(w, r, rc, u.name, live)
		return
	}
	var seen uint64 = ^uint64(0)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		u.mu.Lock()
		v, ch := u.version, u.changed
		var jobs []job
		if v != seen {
			jobs = u.snapshotLocked()
		}
		u.mu.Unlock()
		if v != seen {
			seen = v
			b, _ := json.Marshal(jobs)
			if _, err := fmt.Fprintf(w, "event: jobs\ndata: %s\n\n", b); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			// Coalesce bursts of progress.
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			case <-a.ctx.Done():
				return
			}
		}
		select {
		case <-ch:
		case <-keepalive.C:
			if !live() {
				return // logged out
			}
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			rc.Flush()
		case <-r.Context().Done():
			return
		case <-a.ctx.Done():
			return
		}
	}
}

// historyRow is one past transfer as the history table shows it.
type historyRow struct {
	ID       int64     `json:"id"`
	Start    time.Time `json:"start"`
	Kind     string    `json:"kind"`
	Src      string    `json:"src"`
	Dst      string    `json:"dst"`
	Size     int64     `json:"size"`
	Bytes    int64     `json:"bytes"`
	Seconds  float64   `json:"seconds"`
	Rate     float64   `json:"rate"`
	Outcome  string    `json:"outcome"`
	Error    string    `json:"error,omitempty"`
	Parallel int       `json:"parallel"`
	Buffer   int       `json:"buffer"`
	Link     string    `json:"link"` // "source host → destination host"
}

// hostText names an endpoint's host for a link: host:port, or "local".
func hostText(e history.Endpoint) string {
	if e.Scheme == "file" || e.Host == "" {
		return "local"
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

func endpointText(e history.Endpoint, p string) string {
	if e.Scheme == "file" || e.Host == "" {
		return "file://" + p
	}
	return fmt.Sprintf("%s://%s:%d%s", e.Scheme, e.Host, e.Port, p)
}

// history lists the user's own transfers made with ferry web.
func (a *App) history(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	// The store selects the user's records, then applies the limit.
	recs, err := a.cfg.History.Records(r.Context(), history.Filter{Limit: 5000, Outcome: r.URL.Query().Get("outcome"), User: u.name, Tool: "web"})
	if err != nil {
		writeError(w, http.StatusBadGateway, "history: "+err.Error())
		return
	}
	out := []historyRow{}
	for _, rec := range recs {
		if rec.Tool != "web" || rec.User != u.name {
			continue
		}
		out = append(out, historyRow{
			ID: rec.ID, Start: rec.Start, Kind: rec.Kind,
			Src: endpointText(rec.Src, rec.SrcPath), Dst: endpointText(rec.Dst, rec.DstPath),
			Size: rec.Size, Bytes: rec.Bytes, Seconds: rec.Duration.Seconds(), Rate: rec.Rate(),
			Outcome: rec.Outcome, Error: rec.Error, Parallel: rec.Params.Parallel, Buffer: rec.Params.TCPBuffer,
			Link: hostText(rec.Src) + " → " + hostText(rec.Dst),
		})
	}
	writeJSON(w, http.StatusOK, out)
}
