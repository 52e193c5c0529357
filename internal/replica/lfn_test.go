package replica

import "testing"

func TestParseLFN(t *testing.T) {
	tests := []struct {
		arg, want string
		bad       bool
	}{
		{arg: "lfn:/cms/run1/f.root", want: "/cms/run1/f.root"},
		{arg: "LFN:/a", want: "/a"},
		{arg: "lfn:///cms/f", want: "/cms/f"},
		{arg: "lfn:/", want: "/"},
		{arg: "lfn:", bad: true},
		{arg: "lfn:cms/f", bad: true},
		{arg: "lfn://host/cms/f", bad: true},
		{arg: "lfn:/cms/../etc", bad: true},
		{arg: "lfn:/cms/./f", bad: true},
		{arg: "lfn:/cms//f", bad: true},
		{arg: "lfn:/cms/", bad: true},
		{arg: "lfn:/a?b", bad: true},
		{arg: "lfn:/a\nb", bad: true},
		{arg: "ftp://h/a", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseLFN(tt.arg)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseLFN(%q) = %q, want an error", tt.arg, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseLFN(%q) = %q, %v; want %q", tt.arg, got, err, tt.want)
		}
	}
}
