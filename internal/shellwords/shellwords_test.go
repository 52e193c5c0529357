package shellwords

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{"get a b", []string{"get", "a", "b"}, false},
		{"  get\t a  ", []string{"get", "a"}, false},
		{`get my\ file`, []string{"get", "my file"}, false},
		{`get "my file" 'it''s'`, []string{"get", "my file", "its"}, false},
		{`get "a \"q\" \\ \n"`, []string{"get", `a "q" \ \n`}, false},
		{`get 'a\b'`, []string{"get", `a\b`}, false},
		{`get ""`, []string{"get", ""}, false},
		{`get x"y z"w`, []string{"get", "xy zw"}, false},
		{`get "open`, nil, true},
		{`get end\`, nil, true},
		{`get 'a b`, nil, true},
		{`get a"b`, nil, true},
		{`get "x\\"`, []string{"get", `x\`}, false},
		{`get a\ `, []string{"get", "a "}, false},
		{`get '' b`, []string{"get", "", "b"}, false},
		{"get \"a\tb\" \"it's\"", []string{"get", "a\tb", "it's"}, false},
		{`get -cc 4 'd*/x'`, []string{"get", "-cc", "4", "d*/x"}, false},
		{"", nil, false},
		{" \t ", nil, false},
	} {
		got, err := Split(tc.in)
		if (err != nil) != tc.bad || strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("Split(%q) = %q, %v", tc.in, got, err)
		}
		// The completer's view of the same line agrees on the last word.
		if !tc.bad && len(tc.want) > 0 && !strings.HasSuffix(tc.in, " ") && !strings.HasSuffix(tc.in, "\t") {
			if _, word, index := Partial(tc.in); word != tc.want[len(tc.want)-1] || index != len(tc.want)-1 {
				t.Errorf("Partial(%q) = %q, %d", tc.in, word, index)
			}
		}
	}
}

func TestPartialAndEscape(t *testing.T) {
	for _, tc := range []struct {
		head  string
		start int
		word  string
		index int
	}{
		{"", 0, "", 0},
		{"ge", 0, "ge", 0},
		{"get ", 4, "", 1},
		{"get my\\ fi", 4, "my fi", 1},
		{`get "my fi`, 4, "my fi", 1},
		{`get 'a b' c`, 10, "c", 2},
		{`put x y\`, 6, "y", 2},
		{`put x \`, 6, "", 2},
		{`get 'open quo`, 4, "open quo", 1},
		{`get "a b" c\ d`, 10, "c d", 2},
		{"get a\t", 6, "", 2},
		{`get -cc 4 su`, 10, "su", 3},
		{`get x"y z`, 4, "xy z", 1},
	} {
		start, word, index := Partial(tc.head)
		if start != tc.start || word != tc.word || index != tc.index {
			t.Errorf("Partial(%q) = %d %q %d; want %d %q %d", tc.head, start, word, index, tc.start, tc.word, tc.index)
		}
	}
	for _, s := range []string{"plain", "a b", `q"uo'te`, `back\slash`, "tab\there"} {
		w, err := Split("x " + Escape(s))
		if err != nil || len(w) != 2 || w[1] != s {
			t.Errorf("Escape(%q) = %q splits to %q, %v", s, Escape(s), w, err)
		}
	}
}

// FuzzScanWords checks that escaped words split back to themselves and
// that the completer sees the last one.
func FuzzScanWords(f *testing.F) {
	f.Add("a b", `q"uo'te`)
	f.Add(`back\slash`, "tab\there")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" {
			return
		}
		line := Escape(a) + " " + Escape(b)
		w, err := Split(line)
		if err != nil || len(w) != 2 || w[0] != a || w[1] != b {
			t.Fatalf("Split(%q) = %q, %v", line, w, err)
		}
		start, word, index := Partial(line)
		if start != len(Escape(a))+1 || word != b || index != 1 {
			t.Fatalf("Partial(%q) = %d %q %d", line, start, word, index)
		}
	})
}
