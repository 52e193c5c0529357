package bench

import "slices"

// Summary is the median and range of repeated measurements.
type Summary struct {
	Median, Min, Max float64
	N                int // how many values; 0 means no data and zero fields
}

// Summarize returns the summary of vs; the median of an even count is the
// mean of the middle two.
func Summarize(vs []float64) Summary {
	if len(vs) == 0 {
		return Summary{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{Median: med, Min: s[0], Max: s[n-1], N: n}
}
