package progress

import (
	"fmt"
	"math"
	"strconv"
)

// This file is the project's set of size and rate formatters; see the
// package doc for why they live here. Each one has its own job:
//
//	Bytes     a measured count or rate, for people:   "1.50 KiB", "23.4 MiB"
//	Size      a configured size, exact, flag syntax:  "4G", "512K", "1000"
//	LinkRate  a configured link rate in bit/s:        "100 Mbit/s", "unlimited"
//	Rate      a measured rate in Mbit/s, no unit:     "865", "48.7", "4.70"

// Bytes formats a byte count (or rate) with binary units: "512 B",
// "1.5 KiB", "23.4 MiB", "1.00 GiB".
func Bytes(n float64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%.0f B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for n >= unit && i < len(units)-1 {
		n /= unit
		i++
	}
	switch {
	case n < 10:
		return fmt.Sprintf("%.2f %s", n, units[i])
	case n < 100:
		return fmt.Sprintf("%.1f %s", n, units[i])
	}
	return fmt.Sprintf("%.0f %s", n, units[i])
}

// Size formats n bytes exactly in the largest binary unit that divides
// it, the way size flags are written ("4G", "512K", "1000"), so that
// null.ParseSize reads it back.
func Size(n int64) string {
	units := []string{"T", "G", "M", "K"}
	for i, u := range units {
		shift := uint(10 * (len(units) - i))
		if n >= 1<<shift && n%(1<<shift) == 0 {
			return strconv.FormatInt(n>>shift, 10) + u
		}
	}
	return strconv.FormatInt(n, 10)
}

// LinkRate formats a link rate of bps bit/s in Mbit/s (10^6 bit/s):
// "100 Mbit/s", "4.7 Mbit/s"; 0 is "unlimited".
func LinkRate(bps int64) string {
	if bps == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%g Mbit/s", float64(bps)/1e6)
}

// Rate formats a measured rate (in whatever unit the table states) with
// about three significant digits: "865", "48.7", "4.70"; NaN, no value,
// is "".
func Rate(v float64) string {
	switch {
	case math.IsNaN(v):
		return ""
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// Bits formats a measured rate of bps bit/s in decimal units, as link
// speeds are written: "940 Mbit/s", "1.2 Gbit/s"; 0 or less is "unknown".
func Bits(bps float64) string {
	switch {
	case bps <= 0:
		return "unknown"
	case bps >= 1e9:
		return fmt.Sprintf("%.3g Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.3g Mbit/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.3g kbit/s", bps/1e3)
	}
	return fmt.Sprintf("%.3g bit/s", bps)
}
