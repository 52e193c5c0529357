package pi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
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
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/gss"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// errControlLost cancels what runs when the control connection ends.
var errControlLost = errors.New("control connection closed")

// writeTimeout bounds writing one reply to a client that stopped reading.
const writeTimeout = 2 * time.Minute

// readBufSize is the control reader's buffer: a command line is short,
// and every idle session holds one (issue 17: 10,000 idle sessions).
const readBufSize = 512

// item is one unit of work the reader hands to the executor: a parsed
// command, or an error to answer in order (a line too long, a bad line).
type item struct {
	cmd wire.Command
	err error
	// wrapped: the line came in an ENC/MIC/CONF token of the GSI context.
	// Once a context exists, a line that was not wrapped is refused,
	// whenever it was read.
	wrapped bool
	// shutdown: the server is shutting down (Serve's ctx); the session
	// ends with 421.
	shutdown bool
}

// session is one control connection. Fields below "executor state" are
// touched only by the executor goroutine (serve).
type session struct {
	cfg  *Config
	conn net.Conn
	log  *slog.Logger
	rw   replyWriter

	busy     atomic.Bool // a transfer or long command is running
	lost     atomic.Bool // the reader saw the control connection end
	loggedIn atomic.Bool // set by the executor at login; the reader's login deadline ends
	abortMu  sync.Mutex
	abortCmd context.CancelCauseFunc // cancels the running command; guarded by abortMu
	xstats   xferStats               // the last data transfer, for SITE XFERSTATS

	// executor state
	user       string // from USER, before PASS
	acct       *Account
	fs         dsi.Storage
	cwd        string
	typ        xfer.Type
	mode       xfer.Mode
	rest       xfer.RangeSet // pending REST, one-shot
	hasRest    bool
	part       xfer.Range // pending PART (parts.go), one-shot
	hasPart    bool
	ownParts   partLedger // uploads in parts without Config.Uploads (parts.go)
	renameFrom string
	allo       int64 // pending ALLO size, -1 none
	facts      wire.FactSet
	epsvAll    bool
	dtp        DTP
	quit       bool
	parallel   int           // OPTS RETR Parallelism: connections a MODE E sender opens
	stripeBS   int64         // OPTS RETR BlockSize: the Blocked stripe layout's block; 0 = default
	layout     xfer.Layout   // OPTS RETR StripeLayout
	retrMarks  time.Duration // OPTS RETR markers: 112 markers while sending; 0 = none
	perfFreq   time.Duration // TREV PERF: 112 markers while receiving in MODE E
	rangeFreq  time.Duration // TREV RESTART: 111 markers while receiving in MODE E
	storDrain  bool          // OPTS PIPE STOR-DRAIN=ON: refused MODE E uploads drain their data
	buffer     int           // SBUF: TCP buffer size of data sockets; 0 = automatic
	// sum is the last whole-file checksum computed (CKSM): the path and
	// "ALGORITHM:value", for the accounting of a later transfer of the
	// same file; an upload to the file forgets it.
	sum struct{ path, value string }

	done      chan struct{}  // closed when the executor ends the session; unblocks the reader
	q         queue          // items between the reader and the executor
	executors sync.WaitGroup // the executor goroutine, while one runs
	endErr    error          // what Serve returns; set by the executor

	// security (security.go)
	sec          secState                    // the one record of how the channel is protected and by whom
	gssCtx       atomic.Pointer[gss.Context] // established GSI context; the reader unwraps with it
	krb          atomic.Pointer[krbState]    // established Kerberos context (krb5.go); the reader unwraps with it
	startTLS     bool                        // AUTH TLS accepted: switch after the 234
	switched     chan net.Conn               // executor → reader: the connection to read after AUTH TLS
	adatDone     chan struct{}               // executor → reader: an ADAT was answered (the context may now exist)
	authFailures int                         // failed ADAT exchanges and logins
	dcau         byte                        // 'N', 'A' or 'S'
	dcauSubject  string                      // DCAU S subject
	dcsc         *gsi.Credential             // DCSC P data channel credential (dcsc.go); nil: none
	prot         byte                        // 'C', 'S' or 'P'
	// activeUnchecked: the active data addresses were accepted only
	// because the data channel was authenticated (foreign host or
	// privileged port); they may not be used without DCAU.
	activeUnchecked bool
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
		switched:  make(chan net.Conn, 1),
		adatDone:  make(chan struct{}, 1),
		dcau:      'N',
		prot:      'C',
	}
	return s
}

// replyWriter is the one writer of the control channel. The first write
// error is sticky: after it every write fails and the session ends (a
// reply that cannot be wrapped closes the connection). After
// GSI authentication each reply line is wrapped into a 632 reply (gsi.md §5).
//
// A reply may be held: it waits in held, in order, and goes out with the
// next reply that is not held, or at flush (issue 17: one write for the
// replies of several pipelined commands). The session decides what may
// be held (holdable, runTransfer).
type replyWriter struct {
	mu   sync.Mutex
	conn net.Conn                          // guarded by mu
	wrap func(line []byte) ([]byte, error) // guarded by mu; nil = plain
	// wrapCode is the reply code of wrapped lines ("632" for GSI; 631 or
	// 632 for Kerberos, krb5.go); guarded by mu.
	wrapCode string
	krb      *krbState // guarded by mu; nil without Kerberos
	buf      []byte    // guarded by mu
	held     []byte    // replies written but not sent yet; guarded by mu
	err      error     // guarded by mu
}

func (w *replyWriter) setWrap(f func([]byte) ([]byte, error)) {
	w.mu.Lock()
	w.wrap = f
	w.mu.Unlock()
}

// setConn switches to c, after sending what is held on the old connection.
func (w *replyWriter) setConn(c net.Conn) {
	w.mu.Lock()
	w.flushLocked()
	w.conn = c
	w.mu.Unlock()
}

// write sends r, with the replies held before it; hold: keep r back too.
func (w *replyWriter) write(r wire.Reply, hold bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = r.AppendWire(w.buf[:0])
	out := w.buf
	if w.wrap != nil {
		var err error
		out, err = wrapReply(w.buf, w.wrap, cmp.Or(w.wrapCode, "632"))
		if err != nil {
			// A reply that cannot be protected cannot be sent, and
			// neither can any later one: end the session now rather
			// than leave the client waiting for replies.
			w.err = fmt.Errorf("%w: %w", errReplyWrap, err)
			w.conn.Close()
			return w.err
		}
	}
	if hold {
		w.held = append(w.held, out...)
		return nil
	}
	if len(w.held) == 0 {
		return w.send(out)
	}
	w.held = append(w.held, out...)
	return w.flushLocked()
}

// flush sends the replies held.
func (w *replyWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *replyWriter) flushLocked() error {
	if w.err != nil || len(w.held) == 0 {
		return w.err
	}
	err := w.send(w.held)
	if cap(w.held) > 1024 {
		w.held = nil // idle sessions keep little (issue 17)
	} else {
		w.held = w.held[:0]
	}
	return err
}

// send writes b; w.mu must be held.
func (w *replyWriter) send(b []byte) error {
	w.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, w.err = w.conn.Write(b)
	return w.err
}

// errReplyWrap is a reply the security context could not wrap; the
// session ends with it.
var errReplyWrap = errors.New("pi: cannot protect a reply")

// wrapReply turns the wire form of a reply into 632 (or code) lines, one
// token per line: "632-<b64>" for all but the last, "632 <b64>" for the last.
func wrapReply(plain []byte, wrap func([]byte) ([]byte, error), code string) ([]byte, error) {
	lines := bytes.SplitAfter(plain, []byte("\r\n"))
	var out []byte
	for i, l := range lines {
		if len(l) == 0 {
			continue
		}
		tok, err := wrap(l)
		if err != nil {
			return nil, err
		}
		sep := byte(' ')
		if i < len(lines)-2 || i == len(lines)-2 && len(lines[len(lines)-1]) > 0 {
			sep = '-'
		}
		out = append(append(out, code...), sep)
		out = base64.StdEncoding.AppendEncode(out, tok)
		out = append(out, '\r', '\n')
	}
	return out, nil
}

func (s *session) reply(code int, format string, args ...any) {
	s.send(wire.Reply{Code: code, Lines: []string{fmt.Sprintf(format, args...)}})
}

// send sends r, and the replies held before it.
func (s *session) send(r wire.Reply) { s.write(r, false) }

// write sends r, or holds it back when hold is set (replyWriter).
func (s *session) write(r wire.Reply, hold bool) {
	if err := s.rw.write(r, hold); err != nil {
		if errors.Is(err, errReplyWrap) {
			// The writer closed the connection: the reader ends, and
			// the session with it.
			s.log.Warn("reply not written; closing", "code", r.Code, "err", err)
			return
		}
		s.log.Debug("reply not written", "code", r.Code, "err", err)
		return
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Reply(r.Code)
	}
}

func (s *session) serve(ctx context.Context) (err error) {
	defer s.conn.Close()
	defer func() {
		if s.dtp != nil {
			s.dtp.Close()
		}
		if s.sec.pending != nil {
			s.sec.pending.close()
		}
		if g := s.gssCtx.Load(); g != nil {
			g.Close()
		}
	}()
	s.dtp = s.cfg.NewDTP(s.conn)
	s.reply(220, "%s", s.cfg.Banner)

	// A server shutting down ends the session after the command running,
	// if any; the commands queued behind it get 421 and never start
	// (refuseQueued). An idle session has no executor to notice, so the
	// shutdown comes as one more item.
	stop := context.AfterFunc(ctx, func() { s.enqueue(ctx, item{shutdown: true}) })
	defer stop()
	// This goroutine reads; executors come and go (enqueue).
	s.readLoop(ctx)
	s.q.Lock()
	s.q.closed = true // no executor starts after this
	s.q.Unlock()
	s.executors.Wait()
	return s.endErr
}

// flushReplies sends the replies held, before the executor waits for
// something the client might do only once it has them.
func (s *session) flushReplies() {
	if err := s.rw.flush(); err != nil {
		s.log.Debug("replies not written", "err", err)
	}
}

// queued reports whether pipelined commands wait behind the running one.
func (s *session) queued() bool {
	s.q.Lock()
	defer s.q.Unlock()
	return len(s.q.items) > 0
}

// holdable names the commands whose final reply may be held while more
// pipelined commands wait (replyWriter), and that never wait for the
// client before their final reply, except through a data transfer
// (runTransfer and drainRefused send what is held first when they might
// wait). The reply of any other command, and of a command that is the
// last one read, is sent at once, with everything held before it.
var holdable = map[string]bool{
	"ALLO": true, "APPE": true, "CWD": true, "DELE": true, "ERET": true, "ESTO": true,
	"MDTM": true, "MKD": true, "MODE": true, "NOOP": true, "OPTS": true, "PWD": true,
	"REST": true, "RETR": true, "SIZE": true, "STOR": true, "STRU": true, "TYPE": true,
}

// maxQueued bounds the commands read ahead of the executor (pipelining).
const maxQueued = 16

// queue holds the items read but not yet executed, and whether an
// executor goroutine runs. An idle session has neither items nor
// executor: only its reader waits, with a small buffer (issue 17).
type queue struct {
	sync.Mutex
	items   []item        // guarded by Mutex
	running bool          // an executor goroutine runs; guarded by Mutex
	closed  bool          // the session ends: no more items or executors; guarded by Mutex
	space   chan struct{} // executor → reader: the queue has room again
}

// enqueue queues it for the executor, starting one if none runs, and
// reports false when the session ends first. At most maxQueued items wait:
// beyond, it waits for room.
func (s *session) enqueue(ctx context.Context, it item) bool {
	s.q.Lock()
	for len(s.q.items) >= maxQueued && !s.q.closed {
		if s.q.space == nil {
			s.q.space = make(chan struct{}, 1)
		}
		space := s.q.space
		s.q.Unlock()
		select {
		case <-space:
		case <-s.done:
		}
		s.q.Lock()
	}
	if s.q.closed {
		s.q.Unlock()
		return false
	}
	s.q.items = append(s.q.items, it)
	start := !s.q.running
	if start {
		s.q.running = true
		s.executors.Add(1)
	}
	s.q.Unlock()
	if start {
		go s.executeQueued(ctx)
	}
	return true
}

// executeQueued runs the queued items in order, one at a time, and ends
// when none is left; it alone touches the executor state meanwhile. After
// a command that ends the session (QUIT, a shutdown) it closes the
// connection, which ends the reader.
func (s *session) executeQueued(ctx context.Context) {
	defer s.executors.Done()
	for {
		s.q.Lock()
		if len(s.q.items) == 0 || s.q.closed && s.quit {
			s.q.running = false
			s.q.items = nil
			s.q.Unlock()
			// Nothing waits: what was held goes out (an executor
			// started meanwhile writes after it, in order).
			s.flushReplies()
			return
		}
		it := s.q.items[0]
		s.q.items[0] = item{}
		if s.q.items = s.q.items[1:]; len(s.q.items) == 0 {
			s.q.items = nil
		}
		if s.q.space != nil {
			select {
			case s.q.space <- struct{}{}:
			default:
			}
		}
		s.q.Unlock()
		if it.shutdown || ctx.Err() != nil {
			s.refuseQueued(ctx, it)
		} else {
			s.execute(ctx, it)
		}
		if s.quit {
			s.q.Lock()
			s.q.closed = true
			s.q.Unlock()
			close(s.done)
			s.conn.Close() // ends the reader
		}
	}
}

// refuseQueued ends the session of a server shutting down (Serve's ctx
// done): once the shutdown has begun no command starts, not even one a
// client pipelined before it. it and every item still queued are answered
// 421 (RFC 959: the service is closing the control connection), one
// reply each in order; a session with nothing queued gets a single 421.
// No more items are queued, and the session ends. A command already
// running when the shutdown began is not affected: it finishes (or is
// aborted by Config.Abort) before the executor gets here.
func (s *session) refuseQueued(ctx context.Context, it item) {
	s.q.Lock()
	rest := s.q.items
	s.q.items = nil
	s.q.closed = true // the reader queues nothing more
	s.q.Unlock()
	n := 0
	for _, it := range append([]item{it}, rest...) {
		if !it.shutdown {
			n++
		}
	}
	for range max(n, 1) {
		s.reply(421, "Service not available, closing control connection.")
	}
	s.log.Debug("server shutting down; session closed", "refused", n)
	s.quit, s.endErr = true, ctx.Err()
}

// readLoop reads and parses command lines and queues them for the executor,
// in order. ABOR also cancels the running command at once (RFC 959 §4.1.3).
// It ends when the connection fails or idles out, or the executor ended
// the session.
func (s *session) readLoop(ctx context.Context) {
	push := func(it item) bool { return s.enqueue(ctx, it) }
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in control reader", "panic", p)
		}
	}()
	// A lost control connection also ends a running transfer.
	defer s.cancelRunning(errControlLost)
	defer s.lost.Store(true)
	conn := s.conn
	lr := wire.NewLineReaderSize(conn, s.cfg.maxLine(), readBufSize)
	idle := s.cfg.idleTimeout()
	loginBy := time.Now().Add(s.cfg.loginTimeout())
	for {
		idleBy := time.Now().Add(idle)
		deadline := idleBy
		if !s.loggedIn.Load() && loginBy.Before(deadline) {
			deadline = loginBy
		}
		conn.SetReadDeadline(deadline)
		line, err := lr.ReadLine()
		if errors.Is(err, wire.ErrLineTooLong) {
			if !push(item{err: err}) {
				return
			}
			continue
		}
		if err != nil {
			if s.readGoesOn(err, idleBy, loginBy, idle) {
				continue
			}
			return
		}
		wrapped := false
		if g := s.gssCtx.Load(); g != nil {
			if line, err = s.unwrapLine(g, line); err != nil {
				if !push(item{err: err}) {
					return
				}
				continue
			}
			wrapped = true
		} else if k := s.krb.Load(); k != nil {
			if line, err = s.unwrapKrbLine(k, line); err != nil {
				if !push(item{err: err}) {
					return
				}
				continue
			}
			wrapped = true
		}
		cmd, err := wire.ParseCommand(line)
		if err != nil {
			if !push(item{err: err, wrapped: wrapped}) {
				return
			}
			continue
		}
		if cmd.Verb == "ABOR" {
			s.cancelRunning(xfer.ErrAborted)
		}
		if !push(item{cmd: cmd, wrapped: wrapped}) {
			return
		}
		if cmd.Verb == "ADAT" && !s.awaitADAT() {
			return
		}
		if isAuthTLS(cmd) {
			next := s.awaitSwitch()
			if next == nil {
				return
			}
			if next != conn {
				conn = next
				lr = wire.NewLineReaderSize(conn, s.cfg.maxLine(), readBufSize)
			}
		}
	}
}

// readGoesOn handles the error of a control read (other than a line too
// long) and reports whether the reader goes on. Only a read deadline
// lets it: during a transfer, or when the login deadline passed after a
// login. Otherwise the session ends, after a 421 reply when it timed out
// (the login one, or the idle one).
func (s *session) readGoesOn(err error, idleBy, loginBy time.Time, idle time.Duration) bool {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if s.busy.Load() {
			return true // transfers may outlast the idle timeout
		}
		if !s.loggedIn.Load() && !time.Now().Before(loginBy) {
			s.reply(421, "Login timed out (%d seconds): closing control connection.", int(s.cfg.loginTimeout().Seconds()))
			s.log.Info("session did not log in in time, closed")
			return false
		}
		if time.Now().Before(idleBy) {
			return true // the login deadline passed after a login
		}
		s.reply(421, "Idle timeout (%d seconds): closing control connection.", int(idle.Seconds()))
		s.log.Info("session idle, closed")
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	default:
		s.log.Debug("control read failed", "err", err)
	}
	return false
}

// awaitADAT waits until the executor has answered an ADAT, and reports
// false when the executor stopped first. The answer may establish the
// GSI context, after which every line must be unwrapped: the reader
// reads nothing more (lines a client sent along with it included) until
// then, or they would pass as clear text.
func (s *session) awaitADAT() bool {
	select {
	case <-s.adatDone:
		return true
	case <-s.done:
		return false
	}
}

// awaitSwitch waits, after AUTH TLS, for the executor to answer and
// perhaps switch the connection to TLS, and returns the connection to
// read from now on; nil ends the reader (as does an executor that
// stopped). The reader reads nothing more until then.
func (s *session) awaitSwitch() net.Conn {
	select {
	case next := <-s.switched:
		return next
	case <-s.done:
		return nil
	}
}

// runCancellable runs f with a context that ABOR and a lost control
// connection cancel; the session counts as busy meanwhile (no idle timeout).
// Shutdown does not cancel it: a running transfer is allowed to finish.
func (s *session) runCancellable(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	if s.cfg.Abort != nil {
		stop := context.AfterFunc(s.cfg.Abort, func() { cancel(ErrShuttingDown) })
		defer stop()
	}
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
	if it.cmd.Verb == "ADAT" {
		defer func() { s.adatDone <- struct{}{} }()
		if s.acct == nil && s.cfg.OnLoginStep != nil {
			// Only a step that costs the client a handshake's work counts:
			// a free one (USER) would let idle connections look busy.
			s.cfg.OnLoginStep(s.conn)
		}
	}
	switch {
	case errors.Is(it.err, errUnprotected), (s.sec.mode == secGSI || s.sec.mode == secKrb5) && !it.wrapped && it.err == nil:
		s.reply(533, "Command protection level denied: send commands in ENC (or MIC) after GSSAPI authentication.")
		return
	case it.err != nil && (s.gssCtx.Load() != nil || s.krb.Load() != nil) && !errors.Is(it.err, wire.ErrLineTooLong) && !errors.Is(it.err, wire.ErrEmptyCommand) && !errors.Is(it.err, wire.ErrBadCommand):
		s.log.Warn("cannot unwrap a command; closing", "err", it.err)
		s.reply(535, "Failed to unwrap the command: %s", reason(it.err))
		s.quit = true
		return
	case errors.Is(it.err, wire.ErrLineTooLong) && (s.gssCtx.Load() != nil || s.krb.Load() != nil):
		// An over-long ENC/MIC line was never unwrapped: the protection
		// layer's sequence is lost, and every later command would fail
		// to unwrap. Say so once and close, rather than answer nonsense.
		s.log.Warn("protected command line too long; closing")
		s.reply(500, "Command line too long; closing the session: a protected command that long cannot be read.")
		s.quit = true
		return
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
	if !spec.public && s.acct == nil {
		s.reply(530, "Please login with USER and PASS.")
		return
	}
	if spec.arg == argRequired && c.Arg == "" {
		if isUpload(c.Verb) {
			s.drainMalformed(ctx) // its blocks follow: keep the stream in step
		}
		s.reply(501, "Syntax error in parameters or arguments.")
		return
	}
	if spec.arg == argNone && c.Arg != "" {
		s.reply(501, "%s takes no argument.", c.Verb)
		return
	}
	hold := holdable[c.Verb]
	if !hold {
		s.flushReplies()
	}
	r := spec.run(ctx, s, c.Arg)
	if r.Code != 0 {
		s.write(r, hold && s.queued())
	}
	if isAuthTLS(c) {
		if s.startTLS {
			s.startTLS = false
			s.switchTLS(ctx)
		} else {
			s.switched <- s.conn
		}
	}
}

// isAuthTLS reports AUTH TLS and its spellings, after which the control
// connection may become a TLS connection.
func isAuthTLS(c wire.Command) bool {
	if c.Verb != "AUTH" {
		return false
	}
	switch strings.ToUpper(strings.TrimSpace(c.Arg)) {
	case "TLS", "SSL", "TLS-C":
		return true
	}
	return false
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
	// A PART, like REST, belongs to the next transfer command only.
	s.part, s.hasPart = xfer.Range{}, false
	return r, ok
}
