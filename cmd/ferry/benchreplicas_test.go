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

// TestBenchReplicas runs "ferry bench replicas" at a small size on a real
// lab (network namespaces, a bridge, htb): three Ferry servers holding
// one file behind links of 100, 200 and 400 Mbit/s. The single-source
// copy must choose the 400 Mbit/s replica, the multi-source one read
// from all three, the one whose fastest replica is killed finish from
// the others, and every copy be identical; no namespace or scratch
// directory may be left behind. It asserts no rate: that is for the
// benchmark at 1 GiB on an idle machine (README).
func TestBenchReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and starts servers in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	scratch := t.TempDir()
	csvPath := filepath.Join(t.TempDir(), "replicas.csv")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "replicas", "-ferry", bin, "-size", "24M", "-rates", "100M,200M,400M", "-reps", "1", "-dir", scratch,
		"-timeout", "1m", "-csv", csvPath})
	t.Logf("stderr:\n%s", stderr.String())
	t.Logf("stdout:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	if !strings.Contains(stdout.String(), "The single source chosen was the 400 Mbit/s replica in 1 of 1 runs") {
		t.Errorf("the single source was not the fastest replica")
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 1+3 { // header, single, multi, killed
		t.Fatalf("CSV: %d records (%v), want 4", len(recs), err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, rec := range recs[1:] {
		mode := rec[col["mode"]]
		if rec[col["identical"]] != "true" || rec[col["error"]] != "" {
			t.Errorf("%s: identical %s, error %q", mode, rec[col["identical"]], rec[col["error"]])
		}
		var reads []int64
		for _, h := range []string{"read_from_100000000", "read_from_200000000", "read_from_400000000"} {
			n, _ := strconv.ParseInt(rec[col[h]], 10, 64)
			reads = append(reads, n)
		}
		switch mode {
		case "single":
			if reads[0] != 0 || reads[1] != 0 || reads[2] != 24<<20 {
				t.Errorf("single: read %v, want all from the 400 Mbit/s replica", reads)
			}
		case "multi":
			if reads[0] == 0 || reads[1] == 0 || reads[2] == 0 || reads[0]+reads[1]+reads[2] != 24<<20 {
				t.Errorf("multi: read %v, want some from each, the file once", reads)
			}
		case "killed":
			if reads[0]+reads[1] == 0 {
				t.Errorf("killed: read %v, nothing from the live replicas", reads)
			}
		}
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Errorf("scratch left behind: %v", ents)
	}
	prefix := "ferryrep-" + strconv.Itoa(os.Getpid()) + "-"
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			t.Errorf("namespace %s left behind", e.Name())
		}
	}
}
