package s3

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestExtentSet(t *testing.T) {
	var s extentSet
	for _, c := range []struct{ s, e int64 }{
		{10, 20}, {30, 40}, {15, 35}, {0, 10}, {40, 50}, {0, 50},
	} {
		s.add(c.s, c.e)
	}
	if got := s.all(); !slices.Equal(got, []extent{{0, 50}}) {
		t.Errorf("all = %v", got)
	}
	if g := s.gaps(0, 60); !slices.Equal(g, []extent{{50, 60}}) {
		t.Errorf("gaps(0, 60) = %v", g)
	}
	var q extentSet
	q.add(5, 7)
	q.add(9, 10)
	if g := q.gaps(0, 12); !slices.Equal(g, []extent{{0, 5}, {7, 9}, {10, 12}}) {
		t.Errorf("gaps = %v", g)
	}
	if g := q.gaps(0, 8); !slices.Equal(g, []extent{{0, 5}, {7, 8}}) {
		t.Errorf("gaps(0, 8) = %v", g)
	}
	if g := q.gaps(6, 9); !slices.Equal(g, []extent{{7, 9}}) {
		t.Errorf("gaps(6, 9) = %v", g)
	}
	if !q.covers(5, 7) || q.covers(5, 8) || q.covers(7, 8) || !q.covers(9, 10) {
		t.Error("covers is wrong")
	}
}

// TestExtentSetModel checks the set against a bitmap under random adds
// in any order, across many leaves.
func TestExtentSetModel(t *testing.T) {
	const size = 20000
	r := rand.New(rand.NewPCG(1, 2))
	var s extentSet
	bits := make([]bool, size)
	for round := range 6000 {
		a := r.Int64N(size)
		b := min(size, a+1+r.Int64N(8))
		if round%3 == 0 {
			a = size - 1 - 2*int64(round/3)%size
			b = a + 1
		}
		s.add(a, b)
		for k := a; k < b; k++ {
			bits[k] = true
		}
	}
	var want []extent
	for k := int64(0); k < size; k++ {
		if bits[k] && (len(want) == 0 || want[len(want)-1].end != k) {
			want = append(want, extent{k, k + 1})
		} else if bits[k] {
			want[len(want)-1].end++
		}
	}
	if got := s.all(); !slices.Equal(got, want) {
		t.Fatalf("set has %d extents; the model %d", len(got), len(want))
	}
	if s.n != len(want) {
		t.Errorf("n = %d; want %d", s.n, len(want))
	}
	for range 2000 {
		a := r.Int64N(size)
		b := min(size, a+1+r.Int64N(50))
		cov := true
		var gaps []extent
		for k := a; k < b; k++ {
			if !bits[k] {
				cov = false
				if len(gaps) > 0 && gaps[len(gaps)-1].end == k {
					gaps[len(gaps)-1].end++
				} else {
					gaps = append(gaps, extent{k, k + 1})
				}
			}
		}
		if s.covers(a, b) != cov {
			t.Fatalf("covers(%d, %d) = %v", a, b, !cov)
		}
		if g := s.gaps(a, b); !slices.Equal(g, gaps) {
			t.Fatalf("gaps(%d, %d) = %v; want %v", a, b, g, gaps)
		}
	}
}
