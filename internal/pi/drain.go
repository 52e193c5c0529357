package pi

// STOR-DRAIN: a Ferry extension that lets a client send an upload's MODE E
// blocks right behind its STOR, APPE or ESTO, without waiting for the
// 125/150 (docs/extensions.md has the full text).
//
//	FEAT line:  " PIPE STOR-DRAIN"
//	enable:     OPTS PIPE STOR-DRAIN=ON   -> 200  (OFF turns it off again)
//
// While it is on, every STOR, APPE and ESTO the server reads in MODE E is
// followed by that file's data on the data channel: the server either
// stores it (125/150 … 226) or, when it refuses the command before the
// data channel starts (550 no such directory, permission, is a directory;
// 501 no path or bad ESTO arguments), reads the file's blocks up to its EOF and EOD
// count and discards them, then sends the refusal. The MODE E stream thus
// stays in step for the next file whatever the server answers. A drain
// is bounded like a transfer: the MODE E rules and ALLO limit are
// enforced, the stall timeout and ABOR apply, nothing is written; if it
// fails the data connections are closed (the client's next file then
// fails on them) and the refusal is sent as usual.
//
// GCT's clients ignore FEAT lines they do not know, and a server without
// the line is never sent the OPTS, so both keep the standard behaviour:
// the client sends a file's blocks only after its 125/150.

import (
	"context"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// featStorDrain is the FEAT line of the extension.
const featStorDrain = "PIPE STOR-DRAIN"

// drainMinLine is the command length (with CRLF) a server offering
// STOR-DRAIN must accept: a line it could not read would not be known as
// an upload, and its data would not be drained. Clients keep their
// pipelined upload commands within it.
const drainMinLine = 4096

// canDrain reports whether this session can offer STOR-DRAIN.
func (s *session) canDrain() bool {
	_, ok := s.dtp.(Drainer)
	return ok && s.cfg.maxLine() >= drainMinLine
}

// optsPipe handles OPTS PIPE STOR-DRAIN=ON|OFF.
func (s *session) optsPipe(opt string) wire.Reply {
	name, value, found := strings.Cut(strings.TrimSpace(opt), "=")
	if !found || !strings.EqualFold(name, "STOR-DRAIN") || !s.canDrain() {
		return ok(501, "OPTS PIPE: only STOR-DRAIN=ON or STOR-DRAIN=OFF.")
	}
	switch strings.ToUpper(value) {
	case "ON":
		s.storDrain = true
	case "OFF":
		s.storDrain = false
	default:
		return ok(501, "OPTS PIPE: only STOR-DRAIN=ON or STOR-DRAIN=OFF.")
	}
	return ok(200, "PIPE STOR-DRAIN=%s.", strings.ToUpper(value))
}

// isUpload reports the commands whose data follows them at once while
// STOR-DRAIN is on.
func isUpload(verb string) bool {
	return verb == "STOR" || verb == "APPE" || verb == "ESTO"
}

// drainMalformed drains, when STOR-DRAIN is on, the data of an upload
// refused for its arguments before any file was looked at (no path, bad
// ESTO arguments): like any refused upload it uses up the file's REST and
// ALLO.
func (s *session) drainMalformed(ctx context.Context) {
	if !s.storDrain {
		return
	}
	s.takeRest()
	allo := s.allo
	s.allo = -1
	s.drainRefused(ctx, allo)
}

// drainRefused discards the data of an upload refused before its data
// channel started, when STOR-DRAIN is on; allo is the upload's ALLO size
// (-1: none), which bounds the blocks.
func (s *session) drainRefused(ctx context.Context, allo int64) {
	if !s.storDrain || s.mode != xfer.ModeEBlock {
		return
	}
	dr, ok := s.dtp.(Drainer)
	if !ok {
		return
	}
	s.flushReplies() // the drain may wait for the client
	req := s.newRequest("")
	req.Size = allo
	start := time.Now()
	var n int64
	err := s.runCancellable(ctx, func(ctx context.Context) error {
		var err error
		n, err = dr.Drain(ctx, req)
		return err
	})
	if err != nil {
		s.log.Warn("could not drain a refused upload; data connections closed", "bytes", n, "err", err)
		return
	}
	s.log.Debug("drained a refused upload", "bytes", n, "duration", time.Since(start).Round(time.Millisecond))
}
