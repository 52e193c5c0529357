package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// historyRecords runs ferry history -json on the database db.
func historyRecords(t *testing.T, db string) []recordOut {
	t.Helper()
	r := ok(t, "history", "-history", db, "-json", "-n", "0")
	var recs []recordOut
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("history -json: %v; %q", err, r.stdout)
	}
	return recs
}

// TestCpHistory: ferry cp records an upload, a download and a
// third-party copy (sizes, endpoints, parameters, outcome) and a failed
// copy with its error, in the database of -history.
func TestCpHistory(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(local, "state"))
	db := filepath.Join(local, "history.db")
	data := randomData(t, 1<<20+3)
	src := filepath.Join(local, "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, "cp", "-history", db, "-tcp-bs", "256K", src, s.url+"/up")
	ok(t, "cp", "-history", db, "-p", "4", s.url+"/up", filepath.Join(local, "down"))
	ok(t, "cp", "-history", db, s.url+"/up", s.url+"/third")
	r := ferry(t, nil, "cp", "-history", db, s.url+"/missing", filepath.Join(local, "missing"))
	if r.code == 0 {
		t.Fatal("copy of a missing file succeeded")
	}

	recs := historyRecords(t, db)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4: %+v", len(recs), recs)
	}
	// Newest first.
	up, down, third, failed := recs[3], recs[2], recs[1], recs[0]
	host, portText, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "ftp://"))
	port, _ := strconv.Atoi(portText)
	server := endpointOut{Scheme: "ftp", Host: host, Port: port, Domain: "localhost"}
	file := endpointOut{Scheme: "file"}
	size := int64(len(data))
	checkRecord(t, "upload", up, recordOut{Kind: "upload", Src: file, Dst: server, SrcPath: src, DstPath: "/up", Size: size})
	checkRecord(t, "download", down, recordOut{Kind: "download", Src: server, Dst: file, SrcPath: "/up", DstPath: filepath.Join(local, "down"), Size: size})
	checkRecord(t, "third-party", third, recordOut{Kind: "third-party", Src: server, Dst: server, SrcPath: "/up", DstPath: "/third", Size: size})
	if p := up.Params; p.Mode != "S" || p.Parallel != 1 || p.TCPBuffer != 256<<10 {
		t.Errorf("upload params %+v, want stream mode, -p 1, -tcp-bs 256K", p)
	}
	if p := down.Params; p.Mode != "E" || p.Parallel != 4 {
		t.Errorf("download params %+v, want MODE E, -p 4", p)
	}
	if len(down.StreamRates) != 4 {
		t.Errorf("download stream rates %v, want 4", down.StreamRates)
	}
	if down.Link.Retransmits < 0 || down.Link.RTT <= 0 {
		t.Errorf("download link %+v: no TCP_INFO", down.Link)
	}
	if failed.Outcome != "failed" || !strings.Contains(failed.Error, "550") || failed.Kind != "download" || failed.SrcPath != "/missing" {
		t.Errorf("failed copy: %+v", failed)
	}
}

// checkRecord checks a successful copy's record of ferry cp: kind,
// endpoints (without the domain), paths and sizes as in want.
func checkRecord(t *testing.T, name string, rec, want recordOut) {
	t.Helper()
	if rec.Kind != want.Kind || rec.Tool != "cp" || rec.Outcome != "ok" || rec.Error != "" {
		t.Errorf("%s: kind %q tool %q outcome %q error %q", name, rec.Kind, rec.Tool, rec.Outcome, rec.Error)
	}
	if rec.Size != want.Size || rec.Bytes != want.Size {
		t.Errorf("%s: size %d, bytes %d, want %d", name, rec.Size, rec.Bytes, want.Size)
	}
	same := func(a, b endpointOut) bool { return a.Scheme == b.Scheme && a.Host == b.Host && a.Port == b.Port }
	if !same(rec.Src, want.Src) || !same(rec.Dst, want.Dst) {
		t.Errorf("%s: endpoints %+v -> %+v, want %+v -> %+v", name, rec.Src, rec.Dst, want.Src, want.Dst)
	}
	if rec.SrcPath != want.SrcPath || rec.DstPath != want.DstPath {
		t.Errorf("%s: paths %q -> %q, want %q -> %q", name, rec.SrcPath, rec.DstPath, want.SrcPath, want.DstPath)
	}
	if rec.Duration <= 0 || rec.End.Before(rec.Start) {
		t.Errorf("%s: start %v end %v duration %v", name, rec.Start, rec.End, rec.Duration)
	}
}

// TestCpHistoryUnreachable: a history database that cannot be reached
// costs a warning, and the copy succeeds.
func TestCpHistoryUnreachable(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	src := filepath.Join(local, "src")
	data := randomData(t, 1000)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FERRY_HISTORY", "postgres://ferry@127.0.0.1:1/x?connect_timeout=2")
	r := ok(t, "cp", src, s.url+"/up")
	if !strings.Contains(r.stderr, "history") || !strings.Contains(r.stderr, "WARN") {
		t.Errorf("no warning about the history: %q", r.stderr)
	}
	if got := mustRead(t, filepath.Join(s.dir, "up")); string(got) != string(data) {
		t.Error("upload differs")
	}
}

// TestCpHistoryOff: -history off records nothing and says nothing.
func TestCpHistoryOff(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	src := filepath.Join(local, "src")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", local)
	r := ok(t, "cp", "-history", "off", src, s.url+"/up")
	if r.stderr != "" {
		t.Errorf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(local, "ferry")); !os.IsNotExist(err) {
		t.Errorf("a history was written: %v", err)
	}
}

// TestShellHistory: the shell's get and put, and its many-file
// commands, are recorded in the database of -history-db.
func TestShellHistory(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	db := filepath.Join(local, "history.db")
	data := randomData(t, 5000)
	if err := os.WriteFile(filepath.Join(s.dir, "a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "b"), data[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	script := "lcd " + local + "\nget a\nput b\nmget a\n"
	r := ferry(t, []byte(script), "shell", "-history-db", db, s.url)
	if r.code != 0 {
		t.Fatalf("shell: exit %d, stderr %q", r.code, r.stderr)
	}
	recs := historyRecords(t, db)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(recs), recs)
	}
	for i, want := range []struct {
		kind, src string
		size      int64
	}{{"download", "/a", 5000}, {"upload", filepath.Join(local, "b"), 100}, {"download", "/a", 5000}} {
		rec := recs[len(recs)-1-i]
		if rec.Kind != want.kind || rec.Tool != "shell" || rec.Outcome != "ok" || rec.Size != want.size || rec.Bytes != want.size || rec.SrcPath != want.src {
			t.Errorf("record %d: %s %s %s %q size %d bytes %d; want %+v", i, rec.Kind, rec.Tool, rec.Outcome, rec.SrcPath, rec.Size, rec.Bytes, want)
		}
	}
}

// TestSyncHistory: ferry sync records each file it copies (here in a
// pipelined batch), and a second run, copying nothing, records nothing.
func TestSyncHistory(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	db := filepath.Join(local, "history.db")
	tree := filepath.Join(s.dir, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"x", "y"} {
		if err := os.WriteFile(filepath.Join(tree, n), []byte(n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(local, "out")
	ok(t, "sync", "-history", db, s.url+"/tree/", dst+"/")
	ok(t, "sync", "-history", db, s.url+"/tree/", dst+"/")
	recs := historyRecords(t, db)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(recs), recs)
	}
	for _, rec := range recs {
		if rec.Kind != "download" || rec.Tool != "sync" || rec.Outcome != "ok" || rec.Size != 2 || !rec.Params.Pipeline || rec.Params.Concurrency < 1 {
			t.Errorf("record %+v", rec)
		}
	}
}
