package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain keeps the tests, and the ferry processes they start, out of
// the user's transfer history: FERRY_HISTORY is "off" unless a test sets
// its own (t.Setenv, or -history).
func TestMain(m *testing.M) {
	os.Setenv("FERRY_HISTORY", "off")
	code := m.Run()
	if builtBin != "" {
		// ferryBinary's directory (40 MB a run) outlives the tests otherwise.
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}
