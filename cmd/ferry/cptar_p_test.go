package main

import (
	"path/filepath"
	"strings"
	"testing"
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
