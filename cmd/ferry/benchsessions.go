package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ferrygrid/ferry/internal/bench"
)

const benchSessionsHelp = `
"ferry bench sessions" starts ferry serve (anonymous, null storage) and
GCT's globus-gridftp-server on 127.0.0.1 in turn, logs in -active
sessions, then -n idle sessions (anonymous, -concurrency logins in
flight), and then sends -noops NOOPs over the active sessions, one at a
time each, while the idle ones sit there; last, each idle session must
answer one NOOP. It prints a Markdown table of the server memory per idle
session (VmRSS and PSS summed over the server's processes, after minus
before, over the sessions; for Ferry also the Go heap and stacks in use,
from -metrics), the login times, the NOOP latency and the errors.

GCT forks a process per session: it gets at most -gct-max sessions, and
any server stops taking more once the machine's MemAvailable falls below
-min-available or 16 logins in a row fail; the table says where and why.
The benchmark raises its RLIMIT_NOFILE to the hard limit, which the
servers inherit. For example:
  ferry bench sessions -n 10000
`

func runBenchSessions(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(benchVerb("sessions", "[flags]", "memory per idle control session and NOOP latency meanwhile, Ferry and GCT"), e)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), benchSessionsHelp) }
	n := fs.Int("n", 10000, "`N` idle sessions per server")
	gctMax := fs.Int("gct-max", 0, "at most `N` idle sessions (processes) for GCT's server (default: -n)")
	minAvail := fs.String("min-available", "", "stop opening sessions when the machine's MemAvailable falls below `SIZE` (default: a quarter of MemTotal)")
	active := fs.Int("active", 8, "`N` sessions sending the NOOPs")
	noops := fs.Int("noops", 1000, "`N` NOOPs in all over the active sessions")
	conc := fs.Int("concurrency", 32, "`N` logins in flight at once")
	impls := fs.String("impls", "ferry,gct", "comma-separated `IMPLS`: ferry, gct")
	ferry := fs.String("ferry", "", "the ferry `BINARY` to benchmark (default: this executable)")
	dir := fs.String("dir", "", "`DIR` to make the scratch directory in (default: the system's temp dir)")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit `DURATION` of each login and each NOOP")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *n < 1 || *active < 1 || *noops < 1 || *conc < 1 || *gctMax < 0 || *timeout <= 0 {
		return usagef("-n, -active, -noops and -concurrency must be at least 1, -timeout positive")
	}
	cfg := bench.SessionsConfig{Ferry: *ferry, Sessions: *n, GCTMax: *gctMax, Active: *active, NOOPs: *noops,
		Concurrency: *conc, Timeout: *timeout, Dir: *dir, Progress: e.stderr}
	if *minAvail != "" {
		v, err := bench.ParseSize(*minAvail)
		if err != nil {
			return usagef("-min-available: %v", err)
		}
		cfg.MinAvailable = v
	}
	for _, i := range splitList(*impls) {
		cfg.Impls = append(cfg.Impls, bench.Impl(i))
	}
	if cfg.Ferry == "" {
		var err error
		if cfg.Ferry, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this executable: %w (give -ferry)", err)
		}
	}
	results, runErr := bench.RunSessions(ctx, cfg)
	if len(results) > 0 {
		if err := bench.WriteSessionsTable(e.stdout, cfg, results); err != nil {
			return err
		}
	}
	return runErr
}
