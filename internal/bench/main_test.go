package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/leak"
)

func TestMain(m *testing.M) {
	// The ferry processes must not write to the user's transfer history.
	os.Setenv("FERRY_HISTORY", "off")
	code := m.Run()
	if code == 0 {
		if err := leak.Check("github.com/ferrygrid/ferry/internal/bench"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
