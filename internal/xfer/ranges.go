package xfer

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// maxRangeItems bounds the number of items ParseRangeList accepts.
const maxRangeItems = 10000

// errRangeList is the base of every range-list parse error.
var errRangeList = errors.New("xfer: bad range list")

// Range is a half-open byte range [Start, End).
type Range struct{ Start, End int64 }

// Len returns the number of bytes in r, or 0 when End <= Start.
func (r Range) Len() int64 {
	if r.End <= r.Start {
		return 0
	}
	return r.End - r.Start
}

// RangeSet is a set of disjoint, sorted, merged half-open ranges. The zero
// value is empty and ready to use. Copying a RangeSet shares its storage;
// use Clone for an independent copy. A RangeSet is not safe for concurrent
// use.
//
// A peer chooses the ranges (MODE E block offsets, REST lists, 111
// markers), in any order: Add must not cost the length of the set, as
// one sorted slice would for every insert in front of it. The ranges are
// kept in order in leaves of at most leafMax, so an insert shifts one
// leaf. Leaf 0 is head, so a small set is one slice.
type RangeSet struct {
	head []Range   // leaf 0; empty only when the set is
	more [][]Range // leaves 1…
	n    int       // ranges in all leaves

	// shifted counts the ranges and leaves Add has moved or copied: the
	// tests' measure of its work.
	shifted int
}

// leafMax is the most ranges a leaf holds. An insert shifts up to leafMax
// ranges; a new leaf, made on average at most once per leafMax/2 inserts,
// shifts up to 4n/leafMax leaves (adjacent leaves hold more than
// leafMax/2 ranges between them).
const leafMax = 256

func (s *RangeSet) leaves() int {
	if s.n == 0 {
		return 0
	}
	return 1 + len(s.more)
}

func (s *RangeSet) leaf(l int) []Range {
	if l == 0 {
		return s.head
	}
	return s.more[l-1]
}

func (s *RangeSet) setLeaf(l int, rs []Range) {
	if l == 0 {
		s.head = rs
	} else {
		s.more[l-1] = rs
	}
}

// find returns the leaf and index of the first range for which after is
// true; after must be false and then true along the set. It returns
// (s.leaves(), 0) when there is none.
func (s *RangeSet) find(after func(Range) bool) (l, i int) {
	nl := s.leaves()
	l = sort.Search(nl, func(k int) bool { lf := s.leaf(k); return after(lf[len(lf)-1]) })
	if l == nl {
		return nl, 0
	}
	lf := s.leaf(l)
	return l, sort.Search(len(lf), func(k int) bool { return after(lf[k]) })
}

// Add adds r to the set, merging it with overlapping and adjacent ranges.
// Empty ranges are ignored.
func (s *RangeSet) Add(r Range) {
	if r.End <= r.Start {
		return
	}
	if s.n == 0 {
		s.head = append(s.head[:0], r)
		s.n = 1
		return
	}
	// Blocks mostly arrive in order: at or after the last range.
	ll := s.leaves() - 1
	lf := s.leaf(ll)
	if last := &lf[len(lf)-1]; r.Start >= last.Start {
		if r.Start <= last.End {
			last.End = max(last.End, r.End)
		} else {
			s.insert(ll, len(lf), r)
		}
		return
	}
	// The first range that touches r or lies after it; there is one, as
	// the last range ends after r starts.
	l, i := s.find(func(x Range) bool { return x.End >= r.Start })
	lf = s.leaf(l)
	if lf[i].Start > r.End {
		s.insert(l, i, r)
		return
	}
	// lf[i] touches r: it becomes their union, swallowing the ranges after
	// it that touch r too. As the ranges are disjoint and not adjacent,
	// swallowing one cannot make r touch the next.
	r.Start = min(r.Start, lf[i].Start)
	r.End = max(r.End, lf[i].End)
	j := i + 1 + sort.Search(len(lf)-i-1, func(k int) bool { return lf[i+1+k].Start > r.End })
	inside := j < len(lf) // a range of leaf l is left after r
	if j > i+1 {
		r.End = max(r.End, lf[j-1].End)
		s.shifted += len(lf) - j
		s.n -= j - i - 1
		lf = slices.Delete(lf, i+1, j)
		s.setLeaf(l, lf)
	}
	lf[i] = r
	if inside {
		s.rebalance(l)
		return
	}
	// r reached the end of leaf l: go on through the leaves after it.
	m := l + 1
	for ; m < s.leaves(); m++ {
		nf := s.leaf(m)
		e := sort.Search(len(nf), func(k int) bool { return nf[k].Start > r.End })
		if e == 0 {
			break
		}
		r.End = max(r.End, nf[e-1].End)
		s.n -= e
		if e < len(nf) {
			s.shifted += len(nf) - e
			s.setLeaf(m, slices.Delete(nf, 0, e))
			break
		}
	}
	lf[i] = r
	s.removeLeaves(l+1, m)
	s.rebalance(l)
}

// insert puts r at index i of leaf l, splitting the leaf when it is full.
func (s *RangeSet) insert(l, i int, r Range) {
	s.n++
	lf := s.leaf(l)
	if len(lf) < leafMax {
		s.shifted += len(lf) - i
		s.setLeaf(l, slices.Insert(lf, i, r))
		return
	}
	switch {
	case i == len(lf) && l == s.leaves()-1:
		// Appending past the last leaf (blocks in order, gaps between
		// them) starts a new one and leaves this one full.
		s.addLeaf(l+1, append(make([]Range, 0, leafMax), r))
	case i == 0 && l == 0:
		// Likewise in front of the first leaf (blocks in reverse order).
		s.addLeaf(1, lf)
		s.head = append(make([]Range, 0, leafMax), r)
	default:
		h := leafMax / 2
		right := append(make([]Range, 0, leafMax), lf[h:]...)
		s.shifted += len(right)
		left := lf[:h]
		s.setLeaf(l, left)
		s.addLeaf(l+1, right)
		if i <= h {
			s.shifted += h - i
			s.setLeaf(l, slices.Insert(left, i, r))
		} else {
			s.shifted += len(right) - (i - h)
			s.setLeaf(l+1, slices.Insert(right, i-h, r))
		}
	}
}

// addLeaf makes rs leaf l (l >= 1), moving leaves l… up by one.
func (s *RangeSet) addLeaf(l int, rs []Range) {
	s.shifted += len(s.more) - (l - 1)
	s.more = slices.Insert(s.more, l-1, rs)
}

// removeLeaves removes leaves [a, b), a >= 1, leaving at least one.
func (s *RangeSet) removeLeaves(a, b int) {
	if a >= b {
		return
	}
	s.shifted += len(s.more) - (b - 1)
	s.more = slices.Delete(s.more, a-1, b-1)
}

// rebalance joins leaf l with a neighbour, or l+1 with its own, when the
// two hold leafMax/2 ranges or fewer between them, so that there are
// never more than about 4n/leafMax leaves however ranges merge.
func (s *RangeSet) rebalance(l int) {
	for _, k := range []int{l + 1, l, l - 1} {
		if k < 0 || k+1 >= s.leaves() {
			continue
		}
		a, b := s.leaf(k), s.leaf(k+1)
		if len(a)+len(b) > leafMax/2 {
			continue
		}
		s.shifted += len(b)
		s.setLeaf(k, append(a, b...))
		s.removeLeaves(k+1, k+2)
	}
}

// Ranges returns a copy of the set's ranges, in order.
func (s RangeSet) Ranges() []Range {
	if s.n == 0 {
		return nil
	}
	out := make([]Range, 0, s.n)
	for l := range s.leaves() {
		out = append(out, s.leaf(l)...)
	}
	return out
}

// Len returns the number of ranges in the set.
func (s RangeSet) Len() int { return s.n }

// Total returns the number of bytes the set covers.
func (s RangeSet) Total() int64 {
	var n int64
	for l := range s.leaves() {
		for _, r := range s.leaf(l) {
			n += r.Len()
		}
	}
	return n
}

// at returns the first range that ends after off, if any.
func (s *RangeSet) at(off int64) (Range, bool) {
	l, i := s.find(func(x Range) bool { return x.End > off })
	if l == s.leaves() {
		return Range{}, false
	}
	return s.leaf(l)[i], true
}

// Contains reports whether byte offset off is in the set.
func (s RangeSet) Contains(off int64) bool {
	x, ok := s.at(off)
	return ok && x.Start <= off
}

// Covers reports whether every byte of r is in the set. An empty r is
// always covered.
func (s RangeSet) Covers(r Range) bool {
	if r.End <= r.Start {
		return true
	}
	x, ok := s.at(r.Start)
	return ok && x.Start <= r.Start && x.End >= r.End
}

// Overlaps reports whether any byte of r is in the set. An empty r never
// overlaps. It allocates nothing: a receiver asks it of every block.
func (s RangeSet) Overlaps(r Range) bool {
	if r.End <= r.Start {
		return false
	}
	x, ok := s.at(r.Start)
	return ok && x.Start < r.End
}

// Missing returns, in order, the parts of within that the set does not
// cover. For a restart it is what still has to be sent.
func (s RangeSet) Missing(within Range) []Range {
	if within.End <= within.Start {
		return nil
	}
	var out []Range
	pos := within.Start
	l, i := s.find(func(x Range) bool { return x.End > within.Start })
scan:
	for ; l < s.leaves(); l, i = l+1, 0 {
		for _, r := range s.leaf(l)[i:] {
			if r.Start >= within.End {
				break scan
			}
			if r.Start > pos {
				out = append(out, Range{pos, r.Start})
			}
			pos = max(pos, r.End)
		}
	}
	if pos < within.End {
		out = append(out, Range{pos, within.End})
	}
	return out
}

// Clone returns a copy of the set that shares no storage with s.
func (s RangeSet) Clone() RangeSet { return fromSorted(s.Ranges()) }

// fromSorted returns the set of rs, which must be sorted, disjoint, not
// adjacent and not empty; the set takes over rs. Each leaf is capped at
// its length, so growing one copies it out of the shared array.
func fromSorted(rs []Range) RangeSet {
	s := RangeSet{n: len(rs)}
	for i := 0; i < len(rs); i += leafMax {
		j := min(i+leafMax, len(rs))
		if i == 0 {
			s.head = rs[:j:j]
		} else {
			s.more = append(s.more, rs[i:j:j])
		}
	}
	return s
}

// String returns the set in REST and 111-marker form, "0-100,200-300", or
// "" when empty.
func (s RangeSet) String() string {
	var b []byte
	for l := range s.leaves() {
		for _, r := range s.leaf(l) {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, r.Start, 10)
			b = append(b, '-')
			b = strconv.AppendInt(b, r.End, 10)
		}
	}
	return string(b)
}

// ParseRangeList parses a REST argument or the body of a 111 range marker:
// "n" means 0-n, and "a-b[,c-d…]" lists half-open ranges. Whitespace around
// items is tolerated. Negative numbers, a start after its end, non-digits,
// values that overflow int64, empty items and more than 10,000 items are
// errors.
func ParseRangeList(s string) (RangeSet, error) {
	if strings.Count(s, ",") >= maxRangeItems {
		return RangeSet{}, fmt.Errorf("%w: more than %d items", errRangeList, maxRangeItems)
	}
	var rs []Range
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		a, b, isRange := strings.Cut(item, "-")
		var r Range
		var err error
		if isRange {
			if r.Start, err = parseOffset(strings.TrimSpace(a)); err == nil {
				r.End, err = parseOffset(strings.TrimSpace(b))
			}
		} else {
			r.End, err = parseOffset(item)
		}
		if err != nil {
			return RangeSet{}, fmt.Errorf("%w: item %q: %w", errRangeList, item, err)
		}
		if r.Start > r.End {
			return RangeSet{}, fmt.Errorf("%w: item %q: start after end", errRangeList, item)
		}
		if r.Len() > 0 {
			rs = append(rs, r)
		}
	}
	// Sort and merge in one pass rather than Add item by item, which would
	// be quadratic for a long unsorted list.
	slices.SortFunc(rs, func(x, y Range) int { return cmp.Compare(x.Start, y.Start) })
	merged := rs[:0]
	for _, r := range rs {
		if n := len(merged); n > 0 && r.Start <= merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, r.End)
			continue
		}
		merged = append(merged, r)
	}
	return fromSorted(merged), nil
}

// parseOffset parses a non-empty string of decimal digits as an int64.
func parseOffset(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad digit %q", s[i])
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
