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
	cfg.Ferry, cfg.Seed, cfg.Out = ferryBin, 21, t.TempDir()
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

// TestKillBrief: five rounds of SIGKILL during copies with resume.
func TestKillBrief(t *testing.T) {
	res := runBrief(t, Config{Scenarios: []string{Kill}, Rounds: 6, MaxSize: 32 << 20})
	if len(res) != 1 || res[0].Rounds != 6 {
		t.Fatalf("results %+v", res)
	}
}
