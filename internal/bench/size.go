package bench

import (
	"fmt"
	"strings"

	"github.com/ferrygrid/ferry/dsi/null"
)

// ParseSize parses a byte count: decimal digits with an optional binary
// unit K, M, G or T (K is 1024), optionally followed by "iB" or "B", as the
// null storage names its files. The size must be positive. progress.Size
// writes sizes this way.
func ParseSize(s string) (int64, error) {
	n, ok := null.ParseSize(strings.TrimSpace(s))
	if !ok || n <= 0 {
		return 0, fmt.Errorf("bench: bad size %q (want a positive number with an optional K, M, G or T)", s)
	}
	return n, nil
}
