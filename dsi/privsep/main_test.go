//go:build linux

package privsep

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/leak"
)

// The test binary doubles as the ferry binary: run as
// "privsep.test privsep-helper -root DIR" it is the helper, like
// cmd/ferry's privsep-helper subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "privsep-helper" {
		os.Exit(helperMain(os.Args[2:]))
	}
	// Race-enabled helpers would otherwise sleep a second at exit.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	code := m.Run()
	if helperDir != "" {
		os.RemoveAll(helperDir)
	}
	if code == 0 {
		if err := leak.Check("github.com/ferrygrid/ferry/dsi/privsep"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func helperMain(args []string) int {
	fs := flag.NewFlagSet("privsep-helper", flag.ContinueOnError)
	root := fs.String("root", "", "")
	if err := fs.Parse(args); err != nil || *root == "" {
		return 2
	}
	conn := os.NewFile(3, "privsep")
	if err := Serve(context.Background(), conn, *root); err != nil {
		fmt.Fprintln(os.Stderr, "privsep-helper:", err)
		return 1
	}
	return 0
}
