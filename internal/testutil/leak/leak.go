// Package leak checks, after a package's tests, that none of its
// goroutines is still running (house style rule 40).
package leak

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// Check fails if, within a few seconds, some goroutine still runs code of
// pkg (an import path such as "github.com/ferrygrid/ferry/internal/bench"),
// other than the caller's TestMain.
func Check(pkg string) error {
	name := pkg[strings.LastIndexByte(pkg, '/')+1:]
	deadline := time.Now().Add(5 * time.Second)
	for {
		var leaked []string
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, pkg+".") && !strings.Contains(g, name+".TestMain") &&
				!strings.Contains(g, "testutil/leak.Check") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: leaked goroutines:\n%s", name, strings.Join(leaked, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
