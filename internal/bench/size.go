package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a byte count: decimal digits with an optional binary
// unit K, M, G or T (K is 1024), optionally followed by "iB" or "B". Case
// is ignored, so "4G", "4GiB", "4g" and "4294967296" are equal. The size
// must be positive and at most 2^62.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	iB := strings.HasSuffix(t, "IB")
	if iB {
		t = t[:len(t)-2]
	} else {
		t = strings.TrimSuffix(t, "B")
	}
	shift := 0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift != 0 {
			t = t[:n-1]
		}
	}
	if iB && shift == 0 {
		t = "" // "iB" needs a unit: "10iB" is not a size
	}
	if t == "" || strings.TrimLeft(t, "0123456789") != "" {
		return 0, fmt.Errorf("bench: bad size %q (want digits with an optional K, M, G or T)", s)
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("bench: size %q out of range (1 byte to 4 EiB)", s)
	}
	return n << shift, nil
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
