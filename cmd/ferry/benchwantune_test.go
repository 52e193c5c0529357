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

	"github.com/ferrygrid/ferry/internal/bench"
)

func TestBenchWANTuneHelp(t *testing.T) {
	r := ferry(t, nil, "bench", "wan", "-h")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "\n  tune ") || !strings.Contains(r.stdout+r.stderr, "\n  tune-ci ") {
		t.Errorf("bench wan -h: exit %d, the presets tune and tune-ci not listed:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ferry(t, nil, "bench", "wan", "-preset", "tune", "-list")
	if r.code != 0 || !strings.Contains(r.stdout, "12 rows") || !strings.Contains(r.stdout, "tune 50ms 1%: auto-history") ||
		!strings.Contains(r.stdout, "-p 32 -tcp-bs 4M") || !strings.Contains(r.stdout, "264 cells as planned") ||
		!strings.Contains(r.stdout, "tune 50ms 1%: hand-again") {
		t.Errorf("bench wan -preset tune -list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ferry(t, nil, "bench", "wan", "-preset", "tune", "-grids", "x", "-out", t.TempDir()); r.code != 2 {
		t.Errorf("tune with -grids: exit %d, want 2", r.code)
	}
	// The old method: no re-runs of the winner, (b) and (c) once.
	r = ferry(t, nil, "bench", "wan", "-preset", "tune", "-list", "-remeasure", "0", "-repeat", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "204 cells as planned") || strings.Contains(r.stdout, "hand-again") {
		t.Errorf("bench wan -preset tune -list -remeasure 0 -repeat 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ferry(t, nil, "bench", "wan", "-preset", "tune", "-list", "-cell-time", "-1s"); r.code != 2 {
		t.Errorf("-cell-time -1s: exit %d, want 2", r.code)
	}
}

// TestBenchWANTuneCI runs "ferry bench wan -preset tune-ci": one row (5 ms
// one way, 0.1 % loss, 100 Mbit/s, cells of 3 s at the bound) with every
// column: (b) automatic on an empty history, (a) a search of five
// hand-tuned cells, the fillers of (c)'s history, (c) and (d) GCT, each
// over a real emulated link (internal/wan), against a freshly built ferry
// binary and the installed GCT. It checks that the harness works end to
// end and writes every output; it measures nothing but that the rates fit
// through the link.
func TestBenchWANTuneCI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and runs a row of cells over the WAN emulator")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "wan", "-preset", "tune-ci", "-ferry", bin, "-out", out})
	t.Logf("stderr:\n%s", stderr.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	t.Logf("took %v", time.Since(start))

	recs := readCSV(t, filepath.Join(out, "tune-ci.csv"))
	if len(recs) != 2 {
		t.Fatalf("%d records in tune-ci.csv, want a header and a row", len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	row := recs[1]
	get := func(h string) string { return row[col[h]] }
	num := func(h string) float64 {
		v, err := strconv.ParseFloat(get(h), 64)
		if err != nil {
			t.Errorf("%s = %q: %v", h, get(h), err)
		}
		return v
	}
	// Every column has a rate that fits through the 100 Mbit/s link.
	for _, h := range []string{"best_mbit_s", "empty_mbit_s", "history_mbit_s", "gct_mbit_s"} {
		if v := num(h); v <= 0 || v > 100*1.1 {
			t.Errorf("%s = %g Mbit/s: impossible on a 100 Mbit/s link", h, v)
		}
	}
	if n := num("grid_cells"); n < 4 || n > 5 {
		t.Errorf("%g cells of the search, want the 4 coarse ones and at most 5", n)
	}
	if num("empty_over_best") <= 0 || get("empty_meets_0.9") == "" || get("history_meets_0.95") == "" {
		t.Errorf("ratios missing: %v", row)
	}
	// The history of (c): either the client records its transfers and
	// the history reached its six, or it records none and one filler
	// found that out.
	records, fillers := num("history_records"), num("fillers")
	if !(records >= 6 || (records == 0 && fillers == 1)) {
		t.Errorf("history of %g records after %g fillers", records, fillers)
	}
	cells := readCSV(t, filepath.Join(out, "tune-ci-cells.csv"))
	// A header, (b), the search, the winner again, the fillers, (c), (d).
	if n := num("reference_runs"); n != 1 {
		t.Errorf("the winner ran again %g times, want 1", n)
	}
	if num("reference_mbit_s") <= 0 || get("empty_ref_meets_0.9") == "" {
		t.Errorf("reference ratios missing: %v", row)
	}
	if want := 1 + 1 + int(num("grid_cells")) + 1 + int(fillers) + 2; len(cells) != want {
		t.Errorf("%d lines in tune-ci-cells.csv, want %d", len(cells), want)
	}
	for _, c := range cells[1:] {
		if c[0] == "" || !strings.HasPrefix(c[0], "tune 5ms 0.1%: ") {
			t.Errorf("cell of grid %q", c[0])
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "tune-ci.md"))
	if err != nil || !bytes.Contains(md, []byte("# Ferry's automatic tuning over an emulated WAN: preset tune-ci")) ||
		!bytes.Contains(md, []byte("| 5 ms | 0.1 % |")) {
		t.Errorf("tune-ci.md: %v\n%s", err, md)
	}
	for _, name := range []string{"tune-ci.svg", "tune-ci.png"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// readCSV reads a CSV file whole.
func readCSV(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestTuneRows: -grids picks rows of a tune preset by latency and loss,
// and names the rows there are when one is unknown.
func TestTuneRows(t *testing.T) {
	p, err := bench.PresetByName("tune")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := tuneRows(*p.Tune, []string{"10ms/0.1%", "50ms/1%"})
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Rows) != 2 || spec.Rows[0].Latency != 10*time.Millisecond || spec.Rows[1].Loss != 1 {
		t.Fatalf("rows %+v", spec.Rows)
	}
	if len(p.Tune.Rows) != 12 {
		t.Fatalf("the preset itself changed: %d rows", len(p.Tune.Rows))
	}
	if _, err := tuneRows(*p.Tune, []string{"7ms/0%"}); err == nil || !strings.Contains(err.Error(), "1ms/0%, 1ms/0.1%") {
		t.Fatalf("unknown row: %v", err)
	}
}
