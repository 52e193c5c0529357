package wire

import (
	"errors"
	"fmt"
	"time"
)

// errTime is the base of every time-value parse error.
var errTime = errors.New("wire: bad time value")

// FormatTime formats t in UTC as YYYYMMDDHHMMSS, the RFC 3659 §2.3 time-val
// used by MDTM, MFMT and the Modify fact.
func FormatTime(t time.Time) string { return t.UTC().Format("20060102150405") }

// ParseTime parses an RFC 3659 §2.3 time-val: YYYYMMDDHHMMSS in UTC with an
// optional fraction of 1 to 9 digits after a dot.
func ParseTime(s string) (time.Time, error) {
	bad := func() (time.Time, error) { return time.Time{}, fmt.Errorf("%w: %q", errTime, s) }
	if len(s) < 14 {
		return bad()
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if !isDigit(c) {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	var f [6]int
	for k, w := range [6][2]int{{0, 4}, {4, 2}, {6, 2}, {8, 2}, {10, 2}, {12, 2}} {
		v, ok := num(w[0], w[1])
		if !ok {
			return bad()
		}
		f[k] = v
	}
	nsec := 0
	if frac := s[14:]; frac != "" {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return bad()
		}
		v, ok := num(15, len(frac)-1)
		if !ok {
			return bad()
		}
		for i := len(frac) - 1; i < 9; i++ {
			v *= 10
		}
		nsec = v
	}
	year, month, day, hour, min, sec := f[0], f[1], f[2], f[3], f[4], f[5]
	if month < 1 || month > 12 || day < 1 || hour > 23 || min > 59 || sec > 59 {
		return bad()
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC)
	if t.Day() != day {
		return bad() // 31 April, 29 February of a common year
	}
	return t, nil
}
