package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
)

// The tune presets prove Ferry's automatic tuning (issue 15): per link
// (a row), the best hand-tuned Ferry found by a coarse-to-fine search over
// -p and -tcp-bs, Ferry without those flags on an empty history, Ferry
// without them after its history holds ten transfers of the link, and
// globus-url-copy without flags. See docs/bench/wan/README.md.

// TuneSetting is a hand-tuned Ferry configuration: -p and -tcp-bs
// (Buffer 0: autotuned, passed as -tcp-bs 0).
type TuneSetting struct {
	P      int
	Buffer int64
}

// String renders s as the flags it stands for.
func (s TuneSetting) String() string {
	return fmt.Sprintf("-p %d -tcp-bs %s", s.P, VarBuffer.Format(float64(s.Buffer)))
}

// TuneTrial is a setting and the rate measured with it in Mbit/s; NaN
// when the cell failed.
type TuneTrial struct {
	TuneSetting
	Mbps float64
}

// TuneSearch is the coarse-to-fine search of a row's best hand-tuned
// cell. It is pure: Next picks the next setting from the trials so far.
//
//  1. Coarse: every p of Ps with every buffer of Buffers (p outer).
//  2. Refine p at the best trial's buffer: try the geometric midpoint
//     (rounded) between the best p and the nearest tried p below it, and
//     between it and the nearest above (p/2 or 2p, up to MaxP, when it
//     has no tried neighbour on that side), the side of the faster
//     neighbour first (of a failed one before the other). With Ps 1, 4, 16, 32 the first midpoints are the
//     halving and doubling neighbours (2 and 8 around 4). Each new best
//     restarts the refinement around it, so it bisects in log p.
//  3. When no p is left to try around the best, the best p with the
//     other buffers of Buffers.
//
// It stops after Budget trials or when nothing is left to try, and
// never proposes a setting twice. Failed trials (NaN) count against the
// budget and are never the best.
type TuneSearch struct {
	Ps      []int   // coarse p values, ascending
	Buffers []int64 // coarse buffers (0: autotuned), in the order tried
	MaxP    int     // the largest p refined to
	Budget  int     // trials per row at most
}

// DefaultTuneSearch is the tune preset's search: p ∈ {1, 4, 16, 32} ×
// buffers {auto, 1M, 4M} (12 cells; 8M would be capped at the host's
// net.core.rmem_max of 4 MB), then two refinements of p: at most 14 cells.
var DefaultTuneSearch = TuneSearch{Ps: []int{1, 4, 16, 32}, Buffers: []int64{0, 1 << 20, 4 << 20}, MaxP: 32, Budget: 14}

// Next returns the setting to try after tried, or false when the search
// is over.
func (s TuneSearch) Next(tried []TuneTrial) (TuneSetting, bool) {
	if len(tried) >= s.Budget {
		return TuneSetting{}, false
	}
	done := func(c TuneSetting) bool {
		return slices.ContainsFunc(tried, func(t TuneTrial) bool { return t.TuneSetting == c })
	}
	for _, p := range s.Ps {
		for _, b := range s.Buffers {
			if c := (TuneSetting{p, b}); !done(c) {
				return c, true
			}
		}
	}
	best, ok := BestTrial(tried)
	if !ok {
		return TuneSetting{}, false
	}
	// The tried p values at the best buffer, and their rates.
	rate := map[int]float64{}
	for _, t := range tried {
		if t.Buffer == best.Buffer {
			rate[t.P] = t.Mbps
		}
	}
	lower, upper := 0, 0 // nearest tried p below and above; 0: none
	for p := range rate {
		if p < best.P && p > lower {
			lower = p
		}
		if p > best.P && (upper == 0 || p < upper) {
			upper = p
		}
	}
	var down, up int // candidates; 0: none
	if lower > 0 {
		down = geoMid(lower, best.P)
	} else {
		down = best.P / 2
	}
	if upper > 0 {
		up = geoMid(best.P, upper)
	} else if best.P < s.MaxP {
		up = min(2*best.P, s.MaxP)
	}
	sides := []int{down, up}
	// The faster neighbour's side first: the optimum of a unimodal
	// surface lies towards it. A failed neighbour is unknown, and its
	// side is tried first; a missing one (the best is at an end) last.
	if nz(rate[upper]) > nz(rate[lower]) {
		sides = []int{up, down}
	}
	for _, p := range sides {
		if p >= 1 && p <= s.MaxP && p != best.P {
			if c := (TuneSetting{p, best.Buffer}); !done(c) {
				return c, true
			}
		}
	}
	for _, b := range s.Buffers {
		if c := (TuneSetting{best.P, b}); !done(c) {
			return c, true
		}
	}
	return TuneSetting{}, false
}

// nz orders the rates of the best's neighbours: a failed one (NaN) as
// +Inf, a missing one (0) as -1.
func nz(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return math.Inf(1)
	case v == 0:
		return -1
	}
	return v
}

// geoMid is the geometric mean of a < b rounded, 0 when no integer lies
// strictly between them.
func geoMid(a, b int) int {
	m := int(math.Round(math.Sqrt(float64(a) * float64(b))))
	if m <= a || m >= b {
		return 0
	}
	return m
}

// BestTrial returns the fastest trial (the first of equals), false when
// none succeeded.
func BestTrial(tried []TuneTrial) (TuneTrial, bool) {
	var best TuneTrial
	ok := false
	for _, t := range tried {
		if !math.IsNaN(t.Mbps) && (!ok || t.Mbps > best.Mbps) {
			best, ok = t, true
		}
	}
	return best, ok
}

// TuneRow is a link of a tune preset: a row of its table.
type TuneRow struct {
	Latency time.Duration // one-way
	Loss    float64       // percent, server to client
}

// TuneSpec is what a tune preset runs.
type TuneSpec struct {
	Rows    []TuneRow
	Rate    int64  // link rate, bit/s (Ethernet)
	Profile string // socket limits (see Profiles)
	Search  TuneSearch
	// HistoryTarget is how many successful transfers of the link (c)'s
	// history holds before (c) runs: the grid's cells that completed,
	// then short automatic transfers to make up the rest.
	HistoryTarget int
	// Seconds is how long a cell at the row's best theoretical rate
	// takes (its Size follows); 0: 15 s, 25 s from 50 ms RTT (steadyFor).
	Seconds time.Duration
	// Remeasure is how many times (a)'s winning flags run again after
	// the search; the median of those runs is the reference (a′) that
	// (b) and (c) are measured against. The winner is the best of many
	// noisy cells, so its own rate is biased high (the winner's curse);
	// a re-run is not. 0: no re-runs, (a) is the reference.
	Remeasure int
	// Repeat is how many more times (b) and (c) run (each (b) on a new
	// empty history); their median is what the ratios use.
	Repeat int
}

// bbcTuneRows are the BBC grid's links: one-way latency 1, 10, 30,
// 50 ms × loss 0, 0.1, 1 %.
func bbcTuneRows() []TuneRow {
	var rows []TuneRow
	for _, lat := range []float64{1, 10, 30, 50} {
		for _, loss := range []float64{0, 0.1, 1} {
			rows = append(rows, TuneRow{Latency: millis(lat), Loss: loss})
		}
	}
	return rows
}

// The roles of a row's cells, named in the grid column of the cells'
// CSV after the row ("tune 10ms 0.1%: hand").
const (
	RoleHand      = "hand"         // (a) a cell of the search
	RoleRemeasure = "hand-again"   // (a′) (a)'s winner run again
	RoleEmpty     = "auto-empty"   // (b) no flags, empty history
	RoleFiller    = "auto-filler"  // a short automatic transfer that fills (c)'s history
	RoleHistory   = "auto-history" // (c) no flags, the history of ten
	RoleGCT       = "gct"          // (d) globus-url-copy, no flags
	tuneGridLabel = "tune"
)

// cellTime is how long a cell of row takes at the row's best rate.
func (s TuneSpec) cellTime(row TuneRow) time.Duration {
	if s.Seconds > 0 {
		return s.Seconds
	}
	return steadyFor(row.Latency)
}

// RowBound is the row's theoretical best: the bound at the largest p of
// the search with autotuned buffers (the link, or the Mathis bound with
// loss), in Mbit/s.
func (s TuneSpec) RowBound(row TuneRow) Theory {
	return Bounds(TheoryInput{P: s.Search.MaxP, RTT: 2*row.Latency + idleOverhead, Loss: row.Loss, Rate: s.Rate,
		RmemMax: Profiles[s.Profile].RmemMax})
}

// Cell returns the cell of row for role with setting (hand cells): a
// fixed size that the row's bound moves in cellTime, stopped at twice
// that (a filler: a fifth of the size, stopped at cellTime). Fixed
// sizes, not durations, so that a fast cell ends by itself and ferry cp
// records it in the history (a stopped client records nothing), and a
// predicted ETA can be set against the time taken.
func (s TuneSpec) Cell(row TuneRow, role string, set TuneSetting) WANCell {
	d := s.cellTime(row)
	size := int64(s.RowBound(row).Bound * 1e6 / 8 * d.Seconds())
	size = max((size+(1<<20)-1)>>20, 1) << 20 // whole MiB
	c := WANCell{Grid: RowLabel(row) + ": " + role, Impl: Ferry, P: 1, Latency: row.Latency, Loss: row.Loss,
		Rate: s.Rate, Profile: s.Profile, Size: size, Duration: 2 * d, X: msOf(row.Latency), S: row.Loss}
	switch role {
	case RoleHand, RoleRemeasure:
		c.P, c.Buffer, c.Explicit = set.P, set.Buffer, true
	case RoleFiller:
		c.Size, c.Duration, c.Auto = max(size/5>>20, 1)<<20, d, true
	case RoleEmpty, RoleHistory:
		c.Auto = true
	case RoleGCT:
		c.Impl = GCT
	}
	return c
}

// RowLabel names a row: "tune 10ms 0.1%".
func RowLabel(row TuneRow) string {
	return fmt.Sprintf("%s %gms %g%%", tuneGridLabel, msOf(row.Latency), row.Loss)
}

// Plan returns the cells the rows run as planned, for -list and the
// estimate: per row (b) and its repeats, the search's budget of hand
// cells (the coarse ones, then a refinement as it might go), the
// fillers as if every hand cell was recorded, the winner's re-runs and
// (c) with its repeats taking turns and, with gct, (d).
func (s TuneSpec) Plan(gct bool) []WANCell {
	var out []WANCell
	for _, row := range s.Rows {
		for range 1 + s.Repeat {
			out = append(out, s.Cell(row, RoleEmpty, TuneSetting{}))
		}
		var tried []TuneTrial
		for len(tried) < s.Search.Budget {
			set, ok := s.Search.Next(tried)
			if !ok {
				break
			}
			out = append(out, s.Cell(row, RoleHand, set))
			// Rates that make the coarse phase's last cell the best,
			// so that the plan also shows a refinement.
			tried = append(tried, TuneTrial{set, float64(len(tried) + 1)})
		}
		for range max(s.HistoryTarget-len(tried), 0) {
			out = append(out, s.Cell(row, RoleFiller, TuneSetting{}))
		}
		best, haveBest := BestTrial(tried)
		for i := range max(s.Remeasure, 1+s.Repeat) {
			if haveBest && i < s.Remeasure {
				out = append(out, s.Cell(row, RoleRemeasure, best.TuneSetting))
			}
			if i < 1+s.Repeat {
				out = append(out, s.Cell(row, RoleHistory, TuneSetting{}))
			}
		}
		if gct {
			out = append(out, s.Cell(row, RoleGCT, TuneSetting{}))
		}
	}
	return out
}

// TuneRowResult is what a row measured.
type TuneRowResult struct {
	Row  TuneRow
	Grid []WANResult // (a): the search's cells, in order
	// Empty, Hist and GCT are (b), (c) and (d); Ended "" when not run.
	Empty, Hist, GCT WANResult
	// EmptyMore and HistMore are the repeats of (b) and (c)
	// (TuneSpec.Repeat).
	EmptyMore, HistMore []WANResult
	// Remeasured are the re-runs of (a)'s winner (TuneSpec.Remeasure).
	Remeasured []WANResult
	Fillers    []WANResult
	// Records is how many successful transfers (c)'s history held when
	// (c) started; -1 unknown.
	Records int
	// EmptyRec and HistRec are the history records (b) and (c) left:
	// what the client chose and the ETA it predicted; nil when none.
	EmptyRec, HistRec *history.Record
}

// All returns every cell of the row in run order.
func (r TuneRowResult) All() []WANResult {
	var out []WANResult
	first := append(append([]WANResult{r.Empty}, r.EmptyMore...), r.Grid...)
	for _, res := range append(append(first, r.Remeasured...), r.Fillers...) {
		if res.Ended != "" {
			out = append(out, res)
		}
	}
	for _, res := range append(append([]WANResult{r.Hist}, r.HistMore...), r.GCT) {
		if res.Ended != "" {
			out = append(out, res)
		}
	}
	return out
}

// Best returns (a), the fastest cell of the search; false if none
// succeeded.
func (r TuneRowResult) Best() (WANResult, bool) {
	var best WANResult
	ok := false
	for _, res := range r.Grid {
		if res.Ended != EndFailed && res.Ended != "" && (!ok || res.Mbps > best.Mbps) {
			best, ok = res, true
		}
	}
	return best, ok
}

// medianRate is the median rate of the cells of rs that measured one,
// and how many did; NaN and 0 when none.
func medianRate(rs ...WANResult) (float64, int) {
	var v []float64
	for _, res := range rs {
		if measured(res) {
			v = append(v, res.Mbps)
		}
	}
	if len(v) == 0 {
		return math.NaN(), 0
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2, n
	}
	return v[len(v)/2], len(v)
}

// Reference is (a′), what (b) and (c) are measured against: the median
// rate of the winner's re-runs, or (a)'s own rate when none measured;
// NaN when neither. n is the number of re-runs it is the median of (0:
// it is (a)).
func (r TuneRowResult) Reference() (mbps float64, n int) {
	if m, n := medianRate(r.Remeasured...); n > 0 {
		return m, n
	}
	best, _ := r.Best()
	return rateOf(best), 0
}

// EmptyRate and HistRate are the medians of (b) and (c) over their runs,
// and how many runs measured a rate.
func (r TuneRowResult) EmptyRate() (float64, int) {
	return medianRate(append([]WANResult{r.Empty}, r.EmptyMore...)...)
}

// HistRate: see EmptyRate.
func (r TuneRowResult) HistRate() (float64, int) {
	return medianRate(append([]WANResult{r.Hist}, r.HistMore...)...)
}

// TuneConfig says what RunTune runs.
type TuneConfig struct {
	Ferry string // the ferry binary
	Spec  TuneSpec
	GCT   bool // run (d)
	CC    string
	Seed  int64 // of the emulated loss; cell i uses Seed+i
	Dir   string
	// Progress receives a line per cell; nil discards them.
	Progress io.Writer
	// OnRow, if set, is called with the rows so far after each cell.
	OnRow func([]TuneRowResult)

	start startNetwork // nil: the emulator
}

// RunTune runs the rows of cfg.Spec one at a time, each cell on a link
// of its own (as RunWAN), and returns a result per row. Each row has two
// history files of its own in a temporary directory: an empty one for
// (b), and one that (a)'s cells and the fillers are recorded into and
// (c) reads.
func RunTune(ctx context.Context, cfg TuneConfig) ([]TuneRowResult, error) {
	spec := cfg.Spec
	if len(spec.Rows) == 0 || spec.Search.Budget <= 0 {
		return nil, errors.New("bench: a tune preset without rows or search")
	}
	probe := []WANCell{spec.Cell(spec.Rows[0], RoleEmpty, TuneSetting{})}
	if cfg.GCT {
		probe = append(probe, spec.Cell(spec.Rows[0], RoleGCT, TuneSetting{}))
	}
	r, done, err := newWANRunner(WANConfig{Ferry: cfg.Ferry, Cells: probe, CC: cfg.CC, Seed: cfg.Seed, Dir: cfg.Dir,
		Progress: cfg.Progress, start: cfg.start})
	if err != nil {
		return nil, err
	}
	defer done()
	hdir, err := os.MkdirTemp(cfg.Dir, "ferry-bench-tune-history-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(hdir)
	t := &tuneRun{r: r, cfg: cfg, plan: len(spec.Plan(cfg.GCT))}
	for i, row := range spec.Rows {
		empty := filepath.Join(hdir, fmt.Sprintf("row%02d-empty.db", i+1))
		grid := filepath.Join(hdir, fmt.Sprintf("row%02d-grid.db", i+1))
		if err := t.runRow(ctx, row, empty, grid); err != nil {
			return t.rows, err
		}
	}
	return t.rows, nil
}

// tuneRun holds the state of one RunTune.
type tuneRun struct {
	r    *wanRunner
	cfg  TuneConfig
	rows []TuneRowResult
	n    int // cells run
	plan int // cells planned (the fillers as if every search cell was recorded)
}

// run runs one cell and reports it.
func (t *tuneRun) run(ctx context.Context, c WANCell) (WANResult, error) {
	if ctx.Err() != nil {
		return WANResult{}, context.Cause(ctx)
	}
	res := t.r.runCell(ctx, t.n, c)
	if ctx.Err() != nil {
		return WANResult{}, context.Cause(ctx)
	}
	t.n++
	set := "auto"
	if c.Impl == GCT {
		set = "no flags"
	}
	if c.Explicit {
		set = TuneSetting{c.P, c.Buffer}.String()
	}
	fmt.Fprintf(t.r.progress, "bench: %d/~%d %s %-6s %s: %s: %s\n", t.n, t.plan, c.Grid, c.Impl, set, res.Ended, res.summary())
	return res, nil
}

// runRow runs a row: (b), (a), the fillers, a′ and (c) taking turns,
// (d).
func (t *tuneRun) runRow(ctx context.Context, row TuneRow, emptyDB, gridDB string) error {
	spec := t.cfg.Spec
	t.rows = append(t.rows, TuneRowResult{Row: row, Records: -1})
	cur := &t.rows[len(t.rows)-1]
	report := func() {
		if t.cfg.OnRow != nil {
			t.cfg.OnRow(t.rows)
		}
	}
	var err error
	c := spec.Cell(row, RoleEmpty, TuneSetting{})
	c.History = emptyDB
	if cur.Empty, cur.EmptyRec, err = t.runAuto(ctx, c); err != nil {
		return err
	}
	report()
	for i := range spec.Repeat {
		// Each repeat on a history of its own, empty.
		c.History = fmt.Sprintf("%s.%d", emptyDB, i+2)
		res, _, err := t.runAuto(ctx, c)
		if err != nil {
			return err
		}
		cur.EmptyMore = append(cur.EmptyMore, res)
		report()
	}

	var tried []TuneTrial
	for {
		set, ok := spec.Search.Next(tried)
		if !ok {
			break
		}
		c := spec.Cell(row, RoleHand, set)
		c.History = gridDB
		res, err := t.run(ctx, c)
		if err != nil {
			return err
		}
		cur.Grid = append(cur.Grid, res)
		rate := res.Mbps
		if res.Ended == EndFailed {
			rate = math.NaN()
		}
		tried = append(tried, TuneTrial{set, rate})
		report()
	}

	// Fill the history to HistoryTarget successful records, one short
	// transfer at a time; stop if one adds none (a client that does not
	// record).
	n := countRecords(ctx, gridDB)
	for n >= 0 && n < spec.HistoryTarget {
		c := spec.Cell(row, RoleFiller, TuneSetting{})
		c.History = gridDB
		res, _, err := t.runAuto(ctx, c)
		if err != nil {
			return err
		}
		cur.Fillers = append(cur.Fillers, res)
		report()
		m := countRecords(ctx, gridDB)
		if m <= n {
			break
		}
		n = m
	}
	cur.Records = n

	// (a)'s winner again (a′, the reference of the ratios) and (c),
	// taking turns, so that a drift of the machine over the row weighs
	// on both alike. a′ is recorded in a history of its own: (c)'s
	// history holds what the search did, the fillers and (c)'s own runs.
	best, haveBest := BestTrial(tried)
	hc := spec.Cell(row, RoleHistory, TuneSetting{})
	hc.History = gridDB
	for i := range max(spec.Remeasure, 1+spec.Repeat) {
		if haveBest && i < spec.Remeasure {
			c := spec.Cell(row, RoleRemeasure, best.TuneSetting)
			c.History = gridDB + ".again"
			res, err := t.run(ctx, c)
			if err != nil {
				return err
			}
			cur.Remeasured = append(cur.Remeasured, res)
			report()
		}
		if i >= 1+spec.Repeat {
			continue
		}
		res, rec, err := t.runAuto(ctx, hc)
		if err != nil {
			return err
		}
		if i == 0 {
			// The first on the history as the fillers left it.
			cur.Hist, cur.HistRec = res, rec
		} else {
			// On the same history, which now holds (c)'s records too.
			cur.HistMore = append(cur.HistMore, res)
		}
		report()
	}

	if t.cfg.GCT {
		if cur.GCT, err = t.run(ctx, spec.Cell(row, RoleGCT, TuneSetting{})); err != nil {
			return err
		}
		report()
	}
	return nil
}

// runAuto runs an automatic cell c and returns the record it left in
// its history (nil when none: a stopped client records nothing), with
// what its on-the-fly tuning did copied into the result.
func (t *tuneRun) runAuto(ctx context.Context, c WANCell) (WANResult, *history.Record, error) {
	var last int64
	if rec := newRecord(ctx, c.History, 0); rec != nil {
		last = rec.ID
	}
	res, err := t.run(ctx, c)
	if err != nil {
		return res, nil, err
	}
	rec := newRecord(ctx, c.History, last)
	if rec != nil {
		res.Tuning = rec.Tuning
	}
	return res, rec, nil
}

// historyRecords returns the records f selects from the history file
// dsn, nil if it does not exist or cannot be read.
func historyRecords(ctx context.Context, dsn string, f history.Filter) ([]history.Record, bool) {
	if _, err := os.Stat(dsn); err != nil {
		return nil, errors.Is(err, os.ErrNotExist)
	}
	st, err := history.Open(ctx, dsn, nil)
	if err != nil {
		return nil, false
	}
	defer st.Close()
	recs, err := st.Records(ctx, f)
	if err != nil {
		return nil, false
	}
	return recs, true
}

// countRecords returns how many successful transfers the history file
// dsn holds (0 when it does not exist yet), -1 if it cannot be read.
func countRecords(ctx context.Context, dsn string) int {
	recs, ok := historyRecords(ctx, dsn, history.Filter{Outcome: history.OK})
	if !ok {
		return -1
	}
	return len(recs)
}

// newRecord returns the newest record of the history file dsn if its ID
// is above after (a cell's own record, not one from before it), nil if
// none.
func newRecord(ctx context.Context, dsn string, after int64) *history.Record {
	recs, _ := historyRecords(ctx, dsn, history.Filter{Limit: 1})
	if len(recs) == 0 || recs[0].ID <= after {
		return nil
	}
	return &recs[0]
}

// describe says what spec's cells are, for the report.
func (s TuneSpec) describe() string {
	prof := Profiles[s.Profile]
	d := "15 s (25 s from 50 ms RTT)"
	if s.Seconds > 0 {
		d = s.Seconds.String()
	}
	return fmt.Sprintf("Link %s Mbit/s; profile %s (%s); every cell a fixed size that the row's bound moves in %s, stopped at twice that",
		progress.Rate(float64(s.Rate)/1e6), prof.Name, prof.About, d)
}

// tuneSpec is the tune preset: the BBC grid's links at 1 Gbit/s.
func tuneSpec() *TuneSpec {
	return &TuneSpec{Rows: bbcTuneRows(), Rate: GigabitRate, Profile: "optimised", Search: DefaultTuneSearch, HistoryTarget: 10,
		Remeasure: 3, Repeat: 1}
}

// tuneCISpec is the tune preset's smoke test: one row of 3 s cells at
// 100 Mbit/s, a search of five cells, a history of six.
func tuneCISpec() *TuneSpec {
	return &TuneSpec{Rows: []TuneRow{{Latency: 5 * time.Millisecond, Loss: 0.1}}, Rate: 100_000_000, Profile: "optimised",
		Search:        TuneSearch{Ps: []int{1, 4}, Buffers: []int64{0, 1 << 20}, MaxP: 8, Budget: 5},
		HistoryTarget: 6, Seconds: 3 * time.Second, Remeasure: 1}
}
