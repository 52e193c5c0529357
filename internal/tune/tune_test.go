package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// link is a synthetic path: a bottleneck, a round trip and a loss rate,
// with this kernel's window rules (wan.md) and a small cost per stream,
// so that one setting is best.
type link struct {
	capacity float64 // bytes/s
	rtt      time.Duration
	loss     float64
	rmemMax  int // explicit buffers are capped here
	autoMax  int // tcp_rmem[2]
	upload   bool
	rng      *rand.Rand
	started  bool    // a part has moved
	prev     Setting // the setting of the last part
}

func (l *link) rate(s Setting) float64 {
	w := 0.66 * float64(l.autoMax)
	if s.Buffer > 0 {
		w = 1.32 * float64(min(s.Buffer, l.rmemMax))
	}
	per := w / l.rtt.Seconds()
	if l.loss > 0 {
		per = min(per, 1.22*1448/(l.rtt.Seconds()*math.Sqrt(l.loss)))
	}
	r := min(l.capacity, float64(s.Streams)*per)
	return r * (1 - 0.003*float64(s.Streams))
}

func (l *link) move(_ context.Context, _, n int64, s Setting) (Sample, error) {
	r := l.rate(s) * (1 + 0.04*(l.rng.Float64()-0.5))
	// A part on a new setting starts its streams afresh: set-up and
	// slow start cost a few round trips, and on a lossy link the
	// recovery of lost tail segments (timeouts) many more (measured at
	// 100 ms RTT, 1 % loss: seconds per part). A part on the setting of
	// the one before reuses its connections: a round trip.
	startup := l.rtt
	if !l.started || s != l.prev {
		startup = 3 * l.rtt
		if l.loss > 0 {
			startup += 20 * l.rtt
		}
	}
	l.started, l.prev = true, s
	smp := Sample{Bytes: n, Elapsed: time.Duration(float64(n)/r*float64(time.Second)) + startup, RTT: l.rtt}
	if l.upload {
		smp.SegsOut = n / 1448
		smp.Retransmits = int64(float64(smp.SegsOut) * l.loss)
	}
	return smp, nil
}

// best is the best setting over -p 1–32 and the buffers a user would try.
func (l *link) best() (Setting, float64) {
	var bs Setting
	var br float64
	for p := 1; p <= 32; p++ {
		for _, b := range []int{0, 1 << 20, 4 << 20} {
			s := Setting{Streams: p, Buffer: b}
			if r := l.rate(s); r > br {
				bs, br = s, r
			}
		}
	}
	return bs, br
}

// TestConverges runs files of a minute at the best rate over synthetic
// links and checks that the controller finds a setting within 10 % of
// the best and that the whole file, search included, moves at ≥ 85 % of
// the best rate.
func TestConverges(t *testing.T) {
	const gbit = 125e6
	for _, rttMS := range []int{2, 20, 60, 100} {
		for _, loss := range []float64{0, 0.001, 0.01} {
			for _, upload := range []bool{false, true} {
				name := fmt.Sprintf("rtt%dms/loss%g/upload=%v", rttMS, loss, upload)
				t.Run(name, func(t *testing.T) {
					l := &link{capacity: gbit, rtt: time.Duration(rttMS) * time.Millisecond, loss: loss,
						rmemMax: 4 << 20, autoMax: 32 << 20, upload: upload, rng: rand.New(rand.NewPCG(uint64(rttMS), 7))}
					_, bestRate := l.best()
					size := int64(60 * bestRate)
					c := NewController(Setting{Streams: 4}, 0, Limits{MaxBuffer: 4 << 20, AutoBuffer: 32 << 20})
					res, err := Run(t.Context(), 0, size, c, l.move)
					if err != nil {
						t.Fatal(err)
					}
					var took time.Duration
					for _, s := range res.Steps {
						took += s.Elapsed
					}
					got := l.rate(c.Best())
					overall := float64(size) / took.Seconds()
					if got < 0.9*bestRate || overall < 0.85*bestRate {
						for _, s := range res.Steps {
							t.Logf("%+v", s)
						}
						t.Errorf("settled at %v: %.0f Mbit/s (overall %.0f) of the best %.0f", c.Best(), 8*got/1e6, 8*overall/1e6, 8*bestRate/1e6)
					}
					if len(res.Steps) > 60 {
						t.Errorf("%d parts for one minute of data", len(res.Steps))
					}
				})
			}
		}
	}
}

// TestPartsTile checks that the parts cover [start, end) exactly once,
// for odd sizes and starts.
func TestPartsTile(t *testing.T) {
	for _, tc := range []struct{ start, end int64 }{{0, 1}, {0, 5 << 20}, {12345, 3<<30 + 7}, {1 << 30, 1<<30 + 1<<20}, {7, 7}} {
		l := &link{capacity: 125e6, rtt: 10 * time.Millisecond, rmemMax: 4 << 20, autoMax: 32 << 20, rng: rand.New(rand.NewPCG(1, 2))}
		next := tc.start
		move := func(ctx context.Context, off, n int64, s Setting) (Sample, error) {
			if off != next || n <= 0 || off+n > tc.end {
				t.Fatalf("part [%d, %d) after %d, end %d", off, off+n, next, tc.end)
			}
			next = off + n
			return l.move(ctx, off, n, s)
		}
		res, err := Run(t.Context(), tc.start, tc.end, NewController(Setting{Streams: 2}, 0, Limits{}), move)
		if err != nil || res.Done != tc.end || next != tc.end {
			t.Errorf("[%d, %d): done %d, next %d, err %v", tc.start, tc.end, res.Done, next, err)
		}
	}
}

func TestRunErrors(t *testing.T) {
	c := NewController(Setting{Streams: 1}, 100e6, Limits{MinPart: 1 << 20})
	calls := 0
	short := func(_ context.Context, off, n int64, _ Setting) (Sample, error) {
		calls++
		if calls == 3 {
			return Sample{Bytes: n - 1, Elapsed: time.Second}, nil
		}
		return Sample{Bytes: n, Elapsed: time.Second}, nil
	}
	res, err := Run(t.Context(), 0, 10<<30, c, short)
	if !errors.Is(err, ErrShortPart) || len(res.Steps) != 2 || res.Done != res.Steps[1].Offset+res.Steps[1].Length {
		t.Errorf("short part: err %v, %d steps, done %d", err, len(res.Steps), res.Done)
	}
	boom := errors.New("boom")
	failing := func(context.Context, int64, int64, Setting) (Sample, error) { return Sample{}, boom }
	if res, err := Run(t.Context(), 5, 10<<30, NewController(Setting{Streams: 1}, 0, Limits{}), failing); !errors.Is(err, boom) || res.Done != 5 {
		t.Errorf("failing part: err %v, done %d", err, res.Done)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Run(ctx, 0, 1<<30, NewController(Setting{Streams: 1}, 0, Limits{}), failing); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestFollowsChange checks that a settled controller searches again when
// the link's rate falls (here: loss appears) and settles higher.
func TestFollowsChange(t *testing.T) {
	l := &link{capacity: 125e6, rtt: 50 * time.Millisecond, rmemMax: 4 << 20, autoMax: 32 << 20, upload: true, rng: rand.New(rand.NewPCG(3, 4))}
	c := NewController(Setting{Streams: 4}, 0, Limits{MaxBuffer: 4 << 20, AutoBuffer: 32 << 20})
	for range 12 {
		n := c.PartSize(1 << 40)
		s, _ := l.move(t.Context(), 0, n, c.Setting())
		c.Next(s)
	}
	before := c.Best()
	l.loss = 0.01
	var steps []string
	for range 20 {
		n := c.PartSize(1 << 40)
		set := c.Setting()
		s, _ := l.move(t.Context(), 0, n, set)
		_, why := c.Next(s)
		steps = append(steps, fmt.Sprintf("%v %.1f Mbit/s: %s", set, 8*s.Rate()/1e6, why))
	}
	_, bestRate := l.best()
	if got := l.rate(c.Setting()); got < 0.8*bestRate {
		for _, st := range steps {
			t.Log(st)
		}
		t.Errorf("after loss appeared: %v (before %v) gives %.0f Mbit/s of the best %.0f", c.Setting(), before, 8*got/1e6, 8*bestRate/1e6)
	}
}

func TestLimits(t *testing.T) {
	c := NewController(Setting{Streams: 100, Buffer: 8 << 20}, 0, Limits{MaxStreams: 16})
	if s := c.Setting(); s.Streams != 16 || s.Buffer != 0 {
		t.Errorf("start %v: want streams capped at 16, buffer left to the kernel when none may be set", s)
	}
	c = NewController(Setting{Streams: 1, Buffer: 8 << 20}, 0, Limits{MaxBuffer: 4 << 20})
	if s := c.Setting(); s.Buffer != 4<<20 {
		t.Errorf("start %v: want the buffer capped at 4 MiB", s)
	}
	if n := c.PartSize(100); n != 100 {
		t.Errorf("PartSize(100) = %d", n)
	}
}

// TestSettledParts: once settled, each part is twice as long as the one
// before (up to 8 ×), at least 100 round trips; a controller at the
// stream limit with starved streams never probes fewer.
func TestSettledParts(t *testing.T) {
	c := NewController(Setting{Streams: 8}, 10e6, Limits{Known: true, RTT: 100 * time.Millisecond})
	var sizes []int64
	for i := range 4 {
		n := c.PartSize(1 << 40)
		sizes = append(sizes, n)
		set, why := c.Next(Sample{Bytes: n, Elapsed: time.Duration(float64(n) / 10e6 * float64(time.Second))})
		if i < 3 && set != (Setting{Streams: 8}) {
			t.Fatalf("part %d: a known start left its setting: %v (%s)", i, set, why)
		}
		if i == 3 && set == (Setting{Streams: 8}) {
			t.Errorf("no probe after the fourth settled part: %s", why)
		}
	}
	// 100 RTTs = 10 s at 10 MB/s, then 2 ×, 4 ×, 8 ×, and after the
	// fourth part a probe (held resets).
	want := []int64{100e6, 200e6, 400e6, 800e6}
	for i, w := range want {
		if d := float64(sizes[i]) / float64(w); d < 0.99 || d > 1.01 {
			t.Errorf("part %d: %d bytes, want about %d (all: %v)", i, sizes[i], w, sizes)
		}
	}

	// Loss-starved streams at the limit: no probe below.
	c = NewController(Setting{Streams: 32}, 0, Limits{MaxStreams: 32, AutoBuffer: 32 << 20, RTT: 100 * time.Millisecond})
	for i := range 12 {
		n := c.PartSize(1 << 40)
		set, why := c.Next(Sample{Bytes: n, Elapsed: time.Duration(float64(n) / 5e6 * float64(time.Second)), RTT: 100 * time.Millisecond})
		if set.Streams != 32 {
			t.Fatalf("part %d: %v (%s), want to stay at the limit", i, set, why)
		}
	}
}

// TestResultMain: the setting that moved the most bytes names a
// re-tuned transfer, not its start.
func TestResultMain(t *testing.T) {
	if got := (Result{}).Main(); got != (Setting{}) {
		t.Errorf("no parts: %v", got)
	}
	r := Result{Steps: []Step{
		{Length: 128 << 20, Setting: Setting{Streams: 32}},
		{Length: 100 << 20, Setting: Setting{Streams: 4}},
		{Length: 400 << 20, Setting: Setting{Streams: 4}},
		{Length: 300 << 20, Setting: Setting{Streams: 32}},
	}}
	if got := r.Main(); got != (Setting{Streams: 4}) {
		t.Errorf("Main = %v, want -p 4 (500 MiB against 428)", got)
	}
}
