package bench

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
)

// runSearch drives s over a synthetic rate surface and returns the
// trials in order.
func runSearch(t *testing.T, s TuneSearch, rate func(TuneSetting) float64) []TuneTrial {
	t.Helper()
	var tried []TuneTrial
	for range 1000 {
		set, ok := s.Next(tried)
		if !ok {
			return tried
		}
		tried = append(tried, TuneTrial{set, rate(set)})
	}
	t.Fatal("the search never ends")
	return nil
}

// logPeak is a surface peaked at p = peak and buffer best, falling off
// with the square of log2(p/peak), less at other buffers.
func logPeak(peak int, best int64, top float64) func(TuneSetting) float64 {
	return func(s TuneSetting) float64 {
		d := math.Log2(float64(s.P) / float64(peak))
		v := top - 60*d*d
		if s.Buffer != best {
			v -= 150
		}
		return max(v, 1)
	}
}

func TestTuneSearch(t *testing.T) {
	const top = 900.0
	// window is a window-limited link: p × buffer / RTT up to the link,
	// autotuning worth 2.7 MB; flat at the top once filled.
	window := func(rtt float64) func(TuneSetting) float64 {
		return func(s TuneSetting) float64 {
			w := float64(s.Buffer) * 1.32
			if s.Buffer == 0 {
				w = 2.7e6
			}
			return min(float64(s.P)*w*8/rtt/1e6, 941)
		}
	}
	for _, tc := range []struct {
		name   string
		s      TuneSearch
		rate   func(TuneSetting) float64
		want   TuneSetting // the best setting the search must find
		cells  int         // the trials it makes
		anyTop bool        // several settings share the top: any of them
	}{
		{"peak at a coarse p", DefaultTuneSearch, logPeak(4, 1<<20, top), TuneSetting{4, 1 << 20}, 14, false},
		{"peak at p 8: doubling 4", DefaultTuneSearch, logPeak(8, 4<<20, top), TuneSetting{8, 4 << 20}, 14, false},
		{"peak at p 2: halving 4", DefaultTuneSearch, logPeak(2, 0, top), TuneSetting{2, 0}, 14, false},
		// At p 1 only 2 is left to refine: 13 cells.
		{"peak at p 1", DefaultTuneSearch, logPeak(1, 0, top), TuneSetting{1, 0}, 13, false},
		{"peak at p 24, between 16 and 32", DefaultTuneSearch, logPeak(23, 1<<20, top), TuneSetting{23, 1 << 20}, 14, false},
		{"window-limited, 100 ms: many streams", DefaultTuneSearch, window(0.1), TuneSetting{32, 4 << 20}, 14, true},
		{"window-limited, 2 ms: one stream fills it", DefaultTuneSearch, window(0.002), TuneSetting{1, 0}, 13, true},
		// A larger budget bisects in log p down to the peak.
		{"peak at p 6, budget 20", TuneSearch{Ps: []int{1, 4, 16, 32}, Buffers: []int64{0, 1 << 20, 4 << 20}, MaxP: 32, Budget: 20},
			logPeak(6, 0, top), TuneSetting{6, 0}, 18, false}, // converged before the budget
		{"peak at p 12, budget 20", TuneSearch{Ps: []int{1, 4, 16, 32}, Buffers: []int64{0, 1 << 20, 4 << 20}, MaxP: 32, Budget: 20},
			logPeak(12, 4<<20, top), TuneSetting{12, 4 << 20}, 20, false},
		// Nothing left to try before the budget: it stops.
		{"small space", TuneSearch{Ps: []int{1, 2}, Buffers: []int64{0}, MaxP: 2, Budget: 14}, logPeak(2, 0, top), TuneSetting{2, 0}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tried := runSearch(t, tc.s, tc.rate)
			if len(tried) > tc.s.Budget || len(tried) != tc.cells {
				t.Errorf("%d trials, want %d (budget %d)", len(tried), tc.cells, tc.s.Budget)
			}
			seen := map[TuneSetting]bool{}
			for _, tr := range tried {
				if seen[tr.TuneSetting] {
					t.Errorf("%v tried twice", tr.TuneSetting)
				}
				seen[tr.TuneSetting] = true
				if tr.P < 1 || tr.P > tc.s.MaxP || !slices.Contains(tc.s.Buffers, tr.Buffer) {
					t.Errorf("%v outside the search space", tr.TuneSetting)
				}
			}
			// The coarse grid comes first, in order.
			for i := 0; i < min(len(tried), len(tc.s.Ps)*len(tc.s.Buffers)); i++ {
				want := TuneSetting{tc.s.Ps[i/len(tc.s.Buffers)], tc.s.Buffers[i%len(tc.s.Buffers)]}
				if tried[i].TuneSetting != want {
					t.Errorf("trial %d is %v, want the coarse %v", i, tried[i].TuneSetting, want)
				}
			}
			best, ok := BestTrial(tried)
			switch {
			case !ok:
				t.Fatal("no best")
			case tc.anyTop && best.Mbps < tc.rate(tc.want):
				t.Errorf("best %v at %.0f, want %.0f", best.TuneSetting, best.Mbps, tc.rate(tc.want))
			case !tc.anyTop && best.TuneSetting != tc.want:
				t.Errorf("best %v (%.0f), want %v (%.0f); tried %v", best.TuneSetting, best.Mbps, tc.want, tc.rate(tc.want), tried)
			}
		})
	}
}

func TestTuneSearchFailures(t *testing.T) {
	s := DefaultTuneSearch
	// Every cell fails: the coarse grid is tried, then nothing.
	tried := runSearch(t, s, func(TuneSetting) float64 { return math.NaN() })
	if len(tried) != 12 {
		t.Errorf("all failing: %d trials, want the 12 coarse ones", len(tried))
	}
	if _, ok := BestTrial(tried); ok {
		t.Error("a best among failures")
	}
	// Failures are never the best; the search refines around the best
	// that succeeded.
	rate := logPeak(8, 0, 900)
	tried = runSearch(t, s, func(c TuneSetting) float64 {
		if c.P == 16 {
			return math.NaN()
		}
		return rate(c)
	})
	if best, _ := BestTrial(tried); best.TuneSetting != (TuneSetting{8, 0}) {
		t.Errorf("best %v, want p 8 auto; tried %v", best.TuneSetting, tried)
	}
	if _, ok := s.Next(nil); !ok {
		t.Error("no first setting")
	}
	if _, ok := (TuneSearch{Ps: []int{1}, Buffers: []int64{0}, MaxP: 1, Budget: 0}).Next(nil); ok {
		t.Error("a setting beyond a budget of 0")
	}
}

func TestTunePreset(t *testing.T) {
	p, err := PresetByName("tune")
	if err != nil || p.Tune == nil {
		t.Fatalf("tune: %v", err)
	}
	spec := *p.Tune
	if len(spec.Rows) != 12 || spec.Rate != GigabitRate || spec.HistoryTarget != 10 || spec.Search.Budget > 14 {
		t.Errorf("tune: %d rows at %d bit/s, history %d, budget %d", len(spec.Rows), spec.Rate, spec.HistoryTarget, spec.Search.Budget)
	}
	for _, row := range spec.Rows {
		for _, role := range []string{RoleHand, RoleRemeasure, RoleEmpty, RoleFiller, RoleHistory, RoleGCT} {
			c := spec.Cell(row, role, TuneSetting{4, 1 << 20})
			if c.Size <= 0 || c.Size >= openEnded || c.Duration <= 0 || c.Size%(1<<20) != 0 || c.P < 1 {
				t.Errorf("%s %s: cell %+v", RowLabel(row), role, c)
			}
			// At the row's bound a cell takes its time (a filler a fifth).
			at := time.Duration(float64(c.Size) * 8 / (spec.RowBound(row).Bound * 1e6) * float64(time.Second))
			want := steadyFor(row.Latency)
			if role == RoleFiller {
				want /= 5
			}
			if at < want-time.Second || at > want+time.Second {
				t.Errorf("%s %s: %v at the bound, want about %v", RowLabel(row), role, at, want)
			}
			if c.Auto != (role == RoleEmpty || role == RoleFiller || role == RoleHistory) || c.Explicit != (role == RoleHand || role == RoleRemeasure) ||
				(c.Impl == GCT) != (role == RoleGCT) {
				t.Errorf("%s %s: Auto %v Explicit %v Impl %s", RowLabel(row), role, c.Auto, c.Explicit, c.Impl)
			}
		}
	}
	// The plan: per row (b) twice, 14 hand cells, the winner three
	// times again, no filler (14 ≥ 10), (c) twice, (d).
	plan := spec.Plan(true)
	if len(plan) != 12*22 {
		t.Errorf("plan of %d cells, want %d", len(plan), 12*22)
	}
	again := 0
	for _, c := range plan {
		if strings.HasSuffix(c.Grid, ": "+RoleRemeasure) {
			again++
		}
	}
	if again != 12*3 {
		t.Errorf("%d re-runs of the winners, want 36", again)
	}
	if d := EstimatedTime(plan); d < time.Hour || d > 3*time.Hour {
		t.Errorf("estimated %v", d)
	}
	if p, _ := PresetByName("tune-ci"); p.Tune == nil || len(p.Tune.Plan(true)) > 15 {
		t.Error("tune-ci: not a short tune preset")
	}
}

func TestFerryTuningFlags(t *testing.T) {
	for _, tc := range []struct {
		c    WANCell
		want []string
	}{
		{WANCell{P: 1}, []string{"-auto=false"}},
		{WANCell{P: 4, Buffer: 1 << 20}, []string{"-auto=false", "-p", "4", "-tcp-bs", "1048576"}},
		{WANCell{P: 1, Explicit: true}, []string{"-p", "1", "-tcp-bs", "0"}},
		{WANCell{P: 8, Buffer: 1 << 20, Auto: true}, nil},
	} {
		if got := ferryTuning(tc.c, tc.c.Buffer); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

// tuneRows makes the results of two rows by hand: the report's input,
// not a measurement. Row 1 has every column; in row 2 (c) failed, (d)
// did not run, the history could not be read and no ETA was predicted.
func tuneRows(spec TuneSpec) []TuneRowResult {
	res := func(row TuneRow, role string, set TuneSetting, mbps float64, ended string) WANResult {
		c := spec.Cell(row, role, set)
		r := WANResult{Cell: c, Ended: ended, Mbps: mbps, Elapsed: 14 * time.Second, ClientCPU: 2 * time.Second,
			ServerCPU: time.Second, Published: math.NaN(), BufferEff: c.Buffer}
		if ended == EndFailed {
			r.Mbps, r.Err = 0, "bench: ferry cp: exit status 1"
		}
		return r
	}
	r1 := TuneRow{Latency: 10 * time.Millisecond, Loss: 0}
	r2 := TuneRow{Latency: 50 * time.Millisecond, Loss: 1}
	rows := []TuneRowResult{
		{Row: r1, Records: 10,
			Grid: []WANResult{res(r1, RoleHand, TuneSetting{1, 0}, 400, EndComplete), res(r1, RoleHand, TuneSetting{4, 1 << 20}, 900, EndComplete),
				res(r1, RoleHand, TuneSetting{16, 4 << 20}, 100, EndFailed)},
			Remeasured: []WANResult{res(r1, RoleRemeasure, TuneSetting{4, 1 << 20}, 850, EndComplete),
				res(r1, RoleRemeasure, TuneSetting{4, 1 << 20}, 870, EndComplete), res(r1, RoleRemeasure, TuneSetting{4, 1 << 20}, 820, EndComplete)},
			Empty:     res(r1, RoleEmpty, TuneSetting{}, 846, EndComplete), // 0.94 of a; the median 856 is 1.007 of a′ (850)
			EmptyMore: []WANResult{res(r1, RoleEmpty, TuneSetting{}, 866, EndComplete)},
			Hist:      res(r1, RoleHistory, TuneSetting{}, 880, EndComplete), // 0.978 of a; the median 860 is 1.012 of a′
			HistMore:  []WANResult{res(r1, RoleHistory, TuneSetting{}, 840, EndComplete)},
			GCT:       res(r1, RoleGCT, TuneSetting{}, 300, EndComplete),
			EmptyRec:  &history.Record{Params: history.Params{Parallel: 2, Auto: true}, PredictedETA: 12 * time.Second},
			HistRec:   &history.Record{Params: history.Params{Parallel: 4, TCPBuffer: 1 << 20, Auto: true}, PredictedETA: 13500 * time.Millisecond},
		},
		{Row: r2, Records: -1,
			Grid:    []WANResult{res(r2, RoleHand, TuneSetting{32, 0}, 40, EndStopped)},
			Fillers: []WANResult{res(r2, RoleFiller, TuneSetting{}, 30, EndComplete)},
			Empty:   res(r2, RoleEmpty, TuneSetting{}, 20, EndStopped), // 0.5
			Hist:    res(r2, RoleHistory, TuneSetting{}, 0, EndFailed),
		},
	}
	return rows
}

func TestTuneRatio(t *testing.T) {
	best := WANResult{Ended: EndComplete, Mbps: 100}
	for _, tc := range []struct {
		auto        WANResult
		best        WANResult
		want        float64
		meet, meetH string
	}{
		{WANResult{Ended: EndComplete, Mbps: 95}, best, 0.95, "yes", "yes"},
		{WANResult{Ended: EndStopped, Mbps: 94}, best, 0.94, "yes", "no"},
		{WANResult{Ended: EndComplete, Mbps: 89.9}, best, 0.899, "no", "no"},
		{WANResult{Ended: EndComplete, Mbps: 120}, best, 1.2, "yes", "yes"},
		{WANResult{Ended: EndFailed}, best, math.NaN(), "", ""},
		{WANResult{}, best, math.NaN(), "", ""}, // not run
		{WANResult{Ended: EndComplete, Mbps: 95}, WANResult{}, math.NaN(), "", ""},
		{WANResult{Ended: EndComplete, Mbps: 95}, WANResult{Ended: EndFailed}, math.NaN(), "", ""},
	} {
		got := TuneRatio(tc.auto, tc.best)
		if (math.IsNaN(tc.want) != math.IsNaN(got)) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("TuneRatio(%+v, %+v) = %v, want %v", tc.auto, tc.best, got, tc.want)
		}
		if m, h := Meets(got, TuneTarget), Meets(got, TuneTargetHigh); m != tc.meet || h != tc.meetH {
			t.Errorf("ratio %v meets %q %q, want %q %q", got, m, h, tc.meet, tc.meetH)
		}
	}
}

func TestTuneReport(t *testing.T) {
	p, _ := PresetByName("tune")
	rows := tuneRows(*p.Tune)
	if best, ok := rows[0].Best(); !ok || best.Mbps != 900 || best.Cell.P != 4 {
		t.Errorf("row 1 best %+v", best)
	}
	var b bytes.Buffer
	if err := WriteTuneCSV(&b, *p.Tune, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for name, want := range map[string][2]string{
		"best_mbit_s":             {"900.00", "40.00"},
		"best_p":                  {"4", "32"},
		"best_tcp_bs_requested":   {"1048576", "0"},
		"best_ended":              {"complete", "stopped"},
		"grid_cells":              {"3", "1"},
		"empty_over_best":         {"0.940", "0.500"},
		"empty_meets_0.9":         {"yes", "no"},
		"empty_meets_0.95":        {"no", "no"},
		"empty_predicted_eta_s":   {"12.00", ""},
		"empty_chosen_p":          {"2", ""},
		"history_records":         {"10", ""},
		"fillers":                 {"0", "1"},
		"history_over_best":       {"0.978", ""},
		"history_meets_0.9":       {"yes", ""},
		"history_meets_0.95":      {"yes", ""},
		"history_mbit_s":          {"880.00", ""},
		"history_ended":           {"complete", "failed"},
		"history_predicted_eta_s": {"13.50", ""},
		"history_chosen_tcp_bs":   {"1048576", ""},
		"gct_mbit_s":              {"300.00", ""},
		"gct_ended":               {"complete", ""},
		"gct_client_cpu_s":        {"2.00", ""},
		"cells_to_doubt":          {"1", "1"},
		"limit":                   {"link", "loss"},
		"reference_mbit_s":        {"850.00", "40.00"},
		"reference_runs":          {"3", "0"},
		"reference_runs_mbit_s":   {"850.00;870.00;820.00", ""},
		"empty_runs":              {"2", "1"},
		"empty_median_mbit_s":     {"856.00", "20.00"},
		"empty_over_reference":    {"1.007", "0.500"},
		"empty_ref_meets_0.95":    {"yes", "no"},
		"history_runs":            {"2", "0"},
		"history_median_mbit_s":   {"860.00", ""},
		"history_over_reference":  {"1.012", ""},
		"history_ref_meets_0.9":   {"yes", ""},
	} {
		i, ok := col[name]
		if !ok {
			t.Errorf("no column %s", name)
			continue
		}
		if got := [2]string{recs[1][i], recs[2][i]}; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	rows[0].EmptyMore[0].Tuning = "-p 32: queued\n-p 4: holds"
	rows[1].Fillers[0].Tuning = "filler tuning"
	var md strings.Builder
	if err := WriteTuneMarkdown(&md, p, rows, ReportMeta{Command: "ferry bench wan -preset tune", Start: time.Now(), CC: "cubic"}, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 10 ms | 0 % |", "900 (2.0 s)", "-p 4 -tcp-bs 1M (best of 3)", "0.94 ✓✗", "0.98 ✓✓", "-p 2 -tcp-bs auto",
		"12.0 / 14.0 s", "13.5 / 14.0 s", "| 50 ms | 1 % |", "40.0* (2.0 s)", "0.50 ✗✗", "failed", "| — |",
		"**8M is capped**", "(b) empty history: ≥ 0.90 of the reference (a′) in 1 of 2 rows, ≥ 0.95 in 1; of the raw best (a): ≥ 0.90 in 1 of 2, ≥ 0.95 in 0.",
		"(c) with history: ≥ 0.90 of the reference (a′) in 1 of 1 rows, ≥ 0.95 in 1; of the raw best (a): ≥ 0.90 in 1 of 1, ≥ 0.95 in 1.",
		"850 (median of 3)", "856 (median of 2)", "860 (median of 2)", "1.01 ✓✓", "40.0 (= a)", "(3 runs)",
		"Cells to doubt", "p ∈ {1, 4, 16, 32} × B ∈ {auto, 1M, 4M}", "tune 10ms 0%: hand -p 16 -tcp-bs 4M failed", "![tune](tune.svg)",
		"What the automatic runs' tuning did", "- tune 10ms 0%: auto-empty (866 Mbit/s): -p 32: queued ⏵ -p 4: holds\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "filler tuning") {
		t.Errorf("the report lists a filler's tuning:\n%s", md.String())
	}
	dir := t.TempDir()
	if err := WriteTuneOutputs(dir, p, rows, ReportMeta{Start: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tune.csv", "tune-cells.csv", "tune.md", "tune.svg", "tune.png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	cells, _ := os.ReadFile(filepath.Join(dir, "tune-cells.csv"))
	if n := bytes.Count(cells, []byte("\n")); n != 1+len(rows[0].All())+len(rows[1].All()) || len(rows[0].All()) != 11 || len(rows[1].All()) != 4 {
		t.Errorf("tune-cells.csv has %d lines; rows of %d and %d cells", n, len(rows[0].All()), len(rows[1].All()))
	}
}

func TestTuneHistory(t *testing.T) {
	ctx := t.Context()
	dsn := filepath.Join(t.TempDir(), "h.db")
	if n := countRecords(ctx, dsn); n != 0 {
		t.Errorf("no file: %d records, want 0", n)
	}
	if rec := newRecord(ctx, dsn, 0); rec != nil {
		t.Errorf("no file: record %+v", rec)
	}
	st, err := history.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var ids []int64
	for i, outcome := range []string{history.OK, history.Failed, history.OK} {
		id, err := st.Add(ctx, &history.Record{Start: now.Add(time.Duration(i) * time.Second), End: now.Add(time.Duration(i+1) * time.Second),
			Kind: "download", Tool: "cp", Outcome: outcome, Params: history.Params{Parallel: i + 1}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	st.Close()
	if n := countRecords(ctx, dsn); n != 2 {
		t.Errorf("%d successful records, want 2", n)
	}
	if rec := newRecord(ctx, dsn, ids[1]); rec == nil || rec.ID != ids[2] || rec.Params.Parallel != 3 {
		t.Errorf("newest after %d: %+v", ids[1], rec)
	}
	// A cell that left no record: the newest is from before it.
	if rec := newRecord(ctx, dsn, ids[2]); rec != nil {
		t.Errorf("a record after the newest: %+v", rec)
	}
}
