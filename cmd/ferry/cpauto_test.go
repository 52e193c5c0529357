package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCpAuto: without -p and -tcp-bs ferry cp lets the advisor choose
// (issue 15): a large file goes in MODE E with several streams and the
// choice is said before the transfer with -v and recorded (Auto); a
// small one stays in stream mode and costs nothing new on stderr;
// -auto=false and explicit flags win.
func TestCpAuto(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(local, "state"))
	db := filepath.Join(local, "history.db")
	big := randomData(t, 16<<20)
	small := randomData(t, 16<<10)
	bigSrc, smallSrc := filepath.Join(local, "big"), filepath.Join(local, "small")
	if err := os.WriteFile(bigSrc, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(smallSrc, small, 0o644); err != nil {
		t.Fatal(err)
	}

	r := ok(t, "cp", "-v", "-history", db, bigSrc, s.url+"/big")
	note, _, _ := strings.Cut(r.stderr, "\n")
	if !strings.HasPrefix(note, "auto: -p ") || strings.HasPrefix(note, "auto: -p 1 ") {
		t.Errorf("upload note %q, want auto: -p N (N > 1) first", note)
	}
	// Downloads learn from downloads: the second from the first.
	ok(t, "cp", "-history", db, s.url+"/big", filepath.Join(local, "big.down0"))
	r = ok(t, "cp", "-v", "-history", db, s.url+"/big", filepath.Join(local, "big.down"))
	if note, _, _ := strings.Cut(r.stderr, "\n"); !strings.HasPrefix(note, "auto: -p ") || !strings.Contains(note, "(history: 1 transfer ") || !strings.Contains(note, "; ETA ") {
		t.Errorf("download note %q, want auto: from the first download's record, with an ETA", note)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(local, "big.down")), big) {
		t.Error("the downloaded file differs")
	}
	// -json: the file's record carries the predicted ETA (files copied
	// on their own: -pp=false, or larger than a batch takes).
	r = ok(t, "cp", "-json", "-pp=false", "-history", db, s.url+"/big", filepath.Join(local, "big.json"))
	if !strings.Contains(r.stdout, `"predicted_eta":`) {
		t.Errorf("-json output lacks predicted_eta: %s", r.stdout)
	}
	r = ok(t, "cp", "-history", db, smallSrc, s.url+"/small")
	if r.stderr != "" || r.stdout != "" {
		t.Errorf("quiet small copy printed %q %q", r.stdout, r.stderr)
	}
	r = ok(t, "cp", "-v", "-auto=false", "-history", db, smallSrc, s.url+"/small2")
	if strings.Contains(r.stderr, "auto:") {
		t.Errorf("-auto=false printed a note: %q", r.stderr)
	}
	ok(t, "cp", "-history", db, "-p", "2", s.url+"/big", filepath.Join(local, "big.p2"))

	recs := historyRecords(t, db) // newest first
	if len(recs) != 7 {
		t.Fatalf("%d records, want 7", len(recs))
	}
	up, down, smallUp, plain, hand := recs[6], recs[4], recs[2], recs[1], recs[0]
	for name, rec := range map[string]recordOut{"upload": up, "download": down} {
		if p := rec.Params; !p.Auto || p.Mode != "E" || p.Parallel < 2 {
			t.Errorf("%s params %+v, want auto MODE E, -p > 1", name, p)
		}
	}
	if p := smallUp.Params; !p.Auto || p.Mode != "S" || p.Parallel != 1 {
		t.Errorf("small upload params %+v, want auto stream mode", p)
	}
	if down.PredictedETA <= 0 {
		t.Errorf("download with history: predicted ETA %v, want > 0", down.PredictedETA)
	}
	if plain.Params.Auto || plain.Params.Mode != "S" {
		t.Errorf("-auto=false params %+v", plain.Params)
	}
	if p := hand.Params; p.Auto || p.Parallel != 2 {
		t.Errorf("-p 2 params %+v", p)
	}
}

// TestCpAutoConcurrency: a tree copied without -cc in auto mode gets the
// advisor's number of workers (many small files: up to 8), recorded in
// each file's record; -cc wins.
func TestCpAutoConcurrency(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(local, "state"))
	db := filepath.Join(local, "history.db")
	tree := filepath.Join(local, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(tree, "f"+string(rune('a'+i))), randomData(t, 4<<10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ok(t, "cp", "-r", "-history", db, tree+"/", s.url+"/auto/")
	ok(t, "cp", "-r", "-cc", "2", "-history", db, tree+"/", s.url+"/hand/")
	recs := historyRecords(t, db)
	if len(recs) != 20 {
		t.Fatalf("%d records, want 20", len(recs))
	}
	for _, r := range recs {
		hand := strings.HasPrefix(r.DstPath, "/hand/")
		if want := 8; !hand && r.Params.Concurrency != want {
			t.Errorf("%s: -cc %d, want the advisor's %d", r.DstPath, r.Params.Concurrency, want)
		}
		if hand && r.Params.Concurrency != 2 {
			t.Errorf("%s: -cc %d, want 2", r.DstPath, r.Params.Concurrency)
		}
	}
}

// TestCpJSONProgress: -json -vb adds progress objects with the live ETA
// to the file and summary objects, each line one JSON object.
func TestCpJSONProgress(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(local, "state"))
	if err := os.WriteFile(filepath.Join(s.dir, "src"), randomData(t, 48<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	s.slow.Store(true) // at least 1.5 s at -p 4
	r := ok(t, "cp", "-json", "-vb", "-pp=false", "-history", "off", s.url+"/src", filepath.Join(local, "down"))
	s.slow.Store(false)
	types := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		typ, _ := obj["type"].(string)
		types[typ]++
		if typ == "progress" {
			if _, ok := obj["eta"].(float64); !ok {
				t.Errorf("progress object without eta: %s", line)
			}
		}
	}
	if types["file"] != 1 || types["summary"] != 1 || types["progress"] == 0 {
		t.Errorf("objects %v, want a file, a summary and progress", types)
	}
}
