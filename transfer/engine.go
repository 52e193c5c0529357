package transfer

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/history"
)

// Engine runs copies. Its fields are set before the first copy and not
// changed afterwards; an Engine may run several copies at once, and must
// not be copied. Close waits for the history records of its copies.
type Engine struct {
	// Dial connects and logs in to the server of a Remote location. If
	// nil, it dials with client.Dial and logs in with the URL's user and
	// password, or anonymously.
	Dial func(ctx context.Context, l Location) (*client.Conn, error)
	// Stdin and Stdout are the Stdio source and destination; nil means
	// os.Stdin and os.Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// Getenv reads the environment (where upload resume state is kept);
	// nil means os.Getenv.
	Getenv func(string) string
	// History records every file transfer; nil records nothing.
	History history.Store
	// Tool names the program in the records ("cp", "sync", "shell").
	Tool string
	// DCAU and Prot are recorded as the data channel security of
	// gsiftp:// copies ("N", "A", "S"; "C", "S", "P"); "" means the
	// defaults, DCAU A and PROT C.
	DCAU, Prot string
	// PlainPeerNoDCAU says the Dial'd gsiftp:// sessions have
	// client.GSIConfig.PlainPeerNoDCAU: a third-party copy between a
	// gsiftp:// server and an ftp:// one runs with DCAU N, and is
	// recorded so.
	PlainPeerNoDCAU bool
	// Log gets the engine's warnings (a history that cannot be written);
	// nil discards them.
	Log *slog.Logger
	// AfterCopy, when not nil, is called as each Copy's transfer ends,
	// before its control connections hang up (ferry cp -nlb asks the
	// servers about the transfer then).
	AfterCopy func(ctx context.Context)

	recOnce sync.Once
	rec     *recorder // nil until the first record; see recorder
	auto    autoCache // what automatic choices read, per pair of endpoints
}

// Request is one copy of a file.
type Request struct {
	Src, Dst Location
	Options  Options
	// CreateDirs creates the missing directories above Dst (-cd).
	CreateDirs bool
}

// EventKind says what an Event reports.
type EventKind int

const (
	// EventStart: the destination is ready (Event.Src, Event.Dst, with
	// Dst completed by a remote directory's name) and bytes are about
	// to move.
	EventStart EventKind = iota
	// EventProgress: Event.Progress holds the bytes moved so far and
	// each data connection's statistics.
	EventProgress
	// EventNote: Event.Note is something to tell the user on the way
	// ("resuming ...").
	EventNote
	// EventAuto: with Options.Auto, before EventStart, Event.Auto holds
	// what the advisor chose and Event.Note the one-line note of it.
	EventAuto
)

// Event is a report of a copy in progress. Events of one copy arrive
// one at a time; a Progress event may come from a transfer's goroutine.
type Event struct {
	Kind     EventKind
	Src, Dst Location
	Progress client.Progress
	// Size is the number of bytes the copy moves when known before it
	// starts (a local source), else -1.
	Size int64
	// ETA is the time left at the mean rate so far, for a Progress event
	// of a copy of known Size; 0 when unknown.
	ETA  time.Duration
	Note string
	// Auto is the automatic choice of an EventAuto event (nil
	// otherwise). Its ETA is the predicted one; Event.ETA the live one.
	Auto *AutoChoice
	// PredictedETA is the ETA predicted before the start (Options'
	// PredictedETA, or the automatic choice's), on Start and Progress
	// events; 0: none.
	PredictedETA time.Duration
}

// Result is the outcome of a copy.
type Result struct {
	// Src and Dst are the locations copied; Dst includes the name a
	// directory destination gave it.
	Src, Dst Location
	// Bytes is the number of bytes moved (also on failure).
	Bytes int64
	// Start and Duration time the transfer itself, after the
	// destination was made ready.
	Start    time.Time
	Duration time.Duration
	// Auto is the automatic choice the copy ran with (Options.Auto);
	// nil when none was made.
	Auto *AutoChoice
	// Tuning is what on-the-fly re-tuning did ("" when the file was not
	// moved in parts); also recorded in the history.
	Tuning string
}

func (e *Engine) stdin() io.Reader {
	if e.Stdin != nil {
		return e.Stdin
	}
	return os.Stdin
}

func (e *Engine) stdout() io.Writer {
	if e.Stdout != nil {
		return e.Stdout
	}
	return os.Stdout
}

func (e *Engine) getenv(k string) string {
	if e.Getenv != nil {
		return e.Getenv(k)
	}
	return os.Getenv(k)
}

// dial is the Engine's Dial, or the default one.
func (e *Engine) dial(ctx context.Context, l Location) (*client.Conn, error) {
	if e.Dial != nil {
		return e.Dial(ctx, l)
	}
	c, err := client.Dial(ctx, l.Addr, &client.Config{})
	if err != nil {
		return nil, &OpError{What: "connect to " + l.Addr, Err: err}
	}
	user, pass := l.User, l.Pass
	if !l.HasUser {
		user, pass = "anonymous", "ferry@"
	}
	if err := c.Login(ctx, user, pass); err != nil {
		c.Close()
		return nil, &OpError{What: "login to " + l.Addr + " as " + user, Err: err}
	}
	return c, nil
}

// Copy copies one file, req.Src to req.Dst: an upload, a download, a
// third-party transfer or a local copy. A destination that is an
// existing directory on a server receives the source under its own name;
// with req.CreateDirs the missing directories above it are made. on,
// when not nil, receives the copy's events. The error of a failed copy
// that left a partial file behind is a *LeftError saying what.
func (e *Engine) Copy(ctx context.Context, req Request, on func(Event)) (Result, error) {
	src, dst := req.Src, req.Dst
	res := Result{Src: src, Dst: dst}
	c := &copier{e: e, o: req.Options, sessions: map[string]*client.Session{}, on: on}
	// After Ctrl-C (ctx done) the sessions close without QUIT.
	defer c.closeSessions(ctx)
	if err := c.prepare(ctx, src, &dst, req.CreateDirs); err != nil {
		// A copy that could not start (the server refused the login)
		// failed all the same.
		if run := e.startRun(src, dst, req.Options, -1); run != nil {
			run.rec.Size = c.sourceSize(src)
			e.finishRun(ctx, run, 0, err)
		}
		return res, err
	}
	res.Dst = dst
	size := c.sourceSize(src)
	ch, size := c.chooseAuto(ctx, src, dst, size)
	if ch != nil {
		res.Auto = ch
		if on != nil {
			on(Event{Kind: EventAuto, Src: src, Dst: dst, Size: size, Auto: ch, Note: ch.Note(src, dst)})
		}
	}
	res.Start = time.Now()
	if on != nil {
		pred := c.o.PredictedETA
		on(Event{Kind: EventStart, Src: src, Dst: dst, Size: size, PredictedETA: pred})
		start := res.Start
		c.prog = func(p client.Progress) {
			on(Event{Kind: EventProgress, Src: src, Dst: dst, Progress: p, Size: size, ETA: eta(size, p.Bytes, time.Since(start)), PredictedETA: pred})
		}
	}
	n, err := c.copy(ctx, src, dst, size)
	res.Bytes, res.Duration = n, time.Since(res.Start)
	res.Tuning = c.tuning
	if e.AfterCopy != nil && ctx.Err() == nil {
		e.AfterCopy(ctx)
	}
	return res, err
}

// eta is the time left to move size bytes (-1: unknown) when done were
// moved in elapsed, at the mean rate so far; 0 when unknown.
func eta(size, done int64, elapsed time.Duration) time.Duration {
	if size < 0 || done <= 0 || elapsed <= 0 || done >= size {
		return 0
	}
	return time.Duration(float64(elapsed) * float64(size-done) / float64(done))
}
