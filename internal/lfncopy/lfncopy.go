// Package lfncopy copies a logical file (an LFN of the replica
// catalogue, package replica) to a destination: its replicas ranked by
// the rate the advisor predicts, tried in turn with the copy engine
// (transfer.Engine.CopyAny), the copy written under a temporary name
// beside the destination and checked against the catalogue's checksum
// before it replaces the destination. A replica whose copy differs is
// marked bad in the catalogue, one whose copy matches is marked ok.
//
// ferry cp, sync, shell and replicate (cmd/ferry) and ferry web (package
// web) share it; flags, printing and multi-source copies stay with
// them.
package lfncopy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/transfer"
)

// Copier copies logical files. Its fields are set before the first copy
// and not changed afterwards; it may run several copies at once.
type Copier struct {
	// Catalogue holds the names, their replicas and checksums; copies
	// mark the replicas they try. Never nil.
	Catalogue *replica.Catalogue
	// Engine runs the copies. Never nil.
	Engine *transfer.Engine
	// Dial connects to the server of a Remote destination, to see
	// whether it is a directory, to checksum, rename and remove the
	// copy. Nil means Engine.Dial, or an anonymous login when that is
	// nil too.
	Dial func(ctx context.Context, l transfer.Location) (*client.Conn, error)
	// Evidence ranks the replicas (replica.Predict).
	Evidence replica.Evidence
	// TrustRemoteSums lets the checksum a Remote destination's server
	// reports (CKSM) mark the replica copied from, as a checksum
	// computed here of a Local destination always does. Set it only for
	// a user who may change the catalogue anyway (ferry cp, replicate):
	// a server the user chose could otherwise report a wrong sum for
	// every replica and mark them all bad (the web leaves it false).
	TrustRemoteSums bool
}

// Request is one copy of a logical file.
type Request struct {
	// Entry is the name, as the catalogue holds it.
	Entry replica.Entry
	// Dst is the destination file: Local (with its Root, if any) or
	// Remote; a Remote Dst that is an existing directory, or ends in
	// "/", receives the file under the name's base name.
	Dst transfer.Location
	// Options are the engine's options of the copy (its Verify is not
	// needed: the catalogue's checksum is compared).
	Options transfer.Options
	// CreateDirs creates the missing directories above Dst.
	CreateDirs bool
}

// Result is what a copy did.
type Result struct {
	transfer.Result
	// URL is the replica copied from, as the catalogue names it.
	URL string
	// Dst is the destination written: Request.Dst, completed by the
	// base name for a remote directory.
	Dst transfer.Location
}

// Candidates are the source locations of e's usable replicas, best
// first (replica.Rank of replica.Predict), for a copy to dst, and a map
// from each location's Display to its replica's URL in the catalogue.
// It fails when e has no replica left to try.
func (c *Copier) Candidates(e replica.Entry, dst transfer.Location) (srcs []transfer.Location, urls map[string]string, err error) {
	ranked := replica.Rank(replica.Predict(e, dst.HistoryEndpoint(), c.Evidence))
	urls = map[string]string{}
	for _, cd := range ranked {
		l, err := transfer.ParseLocation(cd.Replica.URL)
		if err != nil || l.Kind != transfer.Remote {
			continue
		}
		srcs = append(srcs, l)
		urls[l.Display] = cd.Replica.URL
	}
	if len(srcs) == 0 {
		bad := 0
		for _, r := range e.Replicas {
			if r.State == replica.Bad {
				bad++
			}
		}
		if len(e.Replicas) == 0 {
			return nil, nil, fmt.Errorf("%s has no replicas", replica.Format(e.LFN))
		}
		return nil, nil, fmt.Errorf("%s has no usable replica (%d of %d are marked bad; ferry replica verify checks them again)", replica.Format(e.LFN), bad, len(e.Replicas))
	}
	return srcs, urls, nil
}

// Copy copies req.Entry to req.Dst from the first of its ranked
// replicas that works and whose copy has the catalogue's checksum. The
// copy is written under a temporary name beside the destination
// (".BASE" + StageSuffix + random) and renamed onto it once verified:
// an existing destination is replaced by verified bytes or left as it
// was. A replica whose copy differs is marked bad, the one copied from
// ok, when the checksum was computed here (a local destination). on, when not nil, receives the engine's events: an EventStart per
// replica tried (Src.Display maps to its URL through Candidates'
// map, or see Result.URL), an EventNote when one failed.
func (c *Copier) Copy(ctx context.Context, req Request, on func(transfer.Event)) (Result, error) {
	en := req.Entry
	out := Result{Dst: req.Dst}
	srcs, urls, err := c.Candidates(en, req.Dst)
	if err != nil {
		return out, err
	}
	sd, err := c.stage(ctx, req.Dst, path.Base(en.LFN))
	if err != nil {
		return out, err
	}
	out.Dst = sd.dst
	committed := false
	defer func() {
		if !committed {
			c.discard(ctx, sd)
		}
	}()
	check := func(ctx context.Context, res transfer.Result) error {
		sum, remove, err := c.sum(ctx, res.Dst, en.Alg)
		if err != nil {
			return err
		}
		// Only a checksum computed here (a local copy), or a remote one
		// when the user may change the catalogue anyway, changes the
		// catalogue's state of a replica (TrustRemoteSums).
		trusted := res.Dst.Kind == transfer.Local || c.TrustRemoteSums
		if sum == en.Sum {
			if trusted {
				_ = c.Catalogue.Mark(ctx, en.LFN, urls[res.Src.Display], replica.OK, en.Size, sum, time.Now(), "")
			}
			return nil
		}
		remove()
		note := fmt.Sprintf("a copy had %s %s, not %s", en.Alg, sum, en.Sum)
		if !trusted {
			return fmt.Errorf("checksum mismatch: %s (measured by the destination server; the replica's state is left as it was)", note)
		}
		_ = c.Catalogue.Mark(ctx, en.LFN, urls[res.Src.Display], replica.Bad, -1, sum, time.Now(), note)
		return fmt.Errorf("checksum mismatch: %s; marked bad", note)
	}
	treq := transfer.Request{Dst: sd.stage, Options: req.Options, CreateDirs: req.CreateDirs}
	res, _, err := c.Engine.CopyAny(ctx, srcs, treq, check, nil, on)
	out.Result = res
	if err != nil {
		var all *transfer.AllSourcesError
		if errors.As(err, &all) && len(all.Errs) > 0 {
			return out, fmt.Errorf("%s: no replica could be copied (%d tried); the last: %s", replica.Format(en.LFN), len(all.Errs), all.Errs[len(all.Errs)-1])
		}
		return out, err
	}
	if err := c.commit(ctx, sd); err != nil {
		return out, err
	}
	committed = true
	out.URL = urls[res.Src.Display]
	return out, nil
}

// StageSuffix marks the temporary files of copies of logical files.
const StageSuffix = ".ferry-lfn-"

// staged is the temporary name a copy is written under until it is
// verified.
type staged struct {
	dst   transfer.Location // the destination proper
	stage transfer.Location // beside it; shown as dst
}

// dial connects to the server of l.
func (c *Copier) dial(ctx context.Context, l transfer.Location) (*client.Conn, error) {
	switch {
	case c.Dial != nil:
		return c.Dial(ctx, l)
	case c.Engine.Dial != nil:
		return c.Engine.Dial(ctx, l)
	}
	conn, err := client.Dial(ctx, l.Addr, &client.Config{})
	if err != nil {
		return nil, &transfer.OpError{What: "connect to " + l.Addr, Err: err}
	}
	user, pass := l.User, l.Pass
	if !l.HasUser {
		user, pass = "anonymous", "ferry@"
	}
	if err := conn.Login(ctx, user, pass); err != nil {
		conn.Close()
		return nil, &transfer.OpError{What: "login to " + l.Addr + " as " + user, Err: err}
	}
	return conn, nil
}

// hangUp ends a connection politely, or at once when ctx is done.
func hangUp(ctx context.Context, conn *client.Conn) {
	if ctx.Err() != nil {
		conn.Close()
		return
	}
	qctx, cancel := context.WithTimeout(ctx, transfer.QuitTimeout)
	defer cancel()
	_ = conn.Quit(qctx)
}

// stage picks the temporary name of a copy to dst. A remote dst that is
// an existing directory receives the file as base.
func (c *Copier) stage(ctx context.Context, dst transfer.Location, base string) (staged, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return staged{}, err
	}
	tag := StageSuffix + hex.EncodeToString(b[:])
	s := staged{dst: dst}
	switch dst.Kind {
	case transfer.Local:
		// A destination outside its Root is refused before any replica
		// is read.
		if _, err := rootName(dst, dst.Path); err != nil {
			return staged{}, err
		}
		s.stage = dst
		s.stage.Path = filepath.Join(filepath.Dir(dst.Path), "."+filepath.Base(dst.Path)+tag)
	case transfer.Remote:
		if strings.HasSuffix(dst.Path, "/") {
			s.dst.Path += base
			s.dst.Display = strings.TrimSuffix(dst.Display, "/") + "/" + base
		} else {
			conn, err := c.dial(ctx, dst)
			if err != nil {
				return staged{}, err
			}
			if in, err := conn.Stat(ctx, dst.Path); err == nil && in.Type == "dir" {
				s.dst.Path = strings.TrimSuffix(dst.Path, "/") + "/" + base
				s.dst.Display = strings.TrimSuffix(dst.Display, "/") + "/" + base
			}
			hangUp(ctx, conn)
		}
		s.stage = s.dst
		s.stage.Path = path.Join(path.Dir(s.dst.Path), "."+path.Base(s.dst.Path)+tag)
	default:
		return staged{}, fmt.Errorf("%s: a logical file is copied to a file or a server", dst)
	}
	return s, nil
}

// rootName is the local path p of l as l.Root takes it (relative to
// it); p itself when l has no Root.
func rootName(l transfer.Location, p string) (string, error) {
	if l.Root == nil {
		return p, nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.Root.Name(), p)
	}
	rel, err := filepath.Rel(l.Root.Name(), filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", &os.PathError{Op: "open", Path: p, Err: transfer.ErrEscape}
	}
	return rel, nil
}

// localDo runs f on the local path p of l: through l.Root when set.
func localDo(l transfer.Location, p string, byName func(string) error, inRoot func(*os.Root, string) error) error {
	if l.Root == nil {
		return byName(p)
	}
	n, err := rootName(l, p)
	if err != nil {
		return err
	}
	return inRoot(l.Root, n)
}

// LocalSum is the alg checksum of the local file of l (through its
// Root, when set).
func LocalSum(ctx context.Context, l transfer.Location, alg string) (string, error) {
	var fh *os.File
	err := localDo(l, l.Path,
		func(p string) (err error) { fh, err = os.Open(p); return err },
		func(r *os.Root, n string) (err error) { fh, err = r.Open(n); return err })
	if err != nil {
		return "", err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return "", err
	}
	return checksum.Compute(ctx, fh, fi.Size(), 0, -1, alg)
}

// removeLocal removes the local path p of l.
func removeLocal(l transfer.Location, p string) {
	_ = localDo(l, p, os.Remove, func(r *os.Root, n string) error { return r.Remove(n) })
}

// sum is the checksum of the copy at dst, and a function that removes
// it.
func (c *Copier) sum(ctx context.Context, dst transfer.Location, alg string) (sum string, remove func(), err error) {
	if dst.Kind == transfer.Local {
		sum, err = LocalSum(ctx, dst, alg)
		return sum, func() { removeLocal(dst, dst.Path) }, err
	}
	conn, err := c.dial(ctx, dst)
	if err != nil {
		return "", func() {}, err
	}
	sum, err = conn.Checksum(ctx, alg, dst.Path, 0, -1)
	remove = func() {
		_ = conn.Delete(ctx, dst.Path)
		hangUp(ctx, conn)
	}
	if err != nil {
		remove()
		return "", func() {}, &transfer.OpError{What: alg + " checksum of " + dst.Display, Err: err}
	}
	hangUp(ctx, conn)
	return sum, func() {
		conn, err := c.dial(ctx, dst)
		if err != nil {
			return
		}
		_ = conn.Delete(ctx, dst.Path)
		hangUp(ctx, conn)
	}, nil
}

// commit renames the verified copy onto the destination.
func (c *Copier) commit(ctx context.Context, s staged) error {
	if s.dst.Kind == transfer.Local {
		err := localDo(s.dst, s.stage.Path,
			func(p string) error { return os.Rename(p, s.dst.Path) },
			func(r *os.Root, n string) error {
				to, err := rootName(s.dst, s.dst.Path)
				if err != nil {
					return err
				}
				return r.Rename(n, to)
			})
		if err != nil {
			return &transfer.OpError{What: "rename the verified copy to " + s.dst.Display, Err: err}
		}
		return nil
	}
	conn, err := c.dial(ctx, s.dst)
	if err != nil {
		return err
	}
	defer hangUp(ctx, conn)
	if err := conn.Rename(ctx, s.stage.Path, s.dst.Path); err != nil {
		return &transfer.OpError{What: "rename the verified copy " + s.stage.Path + " to " + s.dst.Display, Err: err}
	}
	return nil
}

// discard removes what is left of the temporary copy: the file, and
// the resume state of a download written in place.
func (c *Copier) discard(ctx context.Context, s staged) {
	if s.dst.Kind == transfer.Local {
		removeLocal(s.stage, s.stage.Path)
		removeLocal(s.stage, s.stage.Path+transfer.RangesSuffix)
		return
	}
	// Also after the copy was cancelled: a stray file is left otherwise.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	conn, err := c.dial(ctx, s.dst)
	if err != nil {
		return
	}
	defer hangUp(ctx, conn)
	if _, err := conn.Stat(ctx, s.stage.Path); err == nil {
		_ = conn.Delete(ctx, s.stage.Path)
	}
}
