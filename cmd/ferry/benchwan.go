package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/bench"
	"github.com/ferrygrid/ferry/internal/progress"
)

const benchWANHelp = `
"ferry bench wan" runs the grids of a preset over an emulated WAN (two
network namespaces joined by a userspace forwarder that delays and drops
packets, with an htb rate limit): per cell it starts a link, sets the
profile's socket limits in each namespace and the congestion control, starts
the server in the server namespace (ferry serve -storage null, or
globus-gridftp-server serving /dev/zero), pulls with the client in the
client namespace (ferry cp or globus-url-copy to /dev/null; iperf3 -R for
the raw TCP reference), closes the link and records its fidelity. Ferry and
GCT alternate cell by cell. It must run as root, one cell at a time, on an
otherwise idle machine.

It writes NAME.csv (every cell), NAME.md (tables beside the published
numbers and the theoretical bounds) and a GRID.svg and GRID.png per grid to
-out, after every cell. Method: docs/bench/wan/README.md.

The tune presets prove the automatic tuning instead: per link, the best
hand-tuned ferry cp (a coarse-to-fine search over -p and -tcp-bs), ferry cp
without them on an empty history and after ten transfers of the link, and
globus-url-copy without flags. The best hand-tuned flags run again after
the search (-remeasure) and the median of those runs is the reference of
the ratios: the best of many noisy cells is biased high. They write NAME.csv (a row per link),
NAME-cells.csv, NAME.md, NAME.svg and NAME.png. Presets:
`

func runBenchWAN(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(benchVerb("wan", "-preset NAME -out DIR [flags]", "benchmark Ferry against GCT and iperf3 over emulated wide-area links, grid by grid"), e)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), benchWANHelp)
		for _, p := range bench.Presets {
			fmt.Fprintf(fs.Output(), "  %-12s %s\n", p.Name, p.About)
		}
	}
	preset := fs.String("preset", "", "the `NAME` of the grids to run (see below)")
	out := fs.String("out", "", "`DIR` for the CSV, the Markdown report and the plots (required unless -list)")
	impls := fs.String("impls", "ferry,gct,iperf3", "comma-separated `IMPLS`: ferry, gct, iperf3 (the reference cells)")
	grids := fs.String("grids", "", "comma-separated grid `IDS` of the preset to run, or rows of a tune preset as LATENCY/LOSS (10ms/0.1%) (default: all)")
	ferry := fs.String("ferry", "", "the ferry `BINARY` to benchmark (default: this executable)")
	cc := fs.String("cc", "cubic", "congestion control `ALG` of both namespaces: cubic, bbr or reno")
	seed := fs.Int64("seed", 1, "`SEED` of the emulated loss (cell i uses SEED+i)")
	dir := fs.String("dir", "", "`DIR` for the scratch directory (default: the system's temp dir)")
	list := fs.Bool("list", false, "print the cells and the estimated time, and run nothing")
	remeasure := fs.Int("remeasure", -1, "tune presets: `N` runs of the best hand-tuned flags again after the search, the reference of the ratios (default: the preset's)")
	repeat := fs.Int("repeat", -1, "tune presets: `N` further runs of each automatic column (default: the preset's)")
	cellTime := fs.Duration("cell-time", 0, "tune presets: `DURATION` a cell takes at the row's bound, which sets its size (default: the preset's)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	p, err := bench.PresetByName(*preset)
	if err != nil {
		return usagef("-preset: %v", err)
	}
	if p.Tune != nil {
		if *grids != "" {
			spec, err := tuneRows(*p.Tune, splitList(*grids))
			if err != nil {
				return usagef("-grids: preset %s: %v", p.Name, err)
			}
			p.Tune = &spec
		}
		spec := *p.Tune
		if *remeasure >= 0 {
			spec.Remeasure = *remeasure
		}
		if *repeat >= 0 {
			spec.Repeat = *repeat
		}
		if *cellTime < 0 {
			return usagef("-cell-time: negative")
		}
		if *cellTime > 0 {
			spec.Seconds = *cellTime
		}
		p.Tune = &spec
		return runBenchTune(ctx, e, p, tuneOptions{impls: splitList(*impls), ferry: *ferry, cc: *cc, seed: *seed,
			dir: *dir, out: *out, list: *list, args: args})
	}
	if *grids != "" {
		want := splitList(*grids)
		var keep []bench.Grid
		for _, g := range p.Grids {
			if slices.Contains(want, g.ID) {
				keep = append(keep, g)
			}
		}
		if len(keep) != len(want) {
			return usagef("-grids: preset %s has grids %s", p.Name, gridIDs(p))
		}
		p.Grids = keep
	}
	var sel []bench.Impl
	for _, i := range splitList(*impls) {
		if !slices.Contains(bench.WANImpls, bench.Impl(i)) {
			return usagef("-impls: unknown implementation %q (ferry, gct, iperf3)", i)
		}
		sel = append(sel, bench.Impl(i))
	}
	cells := p.Expand(sel)
	if *list {
		for i, c := range cells {
			fmt.Fprintf(e.stdout, "%3d %-20s %-6s p=%-2d bs=%-6s lat=%-6s loss=%-5g rate=%-9s %-13s %s\n", i+1, c.Grid, c.Impl, c.P,
				bench.VarBuffer.Format(float64(c.Buffer)), c.Latency, c.Loss, fmt.Sprintf("%gM", float64(c.Rate)/1e6), c.Profile, cellLimit(c))
		}
		fmt.Fprintf(e.stdout, "%d cells, about %v\n", len(cells), bench.EstimatedTime(cells).Round(time.Minute))
		return nil
	}
	if *out == "" {
		return usagef("-out is required")
	}
	cfg := bench.WANConfig{Ferry: *ferry, Cells: cells, CC: *cc, Seed: *seed, Dir: *dir, Progress: e.stderr}
	if cfg.Ferry == "" && slices.Contains(sel, bench.Ferry) {
		if cfg.Ferry, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this executable: %w (give -ferry)", err)
		}
	}
	meta := bench.ReportMeta{Command: "ferry bench wan " + strings.Join(args, " "), Start: time.Now(), CC: *cc}
	var results []bench.WANResult
	var writeErr error
	cfg.OnResult = func(r bench.WANResult) {
		results = append(results, r)
		writeErr = bench.WriteWANOutputs(*out, p, results, meta)
	}
	fmt.Fprintf(e.stderr, "bench: %d cells, about %v\n", len(cells), bench.EstimatedTime(cells).Round(time.Minute))
	_, runErr := bench.RunWAN(ctx, cfg)
	if runErr != nil {
		return runErr
	}
	if writeErr != nil {
		return writeErr
	}
	failed := 0
	for _, r := range results {
		if r.Ended == bench.EndFailed {
			failed++
		}
	}
	abs, _ := filepath.Abs(*out)
	fmt.Fprintf(e.stderr, "bench: wrote %s\n", filepath.Join(abs, p.Name+".md"))
	if failed > 0 {
		return fmt.Errorf("%d of %d cells failed (see %s)", failed, len(results), filepath.Join(abs, p.Name+".md"))
	}
	return nil
}

// gridIDs lists a preset's grid IDs.
func gridIDs(p bench.Preset) string {
	ids := make([]string, len(p.Grids))
	for i, g := range p.Grids {
		ids[i] = g.ID
	}
	return strings.Join(ids, ", ")
}

// cellLimit says how a cell ends.
func cellLimit(c bench.WANCell) string {
	if c.Size >= 1<<40 {
		return "for " + c.Duration.String()
	}
	return fmt.Sprintf("%s (stop at %v)", progress.Size(c.Size), c.Duration)
}

// tuneOptions are the flags of "ferry bench wan" a tune preset uses.
type tuneOptions struct {
	impls    []string
	ferry    string
	cc       string
	seed     int64
	dir, out string
	list     bool
	args     []string
}

// runBenchTune runs a tune preset (see bench.RunTune): -impls chooses
// whether GCT's column runs (Ferry's always do; iperf3 has none).
func runBenchTune(ctx context.Context, e *env, p bench.Preset, o tuneOptions) error {
	gct := false
	for _, i := range o.impls {
		switch bench.Impl(i) {
		case bench.Ferry, bench.IPerf3:
		case bench.GCT:
			gct = true
		default:
			return usagef("-impls: unknown implementation %q (ferry, gct, iperf3)", i)
		}
	}
	plan := p.Tune.Plan(gct)
	if o.list {
		fmt.Fprintf(e.stdout, "%s: %d rows, search %d cells a row at most (p %v × -tcp-bs %v, then p refined), the best run %d more times, history of %d, automatic cells run %d times\n",
			p.Name, len(p.Tune.Rows), p.Tune.Search.Budget, p.Tune.Search.Ps, bufferList(p.Tune.Search.Buffers), p.Tune.Remeasure, p.Tune.HistoryTarget, 1+p.Tune.Repeat)
		for i, c := range plan {
			set := "auto (no -p, no -tcp-bs)"
			if c.Explicit {
				set = fmt.Sprintf("-p %d -tcp-bs %s", c.P, bench.VarBuffer.Format(float64(c.Buffer)))
			}
			if c.Impl == bench.GCT {
				set = "no flags"
			}
			fmt.Fprintf(e.stdout, "%3d %-28s %-6s %-26s rate=%-6s %s\n", i+1, c.Grid, c.Impl, set,
				fmt.Sprintf("%gM", float64(c.Rate)/1e6), cellLimit(c))
		}
		fmt.Fprintf(e.stdout, "%d cells as planned (a refinement as it might go; fillers as if every hand cell is recorded), about %v\n", len(plan), bench.EstimatedTime(plan).Round(time.Minute))
		return nil
	}
	if o.out == "" {
		return usagef("-out is required")
	}
	cfg := bench.TuneConfig{Ferry: o.ferry, Spec: *p.Tune, GCT: gct, CC: o.cc, Seed: o.seed, Dir: o.dir, Progress: e.stderr}
	if cfg.Ferry == "" {
		var err error
		if cfg.Ferry, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this executable: %w (give -ferry)", err)
		}
	}
	meta := bench.ReportMeta{Command: "ferry bench wan " + strings.Join(o.args, " "), Start: time.Now(), CC: o.cc}
	var last []bench.TuneRowResult
	var writeErr error
	cfg.OnRow = func(rows []bench.TuneRowResult) {
		last = rows
		writeErr = bench.WriteTuneOutputs(o.out, p, rows, meta)
	}
	fmt.Fprintf(e.stderr, "bench: %d rows, about %d cells, about %v\n", len(p.Tune.Rows), len(plan), bench.EstimatedTime(plan).Round(time.Minute))
	if _, err := bench.RunTune(ctx, cfg); err != nil {
		return err
	}
	if writeErr != nil {
		return writeErr
	}
	failed, n := 0, 0
	for _, r := range last {
		for _, res := range r.All() {
			n++
			if res.Ended == bench.EndFailed {
				failed++
			}
		}
	}
	abs, _ := filepath.Abs(o.out)
	fmt.Fprintf(e.stderr, "bench: wrote %s\n", filepath.Join(abs, p.Name+".md"))
	if failed > 0 {
		return fmt.Errorf("%d of %d cells failed (see %s)", failed, n, filepath.Join(abs, p.Name+".md"))
	}
	return nil
}

// bufferList renders TCP buffer sizes as -tcp-bs values.
func bufferList(bs []int64) string {
	var out []string
	for _, b := range bs {
		out = append(out, bench.VarBuffer.Format(float64(b)))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// tuneRows keeps the rows of spec named in want, as one-way latency and
// loss: "10ms/0.1%".
func tuneRows(spec bench.TuneSpec, want []string) (bench.TuneSpec, error) {
	var keep []bench.TuneRow
	var have []string
	for _, r := range spec.Rows {
		id := fmt.Sprintf("%gms/%g%%", float64(r.Latency)/float64(time.Millisecond), r.Loss)
		have = append(have, id)
		if slices.Contains(want, id) {
			keep = append(keep, r)
		}
	}
	if len(keep) != len(want) {
		return spec, fmt.Errorf("its rows are %s", strings.Join(have, ", "))
	}
	spec.Rows = keep
	return spec, nil
}
