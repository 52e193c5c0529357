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
	// Retransmits and SegsOut are the sending side's segment counts, when
	// this end sent (uploads); zero when unknown.
	Retransmits, SegsOut int64
	// MSS is the connections' segment size; zero means 1448.
	MSS int
}

// Rate is the part's rate in bytes per second.
func (s Sample) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds()
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
)

type phase int

const (
	growing phase = iota // raising streams (or buffers) while it pays
	settled              // on the best setting, probing neighbours now and then
	probing              // this part tries a neighbour of the best
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
	if lim.Known {
		c.phase = settled
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
	before, seen := c.rates[c.cur]
	if seen {
		c.rates[c.cur] = (before + rate) / 2
	} else {
		c.rates[c.cur] = rate
	}
	c.pickBest()
	if w, rtt := c.window(), c.rtt.Seconds(); w > 0 && rtt >= lanRTT {
		c.starved = rate/float64(c.cur.Streams) < starvedShare*w/rtt
	}
	switch c.phase {
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

func (c *Controller) pickBest() {
	for set, r := range c.rates {
		if b, ok := c.rates[c.best]; !ok || r > b || r == b && set.Streams < c.best.Streams {
			c.best = set
		}
	}
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
