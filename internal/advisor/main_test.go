package advisor

import (
	"os"
	"testing"
)

// TestMain turns the history off for these tests, though the advisor
// never opens it: no test may touch the user's history.
func TestMain(m *testing.M) {
	os.Setenv("FERRY_HISTORY", "off")
	os.Exit(m.Run())
}
