package s3

import (
	"slices"
	"testing"
)

func TestPartCoverage(t *testing.T) {
	var p part
	for _, c := range []struct {
		s, e, want int64
	}{
		{10, 20, 10}, {30, 40, 20}, {15, 35, 30}, {0, 10, 40}, {40, 50, 50}, {0, 50, 50},
	} {
		if got := p.add(c.s, c.e); got != c.want {
			t.Fatalf("add(%d, %d) covers %d; want %d", c.s, c.e, got, c.want)
		}
	}
	if g := p.gaps(60); !slices.Equal(g, []extent{{50, 60}}) {
		t.Errorf("gaps(60) = %v", g)
	}
	var q part
	q.add(5, 7)
	q.add(9, 10)
	if g := q.gaps(12); !slices.Equal(g, []extent{{0, 5}, {7, 9}, {10, 12}}) {
		t.Errorf("gaps = %v", g)
	}
	if g := q.gaps(8); !slices.Equal(g, []extent{{0, 5}, {7, 8}}) {
		t.Errorf("gaps(8) = %v", g)
	}
}
