package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/s3server"
)

// TestBenchS3 runs the S3 workloads of "ferry bench loopback" once at a
// small size: ferry cp through ferry serve -storage s3 and the aws CLI,
// both against a SeaweedFS the benchmark starts (the weed the tests
// build), up and down, p 1 and 2. It checks that every row has numbers
// for both implementations and that the CSV has every run; it measures
// nothing.
func TestBenchS3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and starts SeaweedFS")
	}
	weed, err := s3server.Binary()
	if err != nil {
		t.Fatalf("weed: %v", err)
	}
	bin := buildFerry(t)
	csvFile := t.TempDir() + "/runs.csv"
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "loopback", "-ferry", bin, "-weed", weed, "-dir", t.TempDir(), "-size", "24M", "-p", "1,2", "-reps", "1",
		"-timeout", "2m", "-csv", csvFile, "-workloads", "s3,s3-up", "-impls", "ferry,s3"})
	t.Logf("stderr:\n%s", stderr.String())
	t.Logf("stdout:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	header, rows := benchTable(t, stdout.String())
	want := []string{"workload", "p", "Ferry Gbit/s", "S3 client Gbit/s", "Ferry/S3 client",
		"Ferry CPU s client+server", "S3 client CPU s client+server",
		"Ferry peak RSS MiB client/server", "S3 client peak RSS MiB client/server", "machine: cores busy, max stolen"}
	if !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q", header, want)
	}
	for _, key := range []string{"s3 1", "s3 2", "s3-up 1", "s3-up 2"} {
		r, ok := rows[key]
		if !ok {
			t.Errorf("no row %q", key)
			continue
		}
		for i, h := range header[2:] {
			checkNumbers(t, key, h, r[2+i])
		}
	}
	if len(rows) != 4 {
		t.Errorf("%d rows, want 4", len(rows))
	}
	if !strings.Contains(stdout.String(), "- s3, s3-up: a SeaweedFS server") {
		t.Errorf("no note on the S3 workloads")
	}
	recs := readCSV(t, csvFile)
	if len(recs) == 0 || len(recs) != 1+2*2*2 { // 2 workloads × 2 p × 2 impls
		t.Errorf("%d CSV records, want a header and 8", len(recs))
	}
	for _, rec := range recs[min(1, len(recs)):] {
		if rec[4] != "25165824" {
			t.Errorf("CSV record %q: bytes %s, want 25165824", rec, rec[4])
		}
	}
}

// TestBenchTarWAN runs the smallfiles workloads with ferry cp -r (file by
// file) and ferry cp -r -tar (one tar stream) across an emulated WAN
// with a short delay and a few files, in both directions: it keeps the
// tar implementation of the benchmark working; it measures nothing.
func TestBenchTarWAN(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and makes network namespaces")
	}
	bin := buildFerry(t)
	dir := t.TempDir()
	csvFile := dir + "/runs.csv"
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "loopback", "-ferry", bin, "-dir", dir, "-p", "2", "-reps", "1", "-timeout", "1m", "-csv", csvFile,
		"-workloads", "smallfiles,smallfiles-up", "-impls", "ferry,ferry-tar", "-files", "30", "-file-size", "4K", "-wan-delay", "5ms"})
	t.Logf("stderr:\n%s", stderr.String())
	t.Logf("stdout:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	_, small, ok := strings.Cut(stdout.String(), "#### Many small files: 30 files of 4K over an emulated WAN")
	if !ok {
		t.Fatalf("no small files table for the emulated WAN")
	}
	header, rows := benchTable(t, small)
	want := []string{"workload", "p", "Ferry files/s", "Ferry tar files/s", "Ferry tar/Ferry", "Ferry s", "Ferry tar s", "machine: cores busy, max stolen"}
	if !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q", header, want)
	}
	for _, key := range []string{"smallfiles 2", "smallfiles-up 2"} {
		r, ok := rows[key]
		if !ok {
			t.Errorf("no row %q", key)
			continue
		}
		for i, h := range header[2:] {
			checkNumbers(t, key, h, r[2+i])
		}
	}
	if !strings.Contains(small, "- Ferry tar: `ferry cp -r -tar`") {
		t.Errorf("no note on ferry-tar")
	}
	recs := readCSV(t, csvFile)
	var tar int
	for _, rec := range recs[min(1, len(recs)):] {
		if rec[1] == "ferry-tar" {
			tar++
		}
	}
	if len(recs) != 1+4 || tar != 2 {
		t.Errorf("%d CSV records (%d ferry-tar), want a header and 4 (2 ferry-tar)", len(recs), tar)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 { // runs.csv
		t.Errorf("scratch left behind in %s: %v %v", dir, ents, err)
	}
}

// benchTable parses the first Markdown table of s: its header and its
// rows by "workload p".
func benchTable(t *testing.T, s string) ([]string, map[string][]string) {
	t.Helper()
	var header []string
	rows := map[string][]string{}
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "| ") {
			if header != nil && len(rows) > 0 {
				break
			}
			continue
		}
		if strings.HasPrefix(l, "| --") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if header == nil {
			header = cells
			continue
		}
		if len(cells) != len(header) {
			t.Errorf("row with %d cells, want %d: %s", len(cells), len(header), l)
			continue
		}
		rows[cells[0]+" "+cells[1]] = cells
	}
	if header == nil {
		t.Fatalf("no table in:\n%s", s)
	}
	return header, rows
}
