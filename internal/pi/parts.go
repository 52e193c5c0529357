package pi

// PART: a Ferry extension that uploads a file in parts, each its own MODE E
// STOR, so that a client can change its streams and buffers between the
// parts (re-tuning on the fly, issue 15) while the file stays aside until
// the parts cover it (docs/extensions.md has the full text).
//
//	FEAT line:  " PART"
//	command:    PART <start>-<end>   -> 350   (one-shot, like REST)
//
// A PART names the byte range [start, end) of the file that the next
// MODE E STOR brings (or ESTO A <start>, whose MODE E offsets start at 0
// at the part's start: a third-party copy whose source sends
// ERET P <start> <end-start>). It needs the file's whole size in ALLO (end at most
// that); REST names, as usual, the ranges the server holds already from
// the parts before. The STOR then:
//   - accepts blocks only inside [start, end) (others fail the transfer);
//   - is complete when every byte of [start, end) that REST does not hold
//     has arrived (less is an error, as for a STOR short of its ALLO);
//   - writes into the upload's part file (xfer.PartName), never into the
//     target, unless the server writes uploads in place; a PART with REST
//     continues the part file and is refused when there is none, so that
//     it never completes a file from ranges the server does not have;
//   - renames the part file over the target only when REST and the part
//     together cover [0, ALLO): the file appears whole or not at all.
//     Otherwise the reply is "226 Part stored; …" and the file stays
//     aside for the next part.
//
// PART is cleared by the next transfer command whatever it is, as REST is.
// GCT answers an unknown verb with 500 and lists no PART in FEAT; clients
// send PART only to servers that list it.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// featPart is the FEAT line of the extension.
const featPart = "PART"

// canPart reports whether this session offers PART: not on a striped
// server, whose movers' handling of a part is untested.
func (s *session) canPart() bool {
	_, striped := s.dtp.(StripedDTP)
	return !striped
}

func cmdPART(ctx context.Context, s *session, arg string) wire.Reply {
	if !s.canPart() {
		return ok(502, "PART is not offered by this server.")
	}
	rs, err := xfer.ParseRangeList(strings.TrimSpace(arg))
	r := rs.Ranges()
	if err != nil || len(r) != 1 || r[0].Start < 0 || r[0].End <= r[0].Start {
		return ok(501, "Syntax: PART <start>-<end>.")
	}
	s.part, s.hasPart = r[0], true
	return ok(350, "Part %d-%d OK. Send STOR to store it.", r[0].Start, r[0].End)
}

// takePart returns and clears the pending PART.
func (s *session) takePart() (xfer.Range, bool) {
	p, ok := s.part, s.hasPart
	s.part, s.hasPart = xfer.Range{}, false
	return p, ok
}

// partRefusal is the reply refusing an upload of kind (ESTO: at offset)
// with part and ALLO allo, or the zero Reply when it may run.
func (s *session) partRefusal(part xfer.Range, kind storeKind, offset, allo int64) wire.Reply {
	switch {
	case kind == storeAdjusted && offset != part.Start:
		return ok(554, "PART %d-%d with ESTO needs ESTO A %d.", part.Start, part.End, part.Start)
	case kind != storePlain && kind != storeAdjusted:
		return ok(554, "PART goes with STOR or ESTO only.")
	case s.mode != xfer.ModeEBlock:
		return ok(554, "PART needs MODE E.")
	case allo < 0:
		return ok(554, "PART needs the size of the whole file in ALLO.")
	case part.End > allo:
		return ok(554, "PART %d-%d ends past the size announced (ALLO %d).", part.Start, part.End, allo)
	}
	return wire.Reply{}
}

// partRestart is the Restart of the DTP request of a STOR of part: the
// ranges rest holds plus everything of [0, size) outside the part, so
// that the bytes the STOR must bring (Request.Missing) are the part's.
func partRestart(rest xfer.RangeSet, part xfer.Range, size int64) xfer.RangeSet {
	out := rest.Clone()
	if part.Start > 0 {
		out.Add(xfer.Range{Start: 0, End: part.Start})
	}
	if part.End < size {
		out.Add(xfer.Range{Start: part.End, End: size})
	}
	return out
}

// shiftRange is rest in the coordinates of the virtual file of an
// ESTO A <part start>: shifted by -part.Start, clipped to the part.
func shiftRange(rest xfer.RangeSet, part xfer.Range) xfer.RangeSet {
	var out xfer.RangeSet
	for _, r := range rest.Ranges() {
		a, b := max(r.Start, part.Start), min(r.End, part.End)
		if b > a {
			out.Add(xfer.Range{Start: a - part.Start, End: b - part.Start})
		}
	}
	return out
}

// partCompletes reports whether rest and part together cover [0, size).
func partCompletes(rest xfer.RangeSet, part xfer.Range, size int64) bool {
	all := rest.Clone()
	all.Add(part)
	return len(all.Missing(xfer.Range{Start: 0, End: size})) == 0
}

// partWriter is a dsi.Writer that refuses writes outside its part.
type partWriter struct {
	dsi.Writer
	part xfer.Range
}

func (w *partWriter) check(off, n int64) error {
	if n < 0 || off < w.part.Start || off+n > w.part.End {
		return fmt.Errorf("pi: %d bytes at %d are outside the part %d-%d", n, off, w.part.Start, w.part.End)
	}
	return nil
}

func (w *partWriter) WriteAt(p []byte, off int64) (int, error) {
	if err := w.check(off, int64(len(p))); err != nil {
		return 0, &xfer.DataError{Err: err}
	}
	return w.Writer.WriteAt(p, off)
}

// partRangeWriter is a partWriter that keeps its Writer's zero-copy path.
type partRangeWriter struct {
	*partWriter
	rf dsi.RangeReaderFrom
}

func (w partRangeWriter) ReadRangeFrom(r io.Reader, off, n int64) (int64, error) {
	if err := w.check(off, n); err != nil {
		return 0, &xfer.DataError{Err: err}
	}
	return w.rf.ReadRangeFrom(r, off, n)
}

// limitToPart wraps w so that it takes only the bytes of part.
func limitToPart(w dsi.Writer, part xfer.Range) dsi.Writer {
	pw := &partWriter{Writer: w, part: part}
	if rf, ok := w.(dsi.RangeReaderFrom); ok {
		return partRangeWriter{pw, rf}
	}
	return pw
}
