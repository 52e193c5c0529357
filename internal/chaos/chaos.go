package chaos

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Scenario names, in the order Run runs them.
const (
	Kill      = "kill"
	Scan      = "scan"
	ScanOwn   = "scan-own-host"
	Slowloris = "slowloris"
	Disk      = "disk"
)

// Config is what Run does. The zero value of a field means its default.
type Config struct {
	// Ferry is the ferry binary; required.
	Ferry string
	// Dir is where the scratch directory is made (default: the system's
	// temp dir). It is removed at the end.
	Dir string
	// Out, if set, receives the output of failed rounds (goroutine dumps
	// of hung processes, logs).
	Out string
	// Seed seeds every random choice; the same seed makes the same plan.
	Seed uint64
	// Scenarios to run (default: all).
	Scenarios []string
	// Rounds is the number of kill rounds (default 100).
	Rounds int
	// MaxSize is the largest file of a kill round (default 48 MiB).
	MaxSize int64
	// Scans is the number of scan rounds, each an upload and a download
	// with ferry cp -p 8 under a port scan (default 4).
	Scans int
	// ScanSize is the size of a scanned copy (default 64 MiB).
	ScanSize int64
	// ScanNoForgery has the scanners send no forged MODE E blocks: a
	// stray that sends a well-formed transfer cannot be told from the
	// peer without DCAU, and may fail a copy from the client's host.
	ScanNoForgery bool
	// Attack is how long the slowloris attack lasts (default 20s).
	Attack time.Duration
	// StepBound is the longest a single step (one ferry cp run, one
	// start) may take before it counts as a hang (default 90s).
	StepBound time.Duration
	// Progress, if set, receives a line per round.
	Progress io.Writer
}

func (c *Config) fill() error {
	if c.Ferry == "" {
		return errors.New("chaos: no ferry binary")
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = []string{Kill, Scan, ScanOwn, Slowloris, Disk}
	}
	for _, s := range c.Scenarios {
		switch s {
		case Kill, Scan, ScanOwn, Slowloris, Disk:
		default:
			return fmt.Errorf("chaos: unknown scenario %q (kill, scan, scan-own-host, slowloris, disk)", s)
		}
	}
	if c.Rounds <= 0 {
		c.Rounds = 100
	}
	if c.MaxSize <= 0 {
		c.MaxSize = 48 << 20
	}
	if c.Scans <= 0 {
		c.Scans = 4
	}
	if c.ScanSize <= 0 {
		c.ScanSize = 64 << 20
	}
	if c.Attack <= 0 {
		c.Attack = 20 * time.Second
	}
	if c.StepBound <= 0 {
		c.StepBound = 90 * time.Second
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// Result is the outcome of a scenario.
type Result struct {
	Scenario string
	// Rounds run; Corrupt: files whose content differs from the source,
	// or shown under their final name while partial; Lost: copies that
	// never succeeded within their bounds, or files missing after a
	// success; Hangs: steps that outlived Config.StepBound (or, for
	// slowloris, probes that did); Failed: other broken expectations
	// (an unclear reply, a slow server), described in Notes.
	Rounds, Corrupt, Lost, Hangs, Failed int
	// MidCopy (kill): kills that hit a running copy.
	MidCopy int
	// MaxTime: kill, the longest recovery (from the kill to the copy's
	// success); scan, the longest copy; slowloris, the highest login and
	// NOOP latency of the good client; disk, the longest failing copy.
	MaxTime time.Duration
	Notes   []string
}

// OK reports whether r found no fault.
func (r *Result) OK() bool { return r.Corrupt+r.Lost+r.Hangs+r.Failed == 0 }

func (r *Result) notef(format string, args ...any) {
	if len(r.Notes) < 50 {
		r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	}
}

// harness is the state of one Run.
type harness struct {
	cfg     Config
	scratch string
	env     []string
	cleanup []func()
}

// Run runs the scenarios of cfg and returns a Result per scenario. The
// error is for the harness itself (it could not start a server, mount a
// file system...); faults found are in the Results.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(cfg.Dir, "ferry-chaos-")
	if err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, scratch: scratch}
	defer func() {
		for i := len(h.cleanup) - 1; i >= 0; i-- {
			h.cleanup[i]()
		}
		os.RemoveAll(scratch)
	}()
	home := filepath.Join(scratch, "home")
	os.MkdirAll(home, 0o755)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "NETRC" && k != "XDG_STATE_HOME" && k != "GLOBUS_TCP_PORT_RANGE" && k != "FERRY_PROFILE" {
			h.env = append(h.env, kv)
		}
	}
	h.env = append(h.env, "HOME="+home, "NETRC="+filepath.Join(home, "no-netrc"), "XDG_STATE_HOME="+filepath.Join(home, "state"))
	if cfg.Out != "" {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return nil, err
		}
	}
	var results []Result
	for _, s := range cfg.Scenarios {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		var r Result
		var err error
		start := time.Now()
		switch s {
		case Kill:
			r, err = h.kill(ctx)
		case Scan:
			r, err = h.scan(ctx, false)
		case ScanOwn:
			r, err = h.scan(ctx, true)
		case Slowloris:
			r, err = h.slowloris(ctx)
		case Disk:
			r, err = h.disk(ctx)
		}
		r.Scenario = s
		fmt.Fprintf(cfg.Progress, "chaos: %s: %d rounds in %v, corrupt %d, lost %d, hangs %d, failed %d\n",
			s, r.Rounds, time.Since(start).Round(time.Second), r.Corrupt, r.Lost, r.Hangs, r.Failed)
		results = append(results, r)
		if err != nil {
			return results, fmt.Errorf("chaos: %s: %w", s, err)
		}
	}
	return results, nil
}

// rng is the scenario's generator: the same seed and scenario give the
// same choices.
func (h *harness) rng(scenario string) *rand.Rand {
	var salt uint64
	for _, c := range scenario {
		salt = salt*131 + uint64(c)
	}
	return rand.New(rand.NewPCG(h.cfg.Seed, salt))
}

// keep writes a failure's text to Config.Out.
func (h *harness) keep(name, text string) string {
	if h.cfg.Out == "" {
		return ""
	}
	p := filepath.Join(h.cfg.Out, name)
	writeFileNoErr(p, text)
	return p
}

// writeRandom writes size bytes from a generator seeded with seed to name
// and returns their SHA-256.
func writeRandom(name string, size int64, seed uint64) ([32]byte, error) {
	f, err := os.Create(name)
	if err != nil {
		return [32]byte{}, err
	}
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24), byte(seed >> 32), 0xc4})
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size)); err != nil {
		f.Close()
		return [32]byte{}, err
	}
	if err := f.Close(); err != nil {
		return [32]byte{}, err
	}
	return [32]byte(h.Sum(nil)), nil
}

// fileSum is the SHA-256 and size of a file.
func fileSum(name string) ([32]byte, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return [32]byte{}, 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return [32]byte(h.Sum(nil)), n, err
}

// WriteTable writes results as a Markdown table.
func WriteTable(w io.Writer, results []Result) error {
	var b strings.Builder
	fmt.Fprintln(&b, "| scenario | rounds | corrupt | lost | hangs | other failures | max time | kills mid-copy |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		mid := "—"
		if r.Scenario == Kill {
			mid = fmt.Sprint(r.MidCopy)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %s |\n", r.Scenario, r.Rounds, r.Corrupt, r.Lost, r.Hangs, r.Failed, r.MaxTime.Round(time.Millisecond), mid)
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "max time: kill, the longest recovery (kill to the copy's success); scan, the longest copy; slowloris, the highest login+NOOP latency of a good client during the attack; disk, the longest failing copy.")
	for _, r := range results {
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "\n- %s: %s", r.Scenario, n)
		}
	}
	fmt.Fprintln(&b)
	_, err := io.WriteString(w, b.String())
	return err
}
