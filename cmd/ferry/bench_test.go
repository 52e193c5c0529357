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

// TestBenchLoopback runs "ferry bench loopback" once at a small size (runs
// of a few milliseconds could end between two samples of their peak RSS) against
// a freshly built ferry binary, the installed GCT and iperf3. It checks
// that the harness works and reports every row; it measures nothing.
func TestBenchLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and starts GCT and iperf3")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	csvFile := filepath.Join(t.TempDir(), "runs.csv")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "loopback", "-ferry", bin, "-size", "32M", "-p", "1,2", "-reps", "1", "-timeout", "1m", "-csv", csvFile})
	t.Logf("stderr:\n%s", stderr.String())
	t.Logf("stdout:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}

	rows := map[string][]string{}
	var header []string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if !strings.HasPrefix(l, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if header == nil {
			header = cells
			continue
		}
		if len(cells) != len(header) {
			t.Errorf("row with %d cells, want %d: %s", len(cells), len(header), l)
		}
		rows[cells[0]+" "+cells[1]] = cells
	}
	if len(header) != 13 {
		t.Fatalf("header %q: want 13 columns", header)
	}
	for _, key := range []string{"mem 1", "mem 2", "disk 1", "disk 2"} {
		r, ok := rows[key]
		if !ok {
			t.Errorf("no row %q", key)
			continue
		}
		for i, h := range header[2:] {
			c := r[2+i]
			if c == "n/a" {
				if !strings.HasPrefix(key, "disk") || !strings.Contains(h, "raw") {
					t.Errorf("row %q: %s is n/a", key, h)
				}
				continue
			}
			// "12.34 (…)", "0.48", "0.15+0.30", "10/30": every number is
			// positive except CPU seconds, which can round to zero.
			for _, f := range strings.FieldsFunc(c, func(r rune) bool { return strings.ContainsRune(" ()–+/", r) }) {
				v, err := strconv.ParseFloat(f, 64)
				if err != nil || v < 0 || v == 0 && !strings.Contains(h, "CPU") {
					t.Errorf("row %q: %s = %q: implausible", key, h, c)
				}
			}
		}
	}

	f, err := os.Open(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 2 p × (mem: ferry, gct, raw; disk: ferry, gct), one run each.
	if len(recs) != 1+10 {
		t.Errorf("%d CSV records, want a header and 10", len(recs))
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "-size", "1M"},
		{"bench", "wan"},
		{"bench", "loopback", "-size", "0"},
		{"bench", "loopback", "-size", "lots"},
		{"bench", "loopback", "-p", "0"},
		{"bench", "loopback", "-p", "1,x"},
		{"bench", "loopback", "-reps", "0"},
		{"bench", "loopback", "extra"},
	} {
		var stderr bytes.Buffer
		if code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: &stderr, stderr: &stderr}, args); code != 2 {
			t.Errorf("ferry %s: exit status %d, want 2; stderr %q", strings.Join(args, " "), code, stderr.String())
		}
	}
}
