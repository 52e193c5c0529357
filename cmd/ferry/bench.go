package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/bench"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "benchmark Ferry against GCT and raw TCP on loopback or an emulated WAN",
		usage:   "[loopback] [flags] | wan -preset NAME [flags] | stripe [flags] | chaos [flags] | replicas [flags] | sessions [flags]",
		run:     runBench,
	})
}

const benchHelp = `
"ferry bench loopback" starts a Ferry server, a GCT server
(globus-gridftp-server) and, per run, an iperf3 server on 127.0.0.1, and
copies -size bytes with ferry cp, globus-url-copy and iperf3 in turn (ferry,
gct, raw, ferry, gct, raw, ...), -reps times per workload and parallelism.
It prints a Markdown table of the median and range of the throughput and
the CPU time and peak RSS of each client and server; progress goes to
stderr. It takes minutes at the default size.

The gsi workload (not in the default set) makes a test PKI, a proxy and a
grid-mapfile in the scratch directory, starts GSI servers (ferry serve with
-cert/-gridmap and null storage; GCT's server with the host credential),
times -logins logins to each with Ferry's client library, without and with
delegation, and then measures memory-to-memory throughput over gsiftp://
with DCAU A and PROT C (row gsi-dcau) and with PROT P (-dcpriv, row
gsi-prot-p). As root it maps the user to the local account ferrygsi,
created with useradd if missing. For example:
  ferry bench loopback -workloads gsi -impls ferry,gct -p 1,4 -size 2G

The s3 and s3-up workloads (not in the default set) start a SeaweedFS
server (weed mini, built by "make deps"; see -weed) on loopback with a
bucket, and compare ferry cp through "ferry serve -storage s3" on that
bucket (impl ferry) with the aws CLI talking to weed directly (impl s3,
aws s3 cp with max_concurrent_requests p and 8 MiB parts; Debian's
awscli is installed when missing, as root): s3 downloads an object of
-size bytes to a new local file, s3-up uploads the file to a new object.
  ferry bench loopback -workloads s3,s3-up -impls ferry,s3 -p 1,4,8 -size 1G

The ferry-tar implementation runs the smallfiles and smallfiles-up
workloads with "ferry cp -r -tar" (the whole tree as one tar stream:
ERET tar down, ESTO tar up; the server gets -allowed-modules tar) beside
ferry's copy file by file; over an emulated WAN (as root):
  ferry bench loopback -workloads smallfiles,smallfiles-up -impls ferry,ferry-tar -p 4 -files 10000 -wan-delay 20ms -dir /dev/shm
`

// benchVerb is the command of a verb of ferry bench, for its usage text.
func benchVerb(verb, usage, summary string) *command {
	return &command{name: "bench " + verb, usage: usage, summary: summary}
}

func runBench(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(benchVerb("loopback", "[flags]", "benchmark Ferry against GCT and raw TCP on loopback (the default verb; also: ferry bench wan -h, ferry bench stripe -h, ferry bench chaos -h, ferry bench replicas -h, ferry bench sessions -h)"), e)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), benchHelp) }
	var mode string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	switch mode {
	case "wan":
		return runBenchWAN(ctx, e, args)
	case "stripe":
		return runBenchStripe(ctx, e, args)
	case "chaos":
		return runBenchChaos(ctx, e, args)
	case "replicas":
		return runBenchReplicas(ctx, e, args)
	case "sessions":
		return runBenchSessions(ctx, e, args)
	}
	size := fs.String("size", "4G", "`SIZE` per run: bytes, with an optional K, M, G or T (binary) suffix")
	par := fs.String("p", "1,4,8", "comma-separated parallelism levels `N,...` (1: stream mode; N: MODE E with N streams)")
	reps := fs.Int("reps", 3, "`N` runs per implementation, workload and parallelism")
	workloads := fs.String("workloads", "mem,disk", "comma-separated `WORKLOADS`: mem (memory to memory), disk (page-cached file downloaded to a new file), disk-up (the same file uploaded to a new file in the server's directory), gsi (gsiftp:// login time, and mem with DCAU A and with PROT P), smallfiles (-files files of -file-size bytes downloaded over p sessions: globus-url-copy -r -cc p -pp -fast vs ferry cp -r -cc p), smallfiles-up (the same tree uploaded), smallfiles-3pt (the same tree copied between two servers of one kind: third party), s3 (an object of a SeaweedFS bucket downloaded to a new file: ferry cp through ferry serve -storage s3 vs aws s3 cp), s3-up (the file uploaded to a new object)")
	wanCC := fs.String("wan-cc", "", "with -wan-delay: TCP congestion control `ALG` in both namespaces (e.g. cubic, bbr); default: the system's")
	wanDelay := fs.Duration("wan-delay", 0, "run across an emulated WAN with this one-way delay `DURATION` (servers and clients in two network namespaces, as ferry wan; needs root) instead of loopback; smallfiles workloads only")
	files := fs.Int("files", bench.DefaultSmallFiles, "smallfiles: number of files `N`")
	fileSize := fs.String("file-size", "16K", "smallfiles: `SIZE` of each file")
	impls := fs.String("impls", "ferry,gct,raw", "comma-separated `IMPLS`: ferry, gct, raw (iperf3; mem only), ferry-tar (ferry cp -r -tar; smallfiles and smallfiles-up only), s3 (aws s3 cp; s3 and s3-up only)")
	weed := fs.String("weed", "", "s3 workloads: the SeaweedFS weed `BINARY` (default: $FERRY_WEED, else weed on $PATH, else the one \"make deps\" built)")
	aws := fs.String("aws", "", "s3 workloads: the aws CLI `PROGRAM` of the s3 implementation (default: aws on $PATH, apt-get installed as root when missing)")
	ferry := fs.String("ferry", "", "the ferry `BINARY` to benchmark (default: this executable)")
	dir := fs.String("dir", "", "`DIR` to make the scratch directory in; the scratch directory is removed at the end (default: the system's temp dir)")
	timeout := fs.Duration("timeout", 10*time.Minute, "time limit `DURATION` for each client run")
	csvFile := fs.String("csv", "", "also write every run to `FILE` as CSV")
	serveFlags := fs.String("serve-flags", "", "extra `FLAGS` for every ferry serve the benchmark starts, split at spaces (e.g. \"-direct-io auto\")")
	logins := fs.Int("logins", 20, "gsi: `N` timed logins per server, without and with delegation")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if mode != "loopback" {
		return usagef("want 'ferry bench loopback [flags]', 'ferry bench wan -preset NAME [flags]' or 'ferry bench stripe [flags]'")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	cfg := bench.Config{Ferry: *ferry, Dir: *dir, Timeout: *timeout, Reps: *reps, WANDelay: *wanDelay, WANCongestion: *wanCC, Weed: *weed, AWS: *aws, Progress: e.stderr}
	var err error
	if cfg.Size, err = bench.ParseSize(*size); err != nil {
		return usagef("-size: %v", err)
	}
	if cfg.Parallel, err = parseInts(*par); err != nil {
		return usagef("-p: %v", err)
	}
	if *reps < 1 {
		return usagef("-reps must be at least 1")
	}
	if *timeout <= 0 {
		return usagef("-timeout must be positive")
	}
	if *logins < 1 {
		return usagef("-logins must be at least 1")
	}
	cfg.Logins = *logins
	cfg.FerryServeFlags = strings.Fields(*serveFlags)
	if *files < 1 {
		return usagef("-files must be at least 1")
	}
	cfg.Files = *files
	if cfg.FileSize, err = bench.ParseSize(*fileSize); err != nil {
		return usagef("-file-size: %v", err)
	}
	for _, w := range splitList(*workloads) {
		if !slices.Contains(bench.Workloads, bench.Workload(w)) {
			return usagef("-workloads: unknown workload %q (mem, disk, disk-up, gsi, smallfiles, smallfiles-up, smallfiles-3pt, s3, s3-up)", w)
		}
		cfg.Workloads = append(cfg.Workloads, bench.Workload(w))
	}
	for _, i := range splitList(*impls) {
		if !slices.Contains(bench.Impls, bench.Impl(i)) {
			return usagef("-impls: unknown implementation %q (ferry, gct, raw, ferry-tar, s3)", i)
		}
		cfg.Impls = append(cfg.Impls, bench.Impl(i))
	}
	if err := defaultFerry(&cfg.Ferry); err != nil {
		return err
	}
	samples, runErr := bench.Run(ctx, cfg)
	if *csvFile != "" && len(samples) > 0 {
		if err := writeBenchCSV(*csvFile, samples); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	return bench.WriteTable(e.stdout, cfg, samples)
}

// writeBenchCSV writes the samples to file.
func writeBenchCSV(file string, samples []bench.Sample) error {
	return writeFileWith(file, func(w io.Writer) error { return bench.WriteCSV(w, samples) })
}

// writeFileWith creates file and fills it with write.
func writeFileWith(file string, write func(io.Writer) error) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, v := range splitList(s) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad parallelism %q", v)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no parallelism given")
	}
	return out, nil
}
