package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// replyStream is the one reader of a control connection's replies.
//
// Every command takes a ticket when it is sent. A server answers commands
// in the order they came (RFC 959 §4.2, protocol.md §1.1), so replies
// belong to the oldest ticket still waiting for its final reply, the
// head. A ticket's reader gets the turn once every earlier ticket is
// answered or abandoned, reads and drops what is still due to the
// abandoned ones, then reads its own. A preliminary (1xx) reply — 125/150,
// 111 restart and 112 performance markers — keeps the head; any other
// reply (a multi-line one is one reply) ends it.
//
// The readers take turns instead of a goroutine of the stream's own
// reading ahead: the AUTH TLS and GSI handshakes swap the reader between
// two exchanges (setReader), and nothing may be read before they do. How a
// protected (631/632/633) reply is decoded is the business of that reader.
//
// Every failure is a *brokenError naming the command: the context's cause
// when the context is done (it interrupts a read in progress through the
// connection's deadline), ErrClosed after close, else the read error.
type replyStream struct {
	d   deadliner // the control connection: its deadline interrupts a read
	log *slog.Logger

	mu      sync.Mutex
	rr      *wire.ReplyReader // guarded by mu, used outside it by the reader holding the turn
	sent    uint64            // tickets handed out; guarded by mu
	head    uint64            // the oldest ticket without its final reply; guarded by mu
	dropped map[uint64]bool   // abandoned tickets from head on; guarded by mu
	reading bool              // a reader holds the turn; guarded by mu
	moved   chan struct{}     // closed, and replaced, when the turn is free again or the stream closes; guarded by mu
	err     error             // why the stream closed; guarded by mu
}

// ticket is a command's place in the reply stream.
type ticket struct {
	n    uint64
	verb string // for errors
}

func newReplyStream(d deadliner, rr *wire.ReplyReader, log *slog.Logger) *replyStream {
	return &replyStream{d: d, rr: rr, log: log, dropped: map[uint64]bool{}, moved: make(chan struct{})}
}

// setReader replaces the reader, between exchanges (a secured channel).
func (s *replyStream) setReader(rr *wire.ReplyReader) {
	s.mu.Lock()
	s.rr = rr
	s.mu.Unlock()
}

// enqueue hands out the ticket of a command about to be sent (or of the
// server's greeting).
func (s *replyStream) enqueue(line string) ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := ticket{n: s.sent, verb: verb(line)}
	s.sent++
	return t
}

// last is the ticket of the command sent last (the greeting before any):
// what ReadReply reads for.
func (s *replyStream) last() ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ticket{n: max(s.sent, 1) - 1, verb: "reply"}
}

// abandon gives up t: the replies still due to it are dropped.
func (s *replyStream) abandon(t ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.n >= s.head {
		s.dropped[t.n] = true
		s.signalLocked()
	}
}

// abandonAll gives up every ticket still waiting for replies.
func (s *replyStream) abandonAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := s.head; n < s.sent; n++ {
		s.dropped[n] = true
	}
	s.signalLocked()
}

// close ends the stream: every waiter, and every later call, fails with
// err. A read in progress is the connection's to interrupt.
func (s *replyStream) close(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
		s.signalLocked()
	}
}

func (s *replyStream) signalLocked() {
	close(s.moved)
	s.moved = make(chan struct{})
}

// fail is the error of t's exchange.
func fail(ctx context.Context, t ticket, err error) error {
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	} else if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &brokenError{err: fmt.Errorf("client: %s: %w", t.verb, err)}
}

// plain returns the exchange error err without its *brokenError: the
// error that names the command.
func plain(err error) error {
	var be *brokenError
	if errors.As(err, &be) {
		return be.err
	}
	return err
}

// causeOf is what made the exchange error err fail, without the command.
func causeOf(err error) error {
	var be *brokenError
	if errors.As(err, &be) {
		if cause := errors.Unwrap(be.err); cause != nil {
			return cause
		}
	}
	return err
}

// turn waits until t may read: every earlier ticket is answered or
// abandoned and no other reader holds the turn. A t given up for ctx is
// abandoned.
func (s *replyStream) turn(ctx context.Context, t ticket) error {
	for {
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return fail(ctx, t, err)
		}
		ready := !s.reading
		for n := s.head; ready && n < t.n; n++ {
			ready = s.dropped[n]
		}
		if ready {
			s.reading = true
			s.mu.Unlock()
			return nil
		}
		moved := s.moved
		s.mu.Unlock()
		select {
		case <-moved:
		case <-ctx.Done():
			s.abandon(t)
			return fail(ctx, t, nil)
		}
	}
}

// release gives the turn back.
func (s *replyStream) release() {
	s.mu.Lock()
	s.reading = false
	s.signalLocked()
	s.mu.Unlock()
}

// next reads t's next reply, preliminary or final. Read after t's final
// reply, it is whatever the server sends next (an unsolicited 421, say);
// that is for a caller with no other command outstanding.
func (s *replyStream) next(ctx context.Context, t ticket) (Reply, error) {
	if err := s.turn(ctx, t); err != nil {
		return Reply{}, err
	}
	defer s.release()
	for {
		r, err := s.read(ctx)
		if err != nil {
			// Where the stream stands is unknown: whatever t was
			// still due is not t's any more.
			s.abandon(t)
			return Reply{}, fail(ctx, t, err)
		}
		if s.deliver(t, r) {
			return r, nil
		}
	}
}

// nextRaw reads the next reply on the stream, whichever command it
// answers: the exchange of Conn.Do and Conn.ReadReply, whose callers
// follow the order of replies themselves (a transfer's 426, then ABOR's
// 226, as before the stream had tickets). It waits only for another
// reader to finish.
func (s *replyStream) nextRaw(ctx context.Context, verb string) (Reply, error) {
	s.mu.Lock()
	t := ticket{n: s.head, verb: verb}
	s.mu.Unlock()
	return s.next(ctx, t)
}

// final reads t's replies up to its final one, which it returns; each
// preliminary one goes to prelim, which may be nil.
func (s *replyStream) final(ctx context.Context, t ticket, prelim func(Reply)) (Reply, error) {
	for {
		r, err := s.next(ctx, t)
		if err != nil || r.Class() != 1 {
			return r, err
		}
		if prelim != nil {
			prelim(r)
		}
	}
}

// discard abandons every ticket, then reads and drops up to n replies
// until a read fails: the drain after ABOR, before the connection
// closes. The connection's deadline bounds it.
func (s *replyStream) discard(n int) {
	s.abandonAll()
	t := s.last()
	if s.turn(context.Background(), t) != nil {
		return
	}
	defer s.release()
	for range n {
		r, err := s.read(context.Background())
		if err != nil {
			return
		}
		s.deliver(t, r)
	}
}

// deliver accounts for r, read with the turn of t, and reports whether it
// is t's.
func (s *replyStream) deliver(t ticket, r Reply) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.head
	if h < s.sent && r.Class() != 1 {
		delete(s.dropped, h)
		s.head++
	}
	if h < t.n {
		s.log.Debug("reply dropped", "code", r.Code)
		return false
	}
	return true
}

// read reads one reply with the turn held; ctx interrupts it.
func (s *replyStream) read(ctx context.Context) (Reply, error) {
	if ctx.Err() != nil {
		return Reply{}, context.Cause(ctx)
	}
	s.mu.Lock()
	rr := s.rr
	s.mu.Unlock()
	var r Reply
	err := interruptible(ctx, s.d, func() (err error) {
		r, err = rr.ReadReply()
		return err
	})
	if err != nil {
		return Reply{}, err
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		text := r.Text()
		if strings.HasPrefix(text, "ADAT=") {
			text = "ADAT=****" // the server's security token
		}
		s.log.Debug("reply", "code", r.Code, "text", text)
	}
	return r, nil
}

// interruptible runs io, one read or write of d, which ctx interrupts by
// moving d's deadline into the past. When io completes all the same, the
// deadline is cleared: a completed exchange leaves the connection usable.
func interruptible(ctx context.Context, d deadliner, io func() error) error {
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = d.SetDeadline(time.Unix(1, 0))
	})
	err := io()
	if !stop() {
		<-done
		if err == nil {
			_ = d.SetDeadline(time.Time{})
		}
	}
	return err
}
