package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// PerfMarker is a 112 performance marker (GFD.020 §4.3, protocol.md §7.1):
//
//	112-Perf Marker
//	 Timestamp: 1795289848.1
//	 Stripe Index: 0
//	 Stripe Bytes Transferred: 201326592
//	 Total Stripe Count: 1
//	112 End.
type PerfMarker struct {
	Time    time.Time // to a tenth of a second on the wire
	Stripe  int
	Bytes   int64 // cumulative on this stripe
	Stripes int
}

// ErrNotMarker reports a reply that is not the marker asked for.
var ErrNotMarker = errors.New("wire: not a marker")

// Reply formats the marker.
func (m PerfMarker) Reply() Reply {
	t := max(m.Time.UnixMilli(), 0)
	return Reply{Code: 112, Lines: []string{
		"Perf Marker",
		fmt.Sprintf("Timestamp: %d.%d", t/1000, t%1000/100),
		fmt.Sprintf("Stripe Index: %d", m.Stripe),
		fmt.Sprintf("Stripe Bytes Transferred: %d", m.Bytes),
		fmt.Sprintf("Total Stripe Count: %d", m.Stripes),
		"End.",
	}}
}

// ParsePerfMarker reads a 112 reply. Whitespace after the colons varies
// (GCT 13.24 writes two spaces after "Timestamp:"), and unknown lines are
// ignored; Stripe Bytes Transferred is required.
func ParsePerfMarker(r Reply) (PerfMarker, error) {
	if r.Code != 112 {
		return PerfMarker{}, ErrNotMarker
	}
	m := PerfMarker{Stripes: 1, Time: time.UnixMilli(0)} // a missing timestamp reads as the epoch
	seen := false
	for _, l := range r.Lines {
		key, val, found := strings.Cut(l, ":")
		if !found {
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "Timestamp":
			secs, frac, _ := strings.Cut(val, ".")
			s, err := strconv.ParseInt(secs, 10, 64)
			if err != nil || s < 0 || s > 1<<40 {
				return PerfMarker{}, fmt.Errorf("%w: timestamp %q", ErrNotMarker, val)
			}
			ms := int64(0)
			if frac != "" {
				f, err := strconv.ParseUint(frac[:min(len(frac), 3)], 10, 16)
				if err != nil {
					return PerfMarker{}, fmt.Errorf("%w: timestamp %q", ErrNotMarker, val)
				}
				for d := len(frac[:min(len(frac), 3)]); d < 3; d++ {
					f *= 10
				}
				ms = int64(f)
			}
			m.Time = time.UnixMilli(s*1000 + ms)
		case "Stripe Index":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return PerfMarker{}, fmt.Errorf("%w: stripe index %q", ErrNotMarker, val)
			}
			m.Stripe = n
		case "Stripe Bytes Transferred":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 {
				return PerfMarker{}, fmt.Errorf("%w: bytes %q", ErrNotMarker, val)
			}
			m.Bytes, seen = n, true
		case "Total Stripe Count":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return PerfMarker{}, fmt.Errorf("%w: stripe count %q", ErrNotMarker, val)
			}
			m.Stripes = n
		}
	}
	if !seen {
		return PerfMarker{}, fmt.Errorf("%w: no Stripe Bytes Transferred", ErrNotMarker)
	}
	return m, nil
}

// RangeMarker returns the range list of a 111 restart marker ("111 Range
// Marker 0-16777216,..."), for xfer.ParseRangeList.
func RangeMarker(r Reply) (string, error) {
	if r.Code != 111 || len(r.Lines) == 0 {
		return "", ErrNotMarker
	}
	text := strings.TrimSpace(r.Lines[0])
	const prefix = "Range Marker"
	if len(text) < len(prefix) || !strings.EqualFold(text[:len(prefix)], prefix) {
		return "", ErrNotMarker
	}
	return strings.TrimSpace(text[len(prefix):]), nil
}
