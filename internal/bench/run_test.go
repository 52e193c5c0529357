package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunReference runs the whole benchmark, without Ferry, once at a small
// size against the installed GCT and iperf3: it proves the harness (servers,
// meters, iperf3 parsing, cleanup); it measures nothing. The Ferry side is
// tested with the ferry binary in cmd/ferry.
func TestRunReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts GCT and iperf3")
	}
	// Not t.TempDir: its parent is private, and GCT's sessions run as nobody.
	dir, err := os.MkdirTemp("", "ferry-bench-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	cfg := Config{Size: 32 << 20, Parallel: []int{1, 2}, Reps: 1, Workloads: Workloads,
		Impls: []Impl{GCT, Raw}, Dir: dir, Timeout: time.Minute, Logins: 2, Files: 40, Progress: &progress}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	samples, err := Run(ctx, cfg)
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	// mem: gct and raw; disk and disk-up: gct only; each at 2 p; gsi: 2
	// rows of gct at 2 p, and 2 logins with and without delegation;
	// smallfiles and smallfiles-up and smallfiles-3pt: gct at 2 p.
	if want := 2*2 + 2 + 2 + 2*2 + 2*2 + 2 + 2 + 2; len(samples) != want {
		t.Fatalf("%d samples, want %d", len(samples), want)
	}
	checkSamples(t, cfg, samples)
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("scratch left behind in %s: %v %v", dir, ents, err)
	}
	var b strings.Builder
	if err := WriteTable(&b, cfg, samples); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
}

// checkSamples checks what cannot fail by timing: every number positive
// (CPU times may round to zero), a peak RSS known or unknown (-1: the
// process ended before its first sample on a loaded machine) but never 0,
// logins with a time and nothing else.
func checkSamples(t *testing.T, cfg Config, samples []Sample) {
	t.Helper()
	rssOK := func(n int64) bool { return n > 0 || n == rssUnknown }
	for _, s := range samples {
		if s.Workload == GSILogin || s.Workload == GSILoginDeleg {
			if s.Wall <= 0 || s.Wall > loginTimeout || s.Rep < 1 || s.Rep > cfg.Logins || s.Gbps != 0 || s.Bytes != 0 {
				t.Errorf("implausible login %+v", s)
			}
			continue
		}
		size := cfg.Size
		if s.Workload.small() {
			size = int64(cfg.smallFiles()) * cfg.smallFileSize()
		}
		if s.Gbps <= 0 || s.Wall <= 0 || !rssOK(s.ClientRSS) || !rssOK(s.ServerRSS) || s.ClientCPU < 0 || s.ServerCPU < 0 ||
			s.Bytes != size || s.Workload == GSI {
			t.Errorf("implausible sample %+v", s)
		}
	}
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]Config{
		"no size":       {Parallel: []int{1}, Workloads: Workloads, Impls: Impls, Ferry: "x"},
		"bad p":         {Size: 1, Parallel: []int{0}, Workloads: Workloads, Impls: Impls, Ferry: "x"},
		"bad logins":    {Size: 1, Parallel: []int{1}, Workloads: Workloads, Impls: Impls, Ferry: "x", Logins: -1},
		"gsi row":       {Size: 1, Parallel: []int{1}, Workloads: []Workload{GSIPriv}, Impls: Impls, Ferry: "x"},
		"bad workload":  {Size: 1, Parallel: []int{1}, Workloads: []Workload{"tape"}, Impls: Impls, Ferry: "x"},
		"bad impl":      {Size: 1, Parallel: []int{1}, Workloads: Workloads, Impls: []Impl{"scp"}, Ferry: "x"},
		"wan mem":       {Size: 1, Parallel: []int{1}, Workloads: []Workload{Mem}, Impls: Impls, Ferry: "x", WANDelay: time.Millisecond},
		"twice":         {Size: 1, Parallel: []int{1, 1}, Workloads: Workloads, Impls: Impls, Ferry: "x"},
		"no ferry":      {Size: 1, Parallel: []int{1}, Workloads: Workloads, Impls: []Impl{Ferry}},
		"missing ferry": {Size: 1, Parallel: []int{1}, Workloads: Workloads, Impls: []Impl{Ferry}, Ferry: "/nonexistent/ferry"},
	} {
		if _, err := Run(ctx, cfg); err == nil || !strings.HasPrefix(err.Error(), "bench: ") {
			t.Errorf("%s: Run = %v, want a bench: error", name, err)
		}
	}
}
