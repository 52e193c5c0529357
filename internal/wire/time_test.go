package wire

import (
	"testing"
	"time"
)

func TestFormatTime(t *testing.T) {
	tm := time.Date(2026, 11, 21, 19, 37, 18, 999, time.FixedZone("X", 3600))
	if got := FormatTime(tm); got != "20261121183718" {
		t.Errorf("FormatTime = %q", got)
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"20261121193718", time.Date(2026, 11, 21, 19, 37, 18, 0, time.UTC), true},
		{"20261121193718.5", time.Date(2026, 11, 21, 19, 37, 18, 500000000, time.UTC), true},
		{"20261121193718.123456789", time.Date(2026, 11, 21, 19, 37, 18, 123456789, time.UTC), true},
		{"20240229000000", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), true},
		{"00000101000000", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"20230229000000", time.Time{}, false},
		{"20261121193718.1234567890", time.Time{}, false},
		{"20261121193718.", time.Time{}, false},
		{"20261121193718,5", time.Time{}, false},
		{"20261121193718 ", time.Time{}, false},
		{"2026112119371", time.Time{}, false},
		{"20261321193718", time.Time{}, false},
		{"20261100193718", time.Time{}, false},
		{"20261121243718", time.Time{}, false},
		{"20261121196018", time.Time{}, false},
		{"20261121193760", time.Time{}, false},
		{"2026-1121193718", time.Time{}, false},
		{"+0261121193718", time.Time{}, false},
		{"", time.Time{}, false},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		if (err == nil) != tt.ok || !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err == nil && got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) not in UTC", tt.in)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	f.Add("20261121193718")
	f.Add("20261121193718.123")
	f.Add("20240229000000.000000001")
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTime(s)
		if err != nil {
			return
		}
		if got := FormatTime(tm); got != s[:14] {
			t.Fatalf("FormatTime(ParseTime(%q)) = %q", s, got)
		}
		back, err := ParseTime(FormatTime(tm))
		if err != nil || !back.Equal(tm.Truncate(time.Second)) {
			t.Fatalf("re-parse of %q: %v, %v", s, back, err)
		}
	})
}
