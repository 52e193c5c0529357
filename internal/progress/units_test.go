package progress

import (
	"math"
	"testing"
)

// TestUnits checks Size, LinkRate and Rate; Bytes is in TestFormat.
func TestUnits(t *testing.T) {
	for i, tc := range []struct{ got, want string }{
		{Size(4 << 30), "4G"},
		{Size(8 << 20), "8M"},
		{Size(1536 << 20), "1536M"},
		{Size(512 << 10), "512K"},
		{Size(1000), "1000"},
		{Size(1 << 40), "1T"},
		{Size(1), "1"},
		{LinkRate(0), "unlimited"},
		{LinkRate(200e6), "200 Mbit/s"},
		{LinkRate(4.7e6), "4.7 Mbit/s"},
		{LinkRate(1e9), "1000 Mbit/s"},
		{Rate(math.NaN()), ""},
		{Rate(864.6), "865"},
		{Rate(100), "100"},
		{Rate(48.66), "48.7"},
		{Rate(4.7), "4.70"},
		{Rate(0), "0.00"},
	} {
		if tc.got != tc.want {
			t.Errorf("case %d: got %q, want %q", i, tc.got, tc.want)
		}
	}
}
