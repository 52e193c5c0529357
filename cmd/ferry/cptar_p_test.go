package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dpm"
)

// TestCpTarTreeParallel: ferry cp -r -tar -p 4 downloads and uploads the
// tree as one tar stream over MODE E with four connections, blocks put
// back in order while they are unpacked (download) or sent from the
// archive laid out ahead (upload).
func TestCpTarTreeParallel(t *testing.T) {
	dir, url := startModuleSrv(t, "tar")
	want := makeSmallTree(t, filepath.Join(dir, "tree"), 60)
	big := strings.Repeat("several MODE E blocks of one file; ", 100_000)
	writeServed(t, filepath.Join(dir, "tree", "big.txt"), []byte(big))
	want["big.txt"] = big
	local := t.TempDir()

	down := filepath.Join(local, "down")
	if r := ok(t, "cp", "-v", "-r", "-tar", "-p", "4", url+"/tree", down); !strings.Contains(r.stderr, "MODE E, 4 connections") {
		t.Errorf("-r -tar -p 4 download did not go as tar: %q", r.stderr)
	}
	checkTree(t, down, want)

	if r := ok(t, "cp", "-v", "-r", "-tar", "-p", "4", "-bs", "64K", down, url+"/up"); !strings.Contains(r.stderr, "MODE E, 4 connections") {
		t.Errorf("-r -tar -p 4 upload did not go as tar: %q", r.stderr)
	}
	checkTree(t, filepath.Join(dir, "up"), want)
}

// TestTarDownloadBufferBounded: a -tar -p N download refuses blocks
// past what the unpacking may write, so a server cannot fill the local
// temporary directory by sending far ahead of a withheld first block.
func TestTarDownloadBufferBounded(t *testing.T) {
	b := tarDownloadBuffer()
	defer b.CloseRead(nil)
	if _, err := b.WriteAt([]byte("x"), dpm.DefaultMaxBytes); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("a block at %d: %v, want dsi.ErrInvalid", int64(dpm.DefaultMaxBytes), err)
	}
	if b.Spilled() != 0 {
		t.Errorf("%d bytes spilled", b.Spilled())
	}
}
