package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/tune"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// copier runs one ferry cp, or the copies of one worker of a job.
type copier struct {
	e *Engine
	o Options

	// prog, when not nil, receives the progress of the current copy.
	prog func(client.Progress)
	// sessions, when not nil, keeps one session per endpoint for the
	// copies that follow (a job's worker, or the looks before a single
	// copy); else each copy hangs up. closeSessions ends them.
	sessions map[string]*client.Session
	// on, when not nil, gets the events of a single copy: notes of what
	// it tells the user on the way (that it resumes); nil in jobs.
	on func(Event)
	// sizes holds the sizes of remote sources the automatic choice
	// learnt (SIZE), so that the download does not ask again.
	sizes map[string]int64
	// auto is the automatic choice of the current copy (nil: none);
	// tuning what re-tuning did in it, for its record.
	auto   *AutoChoice
	tuning string
	// tuned is the setting that moved most of a re-tuned copy, for its
	// record's parameters (zero: not re-tuned).
	tuned tune.Setting
}

// notef reports a note of a single copy.
func (c *copier) notef(format string, args ...any) {
	if c.on != nil {
		c.on(Event{Kind: EventNote, Note: fmt.Sprintf(format, args...)})
	}
}

// closeSessions ends the kept sessions (without QUIT once ctx is done).
func (c *copier) closeSessions(ctx context.Context) {
	for _, s := range c.sessions {
		CloseSession(ctx, s)
	}
	c.sessions = map[string]*client.Session{}
}

// progressFunc is the Progress callback of the transfers.
func (c *copier) progressFunc() func(client.Progress) {
	return c.prog
}

// session returns a restartable session for the remote Location l: a
// new one, or with sessions the one kept for l's endpoint.
func (c *copier) session(l Location) *client.Session { return c.sessionAs(l, "") }

// sessionAs is session for a role: a third-party copy between two paths
// of one server needs two control connections.
func (c *copier) sessionAs(l Location, role string) *client.Session {
	key := role + endpointKey(l)
	if s, ok := c.sessions[key]; ok {
		return s
	}
	s := &client.Session{
		Dial: func(ctx context.Context) (*client.Conn, error) {
			return c.e.dial(ctx, l)
		},
		Retry: c.o.retryPolicy(),
	}
	if c.sessions != nil {
		c.sessions[key] = s
	}
	return s
}

// tptDest is the session of a third-party copy's destination: the one
// the endpoint has (logged in already when it was planned), unless the
// source is on the same endpoint, as a third-party copy needs two control
// connections.
func (c *copier) tptDest(src, dst Location) *client.Session {
	if endpointKey(src) != endpointKey(dst) {
		return c.session(dst)
	}
	return c.sessionAs(dst, "third-party destination ")
}

// release ends a copy's use of s: it hangs up unless s is kept.
func (c *copier) release(ctx context.Context, s *client.Session) {
	if c.sessions == nil {
		CloseSession(ctx, s)
	}
}

// limit returns the RetrieveOptions.Length / io limit of the flags: 0 for
// "to the end".
func (c *copier) limit() int64 { return max(c.o.Length, 0) }

// copy copies src to dst, recording the transfer in the engine's
// history; size is the source's size when known (-1: unknown).
func (c *copier) copy(ctx context.Context, src, dst Location, size int64) (int64, error) {
	c.tuning, c.tuned = "", tune.Setting{}
	run := c.e.startRun(src, dst, c.o, size)
	if run == nil {
		return c.copyFile(ctx, src, dst)
	}
	if size < 0 {
		run.rec.Size = c.sourceSize(src)
	}
	prev := c.prog
	c.prog = func(p client.Progress) {
		run.observe(p)
		if prev != nil {
			prev(p)
		}
	}
	n, err := c.copyFile(ctx, src, dst)
	c.prog = prev
	run.rec.Tuning = c.tuning
	if c.tuned.Streams > 0 {
		run.rec.Params.Parallel, run.rec.Params.TCPBuffer = c.tuned.Streams, c.tuned.Buffer
	}
	c.e.finishRun(ctx, run, n, err)
	return n, err
}

// sourceSize is the number of bytes a copy from the local file src
// moves (-1: unknown, or not local).
func (c *copier) sourceSize(src Location) int64 {
	fi, err := statLocal(src)
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	n := max(fi.Size()-c.o.Offset, 0)
	if c.o.Length >= 0 {
		n = min(n, c.o.Length)
	}
	return n
}

// copyFile copies src to dst: a third-party transfer, a download, an
// upload or a local copy.
func (c *copier) copyFile(ctx context.Context, src, dst Location) (int64, error) {
	if c.o.hasModules() {
		if err := c.checkModules(src, dst); err != nil {
			return 0, err
		}
	}
	switch {
	case src.Kind == Remote && dst.Kind == Remote:
		n, err := c.remoteToRemote(ctx, src, dst)
		return n, c.dirSource(ctx, src, err)
	case src.Kind == Remote:
		n, err := c.download(ctx, src, dst)
		return n, c.dirSource(ctx, src, err)
	case dst.Kind == Remote:
		return c.upload(ctx, src, dst)
	default:
		return c.localCopy(ctx, src, dst)
	}
}

// openSource opens a local or standard-input source, positioned at -off
// and limited to -len. size is the number of bytes it will give, or -1.
// An *os.File stays an *os.File (or an *io.LimitedReader of one), so that
// the copy can use sendfile or copy_file_range.
func (c *copier) openSource(src Location) (r io.Reader, size int64, done func(), err error) {
	off, n := c.o.Offset, c.limit()
	if src.Kind == Stdio {
		if off > 0 {
			if _, err := io.CopyN(io.Discard, c.e.stdin(), off); err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, nil, &OpError{What: "read standard input", Err: err}
			}
		}
		r = c.e.stdin()
		if n > 0 {
			r = &io.LimitedReader{R: r, N: n}
		}
		return r, -1, func() {}, nil
	}
	f, err := fsOf(src).Open(src.Path)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = fmt.Errorf("%s is a directory", src.Path)
	}
	if err == nil && off > 0 {
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	size = -1
	if fi.Mode().IsRegular() {
		size = max(fi.Size()-off, 0)
		if n > 0 {
			size = min(size, n)
		}
	}
	r = f
	if n > 0 {
		r = &io.LimitedReader{R: f, N: n}
	}
	return r, size, func() { f.Close() }, nil
}

// localCopy copies between local files and standard input and output.
func (c *copier) localCopy(ctx context.Context, src, dst Location) (int64, error) {
	r, _, done, err := c.openSource(src)
	if err != nil {
		return 0, err
	}
	defer done()
	sink, err := c.openSink(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(sink.w, ctxReader{ctx, r})
	if err == nil {
		err = sink.commit()
	}
	if err != nil {
		sink.abort()
		return n, &OpError{What: fmt.Sprintf("copy %s to %s", src, dst), Err: err}
	}
	return n, nil
}

// ctxReader stops a local copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// upload stores a local file or standard input on a server.
func (c *copier) upload(ctx context.Context, src, dst Location) (int64, error) {
	if src.Kind == Local {
		return c.uploadFile(ctx, src, dst)
	}
	r, size, done, err := c.openSource(src)
	if err != nil {
		return 0, err
	}
	defer done()
	return c.uploadStream(ctx, r, size, dst)
}

// uploadFile stores a local file on a server through a restartable
// session; MODE E uploads (and -rst) keep the acknowledged ranges in a
// state file so that a later run resumes.
func (c *copier) uploadFile(ctx context.Context, src, dst Location) (int64, error) {
	f, err := fsOf(src).Open(src.Path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.IsDir() {
		return 0, fmt.Errorf("%s is a directory", src.Path)
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or device has no offsets: stream it.
		var r io.Reader = f
		if n := c.limit(); n > 0 {
			r = io.LimitReader(f, n)
		}
		return c.uploadStream(ctx, r, -1, dst)
	}
	off := c.o.Offset
	size := max(fi.Size()-off, 0)
	if n := c.limit(); n > 0 {
		size = min(size, n)
	}
	opts := &client.StoreOptions{
		Offset:          off,
		Parallel:        c.o.Parallel,
		BlockSize:       int(c.o.BlockSize),
		TCPBuffer:       int(c.o.TCPBuffer),
		ModeE:           c.o.Fast || c.o.Stripe,
		Striped:         c.o.Stripe,
		StripeBlockSize: int64(c.o.StripeBlockSize),
		Reuse:           c.o.Fast,
		Progress:        c.progressFunc(),
		Module:          c.o.DstModule,
		ModuleParams:    c.o.DstModuleParams,
	}
	var saver *stateSaver
	if c.o.resumable() && !c.o.hasModules() {
		abs, err := filepath.Abs(src.Path)
		if err != nil {
			return 0, err
		}
		name, err := UploadStatePath(c.e.getenv, abs, dst.String())
		if err != nil {
			return 0, err
		}
		want := ResumeState{Source: abs, Dest: dst.String(), Size: fi.Size(), MTime: fi.ModTime().UnixNano(),
			Offset: off, Length: c.o.Length}
		if st, err := ReadResumeState(name); err == nil && st.matches(want) {
			want.Ranges = st.Ranges
			opts.Restart = st.Ranges
			if k := st.Ranges.Total(); k > 0 {
				c.notef("resuming the upload to %s: %s already on the server", dst, ofSize(k, fi.Size()))
			}
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return 0, err
		}
		saver = &stateSaver{name: name, st: want}
		opts.Acknowledged = func(rs client.RangeSet) { _ = saver.update(rs, false) }
	}
	s := c.session(dst)
	defer c.release(ctx, s)
	var n int64
	if !c.o.hasModules() && c.retuneUploadWanted(ctx, s, off, size, fi.Size()) {
		n, c.tuning, err = c.retuneUpload(ctx, s, src, dst, f, size, *opts)
	} else {
		n, err = s.Upload(ctx, f, size, dst.Path, opts)
	}
	if err != nil {
		err = &OpError{What: "upload to " + dst.String(), Err: err}
		if saver == nil {
			return n, c.leftOnServer(ctx, dst, n, size, err)
		}
		_ = saver.flush()
		saver.mu.Lock()
		kept := saver.st.Ranges.Total()
		saver.mu.Unlock()
		if kept == 0 {
			// No range to resume from: no state to keep.
			os.Remove(saver.name)
			return n, c.leftOnServer(ctx, dst, n, size, err)
		}
		return n, &LeftError{Err: err, Note: fmt.Sprintf("%s on the server is incomplete: %s acknowledged; run the same command again to resume, or remove it with: %s",
			dst, ofSize(kept, size), removeHint(dst))}
	}
	if saver != nil {
		os.Remove(saver.name)
	}
	if c.o.Verify {
		if err := c.verify(ctx, s, dst, src, off, size); err != nil {
			return n, err
		}
	}
	return n, nil
}

// uploadStream stores standard input or a non-seekable local file (at
// most size bytes, -1: unknown) in stream mode.
func (c *copier) uploadStream(ctx context.Context, r io.Reader, size int64, dst Location) (int64, error) {
	s := c.session(dst)
	defer c.release(ctx, s)
	conn, err := s.Connect(ctx)
	if err != nil {
		return 0, err
	}
	n, err := conn.Store(ctx, dst.Path, r, &client.StoreOptions{Size: size, Offset: c.o.Offset,
		TCPBuffer: int(c.o.TCPBuffer), Progress: c.progressFunc(),
		Module: c.o.DstModule, ModuleParams: c.o.DstModuleParams})
	if err != nil {
		return n, c.leftOnServer(ctx, dst, n, size, &OpError{What: "upload to " + dst.String(), Err: err})
	}
	return n, nil
}

// leftOnServer is the error of an upload that failed after n bytes of
// size (-1: unknown) were sent: when bytes went, or the upload was
// interrupted once under way, the server may keep a partial file, and
// the note says so.
func (c *copier) leftOnServer(ctx context.Context, dst Location, n, size int64, err error) error {
	if n == 0 && ctx.Err() == nil {
		return err
	}
	sent := ""
	if n > 0 {
		sent = " (" + ofSize(n, size) + " sent)"
	}
	return &LeftError{Err: err, Note: fmt.Sprintf("the server may keep a partial %s%s; run the same command again to replace it, or remove it with: %s",
		dst, sent, removeHint(dst))}
}

// removeHint says how to remove what an interrupted upload to dst left:
// the file itself (GCT, or a Ferry server with -upload-in-place), or the
// hidden part file a Ferry server keeps until an upload completes
// (docs/extensions.md).
func removeHint(dst Location) string {
	shown := dst.String()
	i := strings.LastIndexByte(shown, '/')
	base := shown[i+1:]
	if i < 0 || base == "" || len(base) > 200 {
		return "ferry rm " + shown
	}
	part := shown[:i+1] + "." + base + xfer.PartSuffix
	return "ferry rm " + shown + " (a Ferry server keeps it as " + part + " until it is complete: ferry rm " + part + ")"
}

// verify compares the server's checksum of length bytes of remote from
// off with the local file's.
func (c *copier) verify(ctx context.Context, s *client.Session, remote Location, loc Location, off, length int64) error {
	local := loc.Path
	alg := c.o.ChecksumAlg
	conn, err := s.Connect(ctx)
	if err != nil {
		return &OpError{What: "verify " + remote.String(), Err: err}
	}
	rsum, err := conn.Checksum(ctx, alg, remote.Path, off, length)
	if err != nil {
		return &OpError{What: "checksum of " + remote.String(), Err: err}
	}
	f, err := fsOf(loc).Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	lsum, err := checksum.Compute(ctx, f, fi.Size(), off, length, alg)
	if err != nil {
		return fmt.Errorf("checksum of %s: %w", local, err)
	}
	if !strings.EqualFold(lsum, rsum) {
		return fmt.Errorf("checksum mismatch (%s): %s has %s, %s has %s", alg, local, lsum, remote, rsum)
	}
	return nil
}

// download retrieves a file from a server into a local file or standard
// output. A regular local file is never left looking complete when the
// copy fails or ferry is killed (see downloadResumable).
func (c *copier) download(ctx context.Context, src, dst Location) (int64, error) {
	if dst.Kind == Stdio {
		return c.downloadStdout(ctx, src)
	}
	fi, err := fsOf(dst).Stat(dst.Path)
	switch {
	case err != nil && errors.Is(err, ErrEscape):
		return 0, err
	case err == nil && fi.IsDir():
		return 0, fmt.Errorf("%s is a directory", dst.Path)
	case err == nil && !fi.Mode().IsRegular():
		return c.downloadDirect(ctx, src, dst)
	}
	if c.o.SrcModule != "" {
		// A module chain's output has no size or date to resume by: it
		// goes to a temporary file renamed into place when complete.
		s := c.session(src)
		defer c.release(ctx, s)
		return c.downloadWhole(ctx, s, src, dst, false)
	}
	return c.downloadResumable(ctx, src, dst)
}

// downloadDirect downloads into a local file that is no regular file (a
// device, a FIFO), writing it directly.
func (c *copier) downloadDirect(ctx context.Context, src, dst Location) (int64, error) {
	sink, err := c.openSink(dst)
	if err != nil {
		return 0, err
	}
	s := c.session(src)
	defer c.release(ctx, s)
	var n int64
	if start, end, ok := c.retuneDirect(ctx, s, src, sink.f); ok && !c.o.hasModules() {
		// A device that takes writes at any offset (/dev/null, a disk)
		// is re-tuned as a file is; no resume state: nothing to resume.
		n, c.tuning, err = c.retuneDownload(ctx, s, src, dst, sink.f, start, end, *c.retrieveOptions())
	} else {
		n, err = s.Download(ctx, src.Path, sink.f, c.retrieveOptions())
	}
	if err == nil {
		if err = sink.commit(); err != nil {
			err = &OpError{What: "write " + dst.String(), Err: err}
		}
	} else {
		err = &OpError{What: "download " + src.String(), Err: err}
	}
	if err != nil {
		sink.abort()
		return n, err
	}
	return n, nil
}

// retuneDirect reports whether a download of src into the device f is
// moved in re-tuned parts, and the range [start, end) it moves: an
// automatic MODE E download, whole, large enough (retuneWanted), of a
// file whose size the server tells, into a file that takes positioned
// writes (/dev/null, a disk; not a FIFO, a socket or a terminal).
func (c *copier) retuneDirect(ctx context.Context, s *client.Session, src Location, f *os.File) (start, end int64, ok bool) {
	if c.auto == nil || !c.auto.ModeE || f == nil || c.o.Offset != 0 || c.o.Length >= 0 || !positioned(f) {
		return 0, 0, false
	}
	size, known := c.sizes[src.Path]
	if !known {
		conn, err := s.Connect(ctx)
		if err != nil {
			return 0, 0, false
		}
		if size, err = conn.Size(ctx, src.Path); err != nil {
			return 0, 0, false
		}
	}
	if !c.retuneWanted(c.auto, size) {
		return 0, 0, false
	}
	start, end = c.o.Offset, c.o.Offset+c.limit()
	if c.o.Length <= 0 || end > size {
		end = size
	}
	return start, end, start < end
}

// positioned reports whether f takes writes at an offset: the kernel
// refuses a pwrite, even an empty one, with ESPIPE where it does not
// (os.File.WriteAt skips the call for an empty write).
func positioned(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		_, werr = syscall.Pwrite(int(fd), nil, 0)
		return true
	}); err != nil {
		return false
	}
	return werr == nil
}

// retrieveOptions are the RetrieveOptions of the flags.
func (c *copier) retrieveOptions() *client.RetrieveOptions {
	o := &client.RetrieveOptions{
		Offset:    c.o.Offset,
		Length:    c.limit(),
		Parallel:  c.o.Parallel,
		TCPBuffer: int(c.o.TCPBuffer),
		ModeE:     c.o.Fast || c.o.Stripe,
		Reuse:     c.o.Fast,
		Progress:  c.progressFunc(),

		Module:       c.o.SrcModule,
		ModuleParams: c.o.SrcModuleParams,
	}
	if c.o.Stripe {
		o.StripeBlockSize = c.o.StripeBlockSize // globus-url-copy -stripe -sbs
	}
	return o
}

// downloadStdout streams a file to standard output. A reader that goes
// away (ferry cp URL - | head) ends the copy quietly, as it does cat's.
func (c *copier) downloadStdout(ctx context.Context, src Location) (int64, error) {
	if f, ok := c.e.stdout().(*os.File); ok && f == os.Stdout {
		// A write to a closed pipe fails with EPIPE instead of killing
		// the process with SIGPIPE.
		sigpipe := make(chan os.Signal, 1)
		signal.Notify(sigpipe, syscall.SIGPIPE)
		defer signal.Stop(sigpipe)
	}
	s := c.session(src)
	defer c.release(ctx, s)
	conn, err := s.Connect(ctx)
	if err != nil {
		return 0, err
	}
	n, err := conn.Retrieve(ctx, src.Path, c.e.stdout(), &client.RetrieveOptions{Offset: c.o.Offset, Length: c.limit(),
		TCPBuffer: int(c.o.TCPBuffer), Progress: c.progressFunc(),
		Module: c.o.SrcModule, ModuleParams: c.o.SrcModuleParams})
	if errors.Is(err, syscall.EPIPE) {
		return n, nil
	}
	if err != nil {
		return n, &OpError{What: "download " + src.String(), Err: err}
	}
	return n, nil
}

// downloadResumable downloads into the local file dst so that neither a
// failure nor a crash of ferry leaves what looks like a complete file
// under its name. A small file, and one that replaces an existing file,
// goes to a temporary file renamed into place when complete
// (downloadWhole). Larger new files, and part of a file (-off/-len), are
// written in place with the ranges stored so far in DST.ferry-ranges,
// which exists before the file does and is removed at the end: a failed
// or killed copy leaves it beside the file, and the next run of the same
// copy resumes from it.
func (c *copier) downloadResumable(ctx context.Context, src, dst Location) (int64, error) {
	s := c.session(src)
	defer c.release(ctx, s)
	conn, err := s.Connect(ctx)
	if err != nil {
		return 0, err
	}
	want, err := c.sourceState(ctx, conn, src, dst)
	if err != nil {
		return 0, err
	}
	fsys := fsOf(dst)
	name := dst.Path + RangesSuffix
	st, err := fsys.readState(name)
	if errors.Is(err, ErrEscape) {
		return 0, err
	}
	resuming := err == nil && st.matches(want)
	whole := c.o.Offset == 0 && c.o.Length < 0
	_, statErr := fsys.Stat(dst.Path)
	if errors.Is(statErr, ErrEscape) {
		return 0, statErr
	}
	created := errors.Is(statErr, os.ErrNotExist)
	if created && resuming && st.Ranges.Total() > 0 {
		// The file that held the ranges is gone.
		resuming = false
	}
	if !resuming && whole && (!created || want.Size >= 0 && want.Size <= batchMaxSize) {
		// A small file is not worth a state file (written and synced
		// before the first byte, removed at the end), and an existing
		// file stays as it is until the new one is complete: a
		// temporary file, copied again whole if this run fails.
		return c.downloadWhole(ctx, s, src, dst, !errors.Is(err, os.ErrNotExist))
	}
	if resuming {
		want.Ranges = st.Ranges
		c.notef("resuming %s: %s already here (%s lists them)", dst, ofSize(st.Ranges.Total(), want.Size), name)
	}
	return c.downloadInPlace(ctx, s, src, dst, inPlace{state: name, want: want, resuming: resuming, whole: whole, created: created})
}

// sourceState is the resume state of a download of src to dst before any
// byte arrived: the source's size and modification time when the server
// tells them. A source the server says is missing (550 to SIZE) fails the
// download.
func (c *copier) sourceState(ctx context.Context, conn *client.Conn, src, dst Location) (ResumeState, error) {
	want := ResumeState{Source: src.String(), Dest: dst.Path, Size: -1, Offset: c.o.Offset, Length: c.o.Length}
	var re *client.ReplyError
	if size, ok := c.sizes[src.Path]; ok {
		want.Size = size
	} else if size, err := conn.Size(ctx, src.Path); err == nil {
		want.Size = size
	} else if errors.As(err, &re) && re.Reply.Code == 550 {
		return want, &OpError{What: "download " + src.String(), Err: err}
	}
	if mt, err := conn.ModTime(ctx, src.Path); err == nil {
		want.MTime = mt.UnixNano()
	}
	return want, nil
}

// syncFile syncs a download's file to disk (Options.Fsync); tests count
// its calls.
var syncFile = (*os.File).Sync

// inPlace is how downloadInPlace writes a file.
type inPlace struct {
	state    string      // the state file, DST.ferry-ranges
	want     ResumeState // what it is to hold, with the ranges already here
	resuming bool        // continue from the ranges of the state file
	whole    bool        // the whole file, not -off/-len
	created  bool        // the destination does not exist yet
}

// downloadInPlace writes the download of src into the local file dst
// itself, keeping the ranges stored so far in the state file p.state
// (see downloadResumable). A failure after some bytes arrived leaves the
// state file for the next run; one before, in a file it created, leaves
// nothing.
func (c *copier) downloadInPlace(ctx context.Context, s *client.Session, src, dst Location, p inPlace) (int64, error) {
	name, want, created := p.state, p.want, p.created
	fsys := fsOf(dst)
	flags := os.O_WRONLY | os.O_CREATE
	if !p.resuming && p.whole {
		// A whole new copy: no old bytes may survive in the file.
		flags |= os.O_TRUNC
	}
	if created {
		// Mark the destination incomplete before it exists.
		if err := fsys.writeState(name, want); err != nil {
			return 0, fmt.Errorf("write %s: %w", name, err)
		}
	}
	f, err := fsys.OpenFile(dst.Path, flags, 0o666)
	if err != nil {
		if created {
			fsys.Remove(name)
		}
		return 0, err
	}
	defer f.Close()
	saver := &stateSaver{name: name, st: want, write: fsys.writeState}
	if c.o.Fsync {
		saver.sync = func() error { return syncFile(f) }
	}
	// Mark the destination incomplete before a byte lands in it.
	if err := saver.update(want.Ranges, true); err != nil {
		return 0, fmt.Errorf("write %s: %w", name, err)
	}
	opts := c.retrieveOptions()
	opts.Restart = want.Ranges
	opts.Committed = func(rs client.RangeSet) { _ = saver.update(rs, false) }
	var n int64
	if end := c.o.Offset + c.limit(); c.retuneWanted(c.auto, want.Size) && want.Size > 0 {
		if c.o.Length <= 0 || end > want.Size {
			end = want.Size
		}
		n, c.tuning, err = c.retuneDownload(ctx, s, src, dst, f, c.o.Offset, end, *opts)
	} else {
		n, err = s.Download(ctx, src.Path, f, opts)
	}
	if err != nil {
		saver.mu.Lock()
		kept := saver.st.Ranges.Total()
		saver.mu.Unlock()
		err = &OpError{What: "download " + src.String(), Err: err}
		if kept == 0 && created {
			// Nothing arrived in a file we created: leave no trace.
			f.Close()
			fsys.Remove(dst.Path)
			fsys.Remove(name)
			return n, err
		}
		_ = saver.flush()
		return n, &LeftError{Err: err, Note: fmt.Sprintf("%s is incomplete: %s are here (%s lists them); run the same command again to resume",
			dst, ofSize(kept, want.Size), name)}
	}
	if want.Size >= 0 && p.whole {
		// A resumed file may be longer than the source (an older copy).
		err = f.Truncate(want.Size)
	}
	if err == nil && c.o.Fsync {
		err = syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = saver.flush()
		return n, &OpError{What: "write " + dst.String(), Err: err}
	}
	if err := fsys.Remove(name); err != nil {
		return n, err
	}
	if c.o.Verify {
		if err := c.verify(ctx, s, src, dst, c.o.Offset, c.o.Length); err != nil {
			return n, err
		}
	}
	return n, nil
}

// downloadWhole downloads a whole file through a temporary file renamed
// into place when complete; stale, when set, says a state file of
// another copy may be in the way and is removed on success.
func (c *copier) downloadWhole(ctx context.Context, s *client.Session, src, dst Location, stale bool) (int64, error) {
	sink, err := openTempSinkIn(fsOf(dst), dst.Path)
	if err != nil {
		return 0, err
	}
	n, err := s.Download(ctx, src.Path, sink.f, c.retrieveOptions())
	if err != nil {
		sink.abort()
		return n, &OpError{What: "download " + src.String(), Err: err}
	}
	if c.o.Fsync {
		sink.replace = true // close syncs before the rename
	}
	if err := sink.commit(); err != nil {
		return n, &OpError{What: "write " + dst.String(), Err: err}
	}
	if stale {
		fsOf(dst).Remove(dst.Path + RangesSuffix)
	}
	if c.o.Verify {
		if err := c.verify(ctx, s, src, dst, 0, -1); err != nil {
			return n, err
		}
	}
	return n, nil
}

// remoteToRemote copies a file from one server to another: a third-party
// transfer, or with -notpt through this client.
func (c *copier) remoteToRemote(ctx context.Context, src, dst Location) (int64, error) {
	if c.o.NoTPT {
		return c.throughClient(ctx, src, dst)
	}
	return c.thirdParty(ctx, src, dst)
}

// thirdParty moves the file directly between the two servers; with -rst
// a failure dials both again and resumes.
func (c *copier) thirdParty(ctx context.Context, src, dst Location) (int64, error) {
	ss, ds := c.session(src), c.tptDest(src, dst)
	defer c.release(ctx, ss)
	defer c.release(ctx, ds)
	dialTogether(ctx, ss, ds)
	opts := &client.ThirdPartyOptions{
		Offset:          c.o.Offset,
		Length:          c.limit(),
		Parallel:        c.o.Parallel,
		ModeE:           c.o.Fast || c.o.Stripe,
		Striped:         c.o.Stripe,
		StripeBlockSize: int64(c.o.StripeBlockSize),
		TCPBuffer:       int(c.o.TCPBuffer),
		Progress:        c.progressFunc(),
		SrcModule:       c.o.SrcModule,
		SrcModuleParams: c.o.SrcModuleParams,
		DstModule:       c.o.DstModule,
		DstModuleParams: c.o.DstModuleParams,
	}
	var n int64
	var err error
	if c.o.hasModules() {
		n, err = ss.ThirdParty(ctx, src.Path, ds, dst.Path, opts)
	} else if size := c.retuneThirdPartySize(ctx, ss, ds, src); size > 0 {
		n, c.tuning, err = c.retuneThirdParty(ctx, ss, ds, src, dst, size, *opts)
	} else {
		n, err = ss.ThirdParty(ctx, src.Path, ds, dst.Path, opts)
	}
	if err != nil {
		return n, c.leftOnServer(ctx, dst, n, -1, &OpError{What: fmt.Sprintf("third-party copy %s to %s", src, dst), Err: err})
	}
	if c.o.Verify {
		if err := c.verifyBoth(ctx, ss, src, ds, dst); err != nil {
			return n, err
		}
	}
	return n, nil
}

// verifyBoth compares the checksums (CKSM) of the copied range on both
// servers.
func (c *copier) verifyBoth(ctx context.Context, ss *client.Session, src Location, ds *client.Session, dst Location) error {
	alg := c.o.ChecksumAlg
	sum := func(s *client.Session, l Location) (string, error) {
		conn, err := s.Connect(ctx)
		if err != nil {
			return "", &OpError{What: "verify " + l.String(), Err: err}
		}
		v, err := conn.Checksum(ctx, alg, l.Path, c.o.Offset, c.o.Length)
		if err != nil {
			return "", &OpError{What: "checksum of " + l.String(), Err: err}
		}
		return v, nil
	}
	a, err := sum(ss, src)
	if err != nil {
		return err
	}
	b, err := sum(ds, dst)
	if err != nil {
		return err
	}
	if !strings.EqualFold(a, b) {
		return fmt.Errorf("checksum mismatch (%s): %s has %s, %s has %s", alg, src, a, dst, b)
	}
	return nil
}

// throughClient streams a file from one server to another through this
// client: RETR on one connection feeds STOR on the other through a pipe.
func (c *copier) throughClient(ctx context.Context, src, dst Location) (int64, error) {
	ss, ds := c.session(src), c.tptDest(src, dst)
	defer c.release(ctx, ss)
	defer c.release(ctx, ds)
	dialTogether(ctx, ss, ds)
	sconn, err := ss.Connect(ctx)
	if err != nil {
		return 0, err
	}
	dconn, err := ds.Connect(ctx)
	if err != nil {
		return 0, err
	}

	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := sconn.Retrieve(tctx, src.Path, pw, &client.RetrieveOptions{Offset: c.o.Offset, Length: c.limit(),
			Module: c.o.SrcModule, ModuleParams: c.o.SrcModuleParams})
		if err != nil {
			err = &OpError{What: "download " + src.String(), Err: err}
			cancel(err)
		}
		// A failed download must not look like the end of the file.
		pw.CloseWithError(err)
	})
	n, err := dconn.Store(tctx, dst.Path, pr, &client.StoreOptions{Offset: c.o.Offset,
		Module: c.o.DstModule, ModuleParams: c.o.DstModuleParams})
	if err != nil {
		err = &OpError{What: "upload to " + dst.String(), Err: err}
		cancel(err)
	}
	pr.CloseWithError(errors.New("upload ended"))
	wg.Wait()
	switch {
	case ctx.Err() != nil:
		return n, context.Cause(ctx)
	case context.Cause(tctx) != nil && !errors.Is(context.Cause(tctx), context.Canceled):
		// The first failure; the other side's error is its consequence.
		return n, context.Cause(tctx)
	}
	return n, nil
}

// sink is a local destination being written.
type sink struct {
	w      io.Writer
	f      *os.File  // nil for standard output
	tmp    *tempSink // a regular file written under a temporary name; nil: f is written in place
	remove bool      // in place: remove the file on abort (we created it)
	fs     localFS   // where name is
	name   string    // in place: the file's name
}

// openSink opens a local destination or standard output. A regular file
// (new or existing) is written under a temporary name that commit
// renames into place, so that a failure or a crash leaves nothing that
// looks complete under its name; -off/-len update part of the file in
// place, and other files (devices, FIFOs) are written directly.
func (c *copier) openSink(dst Location) (*sink, error) {
	if dst.Kind == Stdio {
		return &sink{w: c.e.stdout()}, nil
	}
	partial := c.o.Offset > 0 || c.o.Length > 0
	fsys := fsOf(dst)
	fi, err := fsys.Stat(dst.Path)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err
	case exists && fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", dst.Path)
	case exists && !fi.Mode().IsRegular(), partial:
		flags := os.O_WRONLY
		if !exists {
			flags |= os.O_CREATE | os.O_EXCL
		}
		f, err := fsys.OpenFile(dst.Path, flags, 0o666)
		if err != nil {
			return nil, err
		}
		s := &sink{w: f, f: f, remove: !exists, fs: fsys, name: dst.Path}
		if c.o.Offset > 0 {
			if _, err := f.Seek(c.o.Offset, io.SeekStart); err != nil {
				s.abort()
				return nil, err
			}
		}
		return s, nil
	}
	ts, err := openTempSinkIn(fsys, dst.Path)
	if err != nil {
		return nil, err
	}
	return &sink{w: ts.f, f: ts.f, tmp: ts}, nil
}

// commit finishes a successful copy.
func (s *sink) commit() error {
	switch {
	case s.tmp != nil:
		return s.tmp.commit()
	case s.f == nil:
		return nil
	}
	err := s.f.Close()
	if err != nil && s.remove {
		s.fs.Remove(s.name)
	}
	return err
}

// abort drops a failed copy: a file we created is removed.
func (s *sink) abort() {
	switch {
	case s.tmp != nil:
		s.tmp.abort()
	case s.f != nil:
		s.f.Close()
		if s.remove {
			s.fs.Remove(s.name)
		}
	}
}

// checkModules refuses processing modules where no server runs them (a
// source module on a local source, a destination module on a local
// destination) and with the options they cannot go with.
func (c *copier) checkModules(src, dst Location) error {
	switch {
	case (c.o.SrcModule != "" || c.o.SrcModuleParams != "") && src.Kind != Remote:
		return fmt.Errorf("a source module needs a server as the source, not %s", src)
	case (c.o.DstModule != "" || c.o.DstModuleParams != "") && dst.Kind != Remote:
		return fmt.Errorf("a destination module needs a server as the destination, not %s", dst)
	case c.o.Offset > 0 || c.o.Length >= 0:
		return errors.New("processing modules move whole files: no -off or -len")
	case c.o.Verify:
		return errors.New("processing modules change the data: no -verify")
	}
	return nil
}
