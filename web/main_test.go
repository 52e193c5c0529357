package web

import (
	"fmt"
	"os"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/leak"
)

// TestMain fails the package when a goroutine of the app (a job, an
// event stream) outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := leak.Check("github.com/ferrygrid/ferry/web"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
