package bench

import (
	"testing"

	"github.com/ferrygrid/ferry/internal/progress"
)

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

// TestParseSizeRoundTrip checks that ParseSize reads what progress.Size
// writes (the reports print sizes that way).
func TestParseSizeRoundTrip(t *testing.T) {
	for _, n := range []int64{4 << 30, 8 << 20, 1536 << 20, 512 << 10, 1000, 1 << 40, 1} {
		if back, err := ParseSize(progress.Size(n)); err != nil || back != n {
			t.Errorf("ParseSize(progress.Size(%d)) = %d, %v", n, back, err)
		}
	}
}
