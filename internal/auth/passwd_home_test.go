package auth

import (
	"errors"
	"strings"
	"testing"
)

// TestPasswdEmptyHome: "name:hash:" (a home cut short) is refused, naming
// the line; "name:hash" serves the whole tree and "name:hash:/h" /h.
func TestPasswdEmptyHome(t *testing.T) {
	h := hashWith("pw", make([]byte, 16), 1000)
	for _, tc := range []struct {
		file, home string
		badLine    string // the error names it
	}{
		{"alice:" + h + "\n", "/", ""},
		{"alice:" + h + ":/data\n", "/data", ""},
		{"# c\nalice:" + h + ":\n", "", "line 2: empty home"},
		{"alice:" + h + ": \n", "", "line 1: empty home"},
	} {
		p, err := Parse([]byte(tc.file))
		if tc.badLine != "" {
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.badLine) {
				t.Errorf("%q: %v, want ErrFormat naming the line", tc.file, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.file, err)
		}
		if u := p.Users()[0]; u.Home != tc.home {
			t.Errorf("%q: home %q, want %q", tc.file, u.Home, tc.home)
		}
	}
}
