package bench

import (
	"slices"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Summary
	}{
		{nil, Summary{}},
		{[]float64{7}, Summary{Median: 7, Min: 7, Max: 7, N: 1}},
		{[]float64{3, 1, 2}, Summary{Median: 2, Min: 1, Max: 3, N: 3}},
		{[]float64{4, 1, 3, 2}, Summary{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{[]float64{5, 5, 1, 9, 5}, Summary{Median: 5, Min: 1, Max: 9, N: 5}},
	} {
		in := slices.Clone(tc.in)
		if got := Summarize(in); got != tc.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("Summarize(%v) reordered its argument to %v", tc.in, in)
		}
	}
}
