package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ferrygrid/ferry/internal/bench"
	"github.com/ferrygrid/ferry/internal/wan"
)

const benchReplicasHelp = `
"ferry bench replicas" measures the replica catalogue's copies: it builds
a lab of network namespaces on one bridge, one host per -rates entry
running ferry serve behind a link limited to that rate each way (htb), and
a client host with an unlimited link. Every server holds the same file of
-size random bytes, registered as replicas of one logical name (CRC32C)
and probed once from the client (ferry probe). Then, -reps times, it
times ferry cp lfn:/PATH (the single replica it ranks best), ferry cp
-sources N lfn:/PATH (all at once) and, with -kill, the same with the
fastest replica's server killed a quarter of the way through; each copy
goes to tmpfs and is compared with the file. It prints a Markdown table:
the rate against its ceiling (the fastest link for one source, the sum of
the links for several), which replica was chosen and what each gave, and
what the machine's CPUs did (every server, the client, the bridge and the
shapers share them). It must run as root.
`

func runBenchReplicas(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(benchVerb("replicas", "[flags]", "benchmark choosing among replicas and multi-source downloads (ferry cp lfn:) in network namespaces"), e)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), benchReplicasHelp) }
	rates := fs.String("rates", "100M,200M,400M", "comma-separated link `RATES` of the replicas, each way (bit/s with K, M or G)")
	size := fs.String("size", "1G", "the file's `SIZE`")
	reps := fs.Int("reps", 3, "`N` runs of each mode")
	kill := fs.Bool("kill", true, "also a multi-source copy whose fastest replica is killed a quarter of the way through")
	lf := addLabBenchFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	cfg := bench.ReplicasConfig{Ferry: *lf.ferry, Reps: *reps, Kill: *kill, Dir: *lf.dir, Timeout: *lf.timeout, Progress: e.stderr}
	for _, s := range splitList(*rates) {
		r, err := wan.ParseRate(s)
		if err != nil || r <= 0 {
			return usagef("-rates: want positive rates (%q: %v)", s, err)
		}
		cfg.Rates = append(cfg.Rates, r)
	}
	if len(cfg.Rates) < 2 || len(cfg.Rates) > 16 {
		return usagef("-rates: want 2 to 16 replicas")
	}
	var err error
	if cfg.Size, err = bench.ParseSize(*size); err != nil || cfg.Size <= 0 {
		return usagef("-size: want a positive size (%v)", err)
	}
	if *reps < 1 || *lf.timeout <= 0 {
		return usagef("-reps must be at least 1, -timeout positive")
	}
	if err := defaultFerry(&cfg.Ferry); err != nil {
		return err
	}
	results, runErr := bench.RunReplicas(ctx, cfg)
	return finishLabBench(e, *lf.csv, results, runErr,
		func(w io.Writer) error { return bench.WriteReplicasTable(w, cfg, results) },
		func(w io.Writer) error { return bench.WriteReplicasCSV(w, cfg, results) },
		func(r bench.ReplicasResult) bool { return r.Err != "" })
}
