package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/translog"
)

// logLines parses the JSON lines of a transfer log file.
func logLines(t *testing.T, file string) []translog.Record {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var recs []translog.Record
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r translog.Record
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("%s: line %q: %v", file, l, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestTransferLogRotation: ferry serve -transfer-log FILE writes a line
// per transfer; after the file is renamed, SIGHUP makes it write a new
// one, and the renamed file keeps its lines.
func TestTransferLogRotation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "transfers.log")
	_, addr := startServe(t, "-storage", "memory", "-anonymous-write", "-transfer-log", file)
	upload(t, addr, "/one", 1000)
	if recs := logLines(t, file); len(recs) != 1 || recs[0].File != "/one" || recs[0].Bytes != 1000 || recs[0].Code != 226 || recs[0].Type != "STOR" {
		t.Fatalf("before the rotation: %+v", recs)
	}
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	// The server's handler takes the signal; this one keeps the test
	// process alive should it come late.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reopen the transfer log")
		}
	}
	upload(t, addr, "/two", 2000)
	if recs := logLines(t, file); len(recs) != 1 || recs[0].File != "/two" || recs[0].Bytes != 2000 {
		t.Errorf("after the rotation: %+v", recs)
	}
	if recs := logLines(t, file+".1"); len(recs) != 1 || recs[0].File != "/one" {
		t.Errorf("the rotated file: %+v", recs)
	}
}
