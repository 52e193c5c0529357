package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/ferrygrid/ferry/internal/bench"
	"github.com/ferrygrid/ferry/internal/wan"
)

const benchStripeHelp = `
"ferry bench stripe" measures striping: for each count N of -movers it
builds a lab of 2N+1 network namespaces on one bridge (host 0: the client
and both frontends; N source and N destination data nodes, one a host), each
host's link limited to -rate both ways with htb, and times a third-party
copy of N × -size bytes between a striped source and a striped destination:
ferry serve -movers with a ferry mover on each data host (null storage),
steered by ferry cp -stripe, and globus-gridftp-server -r with -dn data
nodes (a sparse tmpfs file to /dev/null), steered by globus-url-copy
-stripe, alternately, -reps times. It prints a Markdown table of the
aggregate rate, its ratio to one data node, and what the machine's CPUs
did meanwhile (cores busy; the share the hypervisor stole): every host's
processes, the bridge and the shapers share this machine's cores, so a
cell whose cores were busy or stolen measured the machine, not the
links. It must run as root.
`

func runBenchStripe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(benchVerb("stripe", "[flags]", "benchmark striped third-party copies (Ferry movers against GCT data nodes) in network namespaces"), e)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), benchStripeHelp) }
	movers := fs.String("movers", "1,2,4", "comma-separated counts `N,...` of data nodes on each side")
	rate := fs.String("rate", "200M", "each host's link `RATE`, each way (bit/s with K, M or G)")
	size := fs.String("size", "256M", "`SIZE` per data node in each run (a run moves N times this)")
	par := fs.Int("p", 2, "`N` data connections per stripe")
	reps := fs.Int("reps", 3, "`N` runs per implementation and count")
	impls := fs.String("impls", "ferry,gct", "comma-separated `IMPLS`: ferry, gct")
	lf := addLabBenchFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	cfg := bench.StripeConfig{Ferry: *lf.ferry, Parallel: *par, Reps: *reps, Dir: *lf.dir, Timeout: *lf.timeout, Progress: e.stderr}
	var err error
	if cfg.Movers, err = parseInts(*movers); err != nil {
		return usagef("-movers: %v", err)
	}
	if cfg.Rate, err = wan.ParseRate(*rate); err != nil {
		return usagef("-rate: %v", err)
	}
	if cfg.PerMover, err = bench.ParseSize(*size); err != nil || cfg.PerMover <= 0 {
		return usagef("-size: want a positive size (%v)", err)
	}
	if *par < 1 || *reps < 1 || *lf.timeout <= 0 {
		return usagef("-p and -reps must be at least 1, -timeout positive")
	}
	for _, i := range splitList(*impls) {
		if i != string(bench.Ferry) && i != string(bench.GCT) {
			return usagef("-impls: unknown implementation %q (ferry, gct)", i)
		}
		cfg.Impls = append(cfg.Impls, bench.Impl(i))
	}
	if slices.Contains(cfg.Impls, bench.Ferry) {
		if err := defaultFerry(&cfg.Ferry); err != nil {
			return err
		}
	}
	results, runErr := bench.RunStripe(ctx, cfg)
	return finishLabBench(e, *lf.csv, results, runErr,
		func(w io.Writer) error { return bench.WriteStripeTable(w, cfg, results) },
		func(w io.Writer) error { return bench.WriteStripeCSV(w, cfg, results) },
		func(r bench.StripeResult) bool { return r.Err != "" })
}
