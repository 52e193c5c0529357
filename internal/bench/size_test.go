package bench

import "testing"

func TestParseSize(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"1", 1},
		{"4096", 4096},
		{"4294967296", 4 << 30},
		{"8K", 8 << 10},
		{"8k", 8 << 10},
		{"8M", 8 << 20},
		{"4G", 4 << 30},
		{"4g", 4 << 30},
		{"4GiB", 4 << 30},
		{"4gb", 4 << 30},
		{"2T", 2 << 40},
		{"100B", 100},
		{" 1M ", 1 << 20},
		{"4194304T", 1 << 62},
	}
	for _, tc := range good {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "0", "0G", "-1", "-1G", "G", "iB", "10iB", "1.5G", "4X", "4 G", "1GG", "0x10",
		"4194305T", "99999999999999999999", "4611686018427387905"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{4 << 30, "4G"},
		{8 << 20, "8M"},
		{1536 << 20, "1536M"},
		{512 << 10, "512K"},
		{1000, "1000"},
		{1 << 40, "1T"},
		{1, "1"},
	} {
		if got := FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := ParseSize(FormatSize(tc.in)); err != nil || back != tc.in {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", tc.in, back, err)
		}
	}
}
