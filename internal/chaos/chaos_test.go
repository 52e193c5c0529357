package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ferryBin is the ferry binary the tests run, built once.
var ferryBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chaos-bin-")
	if err != nil {
		panic(err)
	}
	ferryBin = filepath.Join(dir, "ferry")
	out, err := exec.Command("go", "build", "-o", ferryBin, "github.com/ferrygrid/ferry/cmd/ferry").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runBrief runs scenarios briefly with a fixed seed and fails the test on
// any fault found.
func runBrief(t *testing.T, cfg Config) []Result {
	t.Helper()
	cfg.Ferry, cfg.Out = ferryBin, t.TempDir()
	if cfg.Seed == 0 {
		cfg.Seed = 21
	}
	if d := os.Getenv("CHAOS_OUT"); d != "" {
		cfg.Out = d // keep dumps for a look
	}
	cfg.Progress = testWriter{t}
	start := time.Now()
	results, err := Run(t.Context(), cfg)
	var b strings.Builder
	WriteTable(&b, results)
	t.Logf("%v in %v:\n%s", cfg.Scenarios, time.Since(start).Round(time.Millisecond), b.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%s found faults: %q", r.Scenario, r.Notes)
		}
	}
	return results
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestKillBrief: six rounds of SIGKILL during copies with resume. Seed 16
// plans every mode (-p 1, -p 4, striped), both directions and every
// victim (client, server, mover): downloads -p 1 killing the server,
// striped killing a mover, -p 4 and -p 1 killing the client; uploads -p 1
// killing the server, striped killing a mover. It leaves out a striped
// upload whose server is killed: that one can fail for good (a known
// defect, docs/bench/chaos.md), and the full run (ferry bench chaos)
// counts it.
func TestKillBrief(t *testing.T) {
	res := runBrief(t, Config{Scenarios: []string{Kill}, Rounds: 6, MaxSize: 32 << 20, Seed: 16})
	if len(res) != 1 || res[0].Rounds != 6 {
		t.Fatalf("results %+v", res)
	}
}

// TestScanBrief: a download and an upload with -p 8 under a port scan
// from another address finish intact.
func TestScanBrief(t *testing.T) {
	runBrief(t, Config{Scenarios: []string{Scan}, Scans: 1, ScanSize: 32 << 20})
}

// TestScanOwnHostBrief: strays from the client's own address, which
// neither side can tell from the peer without DCAU, fail no copy when
// they close, send garbage, hold their connection or read
// (docs/bench/chaos.md, defect 2: a MODE E receiver drops a connection
// that ends or garbles before its first valid header). A stray that
// forges a well-formed MODE E transfer may fail a copy (only DCAU tells
// it from the peer), but never corrupts it nor hangs it.
func TestScanOwnHostBrief(t *testing.T) {
	for _, forge := range []bool{false, true} {
		cfg := Config{Scenarios: []string{ScanOwn}, Scans: 2, ScanSize: 32 << 20, StepBound: 24 * time.Second, ScanNoForgery: !forge}
		if forge {
			cfg.Scans = 1
		}
		cfg.Ferry, cfg.Seed, cfg.Out, cfg.Progress = ferryBin, 21, t.TempDir(), testWriter{t}
		results, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := results[0]
		t.Logf("forged blocks %v: %+v", forge, r)
		if r.Corrupt != 0 || r.Hangs != 0 {
			t.Errorf("strays from the client's host corrupted (%d) or hung (%d) copies: %q", r.Corrupt, r.Hangs, r.Notes)
		}
		if !forge && (r.Lost != 0 || r.Failed != 0) {
			t.Errorf("strays from the client's host failed %d copies: %q", r.Lost+r.Failed, r.Notes)
		}
	}
}

// TestSlowlorisBrief: slow control connections, half-open uploads and
// unread downloads for 8 s; a good client stays served.
func TestSlowlorisBrief(t *testing.T) {
	runBrief(t, Config{Scenarios: []string{Slowloris}, Attack: 12 * time.Second})
}

// TestDiskBrief: uploads and downloads onto a full tmpfs, and an upload
// onto one remounted read-only, fail clearly and present no partial file
// as complete.
func TestDiskBrief(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	cfg := Config{Scenarios: []string{Disk}, Ferry: ferryBin, Seed: 21, Out: t.TempDir(), Progress: testWriter{t}}
	results, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	var b strings.Builder
	WriteTable(&b, results)
	t.Log(b.String())
	if r.Corrupt+r.Lost+r.Hangs != 0 {
		t.Errorf("corrupt %d, lost %d, hangs %d: %q", r.Corrupt, r.Lost, r.Hangs, r.Notes)
	}
	// Every failure is clear, and an upload onto the full tmpfs reports
	// the server's 452, not the reset of the data connection the server
	// dropped (docs/bench/chaos.md, defect 3).
	failed := 0
	for _, n := range r.Notes {
		switch {
		case strings.Contains(n, "no 4xx/5xx reply") || strings.Contains(n, "ferry cp succeeded"):
			failed++
			t.Errorf("%s", n)
		case strings.Contains(n, "upload of") && strings.Contains(n, "-byte tmpfs: exit") && !strings.Contains(n, "452"):
			failed++
			t.Errorf("not the server's 452: %s", n)
		}
	}
	if failed == 0 && r.Failed > 0 {
		t.Errorf("%d failures: %q", r.Failed, r.Notes)
	}
}
