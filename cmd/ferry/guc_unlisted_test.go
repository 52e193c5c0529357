package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGUCUnlistedSpellings: spellings globus-url-copy accepts without
// listing them mean what they mean there.
func TestGUCUnlistedSpellings(t *testing.T) {
	cp := func(args ...string) []string {
		t.Helper()
		c, err := parseGUC(append(args, "ftp://h/a", "file:///tmp/b"))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		out, err := c.cpArgs(func(string) string { return "" })
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return out
	}
	if a := cp("-ppq", "8"); slices.Contains(a, "-pp=false") {
		t.Errorf("-ppq 8: %q, want pipelining", a)
	}
	if a := cp("-restart-interval", "4", "-restart-timeout", "9"); !strings.Contains(strings.Join(a, " "), "-rst-interval 4s -rst-max-interval 4s -rst-deadline 9s") {
		t.Errorf("-restart-interval 4 -restart-timeout 9: %q", a)
	}
	if a := cp("-checksum", "-algo", "ADLER32"); !slices.Contains(a, "-verify-checksum") || !slices.Contains(a, "ADLER32") {
		t.Errorf("-checksum -algo ADLER32: %q", a)
	}
	for _, o := range []string{"-g2", "-allo", "-cp", "-preserve", "-copy-perms"} {
		if a, b := cp(o), cp(); !slices.Equal(a, b) {
			t.Errorf("%s: %q, want no change from %q", o, a, b)
		}
	}
	c, err := parseGUC([]string{"-transfer-time", "3", "-filename", "l"})
	if err != nil || c.timeLimit != 3*time.Second || c.listFile != "l" {
		t.Errorf("-transfer-time 3 -filename l: %+v, %v", c, err)
	}
	for _, o := range [][]string{{"-u"}, {"-P", "x"}, {"-nli", "1"}, {"-CP", "x"}, {"-X", "x"}, {"-MC", "x"}} {
		if _, err := parseGUC(append(o, "a", "b")); err == nil || !strings.Contains(err.Error(), o[0]+" is not supported") {
			t.Errorf("%q: %v, want it refused", o, err)
		}
	}
}

// TestGUCNoAllo: -no-allo is not silent, since Ferry still sends ALLO.
func TestGUCNoAllo(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	dir := t.TempDir()
	src := filepath.Join(dir, "a")
	if err := os.WriteFile(src, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runGUCOut(t, "-no-allo", "file://"+src, "file://"+filepath.Join(dir, "b"))
	if code != 0 || !strings.Contains(stderr, "-no-allo has no effect") {
		t.Errorf("-no-allo: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runGUCOut(t, "file://"+src, "file://"+filepath.Join(dir, "c"))
	if code != 0 || stderr != "" {
		t.Errorf("without -no-allo: exit %d, stderr %q", code, stderr)
	}
}
