package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ferrygrid/ferry/internal/bench"
	"github.com/ferrygrid/ferry/internal/chaos"
)

const benchChaosHelp = `
"ferry bench chaos" proves that Ferry survives faults, with real ferry
serve, ferry mover and ferry cp processes on 127.0.0.1 (internal/chaos):

  kill           -rounds copies (upload or download; -p 1, -p 4 or striped
                 over two movers; random size) with a SIGKILL of the
                 client, the server or a mover at a random point; the dead
                 process is started again and the same ferry cp run again
                 (resume) until it succeeds. No file may be corrupt, lost,
                 hung, or shown under its final name while partial.
  scan           -scans downloads and uploads with ferry cp -p 8 while a
                 scanner from 127.0.0.2 connects to the server's passive
                 port range and to each announced data port (sniffed from
                 the control channel) and closes, sends garbage, forges a
                 MODE E block, holds the connection or reads from it
                 (globus-toolkit#93). The copies must finish intact.
  scan-own-host  the same from 127.0.0.1, the client's own address.
  slowloris      slow control connections, half-open uploads and unread
                 downloads for -attack, while a good client's login+NOOP
                 latency is measured (ferry serve -max-sessions-per-source,
                 -max-sessions, -stall-timeout, -idle-timeout).
  disk           uploads and downloads onto a tmpfs that fills up, and an
                 upload onto one remounted read-only (root only).

It prints a Markdown table: rounds, corrupt, lost and hung copies, other
failures and the longest recovery (or latency) per scenario, and notes.
The same -seed gives the same plan. It exits 1 if any fault was found.
`

func runBenchChaos(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(benchVerb("chaos", "[flags]", "kill, scan, slow down and starve Ferry's servers and clients; count corrupt, lost and hung copies"), e)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), benchChaosHelp) }
	rounds := fs.Int("rounds", 100, "`N` kill rounds")
	scans := fs.Int("scans", 4, "`N` scan rounds (a download and an upload each) per scan scenario")
	seed := fs.Uint64("seed", 1, "`SEED` of every random choice")
	attack := fs.Duration("attack", 20*time.Second, "how long (`DURATION`) the slowloris attack lasts")
	maxSize := fs.String("max-size", "48M", "largest file `SIZE` of a kill round")
	scenarios := fs.String("scenarios", "", "comma-separated `NAMES` to run (default: kill,scan,scan-own-host,slowloris,disk)")
	out := fs.String("out", "", "keep goroutine dumps and logs of failed rounds in `DIR`")
	dir := fs.String("dir", "", "`DIR` to make the scratch directory in (default: the system's temp dir)")
	ferry := fs.String("ferry", "", "the ferry `BINARY` to run (default: this executable)")
	bound := fs.Duration("step-bound", 90*time.Second, "a step (one ferry cp run) longer than `DURATION` is a hang")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *rounds < 1 || *scans < 1 || *attack <= 0 || *bound <= 0 {
		return usagef("-rounds and -scans must be at least 1, -attack and -step-bound positive")
	}
	size, err := bench.ParseSize(*maxSize)
	if err != nil || size < 2<<20 {
		return usagef("-max-size: want at least 2M (%v)", err)
	}
	cfg := chaos.Config{Ferry: *ferry, Dir: *dir, Out: *out, Seed: *seed, Rounds: *rounds, Scans: *scans,
		Attack: *attack, MaxSize: size, StepBound: *bound, Scenarios: splitList(*scenarios), Progress: e.stderr}
	if cfg.Ferry == "" {
		if cfg.Ferry, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this executable: %w (give -ferry)", err)
		}
	}
	if cfg.Out != "" {
		if cfg.Out, err = filepath.Abs(cfg.Out); err != nil {
			return err
		}
	}
	results, runErr := chaos.Run(ctx, cfg)
	if len(results) > 0 {
		if err := chaos.WriteTable(e.stdout, results); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	for _, r := range results {
		if !r.OK() {
			return exitError{code: 1}
		}
	}
	return nil
}
