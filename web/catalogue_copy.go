package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/lfncopy"
	"github.com/ferrygrid/ferry/internal/probe"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/transfer"
)

// Copying a logical file into a pane: POST /api/catalogue/copy starts a
// job, listed with the user's other jobs, that copies the LFN from its
// best replica into the pane's directory as ferry cp lfn:/X DIR/ does
// (package lfncopy): replicas ranked by predicted rate, the next tried
// when one fails, the copy checked against the catalogue's checksum
// before it replaces the destination, a replica whose copy differs
// marked bad in the catalogue.

// lfnCopyRequest is the body of POST /api/catalogue/copy.
type lfnCopyRequest struct {
	LFN    string `json:"lfn"`    // "/cms/f" or "lfn:/cms/f"
	Dst    string `json:"dst"`    // endpoint id
	DstDir string `json:"dstDir"` // the directory the file goes into
}

// maxJobNotes bounds the notes (failed replicas) a job keeps.
const maxJobNotes = 20

// parseLFNArg is an LFN given as a path or a lfn: URL.
func parseLFNArg(v string) (string, error) {
	if v == "" {
		return "", errors.New("which LFN? (lfn: /path)")
	}
	if replica.IsLFN(v) {
		return replica.ParseLFN(v)
	}
	return replica.ParseLFN(replica.Scheme + v)
}

// catalogueCopy serves POST /api/catalogue/copy: a job copying one LFN
// into a directory of one of the user's endpoints.
func (a *App) catalogueCopy(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	var req lfnCopyRequest
	if !readJSON(w, r, &req) {
		return
	}
	c := a.catalogue(w)
	if c == nil {
		return
	}
	if a.site != nil {
		// Site jobs are rows another instance may run; LFN copies are
		// not among the kinds it knows.
		writeError(w, http.StatusNotImplemented, "copying an LFN is not available in site mode yet: use ferry cp lfn:/PATH")
		return
	}
	lfn, err := parseLFNArg(req.LFN)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !a.roomForJob(w, u) {
		return
	}
	ctx, cancel := resolveContext(r.Context())
	defer cancel()
	dst, err := a.endpointByID(ctx, u, req.Dst)
	if errors.Is(err, errPinned) {
		err = fmt.Errorf("%w: %v", errNoEndpoint, err)
	}
	if err == nil && dst == nil {
		err = errNoEndpoint
	}
	if err != nil {
		resolveError(w, err)
		return
	}
	en, err := c.Lookup(ctx, lfn)
	if errors.Is(err, replica.ErrNotFound) {
		if below, _, _ := c.Children(ctx, lfn, "", 1); len(below) > 0 {
			writeError(w, http.StatusBadRequest, replica.Format(lfn)+" is a directory of names, not a file: copy its files one by one")
			return
		}
		writeError(w, http.StatusNotFound, "unknown LFN "+replica.Format(lfn))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	name := path.Base(en.LFN)
	if err := checkName(name); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	dstDir := dst.clean(req.DstDir)
	dp := dst.join(dstDir, name)
	if dst.local {
		if err := a.checkLocalDst(dst, dstDir, dp); err != nil {
			opError(w, err)
			return
		}
	}
	j := &job{
		ID: newToken()[:16], Src: replica.Format(lfn), Dst: dst.Base + dstDir, Names: []string{name}, LFN: lfn,
		items: []item{{src: lfn, dst: dp, size: en.Size}}, dst: dst,
	}
	writeJSON(w, http.StatusOK, a.enqueue(u, j))
}

// checkLocalDst checks that the local directory dir of dst, and the
// file dp in it, lie in dst's root.
func (a *App) checkLocalDst(dst *endpoint, dir, dp string) error {
	if _, err := dst.rel(dir); err != nil {
		return err
	}
	root, err := dst.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	return dst.checkLocal(root, dp)
}

// executeLFN runs the LFN copy j of u and leaves j in its final state.
func (a *App) executeLFN(ctx context.Context, u *userState, j *job) {
	u.mu.Lock()
	j.State, j.Started = stateRunning, time.Now().UTC()
	u.bumpLocked()
	u.mu.Unlock()
	res, alg, err := a.copyLFN(ctx, u, j)
	u.mu.Lock()
	defer u.mu.Unlock()
	if j.endLocked(ctx, err) {
		j.Done, j.Bytes, j.Verified = 1, res.Bytes, alg
		j.Replica = sanitize(res.Src.Display)
	}
	u.bumpLocked()
}

// copyLFN copies j's LFN with u's engine (its dial obeys the network
// policy and uses u's proxy for gsiftp:// replicas), updating j under
// u.mu. It returns the result and the checksum algorithm that verified
// it.
func (a *App) copyLFN(ctx context.Context, u *userState, j *job) (lfncopy.Result, string, error) {
	c := a.cfg.Catalogue
	if c == nil {
		return lfncopy.Result{}, "", errors.New("this ferry web has no replica catalogue")
	}
	// The catalogue as it is now: a replica may have been marked bad
	// since the job was queued.
	en, err := c.Lookup(ctx, j.LFN)
	if errors.Is(err, replica.ErrNotFound) {
		return lfncopy.Result{}, "", errors.New("unknown LFN " + replica.Format(j.LFN))
	}
	if err != nil {
		return lfncopy.Result{}, "", err
	}
	u.mu.Lock()
	j.Total = en.Size
	u.bumpLocked()
	u.mu.Unlock()
	it := j.items[0]
	var dst transfer.Location
	if j.dst.local {
		root, err := j.dst.openRoot()
		if err != nil {
			return lfncopy.Result{}, "", err
		}
		defer root.Close()
		if err := j.dst.checkLocal(root, it.dst); err != nil {
			return lfncopy.Result{}, "", err
		}
		dst = j.dst.location(it.dst, root)
	} else {
		dst = j.dst.location(it.dst, nil)
	}
	cp := &lfncopy.Copier{Catalogue: c, Engine: u.engine, Evidence: a.evidence(ctx)}
	o := transfer.Options{Length: -1, Auto: true, Retries: 2, RetryInterval: time.Second}
	res, err := cp.Copy(ctx, lfncopy.Request{Entry: en, Dst: dst, Options: o, CreateDirs: true}, func(e transfer.Event) {
		now := time.Now()
		u.mu.Lock()
		defer u.mu.Unlock()
		switch e.Kind {
		case transfer.EventStart:
			// A new replica: the bytes start again from zero.
			j.Replica, j.Current, j.Bytes, j.Streams = sanitize(e.Src.Display), sanitize(e.Src.Display), 0, nil
		case transfer.EventProgress:
			j.Bytes = e.Progress.Bytes
			if el := now.Sub(j.Started).Seconds(); el > 0 {
				j.Rate = float64(j.Bytes) / el
				if j.Rate > 0 && j.Total > j.Bytes {
					j.ETA = float64(j.Total-j.Bytes) / j.Rate
				} else {
					j.ETA = 0
				}
			}
		case transfer.EventNote:
			if len(j.Notes) < maxJobNotes {
				j.Notes = append(j.Notes, sanitize(e.Note))
			}
		default:
			return
		}
		u.bumpLocked()
	})
	return res, en.Alg, err
}

// evidence is what ranks replicas: the site's history and this host's
// limits, as the advisor of a copy reads them.
func (a *App) evidence(ctx context.Context) replica.Evidence {
	ev := replica.Evidence{Kernel: probe.KernelLimits()}
	ev.ClientHost, _ = os.Hostname()
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if recs, err := a.cfg.History.Records(hctx, history.Filter{Limit: 1000}); err == nil {
		ev.Records = recs
	}
	if ps, err := a.cfg.History.Probes(hctx, history.Filter{Limit: 200}); err == nil {
		ev.Probes = ps
	}
	return ev
}
