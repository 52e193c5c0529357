package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hist "github.com/ferrygrid/ferry/internal/history"
)

// seedHistory stores recs in a new SQLite history, made the default.
func seedHistory(t *testing.T, recs ...hist.Record) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "history.db")
	t.Setenv(hist.EnvDSN, db)
	st, err := hist.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range recs {
		if _, err := st.Add(context.Background(), &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func adviseRec(host string, par int, rate float64) hist.Record {
	const size = 1 << 30
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	d := time.Duration(size / rate * float64(time.Second))
	return hist.Record{
		Start: start, End: start.Add(d), Kind: "download", Tool: "cp",
		Src: hist.NewEndpoint("gsiftp", host, 2811), Dst: hist.NewEndpoint("file", "", 0),
		Size: size, Bytes: size, Duration: d, Outcome: hist.OK,
		Params: hist.Params{Mode: "E", Parallel: par, TCPBuffer: 8 << 20},
		Link:   hist.Link{RTT: 30 * time.Millisecond, Bandwidth: 1e9, Retransmits: -1},
	}
}

func TestAdviseFromHistory(t *testing.T) {
	seedHistory(t,
		adviseRec("dtn1.example.org", 4, 40e6),
		adviseRec("dtn1.example.org", 8, 90e6), // #2: the best of this pair
		adviseRec("dtn1.example.org", 16, 70e6),
		adviseRec("dtn9.example.org", 12, 100e6), // #4: same domain
	)
	// Kernel limits differ between machines: keep buffers small enough.
	dst := filepath.Join(t.TempDir(), "out")
	r := ok(t, "advise", "-size", "2G", "gsiftp://dtn1.example.org/data/f", dst)
	for _, want := range []string{"ferry cp -p 8", "basis       host-pair", "#2", "ETA ", "for 2.00 GiB", "took "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}

	r = ok(t, "advise", "-json", "-size", "2G", "-n", "3", "gsiftp://dtn5.example.org/data/f", dst)
	var a adviceReport
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if a.Basis != "domain-pair" || a.Params.Parallel != 12 || len(a.Records) != 1 || a.Records[0] != 4 ||
		a.Files != 3 || a.Params.Concurrency != 3 || a.PredictedRate <= 0 ||
		!(a.ETALow <= a.ETA && a.ETA <= a.ETAHigh) || a.HistoryRecs != 4 {
		t.Errorf("domain pair: %+v", a)
	}

	// Nothing known of this host, no probe: defaults.
	r = ok(t, "advise", "-size", "1G", "gsiftp://unknown.example.net/f", dst)
	if !strings.Contains(r.stdout, "basis       default") || !strings.Contains(r.stdout, "ferry cp -p 4") {
		t.Errorf("unknown host:\n%s", r.stdout)
	}
}

// TestAdviseProbeAndCalibrate runs ferry advise -probe, then -calibrate,
// against an in-process server: the model first, then the host pair
// from the recorded calibration.
func TestAdviseProbeAndCalibrate(t *testing.T) {
	db := seedHistory(t)
	f := startFerrySrv(t)
	if err := os.WriteFile(filepath.Join(f.dir, "data"), make([]byte, 64<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	r := ok(t, "advise", "-json", "-probe", f.url+"/data", dst)
	var a adviceReport
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if a.Basis != "model" || a.Size != 64<<20 || a.PredictedRate <= 0 || a.ETA <= 0 || !strings.Contains(a.Reason, "fresh probe") {
		t.Errorf("after a probe: %+v", a)
	}

	r = ok(t, "advise", "-json", "-calibrate", f.url+"/data", dst)
	a = adviceReport{}
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if a.Basis != "host-pair" || len(a.Records) == 0 || a.PredictedRate <= 0 {
		t.Errorf("after calibrating: %+v", a)
	}
	st, err := hist.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Records(context.Background(), hist.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 8 {
		t.Fatalf("%d calibration records stored, want 8", len(recs))
	}
	for _, rec := range recs {
		if rec.Tool != "calibrate" || rec.Params.Auto || rec.Src.Host != "127.0.0.1" || rec.Dst.Scheme != "file" {
			t.Errorf("calibration record %+v", rec)
		}
	}
}

func TestAdviseUsage(t *testing.T) {
	t.Setenv(hist.EnvDSN, hist.OffDSN)
	for _, args := range [][]string{
		{"advise"},
		{"advise", "a", "b"},
		{"advise", "-size", "x", "ftp://h/f", "b"},
		{"advise", "-n", "0", "ftp://h/f", "b"},
		{"advise", "-calibrate", "ftp://h/f", "ftp://i/g"},
	} {
		if r := ferry(t, nil, args...); r.code != 2 {
			t.Errorf("ferry %v: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}

// TestAdviseUnreachableSource advises without the size when the source
// cannot be reached only for SIZE.
func TestAdviseUnreachableSource(t *testing.T) {
	t.Setenv(hist.EnvDSN, hist.OffDSN)
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	r := ok(t, "advise", "ftp://127.0.0.1:1/f", filepath.Join(t.TempDir(), "out"))
	if !strings.Contains(r.stdout, "ETA         unknown: give -size") || !strings.Contains(r.stderr, "give -size") {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}
