package progress

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain.txt", "plain.txt"},
		{"grüße €", "grüße €"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"tab\there", `tab\x09here`},
		{"cr\rlf\n", `cr\x0dlf\x0a`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{"\x00", `\x00`},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"a", "\x1b[31m", "\xff", "\u009b", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) = %q: not UTF-8", s, p)
		}
		for _, r := range p {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Fatalf("Printable(%q) = %q holds %U", s, p, r)
			}
		}
		if Printable(p) != p {
			t.Fatalf("Printable is not idempotent on %q", s)
		}
	})
}

// TestDisplayEscapesNames draws a frame for a file whose name holds an
// escape sequence: the terminal must get it escaped.
func TestDisplayEscapesNames(t *testing.T) {
	var out bytes.Buffer
	d := New(Options{Out: &out, Live: true, Width: func() int { return 200 }})
	d.FileStarted("evil\x1b]0;owned\x07\x1b[2J", 10)
	d.FileProgress("evil\x1b]0;owned\x07\x1b[2J", 5)
	d.Close()
	s := out.String()
	if strings.Contains(s, "\x1b]0;") || strings.Contains(s, "\x1b[2J") || strings.Contains(s, "\x07") {
		t.Errorf("the frame carries the name's escape sequence: %q", s)
	}
	if !strings.Contains(s, `evil\x1b]0;owned\x07\x1b[2J`) {
		t.Errorf("the frame lacks the escaped name: %q", s)
	}
}
