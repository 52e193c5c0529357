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
type RangeSet struct {
	rs []Range // sorted, disjoint, non-adjacent, non-empty
}

// Add adds r to the set, merging it with overlapping and adjacent ranges.
// Empty ranges are ignored.
func (s *RangeSet) Add(r Range) {
	if r.End <= r.Start {
		return
	}
	// i: first range that ends at or after r.Start (could touch r).
	i := sort.Search(len(s.rs), func(k int) bool { return s.rs[k].End >= r.Start })
	// j: first range that starts after r.End (cannot touch r).
	j := sort.Search(len(s.rs), func(k int) bool { return s.rs[k].Start > r.End })
	if i < j {
		r.Start = min(r.Start, s.rs[i].Start)
		r.End = max(r.End, s.rs[j-1].End)
	}
	s.rs = slices.Replace(s.rs, i, j, r)
}

// Ranges returns a copy of the set's ranges, in order.
func (s RangeSet) Ranges() []Range {
	if len(s.rs) == 0 {
		return nil
	}
	return append([]Range(nil), s.rs...)
}

// Len returns the number of ranges in the set.
func (s RangeSet) Len() int { return len(s.rs) }

// Total returns the number of bytes the set covers.
func (s RangeSet) Total() int64 {
	var n int64
	for _, r := range s.rs {
		n += r.Len()
	}
	return n
}

// Contains reports whether byte offset off is in the set.
func (s RangeSet) Contains(off int64) bool {
	i := sort.Search(len(s.rs), func(k int) bool { return s.rs[k].End > off })
	return i < len(s.rs) && s.rs[i].Start <= off
}

// Covers reports whether every byte of r is in the set. An empty r is
// always covered.
func (s RangeSet) Covers(r Range) bool {
	if r.End <= r.Start {
		return true
	}
	i := sort.Search(len(s.rs), func(k int) bool { return s.rs[k].End > r.Start })
	return i < len(s.rs) && s.rs[i].Start <= r.Start && s.rs[i].End >= r.End
}

// Overlaps reports whether any byte of r is in the set. An empty r never
// overlaps. It allocates nothing: a receiver asks it of every block.
func (s RangeSet) Overlaps(r Range) bool {
	if r.End <= r.Start {
		return false
	}
	i := sort.Search(len(s.rs), func(k int) bool { return s.rs[k].End > r.Start })
	return i < len(s.rs) && s.rs[i].Start < r.End
}

// Missing returns, in order, the parts of within that the set does not
// cover. For a restart it is what still has to be sent.
func (s RangeSet) Missing(within Range) []Range {
	if within.End <= within.Start {
		return nil
	}
	var out []Range
	pos := within.Start
	i := sort.Search(len(s.rs), func(k int) bool { return s.rs[k].End > within.Start })
	for ; i < len(s.rs) && s.rs[i].Start < within.End; i++ {
		if s.rs[i].Start > pos {
			out = append(out, Range{pos, s.rs[i].Start})
		}
		pos = max(pos, s.rs[i].End)
	}
	if pos < within.End {
		out = append(out, Range{pos, within.End})
	}
	return out
}

// Clone returns a copy of the set that shares no storage with s.
func (s RangeSet) Clone() RangeSet { return RangeSet{rs: s.Ranges()} }

// String returns the set in REST and 111-marker form, "0-100,200-300", or
// "" when empty.
func (s RangeSet) String() string {
	var b []byte
	for i, r := range s.rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, r.Start, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, r.End, 10)
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
	var set RangeSet
	for _, r := range rs {
		if n := len(set.rs); n > 0 && r.Start <= set.rs[n-1].End {
			set.rs[n-1].End = max(set.rs[n-1].End, r.End)
			continue
		}
		set.rs = append(set.rs, r)
	}
	return set, nil
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
