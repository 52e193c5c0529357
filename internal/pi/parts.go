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
// server, or the session's own when there is none) records every part
// file an upload leaves, a plain STOR's as much as a PART's: the identity
// that uploads it (partOwner) and what the file looked like after its
// last write (partPrint), and for an upload in parts the ranges the
// server wrote into it and the size. A continuation (REST) of another
// identity's part file is refused (450), and one of a part file that is
// not as its owner's last upload left it (550): a record that no longer
// matches its file is stale for everyone and forgotten, as is one whose
// file is deleted (DELE, RMD). A PART with REST continues the part file
// only for the same identity, with the same ALLO, and when REST names
// nothing the ledger does not hold; every upload of a file another
// identity uploads in parts is refused (450), and an upload without REST
// otherwise starts afresh. So neither a lying client nor another one can
// make the server complete a file from bytes it never received or that
// are not the uploader's. The ledger lives in memory: after a server
// restart (or partLedgerTTL unused) a PART with REST is refused (550) and
// the client sends the file again; a plain REST is taken at its word, as
// GCT does. Its bounds (partLedgerMax and the rest) keep one identity
// from filling it or pushing another's records out.
//
// PART is cleared by the next transfer command whatever it is, as REST is.
// GCT answers an unknown verb with 500 and lists no PART in FEAT; clients
// send PART only to servers that list it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
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

// add records that n bytes at off were written; it fails the transfer
// when they leave more than partMaxRanges separate ranges.
func (w *partWriter) add(off, n int64) error {
	if n <= 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wrote.Add(xfer.Range{Start: off, End: off + n})
	if w.wrote.Len() > partMaxRanges {
		return &xfer.DataError{Err: fmt.Errorf("%w (%d)", errPartRanges, w.wrote.Len())}
	}
	return nil
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
	if aerr := w.add(off, int64(n)); err == nil {
		err = aerr
	}
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
	if aerr := w.add(off, got); err == nil {
		err = aerr
	}
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
	// errPartOther: another identity's upload writes the part file (450).
	errPartOther = errors.New("pi: another client's upload is writing this file")
	// errPartNone: a PART with REST, but no upload in parts to continue (550).
	errPartNone = errors.New("pi: no upload in parts to continue")
	// errPartNotHeld: REST names ranges the part file does not hold (550).
	errPartNotHeld = errors.New("pi: REST names ranges the server did not store")
	// errPartChanged: the part file is not as the last upload left it (550).
	errPartChanged = errors.New("pi: the part file changed since the last upload wrote it")
	// errPartSize: ALLO differs from that of the parts before (554).
	errPartSize = errors.New("pi: ALLO differs from the size the parts before announced")
	// errPartFull: the ledger holds all the part files it may (452).
	errPartFull = errors.New("pi: too many uploads are kept aside")
	// errPartRanges: a part file holds too many separate ranges (a
	// transfer's data error, so 426 or 451).
	errPartRanges = errors.New("pi: the part file holds too many separate ranges")
)

// Bounds of the ledger of part files (partLedger).
const (
	// partLedgerTTL: a record unused this long is forgotten (the upload
	// must then start again), and no longer keeps others out of the file.
	partLedgerTTL = 24 * time.Hour
	// partLedgerMax is how many part files a ledger records, and
	// partLedgerBytes how much memory (partRecord.cost) they may take.
	// Past either, an identity that has none of its fair share left
	// over is refused (errPartFull): no record of another is forgotten
	// to make room for it.
	partLedgerMax   = 1 << 14
	partLedgerBytes = 64 << 20
	// partLedgerOwnerMax and partLedgerOwnerBytes are one identity's
	// share; past it, its own record unused longest is forgotten.
	partLedgerOwnerMax   = 1 << 8
	partLedgerOwnerBytes = partLedgerBytes / 64
	// partMaxRanges is how many separate ranges a part file may hold:
	// a transfer that leaves more fails, and an upload in parts whose
	// part file holds more must start again.
	partMaxRanges = 1 << 10
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

// partRecord is the ledger's record of one part file.
type partRecord struct {
	keys    []string      // the part file's keys (partKeys)
	owner   string        // partOwner of who uploads it
	parts   bool          // an upload in parts (PART): held is what it holds
	size    int64         // the whole file's size (ALLO)
	held    xfer.RangeSet // PART: ranges of the part file the server stored
	print   partPrint     // the part file after the last upload
	touched time.Time
}

// cost is about how many bytes of memory r takes.
func (r *partRecord) cost() int64 {
	n := int64(256 + len(r.owner) + len(r.print.unique) + 32*r.held.Len())
	for _, k := range r.keys {
		n += int64(32 + len(k))
	}
	return n
}

// partShare is what one identity has in a ledger.
type partShare struct {
	n     int
	bytes int64
}

// partLedger records the part files of a server's uploads (see the top
// of this file). The zero value is ready.
type partLedger struct {
	mu     sync.Mutex
	files  map[string]*partRecord // by each of its keys; guarded by mu
	n      int                    // records; guarded by mu
	bytes  int64                  // their cost; guarded by mu
	owners map[string]partShare   // records by owner; guarded by mu
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

// dropUnder forgets the records with a key beginning with prefix.
func (l *partLedger) dropUnder(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, r := range l.files {
		if strings.HasPrefix(k, prefix) {
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
		l.bytes -= r.cost()
		sh := l.owners[r.owner]
		sh.n--
		sh.bytes -= r.cost()
		if sh.n <= 0 {
			delete(l.owners, r.owner)
		} else {
			l.owners[r.owner] = sh
		}
	}
}

// admit returns errPartFull when an upload of owner's to the part file
// under keys could not be recorded: no record is under keys (one there
// is replaced), the ledger is full, and owner has no record of its own
// to give up for it.
func (l *partLedger) admit(owner string, keys []string, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if l.files[k] != nil {
			return nil
		}
	}
	if l.n < partLedgerMax && l.bytes < partLedgerBytes {
		return nil
	}
	if l.owners[owner].n > 0 {
		return nil // it gives up its own record unused longest
	}
	l.dropExpiredLocked(now)
	if l.n < partLedgerMax && l.bytes < partLedgerBytes {
		return nil
	}
	return errPartFull
}

// dropExpiredLocked forgets the records unused for partLedgerTTL. l.mu
// must be held.
func (l *partLedger) dropExpiredLocked(now time.Time) {
	for k, r := range l.files {
		if r.keys[0] == k && now.Sub(r.touched) > partLedgerTTL {
			l.dropLocked(r)
		}
	}
}

// put records r under its keys, in place of any record there. It makes
// room within the owner's share by forgetting the owner's own records,
// and in the ledger by forgetting expired ones; it never forgets
// another's live record. It returns errPartFull, recording nothing,
// when the ledger is full past what admit let in.
func (l *partLedger) put(r partRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range r.keys {
		if old := l.files[k]; old != nil {
			l.dropLocked(old)
		}
	}
	if len(r.keys) == 0 {
		return nil
	}
	if l.files == nil {
		l.files, l.owners = map[string]*partRecord{}, map[string]partShare{}
	}
	rec := &r
	cost := rec.cost()
	if !l.makeRoomLocked(r.owner, cost, r.touched) {
		return errPartFull
	}
	for _, k := range r.keys {
		l.files[k] = rec
	}
	l.n++
	l.bytes += cost
	sh := l.owners[r.owner]
	sh.n++
	sh.bytes += cost
	l.owners[r.owner] = sh
	return nil
}

// makeRoomLocked forgets owner's own records, unused longest first,
// until it has room in its share, and in the ledger, for one more of
// cost (expired records of anyone's go first); it reports whether the
// ledger has room. An upload admit let in may take the ledger past its
// bounds by a little (one record per upload running at once). l.mu must
// be held.
func (l *partLedger) makeRoomLocked(owner string, cost int64, now time.Time) bool {
	full := func() bool { return l.n >= partLedgerMax || l.bytes+cost > partLedgerBytes }
	if full() {
		l.dropExpiredLocked(now)
	}
	for {
		sh := l.owners[owner]
		over := sh.n >= partLedgerOwnerMax || sh.bytes+cost > partLedgerOwnerBytes
		if sh.n == 0 || !(over || full()) {
			break
		}
		var oldest *partRecord
		for k, r := range l.files {
			if r.keys[0] == k && r.owner == owner && (oldest == nil || r.touched.Before(oldest.touched)) {
				oldest = r
			}
		}
		if oldest == nil {
			break
		}
		l.dropLocked(oldest)
	}
	return l.n < partLedgerMax+partLedgerMax/16 && l.bytes+cost <= partLedgerBytes+partLedgerBytes/16
}

// parts is the session's ledger of part files: the server's, or,
// without Config.Uploads, the session's own.
func (s *session) parts() *partLedger {
	if s.cfg.Uploads != nil {
		return &s.cfg.Uploads.parts
	}
	return &s.ownParts
}

// partOwner is the identity a part file is bound to: the account (so
// that a client resuming on a new control connection continues it), or
// for an anonymous login the client's host: its IPv4 address, or the
// /64 of its IPv6 address (one host has a whole /64 to pick from).
func (s *session) partOwner() string {
	if s.acct == nil {
		return ""
	}
	if s.acct.Anonymous {
		return anonymousOwner(remoteAddrPort(s.conn).Addr())
	}
	return "user:" + s.acct.Name + "\x00" + s.acct.Home
}

// anonymousOwner is the partOwner of an anonymous login from a.
func anonymousOwner(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return "anonymous@" + p.String()
		}
	}
	return "anonymous@" + a.String()
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

// planPart checks an upload that writes the part file target (keys: its
// partKeys), or a PART, against the ledger before it runs: it returns
// the ledger's record the upload continues (REST), or nil, or the
// refusal.
//   - A record whose part file is no longer as it left it is stale for
//     everyone: it is forgotten, and a continuation refused.
//   - A continuation (REST) of another identity's part file is refused,
//     as is every upload of a file another uploads in parts (PART).
//   - An upload without REST starts the part file afresh, and forgets
//     the record.
//   - A PART with REST continues only an upload in parts with the same
//     ALLO, for ranges the ledger holds.
//
// One that continues takes the record out until it ends (keepPart puts
// it back).
func (s *session) planPart(ctx context.Context, keys []string, target string, hasPart, hasRest bool, rest xfer.RangeSet, allo int64) (*partRecord, error) {
	led := s.parts()
	now := time.Now()
	me := s.partOwner()
	rec, found := led.lookup(keys, now)
	if found && !s.partPrintOf(ctx, target).equal(rec.print) {
		led.drop(keys)
		if hasRest {
			return nil, errPartChanged
		}
		found = false
	}
	switch {
	case !found:
		if hasPart && hasRest {
			return nil, fmt.Errorf("%w (the server stored no part of this file)", errPartNone)
		}
		return nil, nil
	case rec.owner != me && (rec.parts || hasRest):
		return nil, errPartOther
	case !hasRest:
		led.drop(keys)
		return nil, nil
	case !hasPart:
		led.drop(keys)
		return &rec, nil
	case !rec.parts:
		return nil, fmt.Errorf("%w (the server did not record the ranges of this file's part file)", errPartNone)
	case rec.size != allo:
		return nil, fmt.Errorf("%w (%d)", errPartSize, rec.size)
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

// keepPart records in the ledger who wrote the part file of up, what it
// looks like now and, for an upload in parts, what it holds.
func (s *session) keepPart(ctx context.Context, up *storePlan) {
	rec := partRecord{
		keys: up.partKeys, owner: s.partOwner(), parts: up.part != nil, size: up.allo,
		print: s.partPrintOf(context.WithoutCancel(ctx), up.target), touched: time.Now(),
	}
	if rec.parts {
		if up.held.Len() > partMaxRanges {
			// The owner keeps the file, but its parts must start again.
			s.log.Warn("upload in parts must start again: its part file holds too many separate ranges", "path", up.target, "ranges", up.held.Len())
			rec.parts = false
		} else {
			rec.held = up.held
		}
	}
	if err := s.parts().put(rec); err != nil {
		s.log.Warn("part file not recorded", "path", up.target, "err", err)
	}
}
