package transfer

// Re-tuning on the fly (issue 15): an automatic download of a large file
// is moved in parts, byte ranges over MODE E (ERET), each part's streams
// and TCP buffer chosen by internal/tune from what the parts before it
// measured. The parts tile the file exactly (tune.Run), every part
// writes at the file's own offsets and reports its stored ranges to the
// resume state, so a kill in the middle of a part resumes without a
// byte lost or copied twice. Automatic uploads of a large local file to a
// server that lists PART (a Ferry server) move in parts the same way:
// each part is a MODE E STOR of its range (client.StoreOptions.Part),
// the server keeps the file aside until the parts cover it, and the
// ranges it acknowledged go to the upload's resume state. A third-party
// copy to such a server moves in parts too (ERET on the source, PART and
// ESTO on the destination), tuned from each part's duration alone: the
// bytes do not pass this client.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/tune"
)

// DefaultRetuneMin is the least size of a file that an automatic
// download moves in re-tuned parts.
const DefaultRetuneMin = 256 << 20

// retuneMinTime: a smaller file is re-tuned too when the predicted
// transfer lasts at least this long (a slow link), or when no time is
// predicted.
const retuneMinTime = 8 * time.Second

// retuneMaxStreams is the most streams a re-tuned transfer uses.
const retuneMaxStreams = 32

// retuneFloor is the least size re-tuned however slow the link: below
// it a part's set-up costs too much of the file.
const retuneFloor = 64 << 20

// The environment knobs of re-tuning, read through Engine.Getenv, for
// tests and experiments: the least size re-tuned, and the largest part
// (bytes).
const (
	EnvRetuneMin     = "FERRY_RETUNE_MIN"
	EnvRetuneMaxPart = "FERRY_RETUNE_MAX_PART"
	// EnvRetuneCPUBusy is the client's CPU use, in cores (0.25), at or
	// above which a start at the wide-area default tries fewer streams
	// (tune.Limits.CPUBusy).
	EnvRetuneCPUBusy = "FERRY_RETUNE_CPU_BUSY"
)

func (e *Engine) envBytes(k string) int64 {
	n, err := strconv.ParseInt(e.getenv(k), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// retuneWanted reports whether a download of size bytes with the
// automatic choice ch is moved in re-tuned parts.
func (c *copier) retuneWanted(ch *AutoChoice, size int64) bool {
	if ch == nil || !ch.ModeE || size <= 0 {
		return false
	}
	m := c.e.envBytes(EnvRetuneMin)
	if ch.Parallel >= retuneMaxStreams {
		// Started at the stream limit. From the link's best in the
		// history: a re-tune could only try fewer streams, which
		// rarely pays what each part's end costs on a long lossy link
		// (its streams' tails and restarts). From the wide-area
		// default (nothing known): a large file checks whether fewer
		// streams hold the rate when the client's CPU is busy (a clean
		// link), else moves the rest in one part (retuneLimits,
		// tune.Limits.Descend).
		if !descendStart(ch) {
			return false
		}
		if m > 0 {
			return size >= m
		}
		return size >= DefaultRetuneMin
	}
	if m > 0 {
		return size >= m
	}
	if size >= DefaultRetuneMin {
		return true
	}
	// Without an ETA (no history, no probe) the link may be slow and
	// lossy, where the first guess of streams costs the most: re-tune.
	return size >= retuneFloor && (ch.ETA <= 0 || ch.ETA >= retuneMinTime)
}

// descendStart reports whether ch starts at the stream limit on a guess:
// the wide-area default, nothing known of the link.
func descendStart(ch *AutoChoice) bool {
	return ch.Parallel >= retuneMaxStreams && ch.Basis == string(advisor.Default)
}

// retuneLimits are the tune.Limits of a download on this host.
func (c *copier) retuneLimits(ctx context.Context, src, dst Location) tune.Limits {
	k := c.e.autoBaseFor(ctx, src, dst).kernel
	lim := tune.Limits{MaxStreams: retuneMaxStreams, MaxBuffer: k.RmemMax, AutoBuffer: k.TCPRmem[2]}
	if ch := c.auto; ch != nil {
		lim.RTT = ch.RTT
		// Three or more past transfers between these hosts, or over a
		// link like this one: their best setting is the start, checked
		// now and then, not searched from.
		lim.Known = ch.Records >= 3 && (ch.Basis == string(advisor.HostPair) || ch.Basis == string(advisor.SimilarLink))
		lim.Descend = !lim.Known && descendStart(ch)
	}
	if v, err := strconv.ParseFloat(c.e.getenv(EnvRetuneCPUBusy), 64); err == nil && v > 0 {
		lim.CPUBusy = v
	}
	if p := c.e.envBytes(EnvRetuneMaxPart); p > 0 {
		lim.MaxPart = p
		lim.FirstPart = min(4<<20, p)
		lim.MinPart = min(1<<20, p)
	}
	return lim
}

// retunePart is one part of a transfer in re-tuned parts, as runParts
// hands it to the step of a kind of transfer.
type retunePart struct {
	off, n int64
	set    tune.Setting
	// reuse: connections kept from the part before may serve this one
	// (the same setting, or the first part).
	reuse   bool
	restart client.RangeSet // every range stored so far
	// stored is to be told the ranges stored whenever the part reports
	// them (the resume state), progress the part's progress.
	stored   func(client.RangeSet)
	progress func(client.Progress)
}

// partRun is a transfer of [start, end) in re-tuned parts, for runParts.
type partRun struct {
	start, end int64
	have       client.RangeSet // the ranges stored before (a resumed transfer)
	// sendLast: the part ending at end is moved even when every byte of
	// it is stored already: its STOR is the one that puts the file in
	// place.
	sendLast bool
	// acked: a part that succeeded is stored whole (its server answered
	// 226, whatever its last marker said) and joins the ranges stored.
	acked bool
	// remote: the bytes do not pass this host (a third-party copy), so
	// this process's CPU says nothing of the parts.
	remote bool
	// receiving: this host receives the data (a download): its
	// connections' segments in and out of order, not its retransmits
	// (of acknowledgements), say whether data was lost.
	receiving bool
	// stored, progress and report, when not nil, are told the ranges
	// stored as the parts report them, the progress over the whole
	// transfer, and every range stored after each part that succeeded.
	stored   func(client.RangeSet)
	progress func(client.Progress)
	report   func(client.RangeSet)
	// step moves one part; it returns the bytes moved and what the
	// part's data connections did (nil when they are not this host's).
	step func(ctx context.Context, p retunePart) (int64, []client.ConnStats, error)
}

// runParts moves r's range in parts, each part's setting chosen by
// internal/tune from the automatic choice and what the parts before it
// measured (the limits of a transfer from src to dst). It returns the
// bytes moved and the tuning summary for the record.
func (c *copier) runParts(ctx context.Context, src, dst Location, r partRun) (int64, string, error) {
	ch := c.auto
	first := tune.Setting{Streams: max(ch.Parallel, 1), Buffer: int(ch.TCPBuffer)}
	ctl := tune.NewController(first, ch.PredictedRate, c.retuneLimits(ctx, src, dst))
	var (
		mu    sync.Mutex
		have  = r.have.Clone() // every range stored so far; guarded by mu
		moved int64            // bytes of the parts before this one
		parts int
		prev  tune.Setting
		// prevConns: what the last part's connections had counted, for
		// the counts of a part on the same connections.
		prevConns []client.ConnStats
	)
	move := func(ctx context.Context, off, n int64, set tune.Setting) (tune.Sample, error) {
		mu.Lock()
		restart := have.Clone()
		mu.Unlock()
		if covered(restart, off, off+n) == n && (!r.sendLast || off+n < r.end) {
			// Stored already (a resumed transfer): nothing to move.
			return tune.Sample{Bytes: n, Elapsed: time.Microsecond}, nil
		}
		// Connections kept from the part before serve this one only
		// when the setting is the same; a new setting starts afresh.
		reuse := set == prev || parts == 0
		prev = set
		before := prevConns
		if !reuse {
			before = nil
		}
		parts++
		base := moved
		t := time.Now()
		var (
			wmu       sync.Mutex
			warmAt    time.Time // the first progress past steadyAfter; guarded by wmu
			warmBytes int64
		)
		p := retunePart{off: off, n: n, set: set, reuse: reuse, restart: restart}
		p.stored = func(rs client.RangeSet) {
			mu.Lock()
			have = rs.Clone()
			mu.Unlock()
			if r.stored != nil {
				r.stored(rs)
			}
		}
		p.progress = func(pr client.Progress) {
			wmu.Lock()
			if now := time.Now(); warmAt.IsZero() && now.Sub(t) >= steadyAfter && pr.Bytes > 0 {
				warmAt, warmBytes = now, pr.Bytes
			}
			wmu.Unlock()
			if r.progress != nil {
				pr.Bytes += base
				r.progress(pr)
			}
		}
		cpu0 := tune.ProcessCPU()
		hb0, ht0, hok := tune.HostCPU()
		k, conns, err := r.step(ctx, p)
		prevConns = conns
		conns = partCounts(before, conns)
		el := time.Since(t)
		cpu := tune.ProcessCPU() - cpu0
		moved += k
		if err != nil {
			return tune.Sample{Bytes: k, Elapsed: el}, err
		}
		if r.acked {
			mu.Lock()
			have.Add(client.Range{Start: off, End: off + n})
			all := have.Clone()
			mu.Unlock()
			if r.report != nil {
				r.report(all)
			}
		}
		// A part partly stored already (a resumed transfer) moved fewer
		// bytes than its length: it is complete all the same.
		smp := tune.Sample{Bytes: n, Elapsed: el}
		if k > 0 && k < n {
			smp.Elapsed = time.Duration(float64(el) * float64(n) / float64(k))
		}
		if r.receiving {
			smp.RTT, _, _ = connTotals(conns)
			smp.SegsIn, smp.OutOfOrder = receivedTotals(conns)
		} else {
			smp.RTT, smp.Retransmits, smp.SegsOut = connTotals(conns)
		}
		smp.PathRTT = pathRTT(conns)
		wmu.Lock()
		smp.Steady = steadyRate(t, el, warmAt, warmBytes, k)
		wmu.Unlock()
		if !r.remote && cpu0 > 0 {
			smp.CPU = cpu
		}
		if hb1, ht1, ok := tune.HostCPU(); ok && hok && ht1 > ht0 && !r.remote {
			smp.Host = float64(hb1-hb0) / float64(ht1-ht0)
		}
		return smp, nil
	}
	res, err := tune.Run(ctx, r.start, r.end, ctl, move)
	c.tuned = res.Main()
	return moved, tuningSummary(res), err
}

// partCounts returns the statistics of a part's connections with their
// counters (segments, retransmits, out of order) less what the same
// connections had counted at the end of the part before (before, nil
// when the part opened new ones). A connection whose counters went back
// is a new one and keeps its own.
func partCounts(before, after []client.ConnStats) []client.ConnStats {
	if len(before) == 0 {
		return after
	}
	out := slices.Clone(after)
	for i := range out {
		if i >= len(before) {
			break
		}
		b, a := before[i], &out[i]
		if a.SegsIn < b.SegsIn || a.SegsOut < b.SegsOut || a.Retransmits < b.Retransmits || a.RcvOOO < b.RcvOOO {
			continue
		}
		a.SegsIn -= b.SegsIn
		a.SegsOut -= b.SegsOut
		a.Retransmits -= b.Retransmits
		a.RcvOOO -= b.RcvOOO
	}
	return out
}

// receivedTotals sums the segments the connections received and those
// of them that arrived out of order.
func receivedTotals(cs []client.ConnStats) (in, ooo int64) {
	for _, c := range cs {
		in += c.SegsIn
		ooo += c.RcvOOO
	}
	return in, ooo
}

// steadyAfter: the steady rate of a part is measured from its first
// progress report at least this long after its start (the streams'
// set-up and slow start before it).
const steadyAfter = 500 * time.Millisecond

// steadyRate is the rate of a part that started at t, took el and moved
// k bytes, from warmBytes at warmAt to its end; 0 when that span is
// under a quarter of a second or a fifth of the part.
func steadyRate(t time.Time, el time.Duration, warmAt time.Time, warmBytes, k int64) float64 {
	if warmAt.IsZero() || k <= warmBytes {
		return 0
	}
	span := t.Add(el).Sub(warmAt)
	if span < 250*time.Millisecond || span < el/5 {
		return 0
	}
	return float64(k-warmBytes) / span.Seconds()
}

// retuneDownload downloads [start, end) of src into w in re-tuned parts
// on the session s. opts are the download's options (Restart: the ranges
// already here; Committed: the resume state; Progress: the display),
// used for every part with the part's range and setting. It returns the
// bytes moved and the tuning summary for the record.
func (c *copier) retuneDownload(ctx context.Context, s *client.Session, src, dst Location, w io.WriterAt, start, end int64, opts client.RetrieveOptions) (int64, string, error) {
	return c.runParts(ctx, src, dst, partRun{
		start: start, end: end, have: opts.Restart, receiving: true,
		stored: opts.Committed, progress: opts.Progress,
		step: func(ctx context.Context, p retunePart) (int64, []client.ConnStats, error) {
			var last client.Progress
			po := opts
			po.Offset, po.Length = p.off, p.n
			po.Parallel, po.TCPBuffer, po.ModeE = p.set.Streams, p.set.Buffer, true
			po.Reuse = p.reuse
			po.Restart, po.Committed = p.restart, p.stored
			po.Progress = func(pr client.Progress) { last = pr; p.progress(pr) }
			k, err := s.Download(ctx, src.Path, w, &po)
			return k, last.Conns, err
		},
	})
}

// retuneUploadWanted reports whether the upload of a whole local file of
// size bytes (off: the -off asked) to the server of s moves in re-tuned
// parts: an automatic choice that re-tunes it, and a server that takes
// uploads in parts (FEAT PART).
func (c *copier) retuneUploadWanted(ctx context.Context, s *client.Session, off, size, fileSize int64) bool {
	if off != 0 || size != fileSize || c.o.Stripe || !c.retuneWanted(c.auto, size) {
		return false
	}
	conn, err := s.Conn(ctx)
	if err != nil {
		return false
	}
	_, ok := conn.Features()["PART"]
	return ok
}

// retuneUpload uploads the size bytes of the local file r to dst in
// re-tuned parts on the session s. opts are the upload's options
// (Restart: the ranges the server acknowledged before, when resuming;
// Acknowledged: the resume state; Progress: the display), used for every
// part with the part's range and setting. The last part is always sent,
// even when every byte of it is on the server already: its STOR is the
// one that puts the file in place. It returns the bytes moved and the
// tuning summary for the record.
func (c *copier) retuneUpload(ctx context.Context, s *client.Session, src, dst Location, r io.ReaderAt, size int64, opts client.StoreOptions) (int64, string, error) {
	return c.runParts(ctx, src, dst, partRun{
		start: 0, end: size, have: opts.Restart, sendLast: true, acked: true,
		stored: opts.Acknowledged, progress: opts.Progress, report: opts.Acknowledged,
		step: func(ctx context.Context, p retunePart) (int64, []client.ConnStats, error) {
			var last client.Progress
			po := opts
			po.Offset, po.Part = 0, client.Range{Start: p.off, End: p.off + p.n}
			po.Parallel, po.TCPBuffer, po.ModeE = p.set.Streams, p.set.Buffer, true
			po.Reuse = p.reuse
			po.Restart, po.Acknowledged = p.restart, p.stored
			po.Progress = func(pr client.Progress) { last = pr; p.progress(pr) }
			k, err := s.Upload(ctx, r, size, dst.Path, &po)
			return k, last.Conns, err
		},
	})
}

// retuneThirdPartySize returns the size of the source of a third-party
// copy that moves in re-tuned parts, or 0 when it moves whole: an
// automatic choice that re-tunes a file of that size, the whole file,
// and a destination that takes copies in parts (FEAT PART).
func (c *copier) retuneThirdPartySize(ctx context.Context, ss, ds *client.Session, src Location) int64 {
	if c.o.Offset != 0 || c.o.Length >= 0 || c.o.Stripe || c.auto == nil || !c.auto.ModeE || c.auto.Parallel >= retuneMaxStreams {
		// At the stream limit: this client cannot see the servers'
		// CPU, so a descent would guess.
		return 0
	}
	dconn, err := ds.Conn(ctx)
	if err != nil {
		return 0
	}
	if _, ok := dconn.Features()["PART"]; !ok {
		return 0
	}
	size := c.auto.Size
	if size <= 0 {
		sconn, err := ss.Conn(ctx)
		if err != nil {
			return 0
		}
		if size, err = sconn.Size(ctx, src.Path); err != nil {
			return 0
		}
	}
	if !c.retuneWanted(c.auto, size) {
		return 0
	}
	return size
}

// retuneThirdParty copies the size bytes of src to dst directly between
// the servers of ss and ds in re-tuned parts: per part ERET P on the
// source, and ALLO, REST, PART and ESTO A on the destination, which
// keeps the file aside until the parts cover it (the last part is always
// sent: it puts the file in place). opts are the copy's options, used
// for every part with the part's window and setting; the streams of a
// part are the source's (OPTS RETR Parallelism), its buffers asked of
// both servers (SITE RETRBUFSIZE, STORBUFSIZE). The bytes do not pass
// this client, so the controller sees each part's duration but not the
// loss or round-trip time of the data connections. It returns the bytes
// moved and the tuning summary for the record.
func (c *copier) retuneThirdParty(ctx context.Context, ss, ds *client.Session, src, dst Location, size int64, opts client.ThirdPartyOptions) (int64, string, error) {
	return c.runParts(ctx, src, dst, partRun{
		start: 0, end: size, have: opts.Restart, sendLast: true, acked: true, remote: true,
		stored: opts.Acknowledged, progress: opts.Progress,
		step: func(ctx context.Context, p retunePart) (int64, []client.ConnStats, error) {
			po := opts
			po.Offset, po.Length, po.PartOf = p.off, p.n, size
			po.Size, po.KnownSize = size, true
			po.Parallel, po.TCPBuffer, po.ModeE = p.set.Streams, p.set.Buffer, true
			po.Restart, po.Acknowledged, po.Progress = p.restart, p.stored, p.progress
			k, err := ss.ThirdParty(ctx, src.Path, ds, dst.Path, &po)
			return k, nil, err
		},
	})
}

// covered is the number of bytes of [start, end) in rs.
func covered(rs client.RangeSet, start, end int64) int64 {
	var n int64
	for _, r := range rs.Ranges() {
		a, b := max(r.Start, start), min(r.End, end)
		if b > a {
			n += b - a
		}
	}
	return n
}

// tuningSummary is the record's Tuning: the number of parts, each part's
// range, setting and rate, and why the setting after it was chosen.
func tuningSummary(res tune.Result) string {
	if len(res.Steps) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d parts", len(res.Steps))
	for i, st := range res.Steps {
		if i == 100 {
			fmt.Fprintf(&b, "; … %d more", len(res.Steps)-i)
			break
		}
		fmt.Fprintf(&b, "; %d+%d %s %s", st.Offset, st.Length, st.Setting, progress.Bits(8*st.Rate))
		if i == len(res.Steps)-1 {
			break
		}
		fmt.Fprintf(&b, " → %s", st.Next)
	}
	return b.String()
}

// pathRTT is the mean round trip the data of conns saw, queueing on the
// path included: per connection the larger of the smoothed RTT (which
// follows a sender) and the receiver's estimate (which follows a
// connection that only receives: its smoothed RTT stays near the
// handshake's). Zero when no connection has either.
func pathRTT(cs []client.ConnStats) time.Duration {
	var sum time.Duration
	var n int
	for _, c := range cs {
		if r := max(c.RTT, c.RcvRTT); r > 0 {
			sum += r
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}
