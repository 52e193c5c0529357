package tune

import (
	"fmt"
	"math"
	"time"

	"github.com/ferrygrid/ferry/internal/progress"
)

// Setting is what the controller turns: the data connections of a part
// and their TCP buffer (0: left to the kernel's autotuning).
type Setting struct {
	Streams int
	Buffer  int
}

func (s Setting) String() string {
	if s.Buffer == 0 {
		return fmt.Sprintf("-p %d", s.Streams)
	}
	return fmt.Sprintf("-p %d -tcp-bs %d", s.Streams, s.Buffer)
}

// Sample is what one part measured.
type Sample struct {
	Bytes   int64
	Elapsed time.Duration
	// RTT is the smoothed round-trip time of the part's data connections
	// (TCP_INFO); zero when unknown.
	RTT time.Duration
	// PathRTT is the round trip the part's data saw, queueing on the path
	// included: the senders' smoothed RTT, or where this end only
	// receives, the receivers' estimate (tcpi_rcv_rtt: tcpi_rtt does not
	// follow a connection that sends no data). Zero when unknown.
	PathRTT time.Duration
	// Retransmits and SegsOut are the sending side's segment counts, when
	// this end sent (uploads); zero when unknown.
	Retransmits, SegsOut int64
	// SegsIn and OutOfOrder are the receiving side's counts, when this
	// end received (downloads): the segments in, and how many of them
	// arrived out of order (a lost segment makes those after it do, until
	// its retransmission); zero when unknown.
	SegsIn, OutOfOrder int64
	// MSS is the connections' segment size; zero means 1448.
	MSS int
	// Steady is the part's rate once its streams had warmed up (bytes
	// per second, from the progress after the part's first second);
	// zero when unknown or the part was too short. A part on a new
	// setting opens its connections afresh, and its slow start would
	// bias a comparison with a setting whose connections were kept.
	Steady float64
	// CPU is the CPU time (user and system) this process used while the
	// part ran (getrusage); zero when unknown, or when the bytes did not
	// pass this host (a third-party copy).
	CPU time.Duration
	// Host is the share of all of this host's CPUs that were busy while
	// the part ran (0 to 1: any process, the kernel's network stack, a
	// forwarder, the disk, other work); zero when unknown.
	Host float64
}

// steadyRate is Steady when known, else Rate.
func (s Sample) steadyRate() float64 {
	if s.Steady > 0 {
		return s.Steady
	}
	return s.Rate()
}

// cpuShare is the CPU the part used, in cores (1: one core busy all the
// part long), at its steady rate when known (the CPU per byte times the
// steady rate: slow start would understate it); 0 when unknown.
func (s Sample) cpuShare() float64 {
	if s.CPU <= 0 || s.Elapsed <= 0 || s.Bytes <= 0 {
		return 0
	}
	if s.Steady > 0 {
		return s.CPU.Seconds() * s.Steady / float64(s.Bytes)
	}
	return s.CPU.Seconds() / s.Elapsed.Seconds()
}

// Rate is the part's rate in bytes per second.
func (s Sample) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds()
}

// lossless reports whether the part is known to have lost nothing: its
// sender retransmitted no segment, or its receiver got them in order (at
// most one in lossFreeOOO out of order: a loss puts a window's worth
// out of order).
func (s Sample) lossless() bool {
	switch {
	case s.SegsOut > 0:
		return s.Retransmits == 0
	case s.SegsIn > 0:
		return float64(s.OutOfOrder) <= lossFreeOOO*float64(s.SegsIn)
	}
	return false
}

// Loss is the fraction of segments retransmitted, 0 when unknown.
func (s Sample) Loss() float64 {
	if s.SegsOut <= 0 {
		return 0
	}
	return float64(s.Retransmits) / float64(s.SegsOut)
}

// Limits bound what the controller may choose. Zero fields take the
// defaults named beside them.
type Limits struct {
	MaxStreams int // 32
	// MaxBuffer is the largest explicit buffer the ends grant (the
	// kernel's rmem_max/wmem_max, the server's SBUF); zero: buffers are
	// never made explicit, the kernel autotunes.
	MaxBuffer int
	// AutoBuffer is the kernel's autotuning maximum (tcp_rmem[2]); zero
	// when unknown. It tells whether autotuned streams are window-bound.
	AutoBuffer int
	// FirstPart is the size of the first part when no rate is predicted
	// (4 MiB: small, as it may be slow); MinPart and MaxPart bound every part (1 MiB, 4 GiB).
	FirstPart, MinPart, MaxPart int64
	// ProbeEvery: once settled, every ProbeEvery-th part tries a
	// neighbouring stream count (4).
	ProbeEvery int
	// RTT is the round trip measured before the first part (the control
	// channel's); the parts' own measurements replace it. It lengthens
	// the parts of a long link (see PartSize).
	RTT time.Duration
	// Known says the start setting is what past transfers over this
	// link did best: the controller begins settled, checking a neighbour
	// now and then, instead of searching.
	Known bool
	// Descend says the start is a guess of many streams (the wide-area
	// default when nothing is known of the link: right on a lossy link,
	// costly on a clean one). When the first part lost no segment, or
	// its data (or that of a second, warm part) queued on the path (its
	// round trip well above RTT, the idle one), the controller tries the
	// streams whose windows carry the rate with headroom and keeps them
	// if the rate holds within keepMargin; when the client's CPU is busy
	// (CPUBusy or more), it halves the streams while the rate holds, and
	// keeps the cheapest that held; else the rest of the file goes in
	// one part at the start.
	Descend bool
	// CPUBusy is the client's CPU use, in cores, at or above which a
	// Descend start tries fewer streams (0.25): each stream costs the
	// client CPU per byte, and where the client shares its cores (with
	// the link's forwarder, the disk, other work) that costs rate. On
	// the bench host (docs/bench/wan/tune) 32 streams over a clean
	// gigabit link used 0.25–0.35 core, over the lossy links that need
	// them 0.05–0.2, except within a millisecond (0.33–0.39), where 16
	// streams keep most of the rate anyway. A first part (cold) below
	// half of it settles at once.
	CPUBusy float64
}

// queued reports whether a part's data waited in a queue on the path:
// its round trip (pathRTT) at least queueFactor times the idle one
// measured before the transfer, and queueExtra longer.
func queued(pathRTT, idle time.Duration) bool {
	return idle > 0 && pathRTT >= time.Duration(queueFactor*float64(idle)) && pathRTT-idle >= queueExtra
}

// building reports whether a part's round trip (pathRTT) rose above the
// idle one: by a tenth and a millisecond, a queue on the path may be
// filling.
func building(pathRTT, idle time.Duration) bool {
	return idle > 0 && pathRTT >= idle+idle/10 && pathRTT-idle >= time.Millisecond
}

func (l Limits) withDefaults() Limits {
	if l.MaxStreams <= 0 {
		l.MaxStreams = 32
	}
	if l.FirstPart <= 0 {
		l.FirstPart = 4 << 20
	}
	if l.MinPart <= 0 {
		l.MinPart = 1 << 20
	}
	if l.MaxPart <= 0 {
		l.MaxPart = 4 << 30
	}
	if l.ProbeEvery <= 0 {
		l.ProbeEvery = 4
	}
	if l.CPUBusy <= 0 {
		l.CPUBusy = 0.25
	}
	return l
}

// How long a part should take: short while the controller searches,
// longer once it has settled (each part costs a round of set-up), and
// at least so many round trips: a part starts its connections' windows
// afresh, and on a long lossy link a stream's slow start and its
// recovery from a lost tail segment (a retransmission timeout) take
// tens of round trips that a short part cannot amortise.
const (
	searchPart  = 2 * time.Second
	settledPart = 5 * time.Second
	searchRTTs  = 40
	settledRTTs = 100
	// perStream is the least a part gives each of its streams, for the
	// same reason.
	perStream = 1 << 20
	// starvedShare: a stream below this share of what its window
	// allows is held back by loss, and more streams add rate nearly in
	// proportion.
	starvedShare = 0.05
	// lanRTT: under a millisecond (a LAN, this host) a window allows
	// more than any stream moves, and a slow stream is held back by the
	// hosts, not by loss.
	lanRTT = 1e-3
	// keepMargin: a setting with fewer streams is as good as the fastest
	// when its rate is within this fraction of it, and is preferred (it
	// costs both hosts less CPU per byte and the link fewer flows); a
	// setting with more streams must beat a cheaper one by more than
	// this to replace it. The band is the controller's hysteresis.
	keepMargin = 0.05
	// maxHalvings bounds a descent (32 → 1 is five).
	maxHalvings = 5
	// descendFirst is what the first part of a descent gives each
	// stream.
	descendFirst = 4 << 20
	// queueFactor and queueExtra: a part whose data's round trip is this
	// many times the idle one, and this much longer, filled a queue at
	// the bottleneck (see queued). On the bench's clean links 32 streams
	// stretched a 20 ms round trip past 100 ms and overflowed the
	// queue: hundreds to tens of thousands of drops that fewer streams
	// do not cause (docs/bench/wan/tune).
	queueFactor = 1.5
	queueExtra  = 2 * time.Millisecond
	// queueHeadroom: after a queued or lossless first part, a descent
	// jumps to the streams whose full windows carry this many times the
	// rate measured (at the idle round trip), instead of halving step by
	// step: a new connection's receive window grows to its full size
	// only over many round trips (on the bench's 10 ms link twice the
	// rate left 2 streams at 0.8 of 32, 4 streams at 1.1).
	queueHeadroom = 4
	// jumpFloor: a jump tries at least this many streams. One stream's
	// packets are handled by one CPU at each end, and a new
	// connection's window grows over many round trips: on the bench's
	// clean 1 and 10 ms links 1 or 2 streams moved 0.75–0.85 of what 4
	// did, though their windows allowed more.
	jumpFloor = 4
	// lossFreeOOO: a receiver that got at most this share of a part's
	// segments out of order saw no loss worth the name: one loss puts
	// about a window (tens to thousands of segments) out of order.
	lossFreeOOO = 1e-4
)

type phase int

const (
	growing    phase = iota // raising streams (or buffers) while it pays
	settled                 // on the best setting, probing neighbours now and then
	probing                 // this part tries a neighbour of the best
	descending              // halving the streams of a Descend start while the rate holds
)

// Controller picks the setting of each part from what the parts before
// it measured. It is not safe for concurrent use.
type Controller struct {
	lim     Limits
	cur     Setting
	prev    Setting // the setting before the last change
	best    Setting
	rates   map[Setting]float64 // what each setting achieved (smoothed)
	phase   phase
	step    int // the growth factor of the last change, 1 when none
	parts   int
	held    int // parts since the controller settled or last probed
	up      bool
	predict float64 // the rate expected of the current setting, bytes/s
	rtt     time.Duration
	gain    float64 // the rate of the last raise over the one before it
	starved bool    // the last part's streams ran far below their window (loss-bound)
	// whole: the rest of the file goes in one part (a Descend start
	// whose client CPU is not busy: nothing to tune, and each part's
	// end costs its streams' tails).
	whole bool
	// warm: a Descend start has measured its reference part (its
	// connections kept from the first part); halvings counts its steps.
	warm     bool
	halvings int
	// jumped: a queued first part sent the descent straight to the
	// streams the windows need; it settles after measuring them.
	jumped bool
	// coldRef: the jump was from the first part, whose streams started
	// cold as the jump's do: the two compare by their whole rates (a
	// steady rate over the short end of a first part is noisy: the
	// client's reads may lag the network and catch up).
	coldRef bool
}

// NewController starts at setting start (from the advisor), expecting
// predicted bytes per second of it (0: unknown).
func NewController(start Setting, predicted float64, lim Limits) *Controller {
	lim = lim.withDefaults()
	start.Streams = min(max(start.Streams, 1), lim.MaxStreams)
	if lim.MaxBuffer <= 0 {
		start.Buffer = 0
	}
	start.Buffer = min(start.Buffer, lim.MaxBuffer)
	c := &Controller{lim: lim, cur: start, prev: start, best: start, rates: map[Setting]float64{},
		step: 1, predict: predicted, rtt: lim.RTT}
	switch {
	case lim.Known:
		c.phase = settled
	case lim.Descend:
		c.phase = descending
	}
	return c
}

// Setting is the setting for the next part.
func (c *Controller) Setting() Setting { return c.cur }

// Best is the best setting measured so far.
func (c *Controller) Best() Setting { return c.best }

// PartSize is the length of the next part when remaining bytes are left:
// about two seconds of the expected rate while searching, five once
// settled, and no fewer than 40 (100) round trips, with at least a MiB
// per stream, within the limits; the remainder when what would be left
// is under half a part.
func (c *Controller) PartSize(remaining int64) int64 {
	if c.whole {
		return remaining
	}
	n := c.lim.FirstPart
	if r := c.expected(); r > 0 {
		d, rtts := searchPart, searchRTTs
		if c.phase == settled {
			d, rtts = settledPart, settledRTTs
		}
		d = max(d, time.Duration(rtts)*c.rtt)
		if c.phase == settled {
			// Each part on a setting that keeps its rate is twice as
			// long as the one before (up to 8 ×): a part's end costs its
			// streams' tails and restarts, worth paying while the
			// setting is new, less and less once it holds.
			d <<= min(c.held, 3)
		}
		n = int64(r * d.Seconds())
	}
	n = max(n, int64(c.cur.Streams)*perStream)
	if c.phase == descending && c.parts == 0 {
		// Long enough for a steady rate and CPU share after the
		// streams' start.
		n = max(n, int64(c.cur.Streams)*descendFirst)
	}
	n = min(max(n, c.lim.MinPart), c.lim.MaxPart)
	if remaining-n < n/2 {
		return remaining
	}
	return n
}

// expected is the rate the next part should reach: what its setting did
// before, else the best rate seen, else the prediction.
func (c *Controller) expected() float64 {
	if r, ok := c.rates[c.cur]; ok {
		return r
	}
	if r, ok := c.rates[c.best]; ok {
		return r
	}
	return c.predict
}

// Next records what the part moved with Setting measured and returns the
// setting for the next part and why it was chosen.
func (c *Controller) Next(s Sample) (Setting, string) {
	c.parts++
	if s.RTT > 0 {
		c.rtt = s.RTT
	}
	rate := s.Rate()
	if c.phase == descending && !c.coldRef {
		// Compare the settings of a descent by their steady rates: each
		// new one starts its streams afresh, the reference does not.
		// (Elsewhere a part's start is part of what a setting costs.)
		rate = s.steadyRate()
	}
	before, seen := c.rates[c.cur]
	if c.phase == descending && !c.warm && seen {
		// The reference part of a descent: the first part's rate, cold
		// and short, is not what this setting does.
		c.rates[c.cur] = rate
	} else if seen {
		c.rates[c.cur] = (before + rate) / 2
	} else {
		c.rates[c.cur] = rate
	}
	c.pickBest()
	if w, rtt := c.window(), c.rtt.Seconds(); w > 0 && rtt >= lanRTT {
		c.starved = rate/float64(c.cur.Streams) < starvedShare*w/rtt
	}
	switch c.phase {
	case descending:
		return c.descend(s, rate)
	case growing:
		return c.grow(s, rate)
	case probing:
		return c.afterProbe(rate)
	}
	if c.cur == c.best && seen && rate < 0.6*before {
		// The link changed under a settled setting: search again,
		// from what this setting does now; the other settings' rates
		// were measured on the old link.
		c.rates = map[Setting]float64{c.cur: rate}
		c.phase, c.step = growing, 1
		return c.change(c.cur, fmt.Sprintf("rate fell from %s to %s at %s: searching again", mbit(before), mbit(rate), c.cur))
	}
	c.held++
	if c.held >= c.lim.ProbeEvery {
		return c.probe()
	}
	return c.cur, fmt.Sprintf("settled at %s (%s)", c.cur, mbit(c.rates[c.best]))
}

// pickBest makes the best setting the one with the fewest streams whose
// rate is within keepMargin of the fastest (the fastest of those on a
// tie). Once settled, a setting with more streams replaces the best
// only when the best has fallen more than twice keepMargin below the
// fastest: a noisy part on a neighbour does not move the controller.
func (c *Controller) pickBest() {
	var top float64
	for _, r := range c.rates {
		top = max(top, r)
	}
	inc, incOK := c.rates[c.best]
	var pick Setting
	first := true
	for set, r := range c.rates {
		if r < (1-keepMargin)*top {
			continue
		}
		if first || set.Streams < pick.Streams || set.Streams == pick.Streams && r > c.rates[pick] {
			pick, first = set, false
		}
	}
	if (c.phase == settled || c.phase == probing) && incOK && pick.Streams > c.best.Streams && inc >= (1-2*keepMargin)*top {
		return
	}
	c.best = pick
}

// descend handles a part of a Descend start. A first part (cold), or
// the warm part after it, whose data queued on the path is the
// reference of a descent that jumps to the streams the windows need
// (see queued), which it keeps if the rate holds. Otherwise the first
// part says whether the streams are plainly loss-bound (the rest goes in
// one part) and whether the client's CPU is busy. If not, a second part
// on the same streams, warm, looks for the queue their grown windows
// may build (when the round trips are known), and without one the rest
// goes in one part. Else the second part measures the start warm (the
// reference), and each part after halves the streams while the rate
// holds within keepMargin of the fastest seen; the first that does not
// sends the controller back to the cheapest that held, settled. At
// most maxHalvings steps.
func (c *Controller) descend(s Sample, rate float64) (Setting, string) {
	share := s.cpuShare()
	per := rate / float64(c.cur.Streams)
	if !c.warm && c.cur.Streams > 1 {
		// Before the descent's reference: a part that lost nothing, or
		// whose data queued on the path, jumps.
		lossless, queue := s.lossless(), queued(s.PathRTT, c.lim.RTT)
		ref := rate
		if c.parts == 1 {
			// The first part's streams started cold, as the jump's
			// will: the two compare by their whole rates (a steady rate
			// over the short end of a first part is noisy: the client's
			// reads may lag the network and catch up).
			ref = s.Rate()
		}
		switch n := c.need(ref); {
		case lossless && n > 0 && max(n, jumpFloor) <= c.cur.Streams/2:
			// Nothing was lost: windows, not loss, bound the streams,
			// and fewer carry the rate at less cost to both hosts and
			// the path (a host's per-packet work grows with the
			// streams, and a queue may yet overflow).
			return c.jump(ref, n, fmt.Sprintf("lost nothing (%s)", s.lossCounts()))
		case queue:
			// The streams keep a queue at the bottleneck full: the link
			// is theirs, and fewer streams fill it as well without
			// overflowing it (a lossy link's streams do not fill it).
			if n <= 0 {
				n = c.cur.Streams / 2
			}
			return c.jump(ref, min(n, c.cur.Streams/2), fmt.Sprintf("kept a queue on the path (round trip %s, idle %s)",
				s.PathRTT.Round(time.Millisecond/10), c.lim.RTT.Round(time.Millisecond/10)))
		}
	}
	if m := mathis(s, c.rtt.Seconds()); m > 0 && per <= 1.5*m && c.parts == 1 {
		c.whole = true
		c.phase = settled
		return c.cur, fmt.Sprintf("each stream is loss-bound (%.2g%% retransmitted, %s per stream, Mathis bound %s): the rest in one part at %s",
			100*s.Loss(), mbit(per), mbit(m), c.cur)
	}
	if !c.warm {
		// The first part (cold) decides only when the client is far
		// from busy; the warm reference part decides otherwise.
		if c.parts == 1 && share < c.lim.CPUBusy/2 || c.parts > 1 && share < c.lim.CPUBusy {
			if c.parts == 1 && c.cur.Streams > 1 && building(s.PathRTT, c.lim.RTT) {
				// Many streams overflow a clean link's queue only once
				// their windows have grown: the first part, their slow
				// start, may show only its start. One more part on the
				// kept connections shows it (see queued). Not where the
				// round trip stayed idle (a lossy link): there another
				// part's end costs its streams' tails.
				return c.cur, fmt.Sprintf("the client's CPU is not the limit (%s core at %s%s), round trip %s (idle %s): measuring %s again, warm, for a queue on the path",
					cores(share), mbit(rate), hostShare(s.Host), s.PathRTT.Round(time.Millisecond/10), c.lim.RTT.Round(time.Millisecond/10), c.cur)
			}
			c.whole = true
			c.phase = settled
			return c.cur, fmt.Sprintf("the client's CPU is not the limit (%s core at %s%s)%s: the rest in one part at %s",
				cores(share), mbit(rate), hostShare(s.Host), roundTrip(s.PathRTT, c.lim.RTT), c.cur)
		}
		if c.parts == 1 {
			// Measure the start again on its kept connections before
			// comparing fewer streams with it.
			return c.cur, fmt.Sprintf("the client uses %s core at %s%s: measuring %s again before trying fewer streams",
				cores(share), mbit(rate), hostShare(s.Host), c.cur)
		}
		c.warm = true
	} else {
		top := 0.0
		for _, r := range c.rates {
			top = max(top, r)
		}
		if rate < (1-keepMargin)*top {
			return c.settle(fmt.Sprintf("%s gave %s, under %.0f%% of the fastest (%s)", c.cur, mbit(rate), 100*(1-keepMargin), mbit(top)))
		}
		if c.jumped {
			return c.settle(fmt.Sprintf("%s holds the rate (%s) without the queue", c.cur, mbit(rate)))
		}
	}
	if c.cur.Streams <= 1 || c.halvings >= maxHalvings {
		return c.settle(fmt.Sprintf("%s holds the rate (%s)", c.cur, mbit(rate)))
	}
	c.halvings++
	next := c.cur
	next.Streams = max(c.cur.Streams/2, 1)
	return c.change(next, fmt.Sprintf("%s at %s with the client at %s core%s: trying %s (kept if within %.0f%%)",
		c.cur, mbit(rate), cores(share), hostShare(s.Host), next, 100*keepMargin))
}

// jump ends a descent's search before its reference: this part, whose
// rate was ref, is the reference, and the next tries streams, kept if
// the rate holds, else back here: every further step would cost a part
// and its streams' start. why says what this part showed.
func (c *Controller) jump(ref float64, streams int, why string) (Setting, string) {
	if c.parts == 1 {
		c.rates[c.cur] = ref
		c.pickBest()
		c.coldRef = true
	}
	c.warm, c.jumped = true, true
	c.halvings++
	next := c.cur
	next.Streams = min(max(streams, jumpFloor), c.cur.Streams)
	return c.change(next, fmt.Sprintf("%s at %s %s: trying %s, whose windows carry %g times the rate (kept if within %.0f%%)",
		c.cur, mbit(ref), why, next, float64(queueHeadroom), 100*keepMargin))
}

// need is how many streams carry rate with the windows' headroom
// (queueHeadroom) at the idle round trip; 0 when the window or the round
// trip is unknown.
func (c *Controller) need(rate float64) int {
	w, rtt := c.window(), c.lim.RTT.Seconds()
	if w <= 0 || rtt <= 0 {
		return 0
	}
	return max(int(math.Ceil(queueHeadroom*rate*rtt/w)), 1)
}

// lossCounts says what a lossless part counted.
func (s Sample) lossCounts() string {
	if s.SegsOut > 0 {
		return fmt.Sprintf("%d segments sent, none retransmitted", s.SegsOut)
	}
	return fmt.Sprintf("%d segments in, %d out of order", s.SegsIn, s.OutOfOrder)
}

// roundTrip says what a part's data saw of the path, "" when unknown.
func roundTrip(path, idle time.Duration) string {
	if path <= 0 || idle <= 0 {
		return ""
	}
	return fmt.Sprintf(", round trip %s (idle %s)", path.Round(time.Millisecond/10), idle.Round(time.Millisecond/10))
}

// hostShare says how busy the host's CPUs were, "" when unknown.
func hostShare(h float64) string {
	if h <= 0 {
		return ""
	}
	return fmt.Sprintf(", host %.0f%% busy", 100*h)
}

// cores formats a CPU share.
func cores(share float64) string {
	if share <= 0 {
		return "an unknown"
	}
	return fmt.Sprintf("%.2f", share)
}

// grow handles a part of the search: keep raising while the last raise
// paid (at least 15 % more), else settle on the best.
func (c *Controller) grow(s Sample, rate float64) (Setting, string) {
	if c.parts > 1 && c.step > 1 {
		gain := rate / c.rates[c.prev]
		c.gain = gain
		if gain < 1.15 {
			return c.settle(fmt.Sprintf("%s gave %s, %s gave %s: no gain", c.prev, mbit(c.rates[c.prev]), c.cur, mbit(rate)))
		}
	}
	next, why := c.raise(s, rate)
	if next == c.cur {
		return c.settle(why)
	}
	return c.change(next, why)
}

// raise picks the next setting up from the current one: a wider buffer
// when each stream is window-bound and the buffer may grow, four times
// the streams when they are loss-bound, else twice.
func (c *Controller) raise(s Sample, rate float64) (Setting, string) {
	next := c.cur
	per := rate / float64(c.cur.Streams)
	rtt := s.RTT.Seconds()
	if w := c.window(); rtt > 0 && w > 0 && per >= 0.8*w/rtt && c.cur.Buffer > 0 && c.cur.Buffer < c.lim.MaxBuffer {
		next.Buffer = min(4*c.cur.Buffer, c.lim.MaxBuffer)
		c.step = 2
		return next, fmt.Sprintf("each stream is window-bound (%s per stream, window %d B, RTT %s): buffer %d → %d",
			mbit(per), int(w), s.RTT.Round(time.Millisecond/10), c.cur.Buffer, next.Buffer)
	}
	if w := c.window(); s.lossless() && rtt > 0 && w > 0 && per < 0.5*w/rtt {
		// Well below their windows, yet nothing was lost: the path's
		// capacity or the hosts bound the rate, and more streams would
		// only cost more (on the bench's clean 1 ms link a raise from 8
		// to 32 streams lost 10 %).
		return c.cur, fmt.Sprintf("each stream runs below half its window (%s per stream, window allows %s) and nothing was lost (%s): more streams would not help",
			mbit(per), mbit(w/rtt), s.lossCounts())
	}
	factor, why := 2, "more streams may help"
	if w := c.window(); rtt >= lanRTT && w > 0 && per < starvedShare*w/rtt {
		// Far below what the window allows: loss holds each stream
		// back, and each stream adds about as much as the others; on a
		// long link every step costs the new streams' start, so go to
		// the limit at once (a settled controller checks below).
		factor = c.lim.MaxStreams
		why = fmt.Sprintf("each stream runs at under 5%% of its window (%s per stream, window allows %s)", mbit(per), mbit(w/rtt))
	} else if m := mathis(s, rtt); m > 0 && per <= 1.5*m {
		factor = 4
		why = fmt.Sprintf("each stream is loss-bound (%.2g%% retransmitted, %s per stream, Mathis bound %s)", 100*s.Loss(), mbit(per), mbit(m))
	} else if w := c.window(); rtt > 0 && w > 0 && per < 0.3*w/rtt {
		// A receiver sees no retransmits; a stream far below what its
		// window allows is held back by loss (or a shared bottleneck,
		// which more streams do not hurt).
		factor = 4
		why = fmt.Sprintf("each stream runs far below its window (%s per stream, window allows %s)", mbit(per), mbit(w/rtt))
	}
	next.Streams = min(factor*c.cur.Streams, c.lim.MaxStreams)
	if next.Streams == c.cur.Streams {
		return next, fmt.Sprintf("at the stream limit (%d)", c.lim.MaxStreams)
	}
	c.step = factor
	return next, fmt.Sprintf("%s: %s → %s", why, c.cur, next)
}

// window is a stream's usable window in bytes: this kernel grants about
// 1.32 times an explicit buffer and 0.66 times the autotuning maximum
// (docs: shared/wan.md); 0 when unknown.
func (c *Controller) window() float64 {
	if c.cur.Buffer > 0 {
		return 1.32 * float64(c.cur.Buffer)
	}
	return 0.66 * float64(c.lim.AutoBuffer)
}

// mathis is the Mathis et al. bound on one stream's rate in bytes per
// second, 0 when loss or RTT is unknown.
func mathis(s Sample, rtt float64) float64 {
	p := s.Loss()
	if p <= 0 || rtt <= 0 {
		return 0
	}
	mss := float64(s.MSS)
	if mss <= 0 {
		mss = 1448
	}
	return 1.22 * mss / (rtt * math.Sqrt(p))
}

func (c *Controller) settle(why string) (Setting, string) {
	c.phase, c.held, c.step = settled, 0, 1
	return c.change(c.best, fmt.Sprintf("%s; settled at %s (%s)", why, c.best, mbit(c.rates[c.best])))
}

// probe tries a neighbour of the best setting, above and below in turn.
// At the stream limit, reached by a raise that still paid well (1.5 ×
// or more) or with streams starved by loss (each adds about as much as
// the others), there is nothing to learn below and nothing above: it
// stays (a probe costs two starts of the streams).
func (c *Controller) probe() (Setting, string) {
	c.held = 0
	if c.best.Streams >= c.lim.MaxStreams && c.cur == c.best && (c.gain >= 1.5 || c.starved) {
		return c.best, fmt.Sprintf("settled at %s (%s): the stream limit, and more streams still paid", c.best, mbit(c.rates[c.best]))
	}
	c.up = !c.up
	n := c.best
	if c.up {
		n.Streams = min(c.best.Streams*3/2+1, c.lim.MaxStreams)
	} else {
		n.Streams = max(c.best.Streams*2/3, 1)
	}
	if n == c.best {
		return c.best, fmt.Sprintf("settled at %s (%s)", c.best, mbit(c.rates[c.best]))
	}
	c.phase = probing
	return c.change(n, fmt.Sprintf("checking a neighbour of %s: %s", c.best, n))
}

// afterProbe keeps a neighbour that beat the best (pickBest made it the
// best), else returns to the best. A winner above is probed above again
// next time, so the controller keeps climbing while that pays.
func (c *Controller) afterProbe(rate float64) (Setting, string) {
	c.phase = settled
	if c.cur == c.best {
		if c.up {
			c.up = false // the next probe goes up again
		}
		return c.cur, fmt.Sprintf("%s is faster (%s): settled there", c.cur, mbit(rate))
	}
	return c.change(c.best, fmt.Sprintf("%s gave %s, %s stays best (%s)", c.cur, mbit(rate), c.best, mbit(c.rates[c.best])))
}

func (c *Controller) change(next Setting, why string) (Setting, string) {
	if next != c.cur {
		c.prev = c.cur
	}
	c.cur = next
	return next, why
}

// mbit formats bytes per second as a bit rate.
func mbit(bytesPerSec float64) string { return progress.Bits(8 * bytesPerSec) }
