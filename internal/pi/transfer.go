package pi

// Data commands: RETR, STOR, APPE and the listings. Each resolves the path,
// opens storage, describes the transfer as an xfer.Request and hands it to
// the DTP; the replies (150/125, then 226 or an error) are written here.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dpm"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

func (s *session) newRequest(p string) *xfer.Request {
	return &xfer.Request{Path: p, Mode: s.mode, Type: s.typ, Length: -1, Size: -1,
		Parallelism: s.parallel, StripeLayout: s.layout, StripeBlockSize: s.stripeBS}
}

// readyDTP is a DTP that can tell whether the transfer req (send: from
// the server) would report its data channel open at once, on connections
// already open, without waiting for the client.
type readyDTP interface {
	Ready(req *xfer.Request, send bool) bool
}

// markerHold is how long after its 150/125 a transfer's markers may be
// held back with the replies that follow (replyWriter): the first and
// last markers of a short transfer then go out with its 226, in one write.
// No client waits for a marker; later ones are sent as they come.
const markerHold = time.Second

// runTransfer runs move as the session's cancellable command, answering 150
// (or 125) when the DTP reports the data channel open, and 112/111 markers
// as it reports progress. It returns the bytes moved and whether the
// channel ever opened. What the DTP reports of its data connections goes
// into sum, when not nil. req is the transfer move runs, send true when
// the server sends.
//
// Replies held for pipelining go out before the DTP may wait for the
// client (which may wait for them), else with the 150/125.
func (s *session) runTransfer(ctx context.Context, sum *xfer.Summary, req *xfer.Request, send bool, move func(ctx context.Context, notify func(xfer.Event)) (int64, error)) (int64, bool, error) {
	if r, ok := s.dtp.(readyDTP); !ok || !r.Ready(req, send) {
		s.flushReplies()
	}
	var started atomic.Bool
	var startedAt atomic.Int64 // time.Now().UnixNano() at the 150/125
	holdMarker := func() bool {
		at := startedAt.Load()
		return at != 0 && time.Since(time.Unix(0, at)) < markerHold
	}
	var sumMu sync.Mutex // guards sum: a striped DTP reports from several goroutines
	s.xstats.begin()
	notify := func(ev xfer.Event) {
		s.xstats.note(ev)
		switch ev.Kind {
		case xfer.EventStarted:
			if started.CompareAndSwap(false, true) {
				startedAt.Store(time.Now().UnixNano())
				if ev.Reused {
					s.reply(125, "Beginning transfer; reusing existing data connection.")
				} else {
					s.reply(150, "Beginning transfer.")
				}
			}
		case xfer.EventProgress:
			s.write(wire.PerfMarker{Time: ev.Time, Stripe: ev.Stripe, Bytes: ev.Bytes, Stripes: max(ev.Stripes, 1)}.Reply(), holdMarker())
		case xfer.EventRanges:
			var rs xfer.RangeSet
			for _, r := range ev.Ranges {
				rs.Add(r)
			}
			s.write(wire.Reply{Code: 111, Lines: []string{fmt.Sprintf("Range Marker %s", rs)}}, holdMarker())
		case xfer.EventConns:
			if sum != nil {
				sumMu.Lock()
				sum.Streams, sum.Opened = ev.Streams, ev.Opened
				sum.Stripes = max(ev.Stripes, 1)
				sum.Retransmits = ev.Retransmits
				sumMu.Unlock()
			}
		}
	}
	var n int64
	err := s.runCancellable(ctx, func(ctx context.Context) error {
		var err error
		n, err = move(ctx, notify)
		return err
	})
	s.xstats.end(n)
	return n, started.Load(), err
}

// beginSummary starts the accounting of a transfer of p by op (nil when
// nobody observes transfers) and tells the observer.
func (s *session) beginSummary(op string, upload bool, p string, req *xfer.Request) *xfer.Summary {
	if s.cfg.Observer == nil {
		return nil
	}
	t := &xfer.Summary{
		Op: op, Upload: upload, Mode: req.Mode, Type: req.Type, Path: p,
		User: s.acct.Name, Client: remoteAddrPort(s.conn),
		Start: time.Now(), Stripes: 1, Buffer: s.buffer, Retransmits: -1,
	}
	if id := s.sec.identity(); id != nil {
		t.DN = id.DN
	}
	if req.Mode == xfer.ModeEBlock {
		t.BlockSize = cmp.Or(req.BlockSize, eblock.DefaultBlockSize)
	}
	s.cfg.Observer.Transfer(t)
	return t
}

// endSummary completes the accounting of a transfer that moved n bytes
// and was answered with code.
func (s *session) endSummary(t *xfer.Summary, n int64, code int) {
	if t == nil {
		return
	}
	t.End, t.Bytes, t.Code = time.Now(), n, code
	if s.sum.path == t.Path && !t.Upload {
		t.Checksum = s.sum.value
	}
	s.cfg.Observer.Transfer(t)
}

// transferReply is the final reply of a transfer; incomplete (may be "")
// tells the client what was left behind when the transfer failed.
func (s *session) transferReply(err error, incomplete string) wire.Reply {
	var de *xfer.DataError
	var se *xfer.StorageError
	switch {
	case err == nil:
		return ok(226, "Transfer Complete.")
	case errors.Is(err, xfer.ErrNoDataAddress):
		return ok(425, "No data connection: send PASV, EPSV, PORT or EPRT first.")
	case errors.As(err, &de) && de.Open:
		s.log.Info("cannot open data connection", "err", err)
		return ok(425, "Cannot open data connection: %s.", dataErrorText(de.Err))
	case errors.Is(err, xfer.ErrAborted):
		return ok(426, "Transfer aborted.%s", incomplete)
	case errors.Is(err, ErrShuttingDown):
		return ok(426, "Transfer aborted: server shutting down.%s", incomplete)
	case errors.As(err, &de):
		s.log.Info("data connection failed", "err", err)
		return ok(426, "Data connection failed: %s; transfer incomplete.%s", dataErrorText(de.Err), incomplete)
	case errors.As(err, &se) && errors.Is(err, dsi.ErrNoSpace):
		return ok(452, "Insufficient storage space; transfer incomplete.%s", incomplete)
	case errors.As(err, &se) && errors.Is(err, dsi.ErrInvalid):
		// The storage refused what the client sent (dsi/s3: an offset
		// past the declared size, a file with holes): say why.
		s.log.Info("storage refused the upload", "err", err)
		return ok(451, "Refused by the storage: %s; transfer incomplete.%s", reason(se.Err), incomplete)
	case errors.As(err, &se):
		s.log.Error("storage failed during transfer", "err", err)
		return ok(451, "Local error in processing; transfer incomplete.%s", incomplete)
	}
	s.log.Info("transfer failed", "err", err)
	return ok(426, "Transfer failed: %v.%s", err, incomplete)
}

// dataErrorText is a data connection error for the peer: socket errors
// without the addresses of either end (the log has them), so that replies
// neither show the server's internal addresses nor read as a port scanner.
func dataErrorText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	return withoutSocketAddresses(reason(err))
}

// withoutSocketAddresses replaces the addresses in msg with "(address)",
// except a data mover's, which a striped server names on purpose: the
// operator's own host list, not a peer's connection.
func withoutSocketAddresses(msg string) string {
	var b strings.Builder
	last := 0
	for _, m := range socketAddress.FindAllStringIndex(msg, -1) {
		if strings.HasSuffix(msg[:m[0]], "mover ") {
			continue
		}
		b.WriteString(msg[last:m[0]])
		b.WriteString("(address)")
		last = m[1]
	}
	b.WriteString(msg[last:])
	return b.String()
}

// socketAddress matches IPv4 and bracketed IPv6 addresses, with a port.
var socketAddress = regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\[[0-9A-Fa-f:.]+\](?::\d+)?`)

// streamRestart checks a REST list for stream mode, where the receiver can
// only place a single range that starts at 0 (protocol.md §8.3).
func streamRestart(rest xfer.RangeSet) bool {
	rs := rest.Ranges()
	return len(rs) == 0 || len(rs) == 1 && rs[0].Start == 0
}

var restNeedsModeE = ok(554, "REST range lists need MODE E; use REST <offset> in stream mode.")

func cmdRETR(ctx context.Context, s *session, arg string) wire.Reply {
	return s.retrieve(ctx, arg, 0, -1)
}

// cmdERET: ERET P <offset> <length> <path> sends a window of the file as a
// virtual file starting at 0 (protocol.md §8.1).
func cmdERET(ctx context.Context, s *session, arg string) wire.Reply {
	if dpm.IsSpec(arg) {
		return s.retrieveModule(ctx, arg)
	}
	f := wire.SplitArgs(arg, 4)
	if len(f) != 4 || !strings.EqualFold(f[0], "P") {
		return ok(501, "Syntax: ERET P <offset> <length> <path>.")
	}
	off, err1 := strconv.ParseInt(f[1], 10, 64)
	length, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || off < 0 || length < 0 {
		return ok(501, "Syntax: ERET P <offset> <length> <path>.")
	}
	return s.retrieve(ctx, f[3], off, length)
}

func (s *session) retrieve(ctx context.Context, arg string, off, length int64) wire.Reply {
	rest, hasRest := s.takeRest()
	p := s.abs(arg)
	if hasRest && s.mode == xfer.ModeStream && !streamRestart(rest) {
		return restNeedsModeE
	}
	r, err := s.fs.Open(ctx, p)
	if err != nil {
		return fsError(s, err, arg)
	}
	defer r.Close()
	op := "RETR"
	if off != 0 || length >= 0 {
		op = "ERET"
	}
	return s.sendFile(ctx, op, p, r, off, length, rest)
}

// sendFile sends the window [off, off+length) of r (length < 0: to the
// end), the content of p, as op did.
func (s *session) sendFile(ctx context.Context, op, p string, r dsi.Reader, off, length int64, rest xfer.RangeSet) wire.Reply {
	req := s.newRequest(p)
	req.Offset, req.Length = off, length
	req.Restart = rest
	req.PerfInterval = s.retrMarks
	sum := s.beginSummary(op, false, p, req)
	start := time.Now()
	n, _, err := s.runTransfer(ctx, sum, req, true, func(ctx context.Context, notify func(xfer.Event)) (int64, error) {
		return s.dtp.Send(ctx, req, r, notify)
	})
	s.logTransfer("RETR", p, n, start, err)
	reply := s.transferReply(err, "")
	s.endSummary(sum, n, reply.Code)
	return reply
}

func cmdSTOR(ctx context.Context, s *session, arg string) wire.Reply {
	return s.upload(ctx, arg, storePlain, 0)
}

func cmdAPPE(ctx context.Context, s *session, arg string) wire.Reply {
	return s.upload(ctx, arg, storeAppend, 0)
}

// cmdESTO: ESTO A <offset> <path> stores incoming byte 0 at file offset
// <offset>, without truncating (protocol.md §8.2).
func cmdESTO(ctx context.Context, s *session, arg string) wire.Reply {
	if dpm.IsSpec(arg) {
		allo := s.allo
		r, started := s.storeModule(ctx, arg)
		if !started {
			s.drainRefused(ctx, allo)
		}
		return r
	}
	f := wire.SplitArgs(arg, 3)
	var off int64
	var err error
	if len(f) == 3 && strings.EqualFold(f[0], "A") {
		off, err = strconv.ParseInt(f[1], 10, 64)
	}
	if len(f) != 3 || !strings.EqualFold(f[0], "A") || err != nil || off < 0 {
		s.drainMalformed(ctx)
		return ok(501, "Syntax: ESTO A <offset> <path>.")
	}
	return s.upload(ctx, f[2], storeAdjusted, off)
}

type storeKind int

const (
	storePlain    storeKind = iota // STOR: truncate unless restarting
	storeAppend                    // APPE: at the end
	storeAdjusted                  // ESTO A: at an offset, never truncate
)

// op is the command of an upload of this kind.
func (k storeKind) op() string {
	switch k {
	case storeAppend:
		return "APPE"
	case storeAdjusted:
		return "ESTO"
	}
	return "STOR"
}

// upload runs an upload command; one refused before its data channel
// started has its data drained (STOR-DRAIN).
func (s *session) upload(ctx context.Context, arg string, kind storeKind, offset int64) wire.Reply {
	allo := s.allo
	r, started := s.store(ctx, arg, kind, offset)
	if !started {
		s.drainRefused(ctx, allo)
	}
	return r
}

// store runs an upload and reports whether its data channel started.
//
// A STOR writes to a hidden part file beside its target and renames it
// over the target only when every byte has arrived, so an interrupted
// upload never leaves a truncated file under the final name (nor spoils
// the file it would replace). A restarted STOR (REST) whose target does
// not exist yet, or whose part file exists, continues that part file.
// APPE, ESTO and other restarts of an existing file write in place, as
// does every upload with Config.UploadInPlace (GCT's behaviour).
func (s *session) store(ctx context.Context, arg string, kind storeKind, offset int64) (wire.Reply, bool) {
	up, refused := s.planStore(ctx, arg, kind, offset)
	if up == nil {
		return refused, false
	}
	defer up.done()
	w, err := s.fs.Create(ctx, up.target, up.opts)
	if err != nil {
		if up.prevPart != nil {
			// Untouched: the upload may go on.
			if perr := s.parts().put(*up.prevPart); perr != nil {
				s.log.Warn("part file not recorded", "path", up.target, "err", perr)
			}
		}
		return fsError(s, err, arg), false
	}
	var pw *partWriter
	if up.part != nil {
		w, pw = limitToPart(w, *up.part)
	}
	if s.sum.path == up.p {
		s.sum.path, s.sum.value = "", "" // the checksum is of the old content
	}
	sum := s.beginSummary(up.kind.op(), true, up.p, up.req)
	start := time.Now()
	n, started, err := s.runTransfer(ctx, sum, up.req, false, func(ctx context.Context, notify func(xfer.Event)) (int64, error) {
		return s.dtp.Receive(ctx, up.req, w, notify)
	})
	// Checked before Close: an upload found short must not be stored.
	err = s.checkStored(up, n, err)
	if a, isAborter := writerAborter(w); isAborter && err != nil {
		// A storage that discards a failed upload (dsi/s3: the
		// multipart upload is aborted) keeps nothing of it.
		if aerr := a.Abort(); aerr != nil {
			s.log.Warn("could not abort a failed upload", "path", up.target, "err", aerr)
		}
		up.aborted = true
		if pw != nil {
			err = s.settlePart(up, pw, errAbortedUpload, err)
		}
	} else {
		cerr := w.Close()
		if cerr != nil && err == nil {
			err = &xfer.StorageError{Err: cerr}
			up.aborted = isAborter // such a Writer's failed Close discards the upload
		}
		if pw != nil {
			err = s.settlePart(up, pw, cerr, err)
		}
	}
	reply := s.finishStore(ctx, arg, up, n, start, started, err)
	s.endSummary(sum, n, reply.Code)
	return reply, started
}

// storePlan is an upload as planStore prepared it.
type storePlan struct {
	kind          storeKind
	p             string // the file uploaded to
	target        string // where the bytes go: p, or its part file
	hasRest       bool   // the upload was restarted (REST)
	allo          int64  // the size the client announced (ALLO); -1: none
	req           *xfer.Request
	opts          dsi.CreateOptions
	targetExisted bool          // target existed before the upload
	part          *xfer.Range   // PART: the range this STOR brings; nil: the whole file
	partial       bool          // PART: the part file does not hold the whole file yet (settlePart)
	rest          xfer.RangeSet // PART: the ranges REST named
	recorded      bool          // the ledger records the part file (a part, or target is a part file)
	partKeys      []string      // recorded: the part file's keys in the ledger (parts.go)
	held          xfer.RangeSet // PART: the ranges the server stored in the part file
	prevPart      *partRecord   // recorded: the ledger's record this upload continues, or nil
	aborted       bool          // the storage discarded the upload (writerAborter)
	done          func()        // ends its record in Config.Uploads
}

// maxNameLen is the longest name of a file an upload creates: the
// NAME_MAX of Linux's file systems (and S3's practical key element).
const maxNameLen = 255

// aborter is an optional dsi.Writer capability: Abort discards what was
// written, leaving the file as it was (dsi/s3 aborts its multipart
// upload), where Close would store it. A failed Close of such a Writer
// discards the upload too.
type aborter interface{ Abort() error }

// writerAborter returns w's Abort, looking through the PI's own wrappers.
func writerAborter(w dsi.Writer) (aborter, bool) {
	switch pw := w.(type) {
	case *partWriter:
		w = pw.Writer
	case partRangeWriter:
		w = pw.Writer
	}
	a, ok := w.(aborter)
	return a, ok
}

// planStore takes the upload's REST and ALLO and decides where and how
// it writes (see store), or returns nil and the reply refusing it.
func (s *session) planStore(ctx context.Context, arg string, kind storeKind, offset int64) (*storePlan, wire.Reply) {
	part, hasPart := s.takePart()
	rest, hasRest := s.takeRest()
	allo := s.allo
	s.allo = -1
	p := s.abs(arg)
	if hasRest && s.mode == xfer.ModeStream && !streamRestart(rest) {
		return nil, restNeedsModeE
	}
	if hasPart {
		if r := s.partRefusal(part, kind, offset, allo); r.Code != 0 {
			return nil, r
		}
	}
	if xfer.IsPartName(p) {
		return nil, partNameRefused(arg)
	}
	if len(path.Base(p)) > maxNameLen {
		// Refused before any byte is taken: the part file would be made
		// (its name is shortened) and the rename onto this name fail,
		// leaving the data aside under a hidden name.
		return nil, ok(553, "%s: File name too long (more than %d bytes).", arg, maxNameLen)
	}
	memo := &statMemo{fs: s.fs}
	fi, statErr := memo.Stat(ctx, p)
	existed := statErr == nil
	if existed && fi.IsDir() {
		return nil, ok(550, "%s: Is a directory.", arg)
	}
	target := p
	inPlace := s.cfg.UploadInPlace || dsi.WritesInPlace(s.fs) || p == "/"
	if (kind == storePlain || hasPart) && !inPlace {
		switch {
		case !hasRest || !existed || hasPart:
			// A part of an upload always goes to the part file, even
			// when the file it will replace exists (see parts.go).
			target = xfer.PartName(p)
		default:
			// A restart of a file that exists continues the part file
			// of an upload replacing it, when there is one: REST names
			// that file's ranges, and writing the rest into the old
			// file would mix the two. Without one, it writes in place
			// (a file uploaded in place, as GCT does).
			if _, err := s.fs.Stat(ctx, xfer.PartName(p)); err == nil {
				target = xfer.PartName(p)
			}
		}
	}
	req := s.newRequest(target)
	req.Size = allo
	if s.mode == xfer.ModeEBlock {
		req.PerfInterval, req.RangeInterval = s.perfFreq, s.rangeFreq
		// The ranges the target already holds: a striped frontend
		// checks the bytes the stripes moved against ALLO less these
		// (a resumed upload sends only the rest).
		req.Restart = rest
		switch {
		case hasPart && kind == storeAdjusted:
			// ESTO A <part start>: a virtual file of the part's
			// length (its MODE E offsets start at 0), of which REST
			// holds what is already there.
			req.Size = part.End - part.Start
			req.Restart = shiftRange(rest, part)
		case hasPart:
			// Only the part's bytes are to come in this STOR.
			req.Restart = partRestart(rest, part, allo)
		}
	}
	// A first part (no REST) starts the part file afresh, as STOR does.
	opts := dsi.CreateOptions{Truncate: (kind == storePlain || hasPart) && !hasRest, Size: allo}
	switch {
	case kind == storeAppend && existed:
		req.StoreOffset = fi.Size
	case kind == storeAdjusted:
		req.StoreOffset = offset
	}
	if hasRest && s.mode == xfer.ModeStream {
		// STOR after REST n writes at n and keeps the rest (protocol.md §4).
		if rs := rest.Ranges(); len(rs) == 1 {
			req.StoreOffset += rs[0].End
		}
	}
	keys := s.uploadKeysStat(ctx, p, true, memo.Stat)
	targetKeys := keys.files
	if target != p {
		targetKeys = s.uploadKeysStat(ctx, target, false, memo.Stat).files
		keys.files = append(keys.files, targetKeys...)
	}
	done, free := s.cfg.Uploads.begin(keys)
	if !free {
		return nil, ok(450, "%s: another upload to this file is in progress; try again later.", arg)
	}
	// The ledger of part files says whether this upload may write
	// target, and what a continued part file holds (parts.go). Every
	// upload that writes a part file, or a part, is recorded there.
	pkeys := partKeys(targetKeys)
	recorded := hasPart || target != p
	if recorded {
		if err := s.parts().admit(s.partOwner(), pkeys, time.Now()); err != nil {
			done()
			return nil, fsError(s, err, arg)
		}
	}
	prev, err := s.planPart(ctx, pkeys, target, hasPart, hasRest, rest, allo)
	if err != nil {
		done()
		return nil, fsError(s, err, arg)
	}
	targetExisted := existed
	if target != p {
		_, err := s.fs.Stat(ctx, target)
		targetExisted = err == nil
		// The part file is the server's own name: never written through
		// a link planted there, and with the mode of the file it replaces.
		opts.NoFollow = true
		if existed {
			opts.Perm = fi.Mode.Perm()
		}
	}
	up := &storePlan{kind: kind, p: p, target: target, hasRest: hasRest, allo: allo, req: req, opts: opts, targetExisted: targetExisted, done: done}
	if recorded {
		up.recorded, up.partKeys, up.prevPart = true, pkeys, prev
	}
	if hasPart {
		up.part, up.rest = &part, rest
		if prev != nil {
			up.held = prev.held.Clone()
		}
	}
	return up, wire.Reply{}
}

// uploadBusy answers a command that would change p while an upload
// writes it or below it; the zero Reply when none does.
func (s *session) uploadBusy(ctx context.Context, p, arg string) wire.Reply {
	if s.cfg.Uploads.busy(s.uploadKeys(ctx, p, false)) {
		return ok(450, "%s: an upload in progress is writing it; try again later.", arg)
	}
	return wire.Reply{}
}

// checkStored returns the error of an upload whose data ended after n
// bytes with err: also one that ended early in stream mode, or whose
// client went away.
func (s *session) checkStored(up *storePlan, n int64, err error) error {
	if err == nil && s.mode == xfer.ModeStream && up.kind == storePlain && up.allo >= 0 && up.req.StoreOffset+n < up.allo {
		// In stream mode the end of the data is a closed connection,
		// which a client that dies also produces: the size it announced
		// tells the two apart. A restart (REST n) writes from n: the
		// file ends at n plus what came (were ALLO the bytes still to
		// come, that is at least ALLO, and nothing is refused wrongly).
		err = &xfer.DataError{Err: fmt.Errorf("the data ended at %d of the %d bytes announced (ALLO)", up.req.StoreOffset+n, up.allo)}
	}
	if err == nil && s.mode == xfer.ModeEBlock && (up.kind == storePlain || up.part != nil) && up.req.Size >= 0 && n < up.req.Missing() {
		// MODE E ends with EOD counts, which a dying client does not
		// send; but a stray that is not the client (no DCAU) can, and a
		// file short of what ALLO announced must not be taken for whole.
		err = &xfer.DataError{Err: fmt.Errorf("the data ended after %d of the %d bytes announced (ALLO)", n, up.req.Missing())}
	}
	if err == nil && s.lost.Load() {
		// The client went away with its data: it never saw this upload
		// complete, and may have been killed in the middle of it.
		err = errControlLost
	}
	return err
}

// finishStore completes an upload of arg that moved n bytes and ended
// with err: a complete part file is renamed over the file, an empty file
// the upload created is removed, and the reply says what is left.
func (s *session) finishStore(ctx context.Context, arg string, up *storePlan, n int64, start time.Time, started bool, err error) wire.Reply {
	target, p := up.target, up.p
	if err == nil && up.partial {
		// A part of a file the parts do not cover yet: it stays aside.
		s.keepPart(ctx, up)
		s.logTransfer("STOR", p, n, start, err)
		return ok(226, "Part %d-%d stored; %s is complete when its parts cover its %d bytes.", up.part.Start, up.part.End, arg, up.allo)
	}
	if err == nil && target != p {
		if rerr := s.fs.Rename(context.WithoutCancel(ctx), target, p); rerr != nil {
			s.log.Error("could not rename a finished upload", "from", target, "to", p, "err", rerr)
			if up.recorded {
				s.keepPart(ctx, up)
			}
			return fsError(s, rerr, arg)
		}
	}
	s.logTransfer("STOR", p, n, start, err)
	if err != nil && up.aborted {
		return s.transferReply(err, fmt.Sprintf(" The storage keeps nothing of a failed upload: %s is as it was before it.", arg))
	}
	if err != nil && (!started || n == 0) && !up.targetExisted {
		// Nothing arrived into a file we created (no data connection,
		// or one that brought nothing: a third-party source that
		// refused): leave no trace.
		if rerr := s.fs.Remove(context.WithoutCancel(ctx), target); rerr != nil {
			s.log.Warn("could not remove empty file after failed STOR", "path", target, "err", rerr)
		}
		return s.transferReply(err, "")
	}
	if err != nil && up.recorded {
		// What this upload wrote stays, for its owner's continuation
		// with REST (parts.go).
		s.keepPart(ctx, up)
	}
	if target != p {
		return s.transferReply(err, fmt.Sprintf(" %d bytes of %s are kept aside; restart (REST) to complete it, or DELE %s to drop them.", n, arg, path.Base(target)))
	}
	return s.transferReply(err, fmt.Sprintf(" %s is incomplete: %d bytes stored; restart to complete it.", arg, n))
}

// partNameRefused answers a client's attempt to create, write, rename or
// change an upload's part file (xfer.IsPartName): clients may list, read
// and delete those, but one client must not slip bytes into another's
// upload, or take them.
func partNameRefused(arg string) wire.Reply {
	return ok(553, "%s: File name not allowed: names ending in %s are kept for uploads in progress.", arg, xfer.PartSuffix)
}

func (s *session) logTransfer(op, p string, n int64, start time.Time, err error) {
	d := time.Since(start)
	rate := 0.0
	if d > 0 {
		rate = float64(n) * 8 / d.Seconds() / 1e6
	}
	s.log.Info("transfer", "op", op, "path", p, "bytes", n, "duration", d.Round(time.Millisecond), "mbit_s", int64(rate), "err", err)
}

// listingKind selects the format of a listing.
type listingKind int

const (
	listLIST listingKind = iota // ls -l lines
	listNLST                    // names only
	listMLSD                    // RFC 3659 facts
)

func cmdLIST(ctx context.Context, s *session, arg string) wire.Reply {
	return s.listing(ctx, stripListOptions(arg), listLIST)
}

func cmdNLST(ctx context.Context, s *session, arg string) wire.Reply {
	return s.listing(ctx, stripListOptions(arg), listNLST)
}

func cmdMLSD(ctx context.Context, s *session, arg string) wire.Reply {
	return s.listing(ctx, arg, listMLSD)
}

// stripListOptions drops ls-style options ("-la") that clients such as
// lftp put before the path of LIST and NLST.
func stripListOptions(arg string) string {
	for strings.HasPrefix(arg, "-") {
		_, rest, _ := strings.Cut(arg, " ")
		arg = strings.TrimLeft(rest, " ")
	}
	return arg
}

func (s *session) listing(ctx context.Context, arg string, kind listingKind) wire.Reply {
	s.takeRest()
	p := s.abs(arg)
	fi, err := s.fs.Stat(ctx, p)
	if err != nil {
		return fsError(s, err, arg)
	}
	var buf []byte
	now := time.Now()
	line := func(e wire.Entry) {
		switch kind {
		case listLIST:
			buf = wire.AppendLIST(buf, e, now)
		case listNLST:
			buf = append(buf, e.Name...)
		case listMLSD:
			buf = wire.AppendFacts(buf, e, s.facts)
		}
		buf = append(buf, '\r', '\n')
	}
	if !fi.IsDir() {
		name := baseName(p)
		if kind == listNLST && arg != "" {
			name = arg
		}
		line(s.entryOf(fi, name))
	} else {
		list, err := s.fs.ReadDir(ctx, p)
		if err != nil {
			return fsError(s, err, arg)
		}
		if kind == listMLSD {
			cdir := s.entryOf(fi, ".")
			cdir.Type = "cdir"
			line(cdir)
			if p != "/" {
				if pfi, err := s.fs.Stat(ctx, parentDir(p)); err == nil {
					pdir := s.entryOf(pfi, "..")
					pdir.Type = "pdir"
					line(pdir)
				}
			}
		}
		for _, c := range list {
			line(s.entryOf(c, c.Name))
		}
	}
	req := s.newRequest(p)
	req.Type = xfer.TypeImage // lines already end in CRLF
	req.Listing = true
	src := &memReader{Reader: bytes.NewReader(buf)}
	_, _, err = s.runTransfer(ctx, nil, req, true, func(ctx context.Context, notify func(xfer.Event)) (int64, error) {
		return s.dtp.Send(ctx, req, src, notify)
	})
	return s.transferReply(err, "")
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// memReader serves generated bytes (listings) as a dsi.Reader.
type memReader struct{ *bytes.Reader }

func (m *memReader) Close() error { return nil }

var _ dsi.Reader = (*memReader)(nil)
