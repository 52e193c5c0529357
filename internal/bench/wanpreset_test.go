package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPresetsExpand(t *testing.T) {
	for _, tc := range []struct {
		preset         string
		points, iperf3 int
	}{
		{"bbc-5.1", 56, 8}, {"bbc-5.2", 56, 8}, {"bbc-5.3", 48, 8}, {"bbc-5.4", 56, 8},
		{"bbc-reduced", 12, 4}, {"linden", 4, 2}, {"ci", 1, 0},
		{"infn", 7 + 14 + 4, 1 + 7 + 4}, {"cannataro", 28 + 18 + 8 + 15, 7 + 6 + 4 + 5},
	} {
		p, err := PresetByName(tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		cells := p.Expand(nil)
		count := map[Impl]int{}
		for _, c := range cells {
			count[c.Impl]++
			prof, ok := Profiles[c.Profile]
			if !ok || c.P < 1 || c.Size <= 0 || c.Duration <= 0 || c.Rate <= 0 || c.Grid == "" || prof.RmemMax <= 0 {
				t.Errorf("%s: bad cell %+v", tc.preset, c)
			}
		}
		if count[Ferry] != tc.points || count[GCT] != tc.points || count[IPerf3] != tc.iperf3 {
			t.Errorf("%s: %v cells, want %d Ferry and GCT and %d iperf3", tc.preset, count, tc.points, tc.iperf3)
		}
		// Ferry and GCT alternate: the first of each point changes.
		var firsts []Impl
		for i, c := range cells {
			if c.Impl != IPerf3 && (i == 0 || cells[i-1].Impl == IPerf3 || cells[i-1].X != c.X || cells[i-1].S != c.S || cells[i-1].Grid != c.Grid) {
				firsts = append(firsts, c.Impl)
			}
		}
		for i := 1; i < len(firsts); i++ {
			if firsts[i] == firsts[i-1] {
				t.Errorf("%s: points %d and %d both start with %s", tc.preset, i-1, i, firsts[i])
				break
			}
		}
		if got := p.Expand([]Impl{GCT}); len(got) != tc.points {
			t.Errorf("%s: Expand(gct) = %d cells, want %d", tc.preset, len(got), tc.points)
		}
	}
}

func TestBBCReducedBudget(t *testing.T) {
	p, _ := PresetByName("bbc-reduced")
	// The lead runs it on a quiet machine: Ferry + GCT (+ iperf3) within
	// 20 minutes, which the estimate of fixed-duration cells is close to.
	if d := EstimatedTime(p.Expand(nil)); d > 15*time.Minute {
		t.Errorf("bbc-reduced takes about %v, want under 15 minutes (20 with slack)", d)
	}
	var lats, ps []float64
	for _, c := range p.Grids[0].Points {
		if !slices.Contains(lats, VarLatency.value(c)) {
			lats = append(lats, VarLatency.value(c))
		}
		if !slices.Contains(ps, float64(c.P)) {
			ps = append(ps, float64(c.P))
		}
		if c.Profile != "optimised" || c.Rate != GigabitRate || !c.fixedDuration() {
			t.Errorf("cell %+v: want Table 5.2's conditions at fixed duration", c)
		}
	}
	if !slices.Equal(lats, []float64{1, 10, 30, 50}) || !slices.Equal(ps, []float64{1, 4, 8}) {
		t.Errorf("latencies %v, parallelism %v", lats, ps)
	}
}

func TestPublishedJoin(t *testing.T) {
	for _, tc := range []struct {
		preset, grid string
		x, s         float64
		want         float64
	}{
		{"bbc-5.1", "5.1", 10, 1, 286.34},
		{"bbc-5.1", "5.1", 50, 12, 433.19},
		{"bbc-5.2", "5.2", 30, 4, 763.83},
		{"bbc-reduced", "5.2-reduced", 50, 8, 666.65},
		{"bbc-5.3", "5.3", 10, 256 << 10, 518.34},
		{"bbc-5.3", "5.3", 50, 8 << 20, 600.30},
		{"bbc-5.4", "5.4", 0.25, 2, 922.40},
		{"bbc-5.4", "5.4", 5, 1, 8.18},
		{"linden", "linden-unoptimised", 16, 0, 84},
		{"linden", "linden-optimised", 1, 0, 4},
	} {
		p, _ := PresetByName(tc.preset)
		results := []WANResult{{Cell: WANCell{Grid: tc.grid, X: tc.x, S: tc.s, Impl: GCT}}}
		p.Join(results)
		if got := results[0].Published; got != tc.want {
			t.Errorf("%s %s x=%g s=%g: published %v, want %v", tc.preset, tc.grid, tc.x, tc.s, got, tc.want)
		}
	}
	// Every point of the BBC grids has its published number.
	for _, name := range []string{"bbc-5.1", "bbc-5.2", "bbc-5.3", "bbc-5.4", "bbc-reduced"} {
		p, _ := PresetByName(name)
		for _, g := range p.Grids {
			for _, c := range g.Points {
				if _, ok := g.Published(c); !ok {
					t.Errorf("%s: no published rate for %s=%g %s=%g", name, g.X, c.X, g.S, c.S)
				}
			}
		}
	}
	p, _ := PresetByName("infn")
	results := []WANResult{{Cell: p.Grids[0].Points[0]}}
	p.Join(results)
	if !math.IsNaN(results[0].Published) {
		t.Errorf("INFN has no published table, got %v", results[0].Published)
	}
}

func TestProfileClamp(t *testing.T) {
	p, _ := PresetByName("linden")
	for _, c := range p.Expand([]Impl{Ferry}) {
		want := c.Buffer
		if c.Profile == "unoptimised" && c.Buffer > 131071 {
			want = 131071
		}
		if got := c.clampedBuffer(); got != want {
			t.Errorf("%s p=%d -tcp-bs %d: asks %d, want %d", c.Profile, c.P, c.Buffer, got, want)
		}
	}
	if _, err := PresetByName("nope"); err == nil {
		t.Error("unknown preset accepted")
	}
}

func TestSizedDuration(t *testing.T) {
	// 16 MB at 4.7 Mbit/s, 64 KB window at 31.5 ms: link-bound at
	// 4.7 × 1448/1538 Mbit/s = 30.4 s; stopped after 3 × that + 30 s.
	c := sized(WANCell{P: 4, Rate: 4_700_000, Latency: 15750 * time.Microsecond, Buffer: 32 << 10, Profile: "legacy-64k"}, 16<<20)
	need := 16 << 20 * 8 / (4.7 * 1448 / 1538) / 1e6
	if want := time.Duration((3*need + 30) * float64(time.Second)); absDur(c.Duration-want) > 10*time.Millisecond {
		t.Errorf("Duration %v, want %v", c.Duration, want)
	}
	if c.fixedDuration() {
		t.Error("a sized cell is not fixed-duration")
	}
	// A hopeless cell is capped at 5 minutes.
	c = sized(WANCell{P: 1, Rate: 1_600_000, Latency: 40 * time.Millisecond, Buffer: 1 << 10, Profile: "legacy-64k"}, 16<<20)
	if c.Duration != 5*time.Minute {
		t.Errorf("Duration %v, want 5m", c.Duration)
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

func TestRunWANErrors(t *testing.T) {
	ok := WANCell{Grid: "g", Impl: GCT, P: 1, Rate: GigabitRate, Profile: "optimised", Size: 1, Duration: time.Second}
	for name, cfg := range map[string]WANConfig{
		"unknown impl":    {Cells: []WANCell{func() WANCell { c := ok; c.Impl = "scp"; return c }()}},
		"bad p":           {Cells: []WANCell{func() WANCell { c := ok; c.P = 0; return c }()}},
		"no duration":     {Cells: []WANCell{func() WANCell { c := ok; c.Duration = 0; return c }()}},
		"unknown profile": {Cells: []WANCell{func() WANCell { c := ok; c.Profile = "fast"; return c }()}},
		"bad cc":          {Cells: []WANCell{ok}, CC: "vegas"},
		"no ferry":        {Cells: []WANCell{func() WANCell { c := ok; c.Impl = Ferry; return c }()}},
	} {
		if _, err := RunWAN(t.Context(), cfg); err == nil || !strings.HasPrefix(err.Error(), "bench: ") {
			t.Errorf("%s: RunWAN = %v, want a bench: error", name, err)
		}
	}
}
