package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want machineCPU
		bad  bool
	}{
		{"modern", "cpu  100 5 50 1000 20 3 7 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1\n",
			machineCPU{busy: 100 + 5 + 50 + 3 + 7, idle: 1020, steal: 40}, false},
		{"old kernel, no steal", "cpu 10 0 5 100 1 0 0\n", machineCPU{busy: 15, idle: 101}, false},
		{"no cpu line", "cpu0 1 2 3 4\n", machineCPU{}, true},
		{"too short", "cpu 1 2\n", machineCPU{}, true},
		{"negative", "cpu 1 2 3 -4 5 6 7 8\n", machineCPU{}, true},
		{"garbage", "cpu a b c d e\n", machineCPU{}, true},
	}
	for _, tt := range tests {
		got, err := parseProcStat([]byte(tt.in))
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v, error %v", tt.name, got, err, tt.want, tt.bad)
		}
	}
}

func TestShareSince(t *testing.T) {
	before := machineCPU{busy: 1000, idle: 5000, steal: 10}
	after := machineCPU{busy: 1000 + 150, idle: 5000 + 40, steal: 10 + 10}
	got := shareSince(before, after, 2)
	if math.Abs(got.Busy-1.5) > 1e-9 || math.Abs(got.Steal-0.05) > 1e-9 {
		t.Errorf("got %+v, want busy 1.5 cores and steal 0.05", got)
	}
	if got := shareSince(after, after, 2); got != (cpuShare{}) {
		t.Errorf("no time passed: got %+v, want zero", got)
	}
}

// The machine this runs on has a readable /proc/stat whose counters only
// grow.
func TestReadMachineCPU(t *testing.T) {
	a, err := readMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	b, err := readMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if b.busy < a.busy || b.idle < a.idle || b.steal < a.steal || a.busy+a.idle == 0 {
		t.Errorf("counters went from %+v to %+v", a, b)
	}
}

// TestStripeTableLeavesOutStolenRuns: the median counts only runs that
// lost less than stolenLimit of the CPU, the range shows them all, and
// the cell says how many were left out.
func TestStripeTableLeavesOutStolenRuns(t *testing.T) {
	cfg := StripeConfig{Movers: []int{1}, Impls: []Impl{Ferry}, Rate: 200e6, PerMover: 1 << 20, Parallel: 2, Reps: 3}
	run := func(mbps, steal float64) StripeResult {
		return StripeResult{Impl: Ferry, Movers: 1, Bytes: 1e6, Wall: time.Duration(8e6 / mbps * 1e3), CPU: cpuShare{Busy: 0.1, Steal: steal}}
	}
	var b strings.Builder
	if err := WriteStripeTable(&b, cfg, []StripeResult{run(100, 0.30), run(190, 0.01), run(180, 0.02)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| 1 | 200 | 185 (100–190), 1 with ≥5 % stolen left out | 1.00 | 0.10, 30.0 % |") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	WriteStripeTable(&b, cfg, []StripeResult{run(100, 0.30), run(120, 0.20)})
	if !strings.Contains(b.String(), "| 1 | 200 | 110 (100–120) | 1.00 |") {
		t.Errorf("all runs stolen: the median of all, none left out:\n%s", b.String())
	}
}
