package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchChaos runs ferry bench chaos briefly (two kill rounds and a
// short slowloris attack) and checks its table.
func TestBenchChaos(t *testing.T) {
	bin := buildFerry(t)
	var stdout, stderr bytes.Buffer
	code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{
		"bench", "chaos", "-ferry", bin, "-scenarios", "kill,slowloris", "-rounds", "2", "-max-size", "4M",
		"-attack", "3s", "-seed", "5"})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"| scenario | rounds | corrupt | lost | hangs |", "| kill | 2 | 0 | 0 | 0 | 0 |", "| slowloris | "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("no %q in\n%s", want, stdout.String())
		}
	}
}

// TestBenchChaosUsage: bad flags are usage errors (exit 2).
func TestBenchChaosUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "chaos", "-rounds", "0"},
		{"bench", "chaos", "-max-size", "1K"},
		{"bench", "chaos", "extra"},
		{"bench", "chaos", "-scenarios", "nope", "-ferry", "/nonexistent"},
	} {
		var out bytes.Buffer
		code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, args)
		if want := 2; strings.Contains(strings.Join(args, " "), "nope") {
			if code == 0 {
				t.Errorf("%q: exit 0", args)
			}
		} else if code != want {
			t.Errorf("%q: exit %d, want %d: %s", args, code, want, out.String())
		}
	}
}
