package xfer

import (
	"slices"
	"testing"
)

// TestStripeRanges moved here from internal/dtp (where it called the
// DTP's stripeRanges) with the layouts; the cases are unchanged, plus the
// client's case of a striped upload at an ESTO offset.
func TestStripeRanges(t *testing.T) {
	r := func(a, b int64) Range { return Range{Start: a, End: b} }
	tests := []struct {
		name   string
		ranges []Range
		k      int
		base   int64
		layout Layout
		bs     int64
		want   [][]Range
	}{
		{"one stripe", []Range{r(0, 100)}, 1, 0, LayoutBlocked, 0, [][]Range{{r(0, 100)}}},
		{"no stripe counts as one", []Range{r(0, 100)}, 0, 0, LayoutBlocked, 0, [][]Range{{r(0, 100)}}},
		{"blocked", []Range{r(0, 100)}, 2, 0, LayoutBlocked, 30,
			[][]Range{{r(0, 30), r(60, 90)}, {r(30, 60), r(90, 100)}}},
		{"blocked with a gap", []Range{r(0, 20), r(50, 100)}, 2, 0, LayoutBlocked, 30,
			[][]Range{{r(0, 20), r(60, 90)}, {r(50, 60), r(90, 100)}}},
		{"blocked from an ERET offset", []Range{r(1000, 1100)}, 2, 1000, LayoutBlocked, 60,
			[][]Range{{r(1000, 1060)}, {r(1060, 1100)}}},
		{"blocked, default block", []Range{r(0, 3<<20)}, 2, 0, LayoutBlocked, 0,
			[][]Range{{r(0, 1<<20), r(2<<20, 3<<20)}, {r(1<<20, 2<<20)}}},
		{"partitioned", []Range{r(0, 100)}, 3, 0, LayoutPartitioned, 0,
			[][]Range{{r(0, 34)}, {r(34, 68)}, {r(68, 100)}}},
		{"more stripes than bytes", []Range{r(0, 1)}, 3, 0, LayoutPartitioned, 0,
			[][]Range{{r(0, 1)}, nil, nil}},
		{"empty file", nil, 2, 0, LayoutBlocked, 0, [][]Range{nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StripeRanges(tt.ranges, tt.k, tt.base, tt.layout, tt.bs)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v", got)
			}
			for i := range got {
				if !slices.Equal(got[i], tt.want[i]) {
					t.Fatalf("stripe %d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
