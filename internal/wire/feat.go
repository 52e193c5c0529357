package wire

import "strings"

// ParseFeatures turns a 211 FEAT reply (RFC 2389 §3.2) into a map from the
// first word of each feature line, upper-cased, to the rest of the line
// after it, trimmed ("" when there is none). The first and last lines
// ("Extensions supported", "End.") are not features, and blank lines are
// skipped. A reply with fewer than three lines gives an empty map.
func ParseFeatures(r Reply) map[string]string {
	m := make(map[string]string)
	if len(r.Lines) < 3 {
		return m
	}
	for _, l := range r.Lines[1 : len(r.Lines)-1] {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		k, v, _ := strings.Cut(l, " ")
		m[strings.ToUpper(k)] = strings.TrimSpace(v)
	}
	return m
}
