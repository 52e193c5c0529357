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
//     target, unless the server writes uploads in place;
//   - renames the part file over the target only when the ranges the
//     server itself stored in it cover [0, ALLO): the file appears whole
//     or not at all. Otherwise the reply is "226 Part stored; …" and the
//     file stays aside for the next part.
//
// The server does not take REST's word for what the part file holds. A
// ledger (partLedger: Config.Uploads's, shared by the sessions of a
// server, or the session's own when there is none) records for each part
// file the ranges the server wrote into it, the size, the identity that
// uploads it (partOwner) and what the file looked like after the last part
// (partPrint). A PART with REST continues the part file only for the same
// identity, with the same ALLO, when the file is as the last part left it
// and REST names nothing the ledger does not hold; a first PART (no REST)
// and every other upload of the file are refused while the upload in
// parts is another identity's (450), and otherwise start afresh. So
// neither a lying client nor another one can make the server complete a
// file from bytes it never received or that are not the uploader's.
// The ledger lives in memory: after a server restart (or partLedgerTTL
// without a part) a PART with REST is refused (550) and the client sends
// the file again.
//
// PART is cleared by the next transfer command whatever it is, as REST is.
// GCT answers an unknown verb with 500 and lists no PART in FEAT; clients
// send PART only to servers that list it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

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

// partWriter is a dsi.Writer that refuses writes outside its part and
// records the ranges it wrote.
type partWriter struct {
	dsi.Writer
	part xfer.Range

	mu    sync.Mutex
	wrote xfer.RangeSet // ranges written; guarded by mu
}

func (w *partWriter) check(off, n int64) error {
	if n < 0 || off < w.part.Start || off+n > w.part.End {
		return fmt.Errorf("pi: %d bytes at %d are outside the part %d-%d", n, off, w.part.Start, w.part.End)
	}
	return nil
}

// add records that n bytes at off were written.
func (w *partWriter) add(off, n int64) {
	if n <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wrote.Add(xfer.Range{Start: off, End: off + n})
}

// written returns the ranges written so far.
func (w *partWriter) written() xfer.RangeSet {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wrote.Clone()
}

func (w *partWriter) WriteAt(p []byte, off int64) (int, error) {
	if err := w.check(off, int64(len(p))); err != nil {
		return 0, &xfer.DataError{Err: err}
	}
	n, err := w.Writer.WriteAt(p, off)
	w.add(off, int64(n))
	return n, err
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
	got, err := w.rf.ReadRangeFrom(r, off, n)
	w.add(off, got)
	return got, err
}

// limitToPart wraps w so that it takes only the bytes of part; the
// partWriter reports what was written.
func limitToPart(w dsi.Writer, part xfer.Range) (dsi.Writer, *partWriter) {
	pw := &partWriter{Writer: w, part: part}
	if rf, ok := w.(dsi.RangeReaderFrom); ok {
		return partRangeWriter{pw, rf}, pw
	}
	return pw, pw
}

// Refusals of an upload in parts; replies.go maps them to reply codes.
var (
	// errPartOther: another identity's upload in parts writes the file (450).
	errPartOther = errors.New("pi: another client's upload in parts is writing this file")
	// errPartNone: a PART with REST, but no upload in parts to continue (550).
	errPartNone = errors.New("pi: no upload in parts to continue")
	// errPartNotHeld: REST names ranges the part file does not hold (550).
	errPartNotHeld = errors.New("pi: REST names ranges the server did not store")
	// errPartChanged: the part file is not as the last part left it (550).
	errPartChanged = errors.New("pi: the part file changed since the last part")
	// errPartSize: ALLO differs from that of the parts before (554).
	errPartSize = errors.New("pi: ALLO differs from the size the parts before announced")
)

// Bounds of the ledger of uploads in parts (partLedger).
const (
	// partLedgerTTL: a record unused this long is forgotten (the upload
	// must then start again), and no longer keeps others out of the file.
	partLedgerTTL = 24 * time.Hour
	// partLedgerMax is how many uploads in parts a ledger records; past
	// it the one unused longest (the owner's own first) is forgotten.
	partLedgerMax = 1 << 14
	// partLedgerOwnerMax is how many of them one identity may have.
	partLedgerOwnerMax = 1 << 10
	// partMaxRanges is how many separate ranges a part file may hold;
	// past it the upload must start again.
	partMaxRanges = 1 << 14
)

// partPrint is what a part file looked like when the server last wrote
// it: another writer (or a deletion and new file) changes it.
type partPrint struct {
	exists  bool
	size    int64
	modTime time.Time
	unique  string
}

func (p partPrint) equal(q partPrint) bool {
	return p.exists == q.exists && p.size == q.size && p.modTime.Equal(q.modTime) && p.unique == q.unique
}

// partRecord is the ledger's record of one upload in parts.
type partRecord struct {
	keys    []string      // the part file's keys (partKeys)
	owner   string        // partOwner of who uploads it
	size    int64         // the whole file's size (ALLO)
	held    xfer.RangeSet // ranges of the part file the server stored
	print   partPrint     // the part file after the last part
	touched time.Time
}

// partLedger records the uploads in parts of a server (see the top of
// this file). The zero value is ready.
type partLedger struct {
	mu     sync.Mutex
	files  map[string]*partRecord // by each of its keys; guarded by mu
	n      int                    // records; guarded by mu
	owners map[string]int         // records by owner; guarded by mu
}

// lookup returns a copy of the live record under any of keys.
func (l *partLedger) lookup(keys []string, now time.Time) (partRecord, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		r := l.files[k]
		if r == nil {
			continue
		}
		if now.Sub(r.touched) > partLedgerTTL {
			l.dropLocked(r)
			continue
		}
		c := *r
		c.held = r.held.Clone()
		return c, true
	}
	return partRecord{}, false
}

// drop forgets the records under any of keys.
func (l *partLedger) drop(keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if r := l.files[k]; r != nil {
			l.dropLocked(r)
		}
	}
}

// dropLocked forgets r. l.mu must be held.
func (l *partLedger) dropLocked(r *partRecord) {
	gone := false
	for _, k := range r.keys {
		if l.files[k] == r {
			delete(l.files, k)
			gone = true
		}
	}
	if gone {
		l.n--
		if l.owners[r.owner]--; l.owners[r.owner] <= 0 {
			delete(l.owners, r.owner)
		}
	}
}

// put records r under its keys, in place of any record there.
func (l *partLedger) put(r partRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range r.keys {
		if old := l.files[k]; old != nil {
			l.dropLocked(old)
		}
	}
	if len(r.keys) == 0 {
		return
	}
	if l.files == nil {
		l.files, l.owners = map[string]*partRecord{}, map[string]int{}
	}
	l.makeRoomLocked(r.owner, r.touched)
	rec := &r
	for _, k := range r.keys {
		l.files[k] = rec
	}
	l.n++
	l.owners[r.owner]++
}

// makeRoomLocked forgets records until owner may have one more: an
// expired one, else the one unused longest of owner's (past
// partLedgerOwnerMax) or of anyone's (past partLedgerMax). l.mu must be
// held.
func (l *partLedger) makeRoomLocked(owner string, now time.Time) {
	for l.n >= partLedgerMax || l.owners[owner] >= partLedgerOwnerMax {
		ownerFull := l.owners[owner] >= partLedgerOwnerMax
		var oldest *partRecord
		for k, r := range l.files {
			if r.keys[0] != k {
				continue // each record once
			}
			if now.Sub(r.touched) > partLedgerTTL {
				oldest = r
				break
			}
			if ownerFull && r.owner != owner {
				continue
			}
			if oldest == nil || r.touched.Before(oldest.touched) {
				oldest = r
			}
		}
		if oldest == nil {
			return
		}
		l.dropLocked(oldest)
	}
}

// parts is the session's ledger of uploads in parts: the server's, or,
// without Config.Uploads, the session's own.
func (s *session) parts() *partLedger {
	if s.cfg.Uploads != nil {
		return &s.cfg.Uploads.parts
	}
	return &s.ownParts
}

// partOwner is the identity an upload in parts is bound to: the account
// (so that a client resuming on a new control connection continues it),
// or for an anonymous login the client's host.
func (s *session) partOwner() string {
	if s.acct == nil {
		return ""
	}
	if s.acct.Anonymous {
		return "anonymous@" + remoteAddrPort(s.conn).Addr().String()
	}
	return "user:" + s.acct.Name + "\x00" + s.acct.Home
}

// partKeys are the ledger's keys of a part file among an upload's keys
// (uploadKeys): its path and (directory identity, name), not the file's
// own identity, which a first part may create.
func partKeys(files []string) []string {
	var out []string
	for _, k := range files {
		if !strings.HasPrefix(k, "f:") {
			out = append(out, k)
		}
	}
	return out
}

// partPrintOf is what target looks like now.
func (s *session) partPrintOf(ctx context.Context, target string) partPrint {
	fi, err := s.fs.Stat(ctx, target)
	if err != nil {
		return partPrint{}
	}
	return partPrint{exists: true, size: fi.Size, modTime: fi.ModTime, unique: fi.Unique}
}

// planPart checks an upload of target (keys: its partKeys) against the
// ledger before it runs: it returns the ledger's record of a PART with
// REST that may continue, or nil, or the refusal. Every upload but a
// continuation forgets the record (a first part starts afresh), and one
// that continues takes it out until it ends (keepPart puts it back).
func (s *session) planPart(ctx context.Context, keys []string, target string, hasPart, hasRest bool, rest xfer.RangeSet, allo int64) (*partRecord, error) {
	led := s.parts()
	rec, found := led.lookup(keys, time.Now())
	switch {
	case !found:
		if hasPart && hasRest {
			return nil, fmt.Errorf("%w (the server stored no part of this file)", errPartNone)
		}
		return nil, nil
	case rec.owner != s.partOwner():
		return nil, errPartOther
	case !hasPart || !hasRest:
		led.drop(keys)
		return nil, nil
	case rec.size != allo:
		return nil, fmt.Errorf("%w (%d)", errPartSize, rec.size)
	case !s.partPrintOf(ctx, target).equal(rec.print):
		led.drop(keys)
		return nil, errPartChanged
	}
	var missing xfer.RangeSet
	for _, r := range rest.Ranges() {
		for _, g := range rec.held.Missing(r) {
			missing.Add(g)
		}
	}
	if missing.Len() > 0 {
		return nil, fmt.Errorf("%w: %s (it holds %s)", errPartNotHeld, briefRanges(missing), briefRanges(rec.held))
	}
	led.drop(keys)
	return &rec, nil
}

// errAbortedUpload stands for Close when the storage discarded a failed
// upload (writerAborter): nothing of it was stored.
var errAbortedUpload = errors.New("the storage discarded the failed upload")

// settlePart accounts for the bytes a part's STOR wrote (w) when it ended
// with err (closeErr: closing its writer): they join the ranges the part
// file holds, and the part is stored only when REST and they cover it.
// It sets up.partial and returns the upload's error.
func (s *session) settlePart(up *storePlan, w *partWriter, closeErr, err error) error {
	got := w.written()
	if closeErr == nil {
		for _, r := range got.Ranges() {
			up.held.Add(r)
		}
	}
	if err == nil {
		have := up.rest.Clone()
		for _, r := range got.Ranges() {
			have.Add(r)
		}
		if miss := have.Missing(*up.part); len(miss) > 0 {
			var rs xfer.RangeSet
			for _, r := range miss {
				rs.Add(r)
			}
			err = &xfer.DataError{Err: fmt.Errorf("the part's bytes %s did not arrive", briefRanges(rs))}
		}
	}
	up.partial = len(up.held.Missing(xfer.Range{Start: 0, End: up.allo})) > 0
	return err
}

// briefRanges is rs for a reply: its first ranges only.
func briefRanges(rs xfer.RangeSet) string {
	const most = 8
	if rs.Len() == 0 {
		return "nothing"
	}
	if rs.Len() <= most {
		return rs.String()
	}
	var first xfer.RangeSet
	for _, r := range rs.Ranges()[:most] {
		first.Add(r)
	}
	return fmt.Sprintf("%s,… (%d ranges)", first.String(), rs.Len())
}

// keepPart records in the ledger what the part file of up holds now.
func (s *session) keepPart(ctx context.Context, up *storePlan) {
	if up.held.Len() > partMaxRanges {
		s.log.Warn("upload in parts forgotten: its part file holds too many separate ranges", "path", up.target, "ranges", up.held.Len())
		return
	}
	s.parts().put(partRecord{
		keys: up.partKeys, owner: s.partOwner(), size: up.allo, held: up.held,
		print: s.partPrintOf(context.WithoutCancel(ctx), up.target), touched: time.Now(),
	})
}
