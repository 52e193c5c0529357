package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/leak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := leak.Check("github.com/ferrygrid/ferry/internal/bench"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
