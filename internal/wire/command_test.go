package wire

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line string
		want Command
		err  error
	}{
		{"NOOP", Command{"NOOP", ""}, nil},
		{"noop", Command{"NOOP", ""}, nil},
		{"Noop ", Command{"NOOP", ""}, nil},
		{"RETR /a b", Command{"RETR", "/a b"}, nil},
		{"SIZE /x ", Command{"SIZE", "/x "}, nil},
		{"SIZE    /x  y  ", Command{"SIZE", "/x  y  "}, nil},
		{"MKD /scratch/labw/dir with space", Command{"MKD", "/scratch/labw/dir with space"}, nil},
		{"XCKSM md5", Command{"XCKSM", "md5"}, nil},
		{"XMD5 f", Command{"XMD5", "f"}, nil},
		{"ERET P 0 5000 /p", Command{"ERET", "P 0 5000 /p"}, nil},
		{"", Command{}, ErrEmptyCommand},
		{" NOOP", Command{}, ErrBadCommand},
		{"SIZE\tpath", Command{}, ErrBadCommand},
		{"NO-OP", Command{}, ErrBadCommand},
		{"N\xffOP", Command{}, ErrBadCommand},
		{"\r", Command{}, ErrBadCommand},
	}
	for _, tt := range tests {
		got, err := ParseCommand(tt.line)
		if err != tt.err || got != tt.want {
			t.Errorf("ParseCommand(%q) = %#v, %v; want %#v, %v", tt.line, got, err, tt.want, tt.err)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		arg  string
		n    int
		want []string
	}{
		{"", 0, nil},
		{"   ", 3, nil},
		{"a b c", 0, []string{"a", "b", "c"}},
		{"  a   b  c  ", 0, []string{"a", "b", "c"}},
		{"P 0 5000 /path with  spaces ", 4, []string{"P", "0", "5000", "/path with  spaces "}},
		{"/x ", 1, []string{"/x "}},
		{"a b ", 3, []string{"a", "b"}},
		{"a\tb c", 0, []string{"a\tb", "c"}},
		{"MD5 0 -1 /f", 4, []string{"MD5", "0", "-1", "/f"}},
		{"a b c", -1, []string{"a", "b", "c"}},
		{"  a b", 1, []string{"a b"}},
	}
	for _, tt := range tests {
		if got := SplitArgs(tt.arg, tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitArgs(%q, %d) = %q, want %q", tt.arg, tt.n, got, tt.want)
		}
	}
}

func TestCommandString(t *testing.T) {
	tests := []struct {
		c    Command
		want string
	}{
		{Command{"NOOP", ""}, "NOOP"},
		{Command{"RETR", "/a b"}, "RETR /a b"},
		{Command{"PASS", "secret"}, "PASS ****"},
		{Command{"PASS", ""}, "PASS"},
		{Command{"ADAT", "YIIBtoken"}, "ADAT ****"},
		{Command{"DCSC", "P LS0tLS1CRUdJTiBDRVJU"}, "DCSC ****"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"NOOP", "RETR /a b ", " X", "", "SIZE\tp", "PASS x", "eret P 1 2 /x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseCommand(line)
		if err != nil {
			if c != (Command{}) {
				t.Fatalf("error %v with non-zero command %#v", err, c)
			}
			return
		}
		if c.Verb == "" || c.Verb != strings.ToUpper(c.Verb) || strings.HasPrefix(c.Arg, " ") {
			t.Fatalf("bad command %#v from %q", c, line)
		}
		// Re-parsing the canonical form gives the same command.
		if c.Verb != "PASS" {
			c2, err := ParseCommand(c.String())
			if err != nil || c2 != c {
				t.Fatalf("re-parse of %q = %#v, %v; want %#v", c.String(), c2, err, c)
			}
		}
		// SplitArgs never loses non-space bytes.
		for _, n := range []int{0, 1, 3} {
			got := strings.Join(SplitArgs(c.Arg, n), "")
			if strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(c.Arg, " ", "") {
				t.Fatalf("SplitArgs(%q, %d) lost bytes", c.Arg, n)
			}
		}
	})
}
