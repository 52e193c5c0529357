package bench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := checkLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkLeaks fails if, a few seconds after the tests, a goroutine still
// runs code of this package (a sampler or a process waiter).
func checkLeaks() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var leaked []string
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "ferry/internal/bench.") && !strings.Contains(g, "bench.checkLeaks") &&
				!strings.Contains(g, "bench.TestMain") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: leaked goroutines:\n%s", strings.Join(leaked, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
