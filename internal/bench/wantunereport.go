package bench

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
)

// The targets of the automatic tuning: its rate over the best hand-tuned
// one's (issue 15).
const (
	TuneTarget     = 0.9
	TuneTargetHigh = 0.95
)

// measured reports whether res ran and has a rate.
func measured(res WANResult) bool { return res.Ended != "" && res.Ended != EndFailed }

// TuneRatio is auto's rate over best's, NaN when either has none.
func TuneRatio(auto, best WANResult) float64 {
	if !measured(auto) || !measured(best) || best.Mbps <= 0 {
		return math.NaN()
	}
	return auto.Mbps / best.Mbps
}

// Meets reports whether ratio is at least target: "yes", "no", or ""
// when the ratio is unknown.
func Meets(ratio, target float64) string {
	switch {
	case math.IsNaN(ratio):
		return ""
	case ratio >= target:
		return "yes"
	}
	return "no"
}

// predictedETA returns the ETA rec's client predicted, 0 if none.
func predictedETA(rec *history.Record) time.Duration {
	if rec == nil {
		return 0
	}
	return rec.PredictedETA
}

// tuneCSVHeader is the first record of WriteTuneCSV.
var tuneCSVHeader = []string{
	"one_way_latency_ms", "loss_pct", "link_mbit_s", "size_bytes", "duration_limit_s", "bound_mbit_s", "limit",
	"best_mbit_s", "best_ended", "best_p", "best_tcp_bs_requested", "best_tcp_bs_effective", "best_client_cpu_s", "best_server_cpu_s", "grid_cells",
	"empty_mbit_s", "empty_ended", "empty_elapsed_s", "empty_predicted_eta_s", "empty_chosen_p", "empty_chosen_tcp_bs",
	"empty_client_cpu_s", "empty_server_cpu_s", "empty_over_best", "empty_meets_0.9", "empty_meets_0.95",
	"history_records", "fillers",
	"history_mbit_s", "history_ended", "history_elapsed_s", "history_predicted_eta_s", "history_chosen_p", "history_chosen_tcp_bs",
	"history_client_cpu_s", "history_server_cpu_s", "history_over_best", "history_meets_0.9", "history_meets_0.95",
	"gct_mbit_s", "gct_ended", "gct_client_cpu_s", "gct_server_cpu_s", "cells_to_doubt",
	"reference_mbit_s", "reference_runs", "reference_runs_mbit_s",
	"empty_runs", "empty_median_mbit_s", "empty_over_reference", "empty_ref_meets_0.9", "empty_ref_meets_0.95",
	"history_runs", "history_median_mbit_s", "history_over_reference", "history_ref_meets_0.9", "history_ref_meets_0.95",
}

// refRatio is a median rate over the reference, NaN when either is
// unknown.
func refRatio(rate, ref float64) float64 {
	if math.IsNaN(rate) || math.IsNaN(ref) || ref <= 0 {
		return math.NaN()
	}
	return rate / ref
}

// runRates lists the rates of rs, ";"-separated ("" for one that has
// none).
func runRates(rs []WANResult) string {
	var v []string
	for _, res := range rs {
		v = append(v, fmtF(rateOf(res), 2))
	}
	return strings.Join(v, ";")
}

// fmtF formats v with prec decimals, "" for NaN and infinities.
func fmtF(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// rateOf is res's rate, NaN when it has none.
func rateOf(res WANResult) float64 {
	if !measured(res) {
		return math.NaN()
	}
	return res.Mbps
}

// cpuOf is a CPU time in seconds, "" when the cell did not run.
func cpuOf(res WANResult, d time.Duration) string {
	if res.Ended == "" {
		return ""
	}
	return fmtF(d.Seconds(), 2)
}

// chosen returns the -p and -tcp-bs the client recorded, "" when unknown.
func chosen(rec *history.Record) (p, bs string) {
	if rec == nil {
		return "", ""
	}
	return strconv.Itoa(rec.Params.Parallel), strconv.Itoa(rec.Params.TCPBuffer)
}

// doubts counts a row's cells that failed or failed the fidelity checks.
func (r TuneRowResult) doubts() int {
	n := 0
	for _, res := range r.All() {
		if res.Ended == EndFailed || len(res.Validity()) > 0 {
			n++
		}
	}
	return n
}

// WriteTuneCSV writes a record per row after a header: the rates of (a)
// to (d), their CPU, what the automatic runs chose and predicted, and
// the ratios. Values that are unknown are empty.
func WriteTuneCSV(w io.Writer, spec TuneSpec, rows []TuneRowResult) error {
	cw := csv.NewWriter(w)
	cw.Write(tuneCSVHeader)
	for _, r := range rows {
		base := spec.Cell(r.Row, RoleHand, TuneSetting{1, 0})
		bound := spec.RowBound(r.Row)
		best, ok := r.Best()
		bp, bbs, bbe := "", "", ""
		if ok {
			bp, bbs, bbe = strconv.Itoa(best.Cell.P), strconv.FormatInt(best.Cell.Buffer, 10), strconv.FormatInt(best.BufferEff, 10)
		}
		auto := func(res WANResult, rec *history.Record) []string {
			p, bs := chosen(rec)
			eta := ""
			if d := predictedETA(rec); d > 0 {
				eta = fmtF(d.Seconds(), 2)
			}
			ratio := TuneRatio(res, best)
			elapsed := ""
			if measured(res) {
				elapsed = fmtF(res.Elapsed.Seconds(), 3)
			}
			return []string{fmtF(rateOf(res), 2), res.Ended, elapsed, eta, p, bs,
				cpuOf(res, res.ClientCPU), cpuOf(res, res.ServerCPU), fmtF(ratio, 3), Meets(ratio, TuneTarget), Meets(ratio, TuneTargetHigh)}
		}
		rec := []string{fmtF(msOf(r.Row.Latency), 3), fmtF(r.Row.Loss, 3), fmtF(float64(spec.Rate)/1e6, 3),
			strconv.FormatInt(base.Size, 10), fmtF(base.Duration.Seconds(), 1), fmtF(bound.Bound, 2), bound.Limit,
			fmtF(rateOf(best), 2), best.Ended, bp, bbs, bbe, cpuOf(best, best.ClientCPU), cpuOf(best, best.ServerCPU), strconv.Itoa(len(r.Grid))}
		rec = append(rec, auto(r.Empty, r.EmptyRec)...)
		records := ""
		if r.Records >= 0 {
			records = strconv.Itoa(r.Records)
		}
		rec = append(rec, records, strconv.Itoa(len(r.Fillers)))
		rec = append(rec, auto(r.Hist, r.HistRec)...)
		rec = append(rec, fmtF(rateOf(r.GCT), 2), r.GCT.Ended, cpuOf(r.GCT, r.GCT.ClientCPU), cpuOf(r.GCT, r.GCT.ServerCPU),
			strconv.Itoa(r.doubts()))
		ref, refN := r.Reference()
		rec = append(rec, fmtF(ref, 2), strconv.Itoa(refN), runRates(r.Remeasured))
		for _, f := range []func() (float64, int){r.EmptyRate, r.HistRate} {
			m, n := f()
			ratio := refRatio(m, ref)
			rec = append(rec, strconv.Itoa(n), fmtF(m, 2), fmtF(ratio, 3), Meets(ratio, TuneTarget), Meets(ratio, TuneTargetHigh))
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// tuneRate renders a cell's rate and its client's CPU time for the
// Markdown table: "912 (2.1 s)", "*" after a cell stopped at its time
// limit, "failed", or "—" when it did not run.
func tuneRate(res WANResult) string {
	switch res.Ended {
	case "":
		return "—"
	case EndFailed:
		return "failed"
	}
	mark := ""
	if res.Ended == EndStopped {
		mark = "*"
	}
	return fmt.Sprintf("%s%s (%.1f s)", progress.Rate(res.Mbps), mark, res.ClientCPU.Seconds())
}

// remeasureNote says how many times (a)'s winner ran again.
func remeasureNote(n int) string {
	switch n {
	case 0:
		return "none in this preset: a′ = a"
	case 1:
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// repeatNote says how many times a column ran, "" for once.
func repeatNote(n int, what string) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("; %d runs %s; the median is shown", n, what)
}

// medianCell renders the median of a column's runs: as tuneRate for one
// run (first), else "912 (median of 2)".
func medianCell(first WANResult, m float64, n int) string {
	if n <= 1 {
		return tuneRate(first)
	}
	return fmt.Sprintf("%s (median of %d)", progress.Rate(m), n)
}

// tuneRatioCell renders a ratio and whether it meets each target:
// "0.93 ✓✗" (≥ 0.9 yes, ≥ 0.95 no), "—" when unknown.
func tuneRatioCell(ratio float64) string {
	if math.IsNaN(ratio) {
		return "—"
	}
	mark := func(target float64) string {
		if ratio >= target {
			return "✓"
		}
		return "✗"
	}
	return fmt.Sprintf("%.2f %s%s", ratio, mark(TuneTarget), mark(TuneTargetHigh))
}

// tuneETA renders the predicted ETA beside the time the cell took:
// "12.0 / 13.4 s", "—" without a prediction.
func tuneETA(res WANResult, rec *history.Record) string {
	d := predictedETA(rec)
	if d <= 0 || res.Ended != EndComplete {
		if d > 0 {
			return fmt.Sprintf("%.1f / — s", d.Seconds())
		}
		return "—"
	}
	return fmt.Sprintf("%.1f / %.1f s", d.Seconds(), res.Elapsed.Seconds())
}

// tuneChoice renders what the client chose, from its history record.
func tuneChoice(rec *history.Record) string {
	if rec == nil {
		return "—"
	}
	return fmt.Sprintf("-p %d -tcp-bs %s", max(rec.Params.Parallel, 1), VarBuffer.Format(float64(rec.Params.TCPBuffer)))
}

// WriteTuneMarkdown writes the report of a tune preset: one table, a row
// per link, the targets met, the cells to doubt and the plot (plot:
// whether NAME.svg is written beside it).
func WriteTuneMarkdown(w io.Writer, p Preset, rows []TuneRowResult, meta ReportMeta, plot bool) error {
	spec := *p.Tune
	var b strings.Builder
	fmt.Fprintf(&b, "# Ferry's automatic tuning over an emulated WAN: preset %s\n\n", p.Name)
	fmt.Fprintf(&b, "%s. Run %s on %s; congestion control %s. Command: `%s`.\n\n",
		p.About, meta.Start.UTC().Format("2006-01-02 15:04 MST"), strings.TrimPrefix(host(), "Loopback on "), meta.CC, meta.Command)
	fmt.Fprintf(&b, "%s.\n\n", spec.describe())
	s := spec.Search
	var bufs, ps []string
	for _, x := range s.Buffers {
		bufs = append(bufs, VarBuffer.Format(float64(x)))
	}
	for _, x := range s.Ps {
		ps = append(ps, strconv.Itoa(x))
	}
	rmem := readSysctlInt("/proc/sys/net/core/rmem_max")
	fmt.Fprintf(&b, "Columns, rates in Mbit/s with the client's CPU time in brackets (`*`: stopped at the time limit, the rate so far):\n\n"+
		"- **(a) best hand-tuned**: the fastest of at most %d cells of `ferry cp -p N -tcp-bs B`: first p ∈ {%s} × B ∈ {%s}, then p refined "+
		"around the best (geometric midpoints: halving and doubling neighbours). Explicit buffers go up to the host's net.core.rmem_max "+
		"(%s here): **8M is capped** at that by the kernel, so it is not a cell of its own.\n"+
		"- **(a′) re-measured**: (a)'s flags run again after the search (%s); the median of those runs is the reference of b/a′ and c/a′. "+
		"(a) is the best of many noisy cells, so its own rate is biased high; a re-run is not.\n"+
		"- **(b) auto, empty history**: `ferry cp` without -p and -tcp-bs, with a new, empty history%s.\n"+
		"- **(c) auto, history**: the same after its history holds %d successful transfers of the link: (a)'s cells that completed, "+
		"then short automatic transfers; *records* is what it held%s.\n"+
		"- **(d) GCT**: `globus-url-copy` without flags against `globus-gridftp-server`.\n"+
		"- b/a′, c/a′ (over the reference) and b/a, c/a (over the raw best, the first run of (b) and (c)): ✓ or ✗ for ≥ %.2f, then for ≥ %.2f. "+
		"ETA: the client's predicted ETA (from its history record) / the time taken; — when it predicted none.\n\n",
		s.Budget, strings.Join(ps, ", "), strings.Join(bufs, ", "), progress.Size(rmem), remeasureNote(spec.Remeasure),
		repeatNote(1+spec.Repeat, "each on its own empty history"), spec.HistoryTarget,
		repeatNote(1+spec.Repeat, "on that history (the later ones on its records of the earlier)"), TuneTarget, TuneTargetHigh)
	row(&b, []string{"one-way latency", "loss", "bound", "(a) best hand-tuned", "(a) flags", "(a′) re-measured", "(b) auto, empty", "(b) chose",
		"b/a′", "b/a", "records", "(c) auto, history", "(c) chose", "c/a′", "c/a", "(d) GCT", "(b) ETA", "(c) ETA"})
	row(&b, append([]string{"--:", "--:"}, alignRow(16)[1:]...))
	var met, metRaw [2][2]int // [b, c][0.9, 0.95]
	var known, knownRaw [2]int
	for _, r := range rows {
		best, ok := r.Best()
		flags := "—"
		if ok {
			flags = fmt.Sprintf("%s (best of %d)", TuneSetting{best.Cell.P, best.Cell.Buffer}, len(r.Grid))
		}
		rb, rc := TuneRatio(r.Empty, best), TuneRatio(r.Hist, best)
		ref, refN := r.Reference()
		eb, ebN := r.EmptyRate()
		hc, hcN := r.HistRate()
		qb, qc := refRatio(eb, ref), refRatio(hc, ref)
		count := func(met *[2][2]int, known *[2]int, ratios ...float64) {
			for i, ratio := range ratios {
				if !math.IsNaN(ratio) {
					known[i]++
					for j, target := range []float64{TuneTarget, TuneTargetHigh} {
						if ratio >= target {
							met[i][j]++
						}
					}
				}
			}
		}
		count(&met, &known, qb, qc)
		count(&metRaw, &knownRaw, rb, rc)
		refCell := "—"
		if !math.IsNaN(ref) {
			refCell = progress.Rate(ref) + " (= a)"
			if refN > 0 {
				refCell = fmt.Sprintf("%s (median of %d)", progress.Rate(ref), refN)
			}
		}
		records := "—"
		if r.Records >= 0 {
			records = strconv.Itoa(r.Records)
		}
		bound := spec.RowBound(r.Row)
		row(&b, []string{fmt.Sprintf("%g ms", msOf(r.Row.Latency)), fmt.Sprintf("%g %%", r.Row.Loss),
			progress.Rate(bound.Bound) + " " + theoryLimits[bound.Limit],
			tuneRate(best), flags, refCell, medianCell(r.Empty, eb, ebN), tuneChoice(r.EmptyRec), tuneRatioCell(qb), tuneRatioCell(rb),
			records, medianCell(r.Hist, hc, hcN), tuneChoice(r.HistRec), tuneRatioCell(qc), tuneRatioCell(rc), tuneRate(r.GCT),
			tuneETA(r.Empty, r.EmptyRec), tuneETA(r.Hist, r.HistRec)})
	}
	fmt.Fprintf(&b, "\nBound: the least of the link's goodput (L) and the Mathis bound (M) at p = %d.\n", s.MaxP)
	for i, name := range []string{"(b) empty history", "(c) with history"} {
		fmt.Fprintf(&b, "%s: ≥ %.2f of the reference (a′) in %d of %d rows, ≥ %.2f in %d; of the raw best (a): ≥ %.2f in %d of %d, ≥ %.2f in %d.\n",
			name, TuneTarget, met[i][0], known[i], TuneTargetHigh, met[i][1], TuneTarget, metRaw[i][0], knownRaw[i], TuneTargetHigh, metRaw[i][1])
	}
	writeTuneActions(&b, rows)
	writeTuneDoubts(&b, rows)
	if plot && len(rows) > 0 {
		fmt.Fprintf(&b, "\n![%s](%s.svg)\n", p.Name, p.Name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTuneActions lists what the on-the-fly tuning of each automatic
// run of (b) and (c) did, from the record it left in its history.
func writeTuneActions(b *strings.Builder, rows []TuneRowResult) {
	head := false
	for _, r := range rows {
		for _, res := range r.All() {
			if res.Tuning == "" || strings.HasSuffix(res.Cell.Grid, RoleFiller) {
				continue
			}
			if !head {
				b.WriteString("\nWhat the automatic runs' tuning did (from their history records):\n\n")
				head = true
			}
			fmt.Fprintf(b, "- %s (%s Mbit/s): %s\n", res.Cell.Grid, fmtF(res.Mbps, 0), oneLine(res.Tuning))
		}
	}
}

// oneLine joins the lines of s with "; ".
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ⏵ ")), " ")
}

// writeTuneDoubts lists the cells that failed or failed the fidelity
// checks, or says every cell passed.
func writeTuneDoubts(b *strings.Builder, rows []TuneRowResult) {
	var flagged []string
	for _, r := range rows {
		for _, res := range r.All() {
			where := res.Cell.Grid
			if res.Cell.Explicit {
				where += " " + TuneSetting{res.Cell.P, res.Cell.Buffer}.String()
			}
			if res.Ended == EndFailed {
				flagged = append(flagged, where+" failed: "+firstLine(res.Err))
			} else if v := res.Validity(); len(v) > 0 {
				flagged = append(flagged, where+": "+strings.Join(v, ", "))
			}
		}
	}
	if len(flagged) == 0 {
		if len(rows) > 0 {
			b.WriteString("\nEvery cell passed the fidelity checks (delay p99 ≤ 0.5 ms, no queue drops, loss as set, idle host).\n")
		}
		return
	}
	b.WriteString("\nCells to doubt (fidelity checks or failures):\n\n")
	for _, f := range flagged {
		b.WriteString("- " + f + "\n")
	}
}

// tuneSources are the lines of the tune plot, by line style.
var tuneSources = []struct {
	name string
	dash Dash
	get  func(TuneRowResult) WANResult
}{
	{"(a) best hand-tuned", Solid, func(r TuneRowResult) WANResult { b, _ := r.Best(); return b }},
	{"(b) auto, empty history", Dashed, func(r TuneRowResult) WANResult { return r.Empty }},
	{"(c) auto, history", Dotted, func(r TuneRowResult) WANResult { return r.Hist }},
	{"(d) GCT", DashDot, func(r TuneRowResult) WANResult { return r.GCT }},
}

// TunePlot plots the rows: rate against one-way latency, a colour per
// loss rate, a line style per column.
func TunePlot(title string, rows []TuneRowResult) *Plot {
	p := &Plot{Title: title, XLabel: VarLatency.Label(), YLabel: "rate (Mbit/s)"}
	var losses, lats []float64
	for _, r := range rows {
		if !slices.Contains(losses, r.Row.Loss) {
			losses = append(losses, r.Row.Loss)
		}
		if !slices.Contains(lats, msOf(r.Row.Latency)) {
			lats = append(lats, msOf(r.Row.Latency))
		}
	}
	slices.Sort(lats)
	for li, loss := range losses {
		col := Palette[li%len(Palette)]
		for _, src := range tuneSources {
			ser := Series{Color: col, Dash: src.dash}
			any := false
			for _, lat := range lats {
				v := math.NaN()
				for _, r := range rows {
					if r.Row.Loss == loss && msOf(r.Row.Latency) == lat {
						v = rateOf(src.get(r))
					}
				}
				any = any || !math.IsNaN(v)
				ser.Points = append(ser.Points, Point{X: lat, Y: v})
			}
			if any {
				p.Series = append(p.Series, ser)
			}
		}
		p.Legend = append(p.Legend, LegendEntry{Label: fmt.Sprintf("loss %g %%", loss), Color: col})
	}
	for _, src := range tuneSources {
		p.Legend = append(p.Legend, LegendEntry{Label: src.name, Color: color.RGBA{0x44, 0x44, 0x44, 0xff}, Dash: src.dash})
	}
	return p
}

// WriteTuneOutputs writes the results of tune preset p to dir: NAME.csv
// (a row per link), NAME-cells.csv (every cell, as the other presets'
// CSV; the grid column names the row and the cell's role), NAME.md,
// NAME.svg and NAME.png.
func WriteTuneOutputs(dir string, p Preset, rows []TuneRowResult, meta ReportMeta) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	write := func(name string, fn func(io.Writer) error) error { return writeOutput(dir, name, fn) }
	var cells []WANResult
	for _, r := range rows {
		cells = append(cells, r.All()...)
	}
	pl := TunePlot("Automatic tuning: rate vs latency per loss (preset "+p.Name+")", rows)
	for _, f := range []struct {
		name string
		fn   func(io.Writer) error
	}{
		{p.Name + ".csv", func(w io.Writer) error { return WriteTuneCSV(w, *p.Tune, rows) }},
		{p.Name + "-cells.csv", func(w io.Writer) error { return WriteWANCSV(w, cells) }},
		{p.Name + ".md", func(w io.Writer) error { return WriteTuneMarkdown(w, p, rows, meta, true) }},
		{p.Name + ".svg", pl.SVG},
		{p.Name + ".png", pl.PNG},
	} {
		if err := write(f.name, f.fn); err != nil {
			return err
		}
	}
	return nil
}
