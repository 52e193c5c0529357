package dtp

import (
	"os"
	"testing"
)

// TestMain removes the shared fixture of the secure tests (a test PKI
// and 26 MB of data files), which outlives every test that uses it.
func TestMain(m *testing.M) {
	code := m.Run()
	if secFix != nil {
		os.RemoveAll(secFix.dir)
	}
	os.Exit(code)
}
