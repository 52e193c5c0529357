package bench

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestRunSessionsGCT logs in a few idle sessions to GCT's server (a
// process each) and checks what the table is made of; Ferry's side runs
// with the ferry binary in cmd/ferry (TestBenchSessions).
func TestRunSessionsGCT(t *testing.T) {
	var progress strings.Builder
	cfg := SessionsConfig{Impls: []Impl{GCT}, Sessions: 20, Active: 2, NOOPs: 40, Concurrency: 4,
		Timeout: time.Minute, Progress: &progress}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := RunSessions(ctx, cfg)
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	r := res[0]
	if r.Idle != 20 || r.Stopped != "" || r.Errors() != 0 || r.NOOPs != 40 {
		t.Fatalf("result %+v: want 20 idle sessions, 40 NOOPs, no errors", r)
	}
	// A process per session: the daemon, the active and the idle ones.
	if r.Procs != 1+2+20 {
		t.Errorf("%d server processes, want %d", r.Procs, 1+2+20)
	}
	if r.RSS1 <= r.RSS0 || r.PSS1 <= r.PSS0 || r.Go0 != -1 {
		t.Errorf("memory before/after: RSS %d/%d PSS %d/%d Go %d: want growth, and no Go figure for GCT", r.RSS0, r.RSS1, r.PSS0, r.PSS1, r.Go0)
	}
	if r.NOOPP50 <= 0 || r.NOOPP99 < r.NOOPP50 || r.NOOPMax < r.NOOPP99 || r.LoginP50 <= 0 {
		t.Errorf("latencies out of order: %+v", r)
	}
	var b strings.Builder
	if err := WriteSessionsTable(&b, cfg, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| GCT | 20 | 23 | ") {
		t.Errorf("table without the GCT row:\n%s", b.String())
	}
	t.Logf("\n%s", b.String())
}

// TestSessionsTable: per-session memory, unknown figures, sessions cut
// short and errors are shown.
func TestSessionsTable(t *testing.T) {
	cfg := SessionsConfig{NOOPs: 10, Active: 2}
	res := []SessionsResult{
		{Impl: Ferry, Target: 4, Idle: 4, Procs: 1, RSS0: 1 << 20, RSS1: 1<<20 + 4*8192, PSS0: 0, PSS1: 4 * 4096,
			Go0: 100, Go1: 100 + 4*2048, LoginWall: time.Second, NOOPs: 10, NOOPP50: time.Millisecond},
		{Impl: GCT, Target: 10, Idle: 3, Procs: 4, RSS1: 3 << 20, PSS1: 3 << 19, Go0: -1, Go1: -1,
			Stopped: "MemAvailable 1 MiB below the floor of 2 MiB", LoginErrors: 1, IdleErrors: 2},
	}
	var b strings.Builder
	if err := WriteSessionsTable(&b, cfg, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Ferry | 4 | 1 | 8.0 | 4.0 | 2.0 | ",
		"| GCT | 3 of 10 | 4 | 1024.0 | 512.0 | - | ",
		"GCT stopped at 3 sessions: MemAvailable 1 MiB below the floor of 2 MiB.",
		"GCT errors: 1 logins, 0 NOOPs, 2 idle sessions",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	if v := (SessionsResult{}).PerSession(1, 2); !math.IsNaN(v) {
		t.Errorf("per session of no sessions: %v, want NaN", v)
	}
}

func TestGoMemoryOf(t *testing.T) {
	page := "# HELP go_memstats_heap_inuse_bytes x\ngo_memstats_heap_inuse_bytes 1.5e+06\ngo_memstats_stack_inuse_bytes 65536\ngo_memstats_heap_inuse_bytes_total 7\n"
	if got, err := goMemoryOf(page); err != nil || got != 1500000+65536 {
		t.Errorf("goMemoryOf = %d, %v; want %d", got, err, 1500000+65536)
	}
	if _, err := goMemoryOf("go_memstats_heap_inuse_bytes 1\n"); err == nil {
		t.Error("a page without stacks: no error")
	}
}

func TestKBField(t *testing.T) {
	text := "Rss:  2048 kB\nPss:    1000 kB\nPss_Anon: 5 kB\n"
	if v, err := kBField(text, "Pss"); err != nil || v != 1000<<10 {
		t.Errorf("Pss = %d, %v", v, err)
	}
	if _, err := kBField(text, "Swap"); err == nil {
		t.Error("missing field: no error")
	}
	if _, err := kBField("Pss: x kB\n", "Pss"); err == nil {
		t.Error("bad number: no error")
	}
}

func TestQuantile(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(i + 1)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := quantile(d, c.q); got != c.want {
			t.Errorf("quantile(%v) = %d, want %d", c.q, got, c.want)
		}
	}
}
