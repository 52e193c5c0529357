package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchStripe runs "ferry bench stripe" with 1 and 2 data nodes a side
// at a small size, Ferry (a freshly built binary) and GCT, on a real lab
// (network namespaces, a bridge, htb). It checks that every cell ran and
// that no namespace or scratch directory is left behind; it measures
// nothing.
func TestBenchStripe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and starts striped servers in network namespaces")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Not t.TempDir: its parent is private, and GCT's sessions run as nobody.
	scratch, err := os.MkdirTemp("", "ferry-stripe-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scratch) })
	os.Chmod(scratch, 0o755)
	csvPath := filepath.Join(t.TempDir(), "stripe.csv")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "stripe", "-ferry", bin, "-movers", "1,2", "-size", "4M", "-rate", "400M", "-reps", "1", "-dir", scratch,
		"-csv", csvPath})
	t.Logf("stderr:\n%s", stderr.String())
	t.Logf("stdout:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	rows := 0
	for _, l := range strings.Split(stdout.String(), "\n") {
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) != 8 || (cells[0] != "1" && cells[0] != "2") {
			continue
		}
		rows++
		for _, c := range []string{cells[2], cells[5]} { // ferry, gct
			rate, err := strconv.ParseFloat(strings.Fields(c)[0], 64)
			if err != nil || rate <= 0 {
				t.Errorf("row %s: rate %q", cells[0], c)
			}
		}
		for _, c := range []string{cells[4], cells[7]} { // "1.23, 0.4 %": the copy kept some CPU busy
			busy, err := strconv.ParseFloat(strings.TrimSuffix(strings.Fields(c)[0], ","), 64)
			if err != nil || busy <= 0 || busy > float64(runtime.NumCPU()) {
				t.Errorf("row %s: cores busy %q", cells[0], c)
			}
		}
	}
	if rows != 2 {
		t.Errorf("%d table rows, want 2", rows)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 1+4 { // header, 2 counts × 2 implementations
		t.Errorf("CSV: %d records (%v), want 5", len(recs), err)
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Errorf("scratch left behind: %v", ents)
	}
	prefix := "ferrybench-" + strconv.Itoa(os.Getpid()) + "-"
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			t.Errorf("namespace %s left behind", e.Name())
		}
	}
}
