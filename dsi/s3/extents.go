package s3

import (
	"slices"
	"sort"
)

// extent is the half-open byte range [start, end).
type extent struct{ start, end int64 }

func (x extent) len() int64 { return x.end - x.start }

// extentSet is a set of disjoint, sorted, merged extents: the bytes a
// Writer has been given. A peer picks the offsets (MODE E blocks arrive
// in any order, and a client may send millions of one-byte blocks), so
// no operation may cost the size of the set: the extents are kept in
// order in leaves of at most leafMax, an insert shifts one leaf, and a
// lookup is two binary searches. The zero value is empty.
type extentSet struct {
	leaves [][]extent // each non-empty and sorted; in order
	n      int        // extents in all leaves
}

// leafMax is the most extents a leaf holds before it is split in two.
const leafMax = 512

// locate returns the position (leaf, index) of the first extent whose
// end is at least off: the one holding or touching off, or else the
// first after it. The leaf is len(s.leaves) when there is none.
func (s *extentSet) locate(off int64) (int, int) {
	l := sort.Search(len(s.leaves), func(k int) bool {
		lf := s.leaves[k]
		return lf[len(lf)-1].end >= off
	})
	if l == len(s.leaves) {
		return l, 0
	}
	lf := s.leaves[l]
	return l, sort.Search(len(lf), func(k int) bool { return lf[k].end >= off })
}

// removeAt deletes the extent at (l, i), and the leaf if it empties.
func (s *extentSet) removeAt(l, i int) {
	lf := slices.Delete(s.leaves[l], i, i+1)
	s.n--
	if len(lf) == 0 {
		s.leaves = slices.Delete(s.leaves, l, l+1)
		return
	}
	s.leaves[l] = lf
}

// add adds [a, b), merging it with the extents it overlaps or touches.
func (s *extentSet) add(a, b int64) {
	if a >= b {
		return
	}
	for {
		l, i := s.locate(a)
		if l == len(s.leaves) {
			break
		}
		x := s.leaves[l][i]
		if x.start > b {
			break
		}
		a, b = min(a, x.start), max(b, x.end)
		s.removeAt(l, i)
	}
	l, i := s.locate(a)
	if l == len(s.leaves) {
		if l == 0 {
			s.leaves = append(s.leaves, []extent{{a, b}})
			s.n++
			return
		}
		l--
		i = len(s.leaves[l])
	}
	lf := slices.Insert(s.leaves[l], i, extent{a, b})
	s.n++
	if len(lf) > leafMax {
		h := len(lf) / 2
		right := slices.Clone(lf[h:])
		s.leaves[l] = lf[:h]
		s.leaves = slices.Insert(s.leaves, l+1, right)
		return
	}
	s.leaves[l] = lf
}

// covers reports whether one extent holds all of [a, b) (a < b).
func (s *extentSet) covers(a, b int64) bool {
	l, i := s.locate(a + 1) // the first extent ending past a
	if l == len(s.leaves) {
		return false
	}
	x := s.leaves[l][i]
	return x.start <= a && x.end >= b
}

// gaps returns the ranges of [a, b) that no extent covers.
func (s *extentSet) gaps(a, b int64) []extent {
	var g []extent
	pos := a
	for l, i := s.locate(a + 1); l < len(s.leaves) && pos < b; {
		x := s.leaves[l][i]
		if x.start >= b {
			break
		}
		if x.start > pos {
			g = append(g, extent{pos, x.start})
		}
		pos = max(pos, x.end)
		if i++; i == len(s.leaves[l]) {
			l, i = l+1, 0
		}
	}
	if pos < b {
		g = append(g, extent{pos, b})
	}
	return g
}

// all returns every extent, in order.
func (s *extentSet) all() []extent {
	out := make([]extent, 0, s.n)
	for _, lf := range s.leaves {
		out = append(out, lf...)
	}
	return out
}
