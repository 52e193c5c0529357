package bench

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/wan"
)

// bbcTables is every cell of Tables 5.1–5.4 of BBC WHP 178 (GCT 4.2.1,
// globus-url-copy pulling 1 GiB over an emulated 1 Gbit/s link).
//
//go:embed published/bbc-whp178-tables.csv
var bbcTables []byte

// pubKey finds a published number: a table, its row (the grid's S value)
// and its column (the grid's X value), both as the table writes them.
type pubKey struct{ table, row, col string }

// published holds the published rates in Mbit/s.
var published = loadPublished()

// loadPublished reads the BBC tables and adds Lindén's two numbers
// (0.5 and 10.5 MB/s, taken as 10^6 bytes: 4 and 84 Mbit/s).
func loadPublished() map[pubKey]float64 {
	m := map[pubKey]float64{
		{"linden", "", "1"}:  0.5 * 8,
		{"linden", "", "16"}: 10.5 * 8,
	}
	recs, err := csv.NewReader(bytes.NewReader(bbcTables)).ReadAll()
	if err != nil {
		panic("bench: the embedded BBC tables: " + err.Error())
	}
	for _, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[5], 64)
		if err != nil {
			panic("bench: the embedded BBC tables: " + err.Error())
		}
		m[pubKey{r[0], normalizeKey(r[2]), normalizeKey(r[4])}] = v
	}
	return m
}

// normalizeKey writes a published row or column value as pubValue does:
// numbers without trailing zeros, sizes as written ("256KB").
func normalizeKey(s string) string {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return s
}

// pubValue writes x, a value of v, as the published tables do.
func pubValue(v Var, x float64) string {
	switch v {
	case VarNone:
		return ""
	case VarBuffer:
		if n := int64(x); n%(1<<20) == 0 {
			return strconv.FormatInt(n>>20, 10) + "MB"
		} else {
			return strconv.FormatInt(n>>10, 10) + "KB"
		}
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// Published returns the published rate of cell c of grid g, in Mbit/s.
func (g Grid) Published(c WANCell) (float64, bool) {
	if g.PublishedTable == "" {
		return 0, false
	}
	v, ok := published[pubKey{g.PublishedTable, pubValue(g.S, c.S), pubValue(g.X, c.X)}]
	return v, ok
}

// Join fills in the published rate of each result of p's grids.
func (p Preset) Join(results []WANResult) {
	grids := map[string]Grid{}
	for _, g := range p.Grids {
		grids[g.ID] = g
	}
	for i := range results {
		results[i].Published = math.NaN()
		if v, ok := grids[results[i].Cell.Grid].Published(results[i].Cell); ok {
			results[i].Published = v
		}
	}
}

// wanCSVHeader is the first record of WriteWANCSV.
var wanCSVHeader = []string{
	"grid", "impl", "p", "tcp_bs_requested", "tcp_bs_asked", "tcp_bs_effective", "one_way_latency_ms", "loss_pct",
	"link_mbit_s", "profile", "cc", "size_bytes", "duration_limit_s",
	"ended", "bytes", "elapsed_s", "mbit_s", "published_mbit_s",
	"theory_rtt_ms", "theory_link_mbit_s", "theory_window_mbit_s", "theory_textbook_mbit_s", "theory_mathis_mbit_s",
	"theory_bound_mbit_s", "limit", "rate_over_bound",
	"idle_rtt_ms", "loss_measured_pct", "loss_drops", "packets_to_client", "delay_err_p50_ms", "delay_err_p99_ms",
	"delay_err_max_ms", "queue_drops", "forwarder_cpu_s", "forwarder_cpu_pct",
	"client_cpu_s", "server_cpu_s", "load1_before", "busy_cores_before", "checks", "error", "tuning",
}

// WriteWANCSV writes every result as a CSV record after a header. Numbers
// that do not apply (no published rate, no Mathis bound, a failed cell's
// rate) are empty.
func WriteWANCSV(w io.Writer, results []WANResult) error {
	cw := csv.NewWriter(w)
	cw.Write(wanCSVHeader)
	f := func(v float64, prec int) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	u64 := func(n uint64) string { return strconv.FormatUint(n, 10) }
	for _, r := range results {
		c, fid, t := r.Cell, r.Fidelity, r.Theory
		rate, ratio := math.NaN(), math.NaN()
		if r.Ended != EndFailed {
			rate = r.Mbps
			if t.Bound > 0 {
				ratio = r.Mbps / t.Bound
			}
		}
		cpuPct := math.NaN()
		if fid.Wall > 0 {
			cpuPct = 100 * fid.CPU.Seconds() / fid.Wall.Seconds()
		}
		size := i64(c.Size)
		if c.fixedDuration() {
			size = "" // open-ended: stopped at duration_limit_s
		}
		cw.Write([]string{
			c.Grid, string(c.Impl), strconv.Itoa(c.P), i64(c.Buffer), i64(r.BufferAsked), i64(r.BufferEff),
			f(msOf(c.Latency), 3), f(c.Loss, 3), f(float64(c.Rate)/1e6, 3), c.Profile, r.CC,
			size, f(c.Duration.Seconds(), 1),
			r.Ended, i64(r.Bytes), f(r.Elapsed.Seconds(), 3), f(rate, 2), f(r.Published, 2),
			f(msOf(r.RTT), 3), f(t.Link, 2), f(t.Window, 2), f(t.Textbook, 2), f(t.Mathis, 2),
			f(t.Bound, 2), t.Limit, f(ratio, 3),
			f(msOf(fid.IdleRTT), 3), f(100*fid.LossMeasured[wan.ToClient], 4), u64(fid.LossDrops[wan.ToClient]),
			u64(fid.Packets[wan.ToClient]), f(msOf(fid.DelayErrP50), 3), f(msOf(fid.DelayErrP99), 3),
			f(msOf(fid.DelayErrMax), 3), u64(fid.QueueDrops), f(fid.CPU.Seconds(), 2), f(cpuPct, 1),
			f(r.ClientCPU.Seconds(), 2), f(r.ServerCPU.Seconds(), 2), f(r.Load1, 2), f(r.BusyBefore, 2),
			strings.Join(r.Validity(), "; "), r.Err, oneLine(r.Tuning),
		})
	}
	cw.Flush()
	return cw.Error()
}

// ReportMeta is what the Markdown report says about the run.
type ReportMeta struct {
	Command string    // how the run was started
	Start   time.Time // when it started
	CC      string
}

// sources are the rows of a grid's tables, in order.
var sources = []struct {
	name  string
	impl  Impl // "" for published, "theory" for the bound
	dash  Dash
	label string
}{
	{"Ferry", Ferry, Solid, "Ferry (ferry cp ← ferry serve)"},
	{"GCT", GCT, Dashed, "GCT (globus-url-copy ← globus-gridftp-server)"},
	{"iperf3", IPerf3, DashDot, "iperf3 -R (raw TCP reference)"},
	{"published", "", Dotted, "published"},
	{"theory", "theory", Solid, "theory: bound (limit)"},
}

// pointValue returns a source's value at a point of g, NaN if none: the
// median of the results there, the published rate, or the bound.
func pointValue(results []WANResult, g Grid, src string, impl Impl, x, s float64) (float64, string) {
	if src == "published" {
		if v, ok := g.Published(WANCell{X: x, S: s}); ok {
			return v, ""
		}
		return math.NaN(), ""
	}
	var vs []float64
	mark := ""
	for _, r := range results {
		c := r.Cell
		if c.Grid != g.ID || c.X != x || c.S != s {
			continue
		}
		switch src {
		case "theory":
			if r.Theory.Limit != "" {
				return r.Theory.Bound, r.Theory.Limit
			}
			continue
		}
		if c.Impl != impl {
			continue
		}
		if r.Ended == EndFailed {
			mark = "failed"
			continue
		}
		if r.Ended == EndStopped && !c.fixedDuration() {
			mark = "*"
		}
		vs = append(vs, r.Mbps)
	}
	if len(vs) == 0 {
		return math.NaN(), mark
	}
	return Summarize(vs).Median, mark
}

// values returns the distinct X and S values of g's points, in order.
func (g Grid) values() (xs, ss []float64) {
	for _, c := range g.Points {
		if !slices.Contains(xs, c.X) {
			xs = append(xs, c.X)
		}
		if !slices.Contains(ss, c.S) {
			ss = append(ss, c.S)
		}
	}
	return xs, ss
}

// seriesLabel is a series value as a legend or row label.
func (g Grid) seriesLabel(s float64) string {
	switch g.S {
	case VarParallel:
		return "p = " + VarParallel.Format(s)
	case VarNone:
		return ""
	}
	return g.S.Format(s)
}

// WriteWANMarkdown writes the report of p's results: per grid, the rates
// of each source as the papers' tables lay them out, the fidelity checks
// that failed, and the grid's plot (plotDir relative names; "" for none).
func WriteWANMarkdown(w io.Writer, p Preset, results []WANResult, meta ReportMeta, plots bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Ferry and GCT over an emulated WAN: preset %s\n\n", p.Name)
	fmt.Fprintf(&b, "%s. Run %s on %s; congestion control %s. Command: `%s`.\n\n",
		p.About, meta.Start.UTC().Format("2006-01-02 15:04 MST"), strings.TrimPrefix(host(), "Loopback on "), meta.CC, meta.Command)
	b.WriteString("Rates in Mbit/s (10^6 bit/s). Ferry and GCT: bytes over the client's wall time (fixed size), or bytes its sockets received over the time since it started (fixed duration; see docs/bench/wan/README.md). " +
		"`*`: a fixed-size cell stopped at its time limit (rate so far). Theory: the least of the link's goodput (L), the TCP windows (W, this kernel's window per buffer byte) and the Mathis bound (M).\n")
	for _, g := range p.Grids {
		writeGrid(&b, g, results, plots)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGrid(b *strings.Builder, g Grid, results []WANResult, plots bool) {
	fmt.Fprintf(b, "\n## %s\n\n", g.Title)
	if len(g.Points) > 0 {
		writeGridLink(b, g)
	}
	t := newGridTable(g, results)
	if g.S == VarNone {
		t.writeFlat(b)
	} else {
		t.writeBySeries(b)
	}
	writeDoubts(b, g, results)
	if plots && g.plottable() {
		fmt.Fprintf(b, "\n![%s](%s.svg)\n", g.Title, g.ID)
	}
}

// writeGridLink writes the sentence about the link of g's points (g has
// some): its rate and profile, and whether the cells run for a fixed
// duration (which ones, when they differ) or move a fixed size.
func writeGridLink(b *strings.Builder, g Grid) {
	c := g.Points[0]
	prof := Profiles[c.Profile]
	lo, hi := c.Duration, c.Duration
	for _, pt := range g.Points {
		lo, hi = min(lo, pt.Duration), max(hi, pt.Duration)
	}
	kind := "fixed duration " + lo.String()
	if hi != lo {
		kind += "–" + hi.String() + " (longer at 50 ms RTT and more)"
	}
	if !c.fixedDuration() {
		kind = "fixed size"
		if g.X != VarSize {
			kind += " " + progress.Size(c.Size)
		}
	}
	fmt.Fprintf(b, "Link %s Mbit/s; profile %s (%s); %s.\n\n", progress.Rate(float64(c.Rate)/1e6), prof.Name, prof.About, kind)
}

// gridTable renders the rate tables of a grid from its results.
type gridTable struct {
	g       Grid
	results []WANResult
	xs, ss  []float64 // the distinct X and S values, in order
}

func newGridTable(g Grid, results []WANResult) *gridTable {
	xs, ss := g.values()
	return &gridTable{g: g, results: results, xs: xs, ss: ss}
}

// theoryLimits abbreviates the limits of the theory rows.
var theoryLimits = map[string]string{LimitLink: "L", LimitWindow: "W", LimitLoss: "M"}

// cell renders a source's value at a point: the rate and its mark, or
// for theory the bound and which limit it is.
func (t *gridTable) cell(src string, impl Impl, x, s float64) string {
	v, mark := pointValue(t.results, t.g, src, impl, x, s)
	if src == "theory" {
		if math.IsNaN(v) {
			return ""
		}
		return progress.Rate(v) + " " + theoryLimits[mark]
	}
	if math.IsNaN(v) {
		return mark
	}
	return progress.Rate(v) + mark
}

// has reports whether a source has a value at any point of the grid.
func (t *gridTable) has(src string, impl Impl) bool {
	for _, x := range t.xs {
		for _, s := range t.ss {
			if v, _ := pointValue(t.results, t.g, src, impl, x, s); !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// alignRow is a Markdown table's alignment row: a left-aligned label
// column and n right-aligned value columns.
func alignRow(n int) []string {
	a := []string{"---"}
	for range n {
		a = append(a, "--:")
	}
	return a
}

// writeFlat writes the table of a grid without series: a row per X
// value, a column per source that has values, and Ferry over GCT when
// both have.
func (t *gridTable) writeFlat(b *strings.Builder) {
	g := t.g
	head := []string{g.X.Label()}
	var used []int
	for i, src := range sources {
		if t.has(src.name, src.impl) {
			head = append(head, src.name)
			used = append(used, i)
		}
	}
	ratio := t.has("Ferry", Ferry) && t.has("GCT", GCT)
	if ratio {
		head = append(head, "Ferry / GCT")
	}
	row(b, head)
	row(b, alignRow(len(head)-1))
	for _, x := range t.xs {
		r := []string{g.X.Format(x)}
		for _, i := range used {
			r = append(r, t.cell(sources[i].name, sources[i].impl, x, 0))
		}
		if ratio {
			r = append(r, rateRatio(t.results, g, x, 0))
		}
		row(b, r)
	}
}

// writeBySeries writes a grid with series as one table per source that
// has values (a row per S value that has any, a column per X value), and
// Ferry over GCT when both have.
func (t *gridTable) writeBySeries(b *strings.Builder) {
	g := t.g
	for _, src := range sources {
		if !t.has(src.name, src.impl) {
			continue
		}
		fmt.Fprintf(b, "%s:\n\n", src.label)
		t.writeSeriesHead(b)
		for _, s := range t.ss {
			r := []string{g.S.Format(s)}
			for _, x := range t.xs {
				r = append(r, t.cell(src.name, src.impl, x, s))
			}
			if slices.ContainsFunc(r[1:], func(v string) bool { return v != "" }) {
				row(b, r)
			}
		}
		b.WriteString("\n")
	}
	if t.has("Ferry", Ferry) && t.has("GCT", GCT) {
		b.WriteString("Ferry / GCT (above 1: Ferry faster):\n\n")
		t.writeSeriesHead(b)
		for _, s := range t.ss {
			r := []string{g.S.Format(s)}
			for _, x := range t.xs {
				r = append(r, rateRatio(t.results, g, x, s))
			}
			row(b, r)
		}
		b.WriteString("\n")
	}
}

// writeSeriesHead writes the head and alignment rows of a table with a
// row per S value and a column per X value.
func (t *gridTable) writeSeriesHead(b *strings.Builder) {
	head := []string{t.g.S.Label() + " \\ " + t.g.X.Label()}
	for _, x := range t.xs {
		head = append(head, t.g.X.Format(x))
	}
	row(b, head)
	row(b, alignRow(len(t.xs)))
}

// writeDoubts lists the cells of g whose results failed or failed the
// fidelity checks, or says that every cell passed.
func writeDoubts(b *strings.Builder, g Grid, results []WANResult) {
	var flagged []string
	for _, r := range results {
		if r.Cell.Grid != g.ID {
			continue
		}
		where := fmt.Sprintf("%s at %s %s", r.Cell.Impl, g.X.Label(), g.X.Format(r.Cell.X))
		if g.S != VarNone {
			where += fmt.Sprintf(", %s %s", g.S.Label(), g.S.Format(r.Cell.S))
		}
		if r.Ended == EndFailed {
			flagged = append(flagged, where+" failed: "+firstLine(r.Err))
		} else if v := r.Validity(); len(v) > 0 {
			flagged = append(flagged, where+": "+strings.Join(v, ", "))
		}
	}
	if len(flagged) > 0 {
		b.WriteString("\nCells to doubt (fidelity checks or failures):\n\n")
		for _, f := range flagged {
			b.WriteString("- " + f + "\n")
		}
	} else if slices.ContainsFunc(results, func(r WANResult) bool { return r.Cell.Grid == g.ID }) {
		b.WriteString("\nEvery cell passed the fidelity checks (delay p99 ≤ 0.5 ms, no queue drops, loss as set, idle host).\n")
	}
}

// rateRatio renders Ferry's rate over GCT's at a point of g.
func rateRatio(results []WANResult, g Grid, x, s float64) string {
	f, _ := pointValue(results, g, "Ferry", Ferry, x, s)
	c, _ := pointValue(results, g, "GCT", GCT, x, s)
	if math.IsNaN(f) || math.IsNaN(c) || c == 0 {
		return ""
	}
	return strconv.FormatFloat(f/c, 'f', 2, 64)
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// plottable reports whether g has a curve to draw: two x values or more.
func (g Grid) plottable() bool {
	xs, _ := g.values()
	return len(xs) >= 2 && !g.NoPlot
}

// Plot returns the plot of g's results in the shape of the papers'
// figures: rate against X, a colour per S value, a line style per source
// (Ferry, GCT, iperf3, published).
func (g Grid) Plot(results []WANResult) *Plot {
	xs, ss := g.values()
	p := &Plot{Title: g.Title, XLabel: g.X.Label(), YLabel: "rate (Mbit/s)",
		XLog: g.X == VarBuffer || g.X == VarSize, XFormat: g.X.Format}
	if len(p.Title) > 70 {
		if i := strings.Index(p.Title, ": "); i > 0 {
			p.Title = p.Title[:i]
		}
	}
	for si, s := range ss {
		col := Palette[si%len(Palette)]
		if g.S == VarNone {
			col = black
		}
		for _, src := range sources[:4] {
			ser := Series{Color: col, Dash: src.dash}
			any := false
			for _, x := range xs {
				v, _ := pointValue(results, g, src.name, src.impl, x, s)
				any = any || !math.IsNaN(v)
				ser.Points = append(ser.Points, Point{X: x, Y: v})
			}
			if any {
				p.Series = append(p.Series, ser)
			}
		}
		if g.S != VarNone {
			p.Legend = append(p.Legend, LegendEntry{Label: g.seriesLabel(s), Color: col})
		}
	}
	for _, src := range sources[:4] {
		if slices.ContainsFunc(p.Series, func(s Series) bool { return s.Dash == src.dash }) {
			p.Legend = append(p.Legend, LegendEntry{Label: src.name, Color: color.RGBA{0x44, 0x44, 0x44, 0xff}, Dash: src.dash})
		}
	}
	return p
}

// WriteWANOutputs writes the results of preset p to dir: NAME.csv,
// NAME.md and, per grid with a curve, GRID.svg and GRID.png.
func WriteWANOutputs(dir string, p Preset, results []WANResult, meta ReportMeta) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	write := func(name string, fn func(io.Writer) error) error { return writeOutput(dir, name, fn) }
	p.Join(results)
	if err := write(p.Name+".csv", func(w io.Writer) error { return WriteWANCSV(w, results) }); err != nil {
		return err
	}
	if err := write(p.Name+".md", func(w io.Writer) error { return WriteWANMarkdown(w, p, results, meta, true) }); err != nil {
		return err
	}
	for _, g := range p.Grids {
		if !g.plottable() {
			continue
		}
		pl := g.Plot(results)
		if err := write(g.ID+".svg", pl.SVG); err != nil {
			return err
		}
		if err := write(g.ID+".png", pl.PNG); err != nil {
			return err
		}
	}
	return nil
}

// writeOutput writes what fn renders to the file name in dir, whole or
// not at all when fn fails.
func writeOutput(dir, name string, fn func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := fn(&buf); err != nil {
		return fmt.Errorf("bench: %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
