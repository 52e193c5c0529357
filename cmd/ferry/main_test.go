package main

import (
	"os"
	"testing"
)

// TestMain keeps the tests, and the ferry processes they start, out of
// the user's transfer history: FERRY_HISTORY is "off" unless a test sets
// its own (t.Setenv, or -history).
func TestMain(m *testing.M) {
	os.Setenv("FERRY_HISTORY", "off")
	os.Exit(m.Run())
}
