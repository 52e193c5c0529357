package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hist "github.com/ferrygrid/ferry/internal/history"
)

// TestProbeCommand probes an in-process Ferry server, prints the summary
// and the JSON, and finds the probes in the history.
func TestProbeCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "history.db")
	t.Setenv(hist.EnvDSN, db)
	f := startFerrySrv(t)
	if err := os.WriteFile(filepath.Join(f.dir, "data"), make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "probe", "-t", "200ms", "-upload", "/probe.tmp", f.url+"/data")
	for _, want := range []string{"probe of " + f.url + "/data (stored as probe #1)", "control RTT", "median of 5 NOOPs",
		"throughput", "segments retransmitted", "server accepts SBUF 1.00 GiB", "ERET"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "probe.tmp")); !os.IsNotExist(err) {
		t.Errorf("upload burst left its file: %v", err)
	}

	// -json, a directory URL (its largest file), stored as #2.
	r = ok(t, "probe", "-json", "-t", "200ms", "-p", "2", f.url+"/")
	var out []probeReport
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(out) != 1 || out[0].ID != 2 || out[0].RTT <= 0 || out[0].Bandwidth <= 0 || out[0].Retransmits != -1 ||
		len(out[0].Bursts) != 1 || out[0].Bursts[0].Path != "/data" || out[0].Bursts[0].Streams != 2 {
		t.Errorf("JSON %+v", out)
	}

	r = ok(t, "history", "probes", "-json")
	if n := strings.Count(r.stdout, `"host": "127.0.0.1"`); n != 2 {
		t.Errorf("history probes shows %d probes of 127.0.0.1:\n%s", n, r.stdout)
	}
}

func TestProbeUsage(t *testing.T) {
	t.Setenv(hist.EnvDSN, hist.OffDSN)
	for _, args := range [][]string{
		{"probe"},
		{"probe", "/local/path"},
		{"probe", "-p", "0", "ftp://127.0.0.1:1/"},
		{"probe", "ftp://a/", "ftp://b/", "ftp://c/"},
	} {
		if r := ferry(t, nil, args...); r.code != 2 {
			t.Errorf("ferry %v: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}

// TestProbeTwoServers probes two servers and the third-party link
// between them; the advisor then combines what it knows.
func TestProbeTwoServers(t *testing.T) {
	db := filepath.Join(t.TempDir(), "history.db")
	t.Setenv(hist.EnvDSN, db)
	a, b := startFerrySrv(t), startFerrySrv(t)
	if err := os.WriteFile(filepath.Join(a.dir, "data"), make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "probe", "-t", "200ms", a.url+"/data", b.url+"/")
	for _, want := range []string{"probe of " + a.url + "/data (stored as probe #1)", "probe of " + b.url + "/ (stored as probe #2)",
		"probe of " + a.url + "/data → " + b.url + "/ (stored as probe #3)", "third-party burst: 16.0 MiB", "the servers' own is not seen"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if left, _ := os.ReadDir(b.dir); len(left) != 0 {
		t.Errorf("burst file left on the destination: %v", left)
	}
	r = ok(t, "advise", "-json", "-size", "1G", a.url+"/data", b.url+"/data")
	var adv adviceReport
	if err := json.Unmarshal([]byte(r.stdout), &adv); err != nil {
		t.Fatal(err)
	}
	if adv.Basis != "model" || adv.Probe != 3 || adv.PredictedRate <= 0 {
		t.Errorf("advice for the pair: %+v", adv)
	}
}
