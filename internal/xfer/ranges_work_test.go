package xfer

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// check reports a broken RangeSet invariant.
func (s *RangeSet) check() error {
	if s.n == 0 {
		if len(s.head) != 0 || len(s.more) != 0 {
			return fmt.Errorf("empty set with leaves %d+%d", len(s.head), len(s.more))
		}
		return nil
	}
	n := 0
	var prev Range
	for l := range s.leaves() {
		lf := s.leaf(l)
		if len(lf) == 0 || len(lf) > leafMax {
			return fmt.Errorf("leaf %d holds %d ranges", l, len(lf))
		}
		if l+1 < s.leaves() && len(lf)+len(s.leaf(l+1)) <= leafMax/2 {
			return fmt.Errorf("leaves %d and %d hold only %d ranges", l, l+1, len(lf)+len(s.leaf(l+1)))
		}
		for _, r := range lf {
			if r.End <= r.Start || n > 0 && prev.End >= r.Start {
				return fmt.Errorf("range %v after %v", r, prev)
			}
			prev = r
			n++
		}
	}
	if n != s.n {
		return fmt.Errorf("n = %d, leaves hold %d", s.n, n)
	}
	return nil
}

// TestRangeSetInsertWork is the "quadratic CPU on MODE E uploads" attack
// and its cousins: 200,000 one-byte ranges at non-adjacent offsets, in
// orders a peer may choose. Add's work is counted, not timed: a sorted
// slice moves every range behind an insert (2·10^10 moves for the
// descending order), the leaves at most about a leaf's worth each.
func TestRangeSetInsertWork(t *testing.T) {
	const n = 200000
	const budget = 2 * leafMax * n // ranges and leaves moved by all the Adds
	perm := rand.New(rand.NewPCG(3, 4)).Perm(n)
	for _, tt := range []struct {
		name string
		at   func(k int) int // the slot of the k-th insert; slot i is [2i, 2i+1)
	}{
		{"descending", func(k int) int { return n - 1 - k }},
		{"ascending", func(k int) int { return k }},
		{"from both ends", func(k int) int {
			if k%2 == 0 {
				return k / 2
			}
			return n - 1 - k/2
		}},
		{"middle out", func(k int) int {
			if k%2 == 0 {
				return n/2 + k/2
			}
			return n/2 - 1 - k/2
		}},
		{"random", func(k int) int { return perm[k] }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s RangeSet
			for k := range n {
				i := int64(tt.at(k))
				s.Add(Range{2*i + 10, 2*i + 11})
				if s.shifted > budget {
					t.Fatalf("after %d inserts Add has moved %d ranges and leaves; the budget for %d is %d", k+1, s.shifted, n, budget)
				}
			}
			if err := s.check(); err != nil {
				t.Fatal(err)
			}
			if s.Len() != n || s.Total() != n {
				t.Fatalf("Len, Total = %d, %d; want %d, %d", s.Len(), s.Total(), n, n)
			}
			rs := s.Ranges()
			for i, r := range rs {
				if want := (Range{2*int64(i) + 10, 2*int64(i) + 11}); r != want {
					t.Fatalf("range %d = %v, want %v", i, r, want)
				}
			}
			if !s.Contains(10) || s.Contains(11) || !s.Contains(2*n+8) || s.Contains(2*n+10) ||
				!s.Overlaps(Range{0, 11}) || s.Overlaps(Range{11, 12}) || !s.Covers(Range{2*n + 8, 2*n + 9}) {
				t.Fatal("queries wrong")
			}
			// Filling the gaps merges everything into one range, through
			// every leaf.
			before := s.shifted
			for i := range int64(n + 1) {
				s.Add(Range{2*i + 9, 2*i + 10})
				if s.shifted-before > budget {
					t.Fatalf("filling gap %d moved %d ranges and leaves", i, s.shifted-before)
				}
			}
			if got := s.String(); got != fmt.Sprintf("9-%d", 2*n+10) {
				t.Fatalf("after filling: %.60s", got)
			}
			if err := s.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// bitSet is the reference for TestRangeSetReference: one bool per byte.
type bitSet []bool

func (b bitSet) add(r Range) {
	for i := r.Start; i < r.End; i++ {
		b[i] = true
	}
}

// ranges returns the runs of set bytes in [from, to), or the clear ones.
func (b bitSet) runs(from, to int64, set bool) []Range {
	var out []Range
	for i := from; i < to; i++ {
		if b[i] != set {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == i {
			out[n-1].End++
		} else {
			out = append(out, Range{i, i + 1})
		}
	}
	return out
}

// rangeOps makes the random operations of TestRangeSetReference over
// [0, size).
type rangeOps struct {
	rng  *rand.Rand
	size int64
}

// rangeAt is a random range: mostly short, now and then long (swallowing
// several leaves) or empty.
func (o rangeOps) rangeAt() Range {
	a := o.rng.Int64N(o.size)
	b := a + 1 + o.rng.Int64N(4)
	switch o.rng.IntN(60) {
	case 0:
		b = a + o.rng.Int64N(5000)
	case 1:
		b = a // empty
	case 2:
		b = a - o.rng.Int64N(10) // backwards: empty
	}
	return Range{a, min(b, o.size)}
}

// adds are the ranges of one operation: one random range, or now and
// then a run in order or in reverse, with gaps.
func (o rangeOps) adds() []Range {
	switch o.rng.IntN(40) {
	case 0, 1:
		var adds []Range
		start, step := o.rng.Int64N(o.size-2000), 2+o.rng.Int64N(3)
		for k := int64(0); k < 400; k++ {
			adds = append(adds, Range{start + k*step, start + k*step + 1})
		}
		if o.rng.IntN(2) == 0 {
			slices.Reverse(adds)
		}
		return adds
	}
	return []Range{o.rangeAt()}
}

// TestRangeSetReference drives a RangeSet big enough to have many leaves
// with random Adds (mostly short ranges, some long ones that swallow
// several leaves, some runs in order or in reverse) and compares every
// answer with a byte map.
func TestRangeSetReference(t *testing.T) {
	const size = 1 << 15
	ops := rangeOps{rng: rand.New(rand.NewPCG(5, 6)), size: size}
	maxLeaves := 0
	for round := range 6 {
		var s RangeSet
		ref := make(bitSet, size)
		var clone RangeSet
		var cloneWant string
		for op := range 3000 {
			adds := ops.adds()
			for _, r := range adds {
				s.Add(r)
				if r.Start < r.End {
					ref.add(r)
				}
			}
			if op%10 == 0 || len(adds) > 1 || adds[0].Len() > 4 {
				if err := s.check(); err != nil {
					t.Fatalf("round %d op %d: %v", round, op, err)
				}
			}
			maxLeaves = max(maxLeaves, s.leaves())
			for range 4 {
				checkRangeQuery(t, &s, ref, ops.rangeAt(), round, op)
			}
			if op%50 == 0 {
				checkRangeSetWhole(t, &s, ref, round, op)
			}
			if op == 1500 {
				clone, cloneWant = s.Clone(), s.String()
			}
			if op > 1500 && op%100 == 0 {
				clone.Add(ops.rangeAt()) // must not touch s
			}
		}
		if cloneWant != "" && clone.check() != nil {
			t.Fatalf("round %d: clone: %v", round, clone.check())
		}
		if got, want := s.Ranges(), ref.runs(0, size, true); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: end state differs", round)
		}
	}
	if maxLeaves < 8 {
		t.Errorf("the sets had at most %d leaves", maxLeaves)
	}
	t.Logf("up to %d leaves", maxLeaves)
}

// checkRangeQuery compares s's answers about q (an empty or backwards q
// is skipped) with the reference's, after op of round.
func checkRangeQuery(t *testing.T, s *RangeSet, ref bitSet, q Range, round, op int) {
	t.Helper()
	if q.Start < 0 || q.End < q.Start {
		return
	}
	qs := ref[q.Start:q.End]
	if got, want := s.Overlaps(q), slices.Contains(qs, true); got != want {
		t.Fatalf("round %d op %d: Overlaps(%v) = %v", round, op, q, got)
	}
	if got, want := s.Covers(q), !slices.Contains(qs, false); got != want {
		t.Fatalf("round %d op %d: Covers(%v) = %v", round, op, q, got)
	}
	if got, want := s.Contains(q.Start), q.Start < int64(len(ref)) && ref[q.Start]; got != want {
		t.Fatalf("round %d op %d: Contains(%d) = %v", round, op, q.Start, got)
	}
	if got, want := s.Missing(q), ref.runs(q.Start, q.End, false); !reflect.DeepEqual(got, want) {
		t.Fatalf("round %d op %d: Missing(%v) = %v, want %v", round, op, q, got, want)
	}
}

// checkRangeSetWhole compares the whole of s (its ranges, Len, Total and
// its String parsed back) with the reference, after op of round.
func checkRangeSetWhole(t *testing.T, s *RangeSet, ref bitSet, round, op int) {
	t.Helper()
	want := ref.runs(0, int64(len(ref)), true)
	if got := s.Ranges(); !reflect.DeepEqual(got, want) {
		t.Fatalf("round %d op %d: %d ranges, want %d", round, op, len(got), len(want))
	}
	var total int64
	for _, r := range want {
		total += r.Len()
	}
	if s.Len() != len(want) || s.Total() != total {
		t.Fatalf("round %d op %d: Len, Total = %d, %d; want %d, %d", round, op, s.Len(), s.Total(), len(want), total)
	}
	if p, err := ParseRangeList(s.String()); s.Len() > 0 && (err != nil || !reflect.DeepEqual(p.Ranges(), want)) {
		t.Fatalf("round %d op %d: round trip: %v", round, op, err)
	} else if err := p.check(); err != nil {
		t.Fatalf("round %d op %d: parsed set: %v", round, op, err)
	}
}

// TestAddInOrderAllocatesNothing: a receiver adds every block it stores,
// mostly right after the previous one; that must not allocate.
func TestAddInOrderAllocatesNothing(t *testing.T) {
	var s RangeSet
	for i := range int64(3 * leafMax) { // several leaves
		s.Add(Range{i * 100, i*100 + 50})
	}
	off := int64(3*leafMax*100 + 1000)
	if n := testing.AllocsPerRun(1000, func() {
		s.Add(Range{off, off + 1<<20})
		off += 1 << 20
		s.Overlaps(Range{off, off + 1<<20})
	}); n != 0 {
		t.Errorf("Add in order allocates %v times", n)
	}
}

// BenchmarkRangeSetAdd measures Add per range: in order and merging (a
// receiver's steady state), and 200,000 one-byte ranges at descending or
// random non-adjacent offsets (the attack).
func BenchmarkRangeSetAdd(b *testing.B) {
	b.Run("in-order", func(b *testing.B) {
		b.ReportAllocs()
		var s RangeSet
		var off int64
		for b.Loop() {
			s.Add(Range{off, off + 1<<20})
			off += 1 << 20
		}
	})
	const n = 200000
	perm := rand.New(rand.NewPCG(7, 8)).Perm(n)
	for _, tt := range []struct {
		name string
		at   func(k int) int
	}{
		{"descending-200k", func(k int) int { return n - 1 - k }},
		{"random-200k", func(k int) int { return perm[k] }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var s RangeSet
				for k := range n {
					i := int64(tt.at(k))
					s.Add(Range{2 * i, 2*i + 1})
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/range")
		})
	}
}
