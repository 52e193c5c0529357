package pi

// SITE XFERSTATS: the server's view of the session's last data transfer,
// for a client that reports which leg limited it (ferry cp -nlb). It
// answers with what the data connections' sockets measured while the
// transfer ran (xfer.EventConns), never anything of another session.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// xferStats is what SITE XFERSTATS reports of a session's last transfer.
type xferStats struct {
	mu    sync.Mutex
	done  bool          // guarded by mu; a transfer ended
	start time.Time     // guarded by mu; the data channel opened (EventStarted)
	span  time.Duration // guarded by mu; from start to the transfer's end
	bytes int64         // guarded by mu
	conns xfer.Event    // guarded by mu; the transfer's EventConns
}

// begin notes that a transfer starts: the last one's figures are gone.
func (x *xferStats) begin() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.done, x.start, x.span, x.bytes, x.conns = false, time.Time{}, 0, 0, xfer.Event{}
}

// note takes what the DTP reports of the transfer.
func (x *xferStats) note(ev xfer.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch ev.Kind {
	case xfer.EventStarted:
		if x.start.IsZero() {
			x.start = time.Now()
		}
	case xfer.EventConns:
		x.conns = ev
	}
}

// end notes that the transfer ended after moving n bytes.
func (x *xferStats) end(n int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.done, x.bytes = true, n
	if !x.start.IsZero() {
		x.span = time.Since(x.start)
	}
}

// facts renders the last transfer as FTP facts (RFC 3659 style), times
// in microseconds; ok is false when the session has not transferred.
func (x *xferStats) facts() (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.done {
		return "", false
	}
	c := x.conns
	return fmt.Sprintf("Bytes=%d;Elapsed=%d;Streams=%d;Measured=%d;Busy=%d;RwndLimited=%d;SndbufLimited=%d;",
		x.bytes, x.span.Microseconds(), c.Streams, c.Measured,
		c.Busy.Microseconds(), c.RwndLimited.Microseconds(), c.SndbufLimited.Microseconds()), true
}

// siteXFERSTATS answers SITE XFERSTATS.
func siteXFERSTATS(_ context.Context, s *session, _ string) wire.Reply {
	f, done := s.xstats.facts()
	if !done {
		return ok(550, "No data transfer in this session yet.")
	}
	return ok(200, "%s", f)
}
