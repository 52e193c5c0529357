package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ferrygrid/ferry/dsi/null"
)

// ParseSize parses a byte count: decimal digits with an optional binary
// unit K, M, G or T (K is 1024), optionally followed by "iB" or "B", as the
// null storage names its files. The size must be positive.
func ParseSize(s string) (int64, error) {
	n, ok := null.ParseSize(strings.TrimSpace(s))
	if !ok || n <= 0 {
		return 0, fmt.Errorf("bench: bad size %q (want a positive number with an optional K, M, G or T)", s)
	}
	return n, nil
}

// FormatSize returns n in the largest binary unit that divides it ("4G",
// "512K", "1000").
func FormatSize(n int64) string {
	units := []string{"T", "G", "M", "K"}
	for i, u := range units {
		shift := uint(10 * (len(units) - i))
		if n >= 1<<shift && n%(1<<shift) == 0 {
			return strconv.FormatInt(n>>shift, 10) + u
		}
	}
	return strconv.FormatInt(n, 10)
}
