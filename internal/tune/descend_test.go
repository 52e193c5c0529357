package tune

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// cpuLink is a synthetic path whose client has little CPU to spare (the
// bench host: two cores, one of them the WAN forwarder's): the rate of n
// streams is the least of the bottleneck, n times a stream's bound
// (window over RTT, the Mathis bound under loss), and what the client's
// CPU allows when each byte costs it more the more streams there are.
type cpuLink struct {
	capacity float64 // bytes/s
	rtt      time.Duration
	loss     float64
	window   float64 // a stream's usable window, bytes
	cores    float64 // the CPU the client may use, in cores
	// perByte and perStreamByte: the client's CPU cost of a byte is
	// perByte + n·perStreamByte seconds with n streams.
	perByte, perStreamByte float64
	noise                  float64 // ± this fraction per part
	// fill > 0: more than fill streams keep the bottleneck's queue full
	// (the round trip the data sees is queueRTT times rtt) and each
	// stream past fill costs the aggregate drop of the capacity in
	// overflow losses: a clean link with a queue, as the bench's.
	fill     int
	drop     float64
	queueRTT float64
	// queueLate: the queue builds only once the streams' windows have
	// grown: the first part (their slow start) sees only its start.
	queueLate bool
	// received: the client receives and counts its segments, in and out
	// of order (a download); a lost segment puts a window's worth out of
	// order.
	received bool

	rng     *rand.Rand
	started bool
	prev    Setting
}

func (l *cpuLink) cost(n int) float64 { return l.perByte + float64(n)*l.perStreamByte }

func (l *cpuLink) rate(s Setting) float64 {
	per := l.window / l.rtt.Seconds()
	if l.loss > 0 {
		per = min(per, 1.22*1448/(l.rtt.Seconds()*math.Sqrt(l.loss)))
	}
	capacity := l.capacity
	if l.fill > 0 && s.Streams > l.fill {
		capacity *= max(1-l.drop*float64(s.Streams-l.fill), 0.1)
	}
	r := min(capacity, float64(s.Streams)*per)
	return min(r, l.cores/l.cost(s.Streams))
}

// pathRTT is the round trip the data of s sees.
func (l *cpuLink) pathRTT(s Setting) time.Duration {
	if l.fill > 0 && s.Streams > l.fill {
		return time.Duration(l.queueRTT * float64(l.rtt))
	}
	return l.rtt
}

func (l *cpuLink) move(_ context.Context, _, n int64, s Setting) (Sample, error) {
	r := l.rate(s) * (1 + l.noise*(2*l.rng.Float64()-1))
	startup := l.rtt
	if !l.started || s != l.prev {
		startup = 3 * l.rtt
		if l.loss > 0 {
			startup += 20 * l.rtt
		}
	}
	path := l.pathRTT(s)
	if l.queueLate && !l.started && path > l.rtt {
		path = l.rtt * 6 / 5
	}
	l.started, l.prev = true, s
	steady := time.Duration(float64(n) / r * float64(time.Second))
	el := steady + startup
	cpu := time.Duration(float64(n) * l.cost(s.Streams) * float64(time.Second))
	smp := Sample{Bytes: n, Elapsed: el, RTT: l.rtt, PathRTT: path, Steady: r, CPU: cpu}
	if l.received {
		smp.SegsIn = n / 1448
		loss := l.loss
		if l.fill > 0 && s.Streams > l.fill {
			loss += l.drop / 10
		}
		smp.OutOfOrder = int64(float64(smp.SegsIn) * min(loss*100, 1))
	}
	return smp, nil
}

// benchHost is a link of the bench's grid on a client like the bench's:
// a gigabit bottleneck, autotuned windows (4 MB × 0.66) and a client
// that gets 0.3 of a core, its CPU per byte 1.1 ns plus 0.06 ns per
// stream (1.3 s/GB at 4 streams, 3 s/GB at 32, as measured).
func benchHost(rttMS int, loss float64, seed uint64) *cpuLink {
	return &cpuLink{capacity: 125e6, rtt: time.Duration(rttMS) * time.Millisecond, loss: loss,
		window: 0.66 * (4 << 20), cores: 0.3, perByte: 1.1e-9, perStreamByte: 0.06e-9,
		noise: 0.03, rng: rand.New(rand.NewPCG(seed, uint64(rttMS)))}
}

func (l *cpuLink) best() (Setting, float64) {
	var bs Setting
	var br float64
	for p := 1; p <= 32; p++ {
		if r := l.rate(Setting{Streams: p}); r > br {
			bs, br = Setting{Streams: p}, r
		}
	}
	return bs, br
}

// descendRun moves a file of secs seconds at the link's best rate from a
// Descend start at 32 streams; it returns the controller, the steps and
// the overall rate.
func descendRun(t *testing.T, l *cpuLink, secs float64) (*Controller, Result, float64) {
	t.Helper()
	_, br := l.best()
	size := int64(secs * br)
	c := NewController(Setting{Streams: 32}, 0, Limits{MaxStreams: 32, AutoBuffer: 4 << 20, RTT: l.rtt, Descend: true})
	res, err := Run(t.Context(), 0, size, c, l.move)
	if err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	for _, s := range res.Steps {
		took += s.Elapsed
	}
	return c, res, float64(size) / took.Seconds()
}

func logSteps(t *testing.T, res Result) {
	t.Helper()
	for _, s := range res.Steps {
		t.Logf("%v %.0f Mbit/s: %s", s.Setting, 8*s.Rate/1e6, s.Next)
	}
}

// TestDescendClean: on clean links where 32 streams cost the client the
// CPU that caps the rate, a Descend start halves the streams while the
// rate holds and settles on a cheap setting within 5 % of the best, in
// at most eight parts; the whole file beats staying at 32.
func TestDescendClean(t *testing.T) {
	for _, rttMS := range []int{2, 20, 60, 100} {
		t.Run(fmt.Sprintf("rtt%dms", rttMS), func(t *testing.T) {
			l := benchHost(rttMS, 0, 1)
			_, br := l.best()
			stay := l.rate(Setting{Streams: 32})
			c, res, overall := descendRun(t, l, 30)
			got := l.rate(c.Best())
			settledAt := -1
			for i, s := range res.Steps {
				if s.Setting == c.Best() && i > 0 && res.Steps[i-1].Setting.Streams < s.Setting.Streams {
					settledAt = i
				}
			}
			if got < 0.95*br || c.Best().Streams > 16 || overall <= stay {
				logSteps(t, res)
				t.Errorf("settled at %v: %.0f Mbit/s of the best %.0f; overall %.0f, 32 streams %.0f",
					c.Best(), 8*got/1e6, 8*br/1e6, 8*overall/1e6, 8*stay/1e6)
			}
			// The window of 60 and 100 ms needs several streams: the
			// descent stops where the rate falls, not at one stream.
			if min := int(math.Ceil(l.capacity / (l.window / l.rtt.Seconds()))); c.Best().Streams < min {
				logSteps(t, res)
				t.Errorf("settled at %v, below the %d streams the window needs", c.Best(), min)
			}
			if settledAt > 8 {
				logSteps(t, res)
				t.Errorf("the descent took %d parts", settledAt)
			}
		})
	}
}

// TestDescendQueue: on a clean link whose bottleneck queue many streams
// overflow (the bench's: 32 streams stretched the round trip several
// times and lost thousands of segments), a Descend start whose client
// is not busy sees the queue in its first part, or where the queue
// builds only once the windows have grown (late; the bench's 10 ms
// link), in the warm part after it; it jumps to the streams the windows
// need and settles within 5 % of the best in a few parts; the whole
// file beats staying at 32. Where the queue does not fill (fill 0), the
// round trip stays idle and the rest goes in one part.
func TestDescendQueue(t *testing.T) {
	for _, tc := range []struct {
		rttMS int
		late  bool
	}{{20, false}, {60, false}, {100, false}, {20, true}, {60, true}, {100, true}} {
		t.Run(fmt.Sprintf("rtt%dms/late=%v", tc.rttMS, tc.late), func(t *testing.T) {
			l := benchHost(tc.rttMS, 0, 3)
			l.cores, l.perByte, l.perStreamByte = 8, 0.5e-9, 0 // not busy: only the queue can start the descent
			need := int(math.Ceil(l.capacity / (l.window / l.rtt.Seconds())))
			l.fill, l.drop, l.queueRTT, l.queueLate = 2*need, 0.015, 3, tc.late
			bs, br := l.best()
			stay := l.rate(Setting{Streams: 32})
			c, res, overall := descendRun(t, l, 30)
			got := l.rate(c.Best())
			if got < 0.95*br || overall <= stay || overall < 0.85*br {
				logSteps(t, res)
				t.Errorf("settled at %v: %.0f Mbit/s of the best %.0f (%v); overall %.0f, 32 streams %.0f",
					c.Best(), 8*got/1e6, 8*br/1e6, bs, 8*overall/1e6, 8*stay/1e6)
			}
			if len(res.Steps) > 6 {
				logSteps(t, res)
				t.Errorf("%d parts", len(res.Steps))
			}
		})
	}
	t.Run("no queue", func(t *testing.T) {
		l := benchHost(60, 0, 3)
		l.cores, l.perByte, l.perStreamByte = 8, 0.5e-9, 0
		c, res, _ := descendRun(t, l, 30)
		if len(res.Steps) != 2 || c.Best().Streams != 32 {
			logSteps(t, res)
			t.Errorf("%d parts, ended at %v; want 2 at -p 32 (the round trip stayed idle: the rest in one)", len(res.Steps), c.Best())
		}
	})
}

// TestQueued: what counts as a queue on the path.
func TestQueued(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		path, idle time.Duration
		want       bool
	}{
		{0, 20 * ms, false},
		{25 * ms, 20 * ms, false},
		{30 * ms, 20 * ms, true},
		{100 * ms, 60 * ms, true},
		{80 * ms, 60 * ms, false},
		{3 * ms, 2 * ms, false}, // 1.5× but only 1 ms longer
		{4500 * time.Microsecond, 2 * ms, true},
		{5 * ms, 0, false}, // idle unknown
	} {
		if got := queued(tc.path, tc.idle); got != tc.want {
			t.Errorf("queued(%v, %v) = %v, want %v", tc.path, tc.idle, got, tc.want)
		}
	}
}

// TestDescendLossy: on lossy links many streams are right. A busy
// client tries fewer and returns to 32 where 16 lose rate (it may keep
// 16 where, as within a few milliseconds, they do not); an idle one
// (slow, long links), whose round trip stays idle, moves the rest in one
// part. Either way the
// controller ends within 5 % of the best. An idle client moves the file
// within 3 % of 32 streams throughout; a busy one pays for its probe of
// fewer streams (its part, two starts of the streams: up to 15 % of a
// file of 30 s here, less of a longer one).
func TestDescendLossy(t *testing.T) {
	for _, tc := range []struct {
		rttMS     int
		loss      float64
		wantParts int // 0: any
	}{
		{2, 0.01, 0}, {20, 0.001, 0}, {20, 0.01, 2}, {60, 0.001, 2}, {60, 0.01, 2}, {100, 0.001, 2}, {100, 0.01, 1},
	} {
		t.Run(fmt.Sprintf("rtt%dms/loss%g", tc.rttMS, tc.loss), func(t *testing.T) {
			l := benchHost(tc.rttMS, tc.loss, 2)
			_, br := l.best()
			// 32 streams in one part, as without re-tuning: one start.
			size := 30 * br
			stay := size / (size/l.rate(Setting{Streams: 32}) + 23*l.rtt.Seconds())
			c, res, overall := descendRun(t, l, 30)
			if l.rate(c.Best()) < 0.95*br || l.rate(Setting{Streams: 16}) < 0.95*br && c.Best().Streams != 32 {
				logSteps(t, res)
				t.Errorf("ended at %v (best %v): %.1f Mbit/s of the best %.1f",
					c.Setting(), c.Best(), 8*l.rate(c.Best())/1e6, 8*br/1e6)
			}
			limit := 0.85
			if tc.wantParts > 0 {
				limit = 0.97
			}
			t.Logf("overall %.1f Mbit/s, 32 streams in one part %.1f, ended at %v", 8*overall/1e6, 8*stay/1e6, c.Best())
			if overall < limit*stay {
				logSteps(t, res)
				t.Errorf("overall %.1f Mbit/s, 32 streams throughout %.1f", 8*overall/1e6, 8*stay/1e6)
			}
			if tc.wantParts > 0 && len(res.Steps) != tc.wantParts {
				logSteps(t, res)
				t.Errorf("%d parts, want %d (the client is not busy: the rest in one)", len(res.Steps), tc.wantParts)
			}
			if len(res.Steps) > 12 {
				logSteps(t, res)
				t.Errorf("%d parts", len(res.Steps))
			}
		})
	}
}

// TestDescendUnknownCPU: without the client's CPU (a third-party copy),
// a Descend start does not guess: the rest in one part.
func TestDescendUnknownCPU(t *testing.T) {
	c := NewController(Setting{Streams: 32}, 0, Limits{MaxStreams: 32, Descend: true})
	n := c.PartSize(1 << 40)
	set, why := c.Next(Sample{Bytes: n, Elapsed: time.Second})
	if set.Streams != 32 || c.PartSize(1<<40) != 1<<40 {
		t.Errorf("next %v, part %d (%s): want the rest at 32 streams", set, c.PartSize(1<<40), why)
	}
}

// TestDescendHysteresis: on a clean link with noisy parts (±7 %, as
// the bench's forwarder-bound rows), a long transfer settles within 5 %
// of the best and afterwards moves only to cheaper settings (the rates
// are equal on this plateau), never back up: no oscillation.
func TestDescendHysteresis(t *testing.T) {
	for seed := range uint64(8) {
		l := benchHost(20, 0, seed)
		l.noise = 0.07
		_, br := l.best()
		c := NewController(Setting{Streams: 32}, 0, Limits{MaxStreams: 32, AutoBuffer: 4 << 20, RTT: l.rtt, Descend: true})
		var (
			changes  int
			settled  bool
			last     Setting
			steps    []string
			remain   = int64(600 * br)
			partsRun int
		)
		for remain > 0 && partsRun < 200 {
			n := c.PartSize(remain)
			s, _ := l.move(t.Context(), 0, n, c.Setting())
			set := c.Setting()
			_, why := c.Next(s)
			steps = append(steps, fmt.Sprintf("%v %.0f Mbit/s: %s", set, 8*s.Rate()/1e6, why))
			remain -= n
			partsRun++
			if c.phase != descending && !settled {
				settled, last = true, c.Best()
				continue
			}
			if settled && c.Best() != last {
				if c.Best().Streams > last.Streams {
					changes++
				}
				last = c.Best()
			}
		}
		if changes > 0 || l.rate(c.Best()) < 0.95*br {
			for _, st := range steps {
				t.Log(st)
			}
			t.Errorf("seed %d: best moved to more streams %d times after settling; ended at %v", seed, changes, c.Best())
		}
	}
}

// TestDescendLossless: a download that counts its segments. Where none
// arrives out of order (a clean link whose streams the windows bound;
// the bench's 10 ms link, where 32 streams cost the hosts CPU and rate),
// the start jumps from 32 to the streams the windows need, keeps them
// (their rate holds) and ends near the best; where segments are lost
// (0.1 %, 1 %), it stays at 32 as before.
func TestDescendLossless(t *testing.T) {
	for _, rttMS := range []int{2, 20, 60} {
		t.Run(fmt.Sprintf("clean/rtt%dms", rttMS), func(t *testing.T) {
			l := benchHost(rttMS, 0, 7)
			l.cores, l.perByte, l.perStreamByte, l.received = 8, 0.5e-9, 0, true
			_, br := l.best()
			c, res, overall := descendRun(t, l, 30)
			if c.Best().Streams >= 16 || l.rate(c.Best()) < 0.95*br || overall < 0.9*br || len(res.Steps) > 5 {
				logSteps(t, res)
				t.Errorf("ended at %v (%.0f Mbit/s of the best %.0f), overall %.0f, %d parts",
					c.Best(), 8*l.rate(c.Best())/1e6, 8*br/1e6, 8*overall/1e6, len(res.Steps))
			}
			if len(res.Steps) < 2 || !strings.Contains(res.Steps[0].Next, "lost nothing") {
				logSteps(t, res)
				t.Error("the first part's lossless count did not start the jump")
			}
		})
	}
	for _, loss := range []float64{0.001, 0.01} {
		t.Run(fmt.Sprintf("lossy/%g", loss), func(t *testing.T) {
			l := benchHost(20, loss, 7)
			l.cores, l.perByte, l.perStreamByte, l.received = 8, 0.5e-9, 0, true
			c, res, _ := descendRun(t, l, 30)
			if c.Best().Streams != 32 {
				logSteps(t, res)
				t.Errorf("ended at %v on a lossy link", c.Best())
			}
			for _, s := range res.Steps {
				if strings.Contains(s.Next, "lost nothing") {
					t.Errorf("a lossy part counted as lossless: %s", s.Next)
				}
			}
		})
	}
}

// TestLossless: what counts as a part that lost nothing.
func TestLossless(t *testing.T) {
	for _, tc := range []struct {
		s    Sample
		want bool
	}{
		{Sample{}, false}, // nothing counted
		{Sample{SegsOut: 1000}, true},
		{Sample{SegsOut: 1000, Retransmits: 1}, false},
		{Sample{SegsIn: 100000}, true},
		{Sample{SegsIn: 100000, OutOfOrder: 10}, true},
		{Sample{SegsIn: 100000, OutOfOrder: 11}, false},
		{Sample{SegsIn: 100000, OutOfOrder: 40}, false},
	} {
		if got := tc.s.lossless(); got != tc.want {
			t.Errorf("%+v: lossless %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestNoRaiseWhenLossless: a search from a setting whose streams run far
// below their windows raises them (loss may hold each back), unless the
// part lost nothing: then the path or the hosts bound the rate, and the
// controller settles where it is (the bench's clean 1 ms link: 8 → 32
// streams lost 10 %).
func TestNoRaiseWhenLossless(t *testing.T) {
	lim := Limits{MaxStreams: 32, AutoBuffer: 4 << 20, RTT: 2 * time.Millisecond}
	part := Sample{Bytes: 200 << 20, Elapsed: 2 * time.Second, RTT: 2 * time.Millisecond} // 105 MB/s over 8 streams
	lossy, clean := part, part
	lossy.SegsIn, lossy.OutOfOrder = 150000, 3000
	clean.SegsIn = 150000
	if next, why := NewController(Setting{Streams: 8}, 0, lim).Next(lossy); next.Streams <= 8 {
		t.Errorf("lossy: %v (%s), want more streams", next, why)
	}
	c := NewController(Setting{Streams: 8}, 0, lim)
	if next, why := c.Next(clean); next.Streams != 8 || !strings.Contains(why, "nothing was lost") || c.phase != settled {
		t.Errorf("lossless: %v (%s), want to settle at -p 8", next, why)
	}
}

// TestBuilding: what counts as a round trip that rose (a queue that may
// be filling).
func TestBuilding(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		path, idle time.Duration
		want       bool
	}{
		{0, 20 * ms, false},
		{20 * ms, 20 * ms, false},
		{21 * ms, 20 * ms, false},
		{22500 * time.Microsecond, 20 * ms, true},
		{101 * ms, 100 * ms, false},
		{3100 * time.Microsecond, 2300 * time.Microsecond, false}, // +35 % but under a millisecond
		{3500 * time.Microsecond, 2300 * time.Microsecond, true},
		{30 * ms, 0, false},
	} {
		if got := building(tc.path, tc.idle); got != tc.want {
			t.Errorf("building(%v, %v) = %v, want %v", tc.path, tc.idle, got, tc.want)
		}
	}
}
