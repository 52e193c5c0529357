package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchSessions runs ferry bench sessions at 50 idle sessions on
// ferry serve and on GCT's server, and checks its table.
func TestBenchSessions(t *testing.T) {
	bin := buildFerry(t)
	var stdout, stderr bytes.Buffer
	code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "sessions", "-ferry", bin, "-n", "50", "-active", "4", "-noops", "200", "-concurrency", "8"})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"| server | idle sessions | procs | RSS KiB/session |", "| Ferry | 50 | 1 | ", "| GCT | 50 | 55 | "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// Every row: no errors, and for Ferry a Go heap figure.
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "| Ferry |") && !strings.HasPrefix(line, "| GCT |") {
			continue
		}
		cells := strings.Split(line, "|")
		if errs := strings.TrimSpace(cells[13]); errs != "0" {
			t.Errorf("%s errors in %q", errs, line)
		}
		if goMem := strings.TrimSpace(cells[6]); strings.HasPrefix(line, "| Ferry |") && goMem == "-" {
			t.Errorf("no Go heap figure for Ferry: %q", line)
		}
	}
	t.Logf("\n%s", out)
}

// TestBenchSessionsUsage: bad flags are usage errors (exit 2).
func TestBenchSessionsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "sessions", "-n", "0"},
		{"bench", "sessions", "-noops", "0"},
		{"bench", "sessions", "-min-available", "lots"},
		{"bench", "sessions", "extra"},
	} {
		var out bytes.Buffer
		if code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, args); code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", args, code, out.String())
		}
	}
}
