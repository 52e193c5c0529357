package transfer

// Automatic parameters (issue 15, "automatic by default"): with
// Options.Auto the engine asks internal/advisor for the streams, TCP
// buffer and block size of a copy before its transfer starts. It reads
// what is cheap: the history of the remote hosts (a bounded query), this
// kernel's buffer limits (/proc/sys), the FEAT the server sent at login
// and the round-trip time of one command on the open control connection
// (the SIZE a download needs anyway, or a NOOP). A probe (seconds) is
// never run here: ferry probe and ferry advise -calibrate do that.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/probe"
	"github.com/ferrygrid/ferry/internal/progress"
)

// AutoHistoryTimeout bounds the history read of an automatic choice: a
// slow database costs the advice, never the copy.
var AutoHistoryTimeout = 100 * time.Millisecond

// autoSmall is the size under which an automatic copy keeps stream mode
// and one connection: MODE E's set-up costs more than it saves, and
// the copy no round trip of its own.
const autoSmall = 8 << 20

// autoHistoryLimit bounds the records an automatic choice reads.
const autoHistoryLimit = 2000

// AutoChoice is what the advisor chose for a copy with Options.Auto.
type AutoChoice struct {
	// Parallel, TCPBuffer and BlockSize are the options the copy runs
	// with; ModeE says whether it uses MODE E.
	Parallel             int
	TCPBuffer, BlockSize int64
	ModeE                bool
	// Size is the size of the file (-1: unknown).
	Size int64
	// PredictedRate is the rate expected, bytes per second (0 unknown);
	// ETA, ETALow and ETAHigh the predicted duration and its range (0:
	// unknown).
	PredictedRate        float64
	ETA, ETALow, ETAHigh time.Duration
	// Basis is the advisor's basis ("host-pair", "model", "default"...),
	// Reason its explanation, BufferCap the sysctl that caps the TCP
	// buffer this link would need ("" none).
	Basis, Reason, BufferCap string
	// Records is the number of past transfers the advice rests on.
	Records int
	// RTT is the control connection's round-trip time measured (0: not
	// measured).
	RTT time.Duration
	// Took is how long the choice took (history, kernel, RTT, advice).
	Took time.Duration
	// Why says why the choice differs from the advice ("small file:
	// stream mode", "the server has no MODE E"); "" when it does not.
	Why string
}

// Flags renders the choice as ferry cp flags ("-p 8 -tcp-bs 4M").
func (a *AutoChoice) Flags() string {
	var parts []string
	parts = append(parts, fmt.Sprintf("-p %d", max(a.Parallel, 1)))
	if a.TCPBuffer > 0 {
		parts = append(parts, "-tcp-bs "+progress.Size(a.TCPBuffer))
	}
	if a.BlockSize > 0 && a.ModeE {
		parts = append(parts, "-bs "+progress.Size(a.BlockSize))
	}
	return strings.Join(parts, " ")
}

// Note is the one-line note a verbose ferry cp prints before the
// transfer: "auto: -p 8 -tcp-bs 4M (history: 3 transfers dtn1 → here); ETA 24s (21s–28s)".
func (a *AutoChoice) Note(src, dst Location) string {
	var b strings.Builder
	b.WriteString("auto: " + a.Flags())
	var basis string
	switch a.Basis {
	case string(advisor.HostPair):
		basis = fmt.Sprintf("history: %s %s → %s", plural(a.Records, "transfer"), hereOr(src), hereOr(dst))
	case string(advisor.DomainPair):
		basis = fmt.Sprintf("history: %s between these sites", plural(a.Records, "transfer"))
	case string(advisor.SimilarLink):
		basis = fmt.Sprintf("history: %s over a similar link", plural(a.Records, "transfer"))
	case string(advisor.Model):
		basis = "a probe and the TCP model"
	default:
		basis = "no history: defaults"
	}
	if a.RTT > 0 {
		basis += ", RTT " + a.RTT.Round(10*time.Microsecond).String()
	}
	if a.Why != "" {
		basis += "; " + a.Why
	}
	if a.BufferCap != "" {
		basis += "; buffer capped by " + a.BufferCap
	}
	fmt.Fprintf(&b, " (%s)", basis)
	switch {
	case a.ETA <= 0:
	case a.ETAHigh < time.Second:
		b.WriteString("; ETA under a second")
	default:
		fmt.Fprintf(&b, "; ETA %s", progress.Duration(a.ETA))
		if a.ETALow > 0 && a.ETAHigh > 0 {
			fmt.Fprintf(&b, " (%s–%s)", progress.Duration(a.ETALow), progress.Duration(a.ETAHigh))
		}
	}
	return progress.Printable(b.String())
}

func hereOr(l Location) string {
	if l.Kind != Remote {
		return "here"
	}
	return l.Host
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// autoBase is what the advice of one pair of endpoints reads once: the
// history, the kernel's limits.
type autoBase struct {
	records []history.Record
	probes  []history.Probe
	kernel  advisor.Kernel
	rtt     time.Duration // the control connection's, once measured; guarded by autoCache.mu
}

// autoCache keeps the autoBase of each pair of endpoints an engine saw.
type autoCache struct {
	mu    sync.Mutex
	bases map[string]*autoBase // guarded by mu
}

// autoBaseFor reads (once per engine and pair of endpoints) the history
// relevant to src → dst and the kernel's limits.
func (e *Engine) autoBaseFor(ctx context.Context, src, dst Location) *autoBase {
	key := endpointKey(src) + "\x00" + endpointKey(dst)
	e.auto.mu.Lock()
	defer e.auto.mu.Unlock()
	if b, ok := e.auto.bases[key]; ok {
		return b
	}
	b := &autoBase{kernel: probe.KernelLimits()}
	if st := e.History; st != nil {
		if _, off := st.(history.Off); !off {
			hctx, cancel := context.WithTimeout(ctx, AutoHistoryTimeout)
			seen := map[int64]bool{}
			add := func(rs []history.Record) {
				for _, r := range rs {
					if !seen[r.ID] {
						seen[r.ID] = true
						b.records = append(b.records, r)
					}
				}
			}
			// The hosts' own records, then the newest of all (other
			// hosts of the same sites, similar links).
			for _, l := range []Location{src, dst} {
				if l.Kind == Remote {
					rs, _ := st.Records(hctx, history.Filter{Host: l.Host, Limit: autoHistoryLimit})
					add(rs)
					ps, _ := st.Probes(hctx, history.Filter{Host: l.Host, Limit: 50})
					b.probes = append(b.probes, ps...)
				}
			}
			rs, _ := st.Records(hctx, history.Filter{Limit: 500})
			add(rs)
			cancel()
		}
	}
	if e.auto.bases == nil {
		e.auto.bases = map[string]*autoBase{}
	}
	e.auto.bases[key] = b
	return b
}

// allowsModeE reports whether the server of conn takes MODE E: it
// advertises GridFTP's PARALLEL, ERET, ESTO or SPAS (Ferry and GCT do; a
// plain FTP server does not).
func allowsModeE(conn *client.Conn) bool {
	f := conn.Features()
	for _, k := range []string{"PARALLEL", "ERET", "ESTO", "SPAS"} {
		if _, ok := f[k]; ok {
			return true
		}
	}
	return false
}

// autoWanted reports whether o asks the engine to choose: Auto without
// Parallel or TCPBuffer (a caller that set them with Auto chose them
// with an advisor of its own, and Auto only records that).
func autoWanted(o *Options) bool { return o.Auto && o.Parallel == 0 && o.TCPBuffer == 0 }

// autoApplies reports whether an automatic choice is made for a copy
// from src to dst with o: autoWanted, one end on a server, no standard
// input or output (always stream mode), not striped (the servers decide).
func autoApplies(o *Options, src, dst Location) bool {
	return autoWanted(o) && !o.Stripe && src.Kind != Stdio && dst.Kind != Stdio &&
		(src.Kind == Remote || dst.Kind == Remote)
}

// chooseAuto makes the automatic choice of the copy of src to dst (size
// bytes, -1: unknown) and sets c.o from it; it returns the choice (nil
// when none is made, with c.o.Auto cleared) and the size, learnt from
// the server for a download. The caller restores c.o after the copy.
func (c *copier) chooseAuto(ctx context.Context, src, dst Location, size int64) (*AutoChoice, int64) {
	if !autoApplies(&c.o, src, dst) {
		if autoWanted(&c.o) {
			c.o.Auto = false // nothing was chosen
		}
		return nil, size
	}
	start := time.Now()
	base := c.e.autoBaseFor(ctx, src, dst)
	ch := &AutoChoice{Size: size}
	conns := c.autoConns(ctx, src, dst)
	if len(conns) == 0 {
		// The copy fails and says why.
		c.o.Auto = false
		return nil, size
	}
	modeE := true
	for _, conn := range conns {
		modeE = modeE && allowsModeE(conn)
	}
	size = c.autoRTT(ctx, conns[0], src, dst, size, base, ch)
	ch.Size = size
	in := advisor.Input{Src: src.HistoryEndpoint(), Dst: dst.HistoryEndpoint(), Size: max(size, 0), Files: 1,
		Records: base.records, Probes: base.probes, Kernel: base.kernel}
	in.ClientHost, _ = ClientIdentity()
	a := advisor.Advise(in)
	local := false
	for _, conn := range conns {
		local = local || conn.SameHost()
	}
	ch.Why = wanDefault(&a, ch.RTT, size, local)
	ch.PredictedRate, ch.ETA, ch.ETALow, ch.ETAHigh = a.PredictedRate, a.ETA, a.ETALow, a.ETAHigh
	ch.Basis, ch.Reason, ch.BufferCap, ch.Records = string(a.Basis), a.Reason, a.BufferCap, len(a.Records)
	c.autoParams(ch, a.Params, src, dst, size, modeE)
	c.o.Parallel, c.o.TCPBuffer = ch.Parallel, ch.TCPBuffer
	// MODE E with one stream is -fast's.
	c.o.Fast = c.o.Fast || ch.ModeE && ch.Parallel == 1
	if c.o.BlockSize == 0 {
		c.o.BlockSize = ch.BlockSize
	}
	c.o.PredictedETA = ch.ETA
	ch.Took = time.Since(start)
	c.auto = ch
	return ch, size
}

// With nothing known of a link but its round trip, a large file over a
// wide-area one (wanRTT or more) starts with wanStreams streams: on every
// link of the BBC grid (1–50 ms one way, 0–1 % loss, 1 Gbit/s) that
// came within about 10 % of the best hand-tuned setting, where the
// advisor's four fell to a fifth on lossy links (docs/bench/wan); a
// re-tuned transfer then checks fewer, and the history learns the link.
// On a LAN or this host (a disk-bound server; a loaded loopback can take
// milliseconds too) the advisor's default stays.
const (
	wanRTT     = time.Millisecond
	wanStreams = 32
	wanMinSize = 32 << 20 // a MiB per stream
)

// wanDefault raises a's streams to wanStreams when a rests on nothing
// (advisor.Default), the server is not on this host (local) and the link
// and the file are wide and large, and says why; "" when it leaves a
// alone.
func wanDefault(a *advisor.Advice, rtt time.Duration, size int64, local bool) string {
	if a.Basis != advisor.Default || local || rtt < wanRTT || size < wanMinSize {
		return ""
	}
	a.Params.Mode, a.Params.Parallel = "E", wanStreams
	return fmt.Sprintf("a wide-area round trip, nothing known of the link: %d streams", wanStreams)
}

// autoConns logs in to the servers of a copy of src to dst (both at once
// for a third-party copy); it returns none unless every one succeeded.
func (c *copier) autoConns(ctx context.Context, src, dst Location) []*client.Conn {
	var conns []*client.Conn
	if src.Kind == Remote && dst.Kind == Remote {
		ss, ds := c.session(src), c.tptDest(src, dst)
		dialTogether(ctx, ss, ds)
		for _, s := range []*client.Session{ss, ds} {
			if conn, err := s.Conn(ctx); err == nil {
				conns = append(conns, conn)
			}
		}
		if len(conns) < 2 {
			conns = nil
		}
	} else {
		l := src
		if src.Kind != Remote {
			l = dst
		}
		if conn, err := c.session(l).Conn(ctx); err == nil {
			conns = append(conns, conn)
		}
	}
	return conns
}

// autoRTT times one command on conn into ch.RTT: SIZE for a download of
// unknown size (it returns the size learnt), else NOOP once per engine
// and pair of endpoints, kept in base, for all but small files.
func (c *copier) autoRTT(ctx context.Context, conn *client.Conn, src, dst Location, size int64, base *autoBase, ch *AutoChoice) int64 {
	switch {
	case src.Kind == Remote && dst.Kind != Remote && size < 0:
		// A download needs the size anyway: time the SIZE.
		t := time.Now()
		if n, err := conn.Size(ctx, src.Path); err == nil {
			ch.RTT = time.Since(t)
			c.sizes = map[string]int64{src.Path: n}
			size = max(n-c.o.Offset, 0)
			if c.o.Length >= 0 {
				size = min(size, c.o.Length)
			}
		}
	case size < 0 || size >= autoSmall:
		// Once per engine and pair of endpoints (a job's files share it).
		c.e.auto.mu.Lock()
		ch.RTT = base.rtt
		c.e.auto.mu.Unlock()
		if ch.RTT > 0 {
			break
		}
		t := time.Now()
		if r, err := conn.Do(ctx, "NOOP"); err == nil && r.Code/100 == 2 {
			ch.RTT = time.Since(t)
			c.e.auto.mu.Lock()
			base.rtt = ch.RTT
			c.e.auto.mu.Unlock()
		}
	}
	return size
}

// autoParams sets ch's streams, buffer, block size and mode from the
// advisor's p, for a file of size bytes.
func (c *copier) autoParams(ch *AutoChoice, p history.Params, src, dst Location, size int64, modeE bool) {
	switch {
	case size >= 0 && size < autoSmall:
		ch.Parallel, ch.Why = 1, "small file: stream mode"
	case !modeE:
		ch.Parallel, ch.Why = 1, "the server offers no MODE E: stream mode"
		ch.TCPBuffer = int64(p.TCPBuffer)
	default:
		ch.Parallel, ch.TCPBuffer, ch.BlockSize = max(p.Parallel, 1), int64(p.TCPBuffer), int64(p.BlockSize)
		ch.ModeE = p.Mode == "E" || ch.Parallel > 1
		if ch.Parallel == 1 {
			// One stream: stream mode, unless a download or an
			// upload large enough to be re-tuned starts there in
			// MODE E and grows (see retune.go; an upload to a
			// server without PART then stays in MODE E, one stream).
			ch.ModeE = false
			try := *ch
			try.ModeE = true
			if (src.Kind == Remote && dst.Kind == Local || src.Kind == Local && dst.Kind == Remote) && c.retuneWanted(&try, size) {
				ch.ModeE, ch.Why = true, "re-tuned on the way"
			}
		}
	}
}
