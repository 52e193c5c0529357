package memory

import (
	"strings"
	"testing"
)

func TestParseMemInfo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:       24684084 kB\nMemFree:        24195928 kB\n", 24684084 * 1024, true},
		{"MemFree: 1 kB\nMemTotal: 2 kB\n", 2048, true},
		{"MemFree: 1 kB\n", 0, false},
		{"MemTotal: 2\n", 0, false},
		{"MemTotal: x kB\n", 0, false},
		{"MemTotal: -2 kB\n", 0, false},
		{"MemTotal: 99999999999999999 kB\n", 0, false},
		{"", 0, false},
	} {
		got, ok := parseMemInfo(strings.NewReader(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseMemInfo(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDefaultMaxTotalFromMemory: where the machine's memory is known, the
// default budget is a quarter of it.
func TestDefaultMaxTotalFromMemory(t *testing.T) {
	mem, ok := availableMemory()
	if !ok {
		if got := defaultMaxTotal(); got != DefaultMaxTotalFallback {
			t.Fatalf("memory unknown: default %d, want %d", got, DefaultMaxTotalFallback)
		}
		t.Skip("memory size unknown here")
	}
	if got := defaultMaxTotal(); got != mem/4 {
		t.Fatalf("default budget %d, want a quarter of %d", got, mem)
	}
}
