package pi

// ERET and ESTO with processing modules (package dpm):
//
//	ERET NAME="PARAMS" PATH   the module chain's output for PATH
//	ESTO NAME="PARAMS" PATH   the data, run back through the chain, stored at PATH
//
// The output of tar or cat alone is laid out ahead from a walk of the
// tree (dpm.Chain.Open) and made on demand at any offset, so it is sent
// like any file while it is read. Any other ERET chain's output has no
// size until it is made, and MODE E sends ranges of a file of known
// size, so the chain writes it to a temporary file first, which is then
// sent like any file (REST ranges apply to it). An ESTO runs its chain
// while the data arrives: the data channel writes into a reorder.Buffer
// (MODE E blocks arrive out of order) that the chain reads in order.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dpm"
	"github.com/ferrygrid/ferry/internal/reorder"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// featModules is the FEAT line listing the processing modules clients
// may name in ERET and ESTO ("DPM gzip,tar"; docs/modules.md), or ""
// when the server allows none. GCT has no such line (its "DSI" line names
// the storage back-end), so this one is Ferry's.
func featModules(allowed []string) string {
	var names []string
	for _, n := range allowed {
		if m, found := dpm.Lookup(n); found && !slices.Contains(names, m.Name) {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return "DPM " + strings.Join(names, ",")
}

// moduleRefusal is the reply refusing a module chain that Resolve or
// ParseSpec rejected.
func moduleRefusal(verb string, err error) wire.Reply {
	var me *dpm.ModuleError
	switch {
	case errors.As(err, &me) && errors.Is(err, dpm.ErrNotAllowed):
		return ok(504, "%s module %s is not allowed on this server.", verb, me.Name)
	case errors.As(err, &me) && errors.Is(err, dpm.ErrUnknown):
		return ok(504, "%s module %s is not known to this server.", verb, me.Name)
	case errors.As(err, &me):
		return ok(504, "%s module %s cannot be used here: %s.", verb, me.Name, reason(err))
	}
	return ok(501, "Syntax: %s <module>=\"<parameters>\" <path>.", verb)
}

// moduleFailure is the reply to a module chain that failed on the data.
func moduleFailure(s *session, verb string, err error, arg string) wire.Reply {
	var me *dpm.ModuleError
	switch {
	case errors.Is(err, xfer.ErrAborted), errors.Is(err, errControlLost), errors.Is(err, context.Canceled):
		return ok(426, "Transfer aborted.")
	case errors.Is(err, ErrShuttingDown):
		return ok(426, "Transfer aborted: server shutting down.")
	case errors.As(err, new(*xfer.DataError)):
		return s.transferReply(err, fmt.Sprintf(" Nothing was stored at %s.", arg))
	case errors.Is(err, dpm.ErrUnsafe), errors.Is(err, dpm.ErrLimit), errors.Is(err, dpm.ErrCorrupt), errors.Is(err, dpm.ErrSyntax):
		name := ""
		if errors.As(err, &me) {
			name = me.Name + " "
		}
		s.log.Info("module refused the data", "verb", verb, "path", arg, "err", err)
		return ok(553, "%s module %srefused: %s.", verb, name, reason(err))
	case errors.As(err, &me) && !errors.Is(err, dsi.ErrNotExist) && !errors.Is(err, dsi.ErrPermission) &&
		!errors.Is(err, dsi.ErrReadOnly) && !errors.Is(err, dsi.ErrNotDir) && !errors.Is(err, dsi.ErrIsDir) && !errors.Is(err, dsi.ErrExist):
		s.log.Error("module failed", "verb", verb, "path", arg, "err", err)
		return ok(451, "%s module %s failed; local error in processing.", verb, me.Name)
	}
	return fsError(s, err, arg)
}

// moduleLimits are the bounds a module chain works within.
func (s *session) moduleLimits() dpm.Limits {
	l := dpm.Limits{MaxBytes: s.cfg.ModuleMaxBytes}
	if l.MaxBytes <= 0 {
		l.MaxBytes = dpm.DefaultMaxBytes
	}
	return l
}

// retrieveModule runs ERET NAME="PARAMS" PATH.
func (s *session) retrieveModule(ctx context.Context, arg string) wire.Reply {
	rest, hasRest := s.takeRest()
	sp, err := dpm.ParseSpec(arg)
	if err != nil {
		return moduleRefusal("ERET", err)
	}
	chain, err := dpm.Resolve(sp, s.cfg.AllowedModules, false)
	if err != nil {
		return moduleRefusal("ERET", err)
	}
	if hasRest && s.mode == xfer.ModeStream && !streamRestart(rest) {
		return restNeedsModeE
	}
	p := s.abs(sp.Path)
	env := dpm.Env{Storage: s.fs, Path: p, Limits: s.moduleLimits()}
	// tar or cat alone: the output is laid out from a walk of the tree and
	// made on demand as the DTP reads it, at any offset; no spool.
	var l *dpm.Layout
	var laid bool
	err = s.runCancellable(ctx, func(ctx context.Context) error {
		var err error
		l, laid, err = chain.Open(ctx, env)
		return err
	})
	if laid || err != nil {
		if err != nil {
			return moduleFailure(s, "ERET", err, sp.Path)
		}
		defer l.Close()
		reply := s.sendFile(ctx, "ERET", p, l, 0, -1, rest)
		if changed := l.Changed(); changed != nil && reply.Code != 226 {
			s.log.Info("a file changed during ERET", "modules", chain.Names(), "path", p, "err", changed)
			reply = ok(451, "ERET module %s failed: %s; transfer incomplete.", chain.Names()[0], reason(changed))
		}
		return reply
	}
	spool, err := os.CreateTemp("", "ferry-eret-*")
	if err != nil {
		s.log.Error("cannot make a temporary file for ERET", "err", err)
		return ok(451, "Local error in processing.")
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	start := time.Now()
	err = s.runCancellable(ctx, func(ctx context.Context) error {
		return chain.Retrieve(ctx, env, spool)
	})
	if err != nil {
		return moduleFailure(s, "ERET", err, sp.Path)
	}
	size, err := spool.Seek(0, io.SeekEnd)
	if err != nil {
		return ok(451, "Local error in processing.")
	}
	s.log.Debug("module output ready", "modules", chain.Names(), "path", p, "bytes", size, "duration", time.Since(start).Round(time.Millisecond))
	return s.sendFile(ctx, "ERET", p, &spoolReader{File: spool, size: size}, 0, -1, rest)
}

// spoolReader serves a temporary file as a dsi.Reader; the caller
// closes the file.
type spoolReader struct {
	*os.File
	size int64
}

func (r *spoolReader) Size() int64  { return r.size }
func (r *spoolReader) Close() error { return nil }

// storeModule runs ESTO NAME="PARAMS" PATH and reports whether its data
// channel started.
func (s *session) storeModule(ctx context.Context, arg string) (wire.Reply, bool) {
	rest, hasRest := s.takeRest()
	// An ALLO before ESTO is not always the size of the data: GCT's
	// globus-url-copy -smn M -dmn M between two servers announces the
	// source file's SIZE, and the source's module changes it; but then
	// it is the size of what the chain decodes (storeComplete).
	allo := s.allo
	s.allo = -1
	sp, err := dpm.ParseSpec(arg)
	if err != nil {
		return moduleRefusal("ESTO", err), false
	}
	chain, err := dpm.Resolve(sp, s.cfg.AllowedModules, true)
	if err != nil {
		return moduleRefusal("ESTO", err), false
	}
	if hasRest && len(rest.Ranges()) > 0 {
		return ok(554, "REST is not supported with ESTO modules: send the data again from its start."), false
	}
	p := s.abs(sp.Path)
	if xfer.IsPartName(p) {
		return partNameRefused(sp.Path), false
	}
	done, free := s.cfg.Uploads.begin(s.uploadKeys(ctx, p, true))
	if !free {
		return ok(450, "%s: another upload to this file is in progress; try again later.", sp.Path), false
	}
	defer done()
	limits := s.moduleLimits()
	// The chain reads the data in order while it arrives: MODE E blocks
	// that come ahead of the read front wait in buf (in memory up to a
	// window, then in a temporary file), so the unpacking overlaps the
	// transfer instead of following it.
	buf := reorder.New(reorder.Config{Limit: limits.MaxBytes})
	var received atomic.Int64 // the data channel's byte count, once it ended in order
	env := dpm.Env{Storage: s.fs, Path: p, Limits: limits, Commit: func(out int64) error {
		// A single file is committed only after the reader's EOF, that is
		// after the data channel ended and was checked (received is set);
		// a sink (tar) commits each file as it comes, and storeComplete
		// then needs no byte count.
		return s.storeComplete(chain, received.Load(), out, allo)
	}}
	chainCtx, cancelChain := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelChain(nil)
	chainDone := make(chan error, 1)
	go func() {
		// Nothing is made (a tar's target directory) before the data
		// channel brings its first byte.
		err := buf.Ready()
		if err == nil {
			err = chain.Store(chainCtx, env, buf)
		}
		// From here on the data channel's bytes are dropped: a refused
		// chain still lets the transfer end, and its reply says why.
		buf.CloseRead(err)
		chainDone <- err
	}()
	req := s.newRequest(p)
	req.Size = -1
	if s.mode == xfer.ModeEBlock {
		req.PerfInterval, req.RangeInterval = s.perfFreq, s.rangeFreq
	}
	sum := s.beginSummary("ESTO", true, p, req)
	start := time.Now()
	n, started, err := s.runTransfer(ctx, sum, req, false, func(ctx context.Context, notify func(xfer.Event)) (int64, error) {
		// ABOR, a lost control connection or a shutdown stop the chain too.
		stop := context.AfterFunc(ctx, func() { cancelChain(context.Cause(ctx)) })
		defer stop()
		return s.dtp.Receive(ctx, req, buf, notify)
	})
	if err == nil {
		if herr := buf.CheckArrived(n); herr != nil {
			err = &xfer.DataError{Err: herr}
		}
	}
	if err == nil && s.lost.Load() {
		err = errControlLost
	}
	s.logTransfer("ESTO", p, n, start, err)
	if err != nil {
		buf.CloseWithError(err)
	} else {
		received.Store(n)
		buf.Close()
	}
	// The chain finishes what is buffered; ABOR or a lost control
	// connection meanwhile still cancels it.
	cerr := s.runCancellable(ctx, func(ctx context.Context) error {
		stop := context.AfterFunc(ctx, func() { cancelChain(context.Cause(ctx)) })
		defer stop()
		return <-chainDone
	})
	if spilled := buf.Spilled(); spilled > 0 {
		s.log.Debug("ESTO data ahead of the module chain went to a temporary file", "path", p, "bytes", spilled)
	}
	if err != nil {
		left := fmt.Sprintf(" Nothing was stored at %s.", sp.Path)
		if chain.Unpacks() {
			left = fmt.Sprintf(" Whole files unpacked before the failure stay in %s.", sp.Path)
		}
		reply := s.transferReply(err, left)
		s.endSummary(sum, n, reply.Code)
		return reply, started
	}
	reply := ok(226, "Transfer Complete.")
	if cerr != nil {
		reply = moduleFailure(s, "ESTO", cerr, sp.Path)
	}
	s.endSummary(sum, n, reply.Code)
	return reply, started
}

// storeComplete is asked by an ESTO chain before it puts a file in place
// (dpm.Env.Commit): out is the file's size, n the bytes the data channel
// brought, allo the size announced by ALLO (-1: none). The data channel
// has ended in order (stream mode: closed; MODE E: EOF and every EOD)
// and the decoder has seen a clean end, but a gzip or zstd stream cut
// right after a member or frame decodes cleanly too, and in stream mode a
// client that dies also closes the connection: the size announced tells
// them apart. It is the size either of the data (ALLO of a file sent as
// it is) or of what the chain makes of it (GCT's -smn M -dmn M copies
// announce the source file's SIZE): the file is refused when it is
// neither, that is when fewer bytes came than announced and the output
// does not have the announced size. A sink (tar) checks its archive's
// end itself. Checked last, so that no file appears complete once the
// control connection is gone, whenever that happened: the client never
// saw the upload complete.
func (s *session) storeComplete(chain *dpm.Chain, n, out, allo int64) error {
	if s.lost.Load() {
		return errControlLost
	}
	if allo >= 0 && !chain.Unpacks() && n < allo && out != allo {
		return &xfer.DataError{Err: fmt.Errorf("the data ended after %d bytes, decoded to %d, of the %d bytes announced (ALLO)", n, out, allo)}
	}
	return nil
}

var _ dsi.Reader = (*spoolReader)(nil)
