//go:build unix

package translog_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/translog"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// TestTranslogRefusesSymlink: a symbolic link at the log path is not
// followed, at Open and at Reopen; the target is left untouched and the
// old file stays in use.
func TestTranslogRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "transfers.log")
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
	if tl, err := translog.Open(file, nil, nil); err == nil {
		tl.Close()
		t.Fatal("Open followed a symbolic link")
	}
	os.Remove(file)
	tl, err := translog.Open(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
	if err := tl.Reopen(); err == nil {
		t.Fatal("Reopen followed a symbolic link")
	}
	writeOne(tl)
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	if b, _ := os.ReadFile(file + ".1"); len(b) == 0 {
		t.Fatal("after a refused Reopen, the old file got no line")
	}
}

// TestTranslogRefusesFIFO: a FIFO at the log path is refused at once,
// with or without a reader, never waited on.
func TestTranslogRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "transfers.log")
	tl, err := translog.Open(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	os.Rename(file, file+".1")
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tl.Reopen() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Reopen took a FIFO")
		}
		t.Logf("FIFO: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Reopen blocked on a FIFO")
	}
	// With a reader the open succeeds, and the type check refuses it.
	r, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := tl.Reopen(); err == nil {
		t.Fatal("Reopen took a FIFO that has a reader")
	}
}

// TestTranslogRefusesHardLink: a file with a second link (someone linked
// a file of theirs, or ours, to the log path) is refused.
func TestTranslogRefusesHardLink(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "transfers.log")
	if err := os.Link(other, file); err != nil {
		t.Fatal(err)
	}
	if tl, err := translog.Open(file, nil, nil); err == nil {
		writeOne(tl)
		tl.Close()
		t.Fatal("Open took a file with 2 links")
	}
	if b, _ := os.ReadFile(other); string(b) != "precious\n" {
		t.Fatalf("the linked file was written: %q", b)
	}
}

func writeOne(tl *translog.Log) {
	now := time.Now()
	tl.Transfer(&xfer.Summary{Op: "RETR", Path: "/f", User: "u", Start: now, End: now, Stripes: 1, Retransmits: -1})
}
