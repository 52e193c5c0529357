package pi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// writeTimeout bounds writing one reply to a client that stopped reading.
const writeTimeout = 2 * time.Minute

// item is one unit of work the reader hands to the executor: a parsed
// command, or an error to answer in order (a line too long, a bad line).
type item struct {
	cmd wire.Command
	err error
}

// session is one control connection. Fields below "executor state" are
// touched only by the executor goroutine (serve).
type session struct {
	cfg  *Config
	conn net.Conn
	log  *slog.Logger
	rw   replyWriter

	busy     atomic.Bool // a transfer or long command is running
	abortMu  sync.Mutex
	abortCmd context.CancelCauseFunc // cancels the running command; guarded by abortMu

	// executor state
	user       string // from USER, before PASS
	acct       *Account
	fs         dsi.Storage
	cwd        string
	typ        xfer.Type
	mode       xfer.Mode
	rest       xfer.RangeSet // pending REST, one-shot
	hasRest    bool
	renameFrom string
	allo       int64 // pending ALLO size, -1 none
	facts      wire.FactSet
	epsvAll    bool
	dtp        DTP
	quit       bool
	parallel   int           // OPTS RETR Parallelism: connections a MODE E sender opens
	blockSize  int           // OPTS RETR BlockSize; 0 = the DTP's default
	retrMarks  time.Duration // OPTS RETR markers: 112 markers while sending; 0 = none
	perfFreq   time.Duration // TREV PERF: 112 markers while receiving in MODE E
	rangeFreq  time.Duration // TREV RESTART: 111 markers while receiving in MODE E

	done chan struct{} // closed when the executor stops; unblocks the reader
}

func newSession(conn net.Conn, cfg *Config) *session {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("remote", conn.RemoteAddr().String())
	s := &session{
		cfg:       cfg,
		conn:      conn,
		log:       log,
		rw:        replyWriter{conn: conn},
		cwd:       "/",
		typ:       xfer.TypeASCII, // RFC 959 default
		mode:      xfer.ModeStream,
		allo:      -1,
		facts:     wire.AllFacts,
		parallel:  1,
		perfFreq:  5 * time.Second,
		rangeFreq: 5 * time.Second,
		done:      make(chan struct{}),
	}
	return s
}

// replyWriter is the one writer of the control channel. The first write
// error is sticky: after it every write fails and the session ends.
type replyWriter struct {
	mu   sync.Mutex
	conn net.Conn
	buf  []byte
	err  error
}

func (w *replyWriter) write(r wire.Reply) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = r.AppendWire(w.buf[:0])
	w.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, w.err = w.conn.Write(w.buf)
	return w.err
}

func (s *session) reply(code int, format string, args ...any) {
	s.send(wire.Reply{Code: code, Lines: []string{fmt.Sprintf(format, args...)}})
}

func (s *session) send(r wire.Reply) {
	if err := s.rw.write(r); err != nil {
		s.log.Debug("reply not written", "code", r.Code, "err", err)
	}
}

func (s *session) serve(ctx context.Context) (err error) {
	defer s.conn.Close()
	defer func() {
		if s.dtp != nil {
			s.dtp.Close()
		}
	}()
	s.dtp = s.cfg.NewDTP(s.conn)
	s.reply(220, "%s", s.cfg.Banner)

	items := make(chan item, 16)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		s.readLoop(items)
	}()
	defer func() {
		close(s.done)
		s.conn.Close() // unblocks the reader
		<-readerDone
	}()

	for !s.quit {
		select {
		case <-ctx.Done():
			s.reply(421, "Server shutting down; closing control connection.")
			return ctx.Err()
		case it, ok := <-items:
			if !ok {
				return nil
			}
			s.execute(ctx, it)
		}
	}
	return nil
}

// readLoop reads and parses command lines and queues them for the executor,
// in order. ABOR also cancels the running command at once (RFC 959 §4.1.3).
// It ends, closing items, when the connection fails or idles out.
func (s *session) readLoop(items chan<- item) {
	defer close(items)
	push := func(it item) bool {
		select {
		case items <- it:
			return true
		case <-s.done:
			return false
		}
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in control reader", "panic", p)
		}
	}()
	// A lost control connection also ends a running transfer.
	defer s.cancelRunning(errors.New("control connection closed"))
	lr := wire.NewLineReader(s.conn, s.cfg.maxLine())
	idle := s.cfg.idleTimeout()
	for {
		s.conn.SetReadDeadline(time.Now().Add(idle))
		line, err := lr.ReadLine()
		if err != nil {
			switch {
			case errors.Is(err, wire.ErrLineTooLong):
				if !push(item{err: err}) {
					return
				}
				continue
			case errors.Is(err, os.ErrDeadlineExceeded):
				if s.busy.Load() {
					continue // transfers may outlast the idle timeout
				}
				s.reply(421, "Idle timeout (%d seconds): closing control connection.", int(idle.Seconds()))
				s.log.Info("session idle, closed")
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
			default:
				s.log.Debug("control read failed", "err", err)
			}
			return
		}
		cmd, err := wire.ParseCommand(line)
		if err != nil {
			if !push(item{err: err}) {
				return
			}
			continue
		}
		if cmd.Verb == "ABOR" {
			s.cancelRunning(xfer.ErrAborted)
		}
		if !push(item{cmd: cmd}) {
			return
		}
	}
}

// runCancellable runs f with a context that ABOR and a lost control
// connection cancel; the session counts as busy meanwhile (no idle timeout).
// Shutdown does not cancel it: a running transfer is allowed to finish.
func (s *session) runCancellable(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	s.abortMu.Lock()
	s.abortCmd = cancel
	s.abortMu.Unlock()
	s.busy.Store(true)
	defer func() {
		s.busy.Store(false)
		s.abortMu.Lock()
		s.abortCmd = nil
		s.abortMu.Unlock()
	}()
	err := f(ctx)
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

func (s *session) cancelRunning(cause error) {
	s.abortMu.Lock()
	defer s.abortMu.Unlock()
	if s.abortCmd != nil {
		s.abortCmd(cause)
	}
}

// execute runs one item and writes its reply.
func (s *session) execute(ctx context.Context, it item) {
	defer func() {
		if p := recover(); p != nil {
			// Never show the panic to the peer; end the session cleanly.
			s.log.Error("panic in command", "cmd", it.cmd.String(), "panic", p, "stack", stack())
			s.reply(421, "Internal server error; closing control connection.")
			s.quit = true
		}
	}()
	switch {
	case errors.Is(it.err, wire.ErrLineTooLong):
		s.reply(500, "Command line too long.")
		return
	case errors.Is(it.err, wire.ErrEmptyCommand):
		s.reply(500, "Empty command.")
		return
	case it.err != nil:
		s.reply(500, "Command not supported.")
		return
	}
	c := it.cmd
	s.log.Debug("command", "cmd", c.String())
	spec, ok := commandTable[c.Verb]
	if !ok {
		s.reply(500, "Command not supported.")
		return
	}
	if spec.login && s.acct == nil {
		s.reply(530, "Please login with USER and PASS.")
		return
	}
	if spec.arg == argRequired && c.Arg == "" {
		s.reply(501, "Syntax error in parameters or arguments.")
		return
	}
	if spec.arg == argNone && c.Arg != "" {
		s.reply(501, "%s takes no argument.", c.Verb)
		return
	}
	r := spec.run(ctx, s, c.Arg)
	if r.Code != 0 {
		s.send(r)
	}
}

// abs resolves a client path against the working directory into the clean
// absolute storage path. ".." never climbs above "/".
func (s *session) abs(p string) string {
	if p == "" {
		return s.cwd
	}
	if !strings.HasPrefix(p, "/") {
		p = s.cwd + "/" + p
	}
	return path.Clean(p)
}

// takeRest returns and clears the pending REST.
func (s *session) takeRest() (xfer.RangeSet, bool) {
	r, ok := s.rest, s.hasRest
	s.rest, s.hasRest = xfer.RangeSet{}, false
	return r, ok
}
