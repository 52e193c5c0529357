package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchWANCI runs "ferry bench wan -preset ci": one point (p = 2,
// 5 ms one way, 0.1 % loss, 100 Mbit/s, 4 s) with Ferry and with GCT, each
// over a real emulated link (internal/wan), against a freshly built ferry
// binary and the installed GCT. It checks that the harness works end to
// end and writes every output; it measures nothing but that the counted
// bytes fit through the link.
func TestBenchWANCI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and runs two cells over the WAN emulator")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "wan", "-preset", "ci", "-ferry", bin, "-out", out})
	t.Logf("stderr:\n%s", stderr.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	t.Logf("took %v", time.Since(start))

	f, err := os.Open(filepath.Join(out, "ci.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d CSV records, want a header and 2 cells", len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	impls := map[string]bool{}
	for _, r := range recs[1:] {
		get := func(h string) string { return r[col[h]] }
		num := func(h string) float64 {
			v, err := strconv.ParseFloat(get(h), 64)
			if err != nil {
				t.Errorf("%s: %s = %q: %v", get("impl"), h, get(h), err)
			}
			return v
		}
		impls[get("impl")] = true
		if get("ended") != "stopped" || get("error") != "" || get("cc") != "cubic" || get("p") != "2" {
			t.Errorf("cell %v: want stopped at 4 s with cubic, p = 2, no error", r)
		}
		// What the client's sockets counted must have fitted through
		// the 100 Mbit/s link (plus a margin for the timing).
		bytes, elapsed, rate := num("bytes"), num("elapsed_s"), num("mbit_s")
		if bytes <= 0 || elapsed < 4 || rate <= 0 || rate > 100*1.1 {
			t.Errorf("%s: %g bytes in %g s = %g Mbit/s: impossible on a 100 Mbit/s link", get("impl"), bytes, elapsed, rate)
		}
		// The emulator reports an idle RTT of about 10 ms and a loss
		// rate near 0.1 % (few packets: loose).
		if rtt := num("idle_rtt_ms"); rtt < 9.5 || rtt > 15 {
			t.Errorf("%s: idle RTT %g ms for 2 × 5 ms", get("impl"), rtt)
		}
		if loss := num("loss_measured_pct"); loss < 0 || loss > 1 {
			t.Errorf("%s: measured loss %g %% for 0.1 %%", get("impl"), loss)
		}
		if num("theory_bound_mbit_s") <= 0 || get("limit") == "" {
			t.Errorf("%s: no theoretical bound", get("impl"))
		}
	}
	if !impls["ferry"] || !impls["gct"] {
		t.Errorf("implementations %v, want ferry and gct", impls)
	}
	md, err := os.ReadFile(filepath.Join(out, "ci.md"))
	if err != nil || !bytes.Contains(md, []byte("# Ferry and GCT over an emulated WAN: preset ci")) {
		t.Errorf("ci.md: %v\n%s", err, md)
	}
	// One point: a table, no plot.
	if _, err := os.Stat(filepath.Join(out, "ci.svg")); err == nil {
		t.Error("a plot of one point")
	}
}
