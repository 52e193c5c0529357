package xfer

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func TestRangeLen(t *testing.T) {
	for _, tt := range []struct {
		r    Range
		want int64
	}{{Range{0, 10}, 10}, {Range{5, 5}, 0}, {Range{9, 3}, 0}} {
		if got := tt.r.Len(); got != tt.want {
			t.Errorf("%v.Len() = %d, want %d", tt.r, got, tt.want)
		}
	}
}

func TestRangeSetAdd(t *testing.T) {
	tests := []struct {
		add  []Range
		want string
	}{
		{nil, ""},
		{[]Range{{5, 5}, {9, 3}}, ""},
		{[]Range{{0, 100}, {200, 300}}, "0-100,200-300"},
		{[]Range{{200, 300}, {0, 100}}, "0-100,200-300"},
		{[]Range{{0, 100}, {100, 200}}, "0-200"},
		{[]Range{{100, 200}, {0, 100}}, "0-200"},
		{[]Range{{0, 10}, {20, 30}, {40, 50}, {5, 45}}, "0-50"},
		{[]Range{{0, 10}, {20, 30}, {40, 50}, {10, 20}}, "0-30,40-50"},
		{[]Range{{0, 10}, {20, 30}, {12, 18}}, "0-10,12-18,20-30"},
		{[]Range{{0, 16777216}, {16777216, 33554432}}, "0-33554432"},
		{[]Range{{10, 20}, {12, 15}}, "10-20"},
	}
	for _, tt := range tests {
		var s RangeSet
		for _, r := range tt.add {
			s.Add(r)
		}
		if got := s.String(); got != tt.want {
			t.Errorf("Add(%v) = %q, want %q", tt.add, got, tt.want)
		}
	}
}

func TestRangeSetQueries(t *testing.T) {
	var s RangeSet
	s.Add(Range{0, 50000})
	s.Add(Range{60000, 70000})
	if s.Len() != 2 || s.Total() != 60000 {
		t.Errorf("Len, Total = %d, %d", s.Len(), s.Total())
	}
	for _, tt := range []struct {
		off  int64
		want bool
	}{{-1, false}, {0, true}, {49999, true}, {50000, false}, {59999, false}, {60000, true}, {69999, true}, {70000, false}} {
		if got := s.Contains(tt.off); got != tt.want {
			t.Errorf("Contains(%d) = %v", tt.off, got)
		}
	}
	for _, tt := range []struct {
		r    Range
		want bool
	}{{Range{0, 50000}, true}, {Range{10, 20}, true}, {Range{49999, 50001}, false}, {Range{0, 70000}, false},
		{Range{60000, 70000}, true}, {Range{65000, 70001}, false}, {Range{55000, 55000}, true}, {Range{80000, 90000}, false}} {
		if got := s.Covers(tt.r); got != tt.want {
			t.Errorf("Covers(%v) = %v", tt.r, got)
		}
	}
	// protocol.md §8.3: REST 0-50000,60000-70000 sends 50000-60000 and 70000-EOF.
	if got, want := s.Missing(Range{0, 100000}), []Range{{50000, 60000}, {70000, 100000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Missing = %v, want %v", got, want)
	}
	if got, want := s.Missing(Range{55000, 65000}), []Range{{55000, 60000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Missing = %v, want %v", got, want)
	}
	if got := s.Missing(Range{0, 50000}); got != nil {
		t.Errorf("Missing covered = %v", got)
	}
	if got := s.Missing(Range{5, 5}); got != nil {
		t.Errorf("Missing empty = %v", got)
	}
	var empty RangeSet
	if got, want := empty.Missing(Range{3, 9}), []Range{{3, 9}}; !reflect.DeepEqual(got, want) {
		t.Errorf("empty Missing = %v", got)
	}
	if empty.Ranges() != nil || empty.Len() != 0 || empty.Total() != 0 || empty.Contains(0) || empty.String() != "" {
		t.Errorf("zero value not empty")
	}
}

func TestRangeSetNoAlias(t *testing.T) {
	var s RangeSet
	s.Add(Range{0, 10})
	s.Add(Range{20, 30})
	rs := s.Ranges()
	rs[0].End = 999
	if s.String() != "0-10,20-30" {
		t.Errorf("Ranges aliases the set")
	}
	c := s.Clone()
	c.Add(Range{10, 20})
	c.Add(Range{100, 200})
	if s.String() != "0-10,20-30" || c.String() != "0-30,100-200" {
		t.Errorf("Clone aliases: s=%q c=%q", s, c)
	}
}

func TestParseRangeList(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"1000", "0-1000", true},
		{"0", "", true},
		{"0-16777216", "0-16777216", true},
		{"0-50000,60000-70000", "0-50000,60000-70000", true},
		{" 0-10 , 20 - 30 ,40-50", "0-10,20-30,40-50", true},
		{"20-30,0-10,10-20", "0-30", true},
		{"5-5", "", true},
		{"0-9223372036854775807", "0-9223372036854775807", true},
		{"0-9223372036854775808", "", false},
		{"", "", false},
		{" ", "", false},
		{"abc", "", false},
		{"-5", "", false},
		{"5-", "", false},
		{"10-5", "", false},
		{"0-10,", "", false},
		{",0-10", "", false},
		{"0-10,,20-30", "", false},
		{"+5", "", false},
		{"0x10", "", false},
		{"1-2-3", "", false},
		{"1 2", "", false},
	}
	for _, tt := range tests {
		got, err := ParseRangeList(tt.in)
		if (err == nil) != tt.ok || (err == nil && got.String() != tt.want) {
			t.Errorf("ParseRangeList(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, errRangeList) {
			t.Errorf("error %v does not wrap errRangeList", err)
		}
	}
	many := strings.Repeat("1-2,", maxRangeItems-1) + "1-2"
	if _, err := ParseRangeList(many); err != nil {
		t.Errorf("%d items: %v", maxRangeItems, err)
	}
	if _, err := ParseRangeList(many + ",3-4"); err == nil {
		t.Errorf("%d items accepted", maxRangeItems+1)
	}
}

func TestRangeTruncation(t *testing.T) {
	in := "0-50000,60000-70000"
	full, _ := ParseRangeList(in)
	for i := 0; i < len(in); i++ {
		if got, err := ParseRangeList(in[:i]); err == nil && got.String() == full.String() {
			t.Errorf("prefix %q parses like the full list", in[:i])
		}
	}
}

// TestRangeSetModel compares RangeSet with a byte map.
func TestRangeSetModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 200; iter++ {
		var s RangeSet
		var model [200]bool
		for k := 0; k < 1+rng.Intn(12); k++ {
			a, b := int64(rng.Intn(200)), int64(rng.Intn(200))
			s.Add(Range{a, b})
			for i := a; i < b; i++ {
				model[i] = true
			}
		}
		var total int64
		for i, in := range model {
			if in {
				total++
			}
			if s.Contains(int64(i)) != in {
				t.Fatalf("Contains(%d) mismatch for %v", i, s)
			}
		}
		if s.Total() != total {
			t.Fatalf("Total = %d, want %d", s.Total(), total)
		}
		rs := s.Ranges()
		for i := 1; i < len(rs); i++ {
			if rs[i-1].End >= rs[i].Start {
				t.Fatalf("not merged: %v", rs)
			}
		}
		for k := 0; k < 20; k++ {
			a := int64(rng.Intn(200))
			b := a + int64(rng.Intn(int(200-a)+1))
			want := false
			for i := a; i < b; i++ {
				want = want || model[i]
			}
			if got := s.Overlaps(Range{a, b}); got != want {
				t.Fatalf("Overlaps(%d-%d) = %v for %v", a, b, got, s)
			}
		}
		var miss int64
		for _, r := range s.Missing(Range{0, 200}) {
			for i := r.Start; i < r.End; i++ {
				if model[i] {
					t.Fatalf("Missing includes covered byte %d", i)
				}
				miss++
			}
		}
		if miss+total != 200 {
			t.Fatalf("Missing + Total = %d", miss+total)
		}
		p, err := ParseRangeList(s.String())
		if s.Len() > 0 && (err != nil || !reflect.DeepEqual(p.Ranges(), rs)) {
			t.Fatalf("round trip of %q = %v, %v", s, p, err)
		}
	}
}

func FuzzParseRangeList(f *testing.F) {
	f.Add("1000")
	f.Add("0-50000,60000-70000")
	f.Add(" 20-30 ,0-10,10-20")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseRangeList(in)
		if err != nil {
			return
		}
		rs := s.Ranges()
		for i, r := range rs {
			if r.Start < 0 || r.End <= r.Start || (i > 0 && rs[i-1].End >= r.Start) {
				t.Fatalf("bad set %v from %q", rs, in)
			}
		}
		if s.Len() == 0 {
			return
		}
		again, err := ParseRangeList(s.String())
		if err != nil || !reflect.DeepEqual(again.Ranges(), rs) {
			t.Fatalf("%q -> %q -> %v, %v", in, s, again, err)
		}
		// Building the set with Add gives the same result.
		var b RangeSet
		for i := len(rs) - 1; i >= 0; i-- {
			b.Add(rs[i])
		}
		if b.String() != s.String() {
			t.Fatalf("Add order changed set: %q vs %q", b, s)
		}
	})
}

// TestOverlapsAllocatesNothing: a receiver checks every block with it.
func TestOverlapsAllocatesNothing(t *testing.T) {
	var s RangeSet
	for i := int64(0); i < 64; i++ {
		s.Add(Range{i * 100, i*100 + 50})
	}
	if n := testing.AllocsPerRun(100, func() { s.Overlaps(Range{1020, 1080}) }); n != 0 {
		t.Errorf("Overlaps allocates %v times", n)
	}
}
