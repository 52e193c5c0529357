package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchLoopback runs "ferry bench loopback" once at a small size, with
// every workload (gsi too), against a freshly built ferry binary, the
// installed GCT and iperf3. It checks that the harness works and reports
// every row; it measures nothing. A peak RSS may be "?" (unknown): on a
// loaded machine a run of a few tens of milliseconds can end before the
// first sample of its client's memory.
func TestBenchLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and starts GCT and iperf3")
	}
	bin := buildFerry(t)
	csvFile := filepath.Join(t.TempDir(), "runs.csv")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "loopback", "-ferry", bin, "-size", "32M", "-p", "1,2", "-reps", "1", "-timeout", "1m", "-csv", csvFile,
		"-workloads", "mem,disk,disk-up,gsi", "-logins", "2"})
	t.Logf("stderr:\n%s", stderr.String())
	t.Logf("stdout:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}

	// The main table comes first; the GSI login table follows.
	main, logins, ok := strings.Cut(stdout.String(), "#### GSI login")
	if !ok {
		t.Fatalf("no GSI login table")
	}
	rows := map[string][]string{}
	var header []string
	for _, l := range strings.Split(main, "\n") {
		if !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "| --") {
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
	if len(header) != 14 {
		t.Fatalf("header %q: want 14 columns", header)
	}
	for _, key := range []string{"mem 1", "mem 2", "disk 1", "disk 2", "disk-up 1", "disk-up 2", "gsi-dcau 1", "gsi-dcau 2", "gsi-prot-p 1", "gsi-prot-p 2"} {
		r, ok := rows[key]
		if !ok {
			t.Errorf("no row %q", key)
			continue
		}
		for i, h := range header[2:] {
			c := r[2+i]
			if c == "n/a" {
				if strings.HasPrefix(key, "mem") || !strings.Contains(h, "raw") {
					t.Errorf("row %q: %s is n/a", key, h)
				}
				continue
			}
			checkNumbers(t, key, h, c)
		}
	}
	if len(rows) != 10 {
		t.Errorf("%d rows, want 10", len(rows))
	}

	var loginRows int
	for _, l := range strings.Split(logins, "\n") {
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if !strings.HasPrefix(l, "| with") {
			continue
		}
		loginRows++
		if len(cells) != 5 { // login, Ferry, GCT, GCT/Ferry, machine
			t.Errorf("login row with %d cells, want 5: %s", len(cells), l)
			continue
		}
		for _, c := range cells[1:4] {
			checkNumbers(t, cells[0], "login ms", c)
		}
		checkNumbers(t, cells[0], "machine", cells[4])
	}
	if loginRows != 2 {
		t.Errorf("%d login rows, want 2 (without and with delegation):\n%s", loginRows, logins)
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
	// 2 p × (mem: ferry, gct, raw; disk, disk-up: ferry, gct; gsi-dcau,
	// gsi-prot-p: ferry, gct), one run each, and 2 × 2 logins per server.
	if want := 2*(3+2+2+2+2) + 2*2*2; len(recs) != 1+want {
		t.Errorf("%d CSV records, want a header and %d", len(recs), want)
	}
}

// buildFerry builds the ferry binary for a test.
func buildFerry(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBenchSmallFilesWAN runs the smallfiles workloads (download and
// upload, Ferry's ferry cp -r and GCT's globus-url-copy, each against its
// server) across an emulated WAN with a short delay and a few files: it
// keeps the namespaced path of the benchmark working; it measures
// nothing.
func TestBenchSmallFilesWAN(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry, makes network namespaces and starts GCT")
	}
	bin := buildFerry(t)
	// Not t.TempDir: its parent is private, and GCT's sessions run as nobody.
	dir, err := os.MkdirTemp("", "ferry-bench-wan-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "loopback", "-ferry", bin, "-dir", dir, "-p", "2", "-reps", "1", "-timeout", "1m",
		"-workloads", "smallfiles,smallfiles-up", "-impls", "ferry,gct", "-files", "24", "-wan-delay", "5ms"})
	t.Logf("stderr:\n%s", stderr.String())
	t.Logf("stdout:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	if !strings.Contains(stderr.String(), "emulated WAN up: 5ms one way") {
		t.Errorf("no emulated WAN in the progress")
	}
	_, small, ok := strings.Cut(stdout.String(), "#### Many small files: 24 files of 16K over an emulated WAN")
	if !ok {
		t.Fatalf("no small files table for the emulated WAN")
	}
	for _, row := range []string{"| smallfiles | 2 |", "| smallfiles-up | 2 |"} {
		i := strings.Index(small, row)
		if i < 0 {
			t.Errorf("no row %q", row)
			continue
		}
		line, _, _ := strings.Cut(small[i:], "\n")
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 8 {
			t.Errorf("row %q: %d cells, want 8", line, len(cells))
			continue
		}
		for k, c := range cells[2:] {
			checkNumbers(t, row, []string{"Ferry files/s", "GCT files/s", "Ferry/GCT", "Ferry s", "GCT s", "machine"}[k], c)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("scratch left behind in %s: %v %v", dir, ents, err)
	}
	if ents, _ := filepath.Glob("/etc/netns/ferrybench-*"); len(ents) > 0 {
		for _, e := range ents {
			if strings.Contains(e, "-"+strconv.Itoa(os.Getpid())+"-") {
				t.Errorf("namespace files left behind: %s", e)
			}
		}
	}
}

// checkNumbers checks the numbers of a table cell: "12.34 (…)", "0.48",
// "0.15+0.30", "10/30", "1.85, 0.4 %" (machine; "!" after it marks steal).
// Every number is positive except CPU seconds and the machine's, which
// can round to zero; a peak RSS may be "?" (unknown), nothing else.
func checkNumbers(t *testing.T, row, column, cell string) {
	t.Helper()
	machine := strings.Contains(column, "machine")
	if machine && !regexp.MustCompile(`^\d+\.\d\d, \d+\.\d %( !)?$`).MatchString(cell) {
		t.Errorf("row %q: %s = %q: want cores busy and the share stolen", row, column, cell)
	}
	for _, f := range strings.FieldsFunc(cell, func(r rune) bool { return strings.ContainsRune(" ()–+/,%!", r) }) {
		if f == "?" && strings.Contains(column, "RSS") {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 0 || v == 0 && !strings.Contains(column, "CPU") && !machine {
			t.Errorf("row %q: %s = %q: implausible", row, column, cell)
		}
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
		{"bench", "loopback", "-logins", "0"},
		{"bench", "loopback", "-workloads", "gsi-dcau"},
		{"bench", "loopback", "extra"},
		{"bench", "stripe", "-movers", "0"},
		{"bench", "stripe", "-rate", "fast"},
		{"bench", "stripe", "-size", "0"},
		{"bench", "stripe", "-impls", "raw"},
		{"bench", "stripe", "extra"},
	} {
		var stderr bytes.Buffer
		if code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: &stderr, stderr: &stderr}, args); code != 2 {
			t.Errorf("ferry %s: exit status %d, want 2; stderr %q", strings.Join(args, " "), code, stderr.String())
		}
	}
}
