package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
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

// TestNamesAreCharged: directories and names take memory too, so a flood
// of them (MKD with long names) is bounded like file data, and names have
// a length limit.
func TestNamesAreCharged(t *testing.T) {
	ctx := context.Background()
	fsys := NewWithLimits(Limits{MaxTotal: 1 << 20})
	long := strings.Repeat("n", maxName)
	made := 0
	for i := range 100000 {
		err := fsys.Mkdir(ctx, fmt.Sprintf("/%d%s", i, long[:maxName-8]), 0)
		if errors.Is(err, dsi.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		made++
	}
	if made == 0 || made >= 100000 {
		t.Fatalf("made %d directories with long names; want a bound", made)
	}
	if err := fsys.Mkdir(ctx, "/"+long+"x", 0); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("a name of %d bytes: %v, want ErrInvalid", maxName+1, err)
	}
	// Removing them gives the room back.
	for i := range made {
		if err := fsys.Rmdir(ctx, fmt.Sprintf("/%d%s", i, long[:maxName-8])); err != nil {
			t.Fatal(err)
		}
	}
	if fsys.meta != 0 {
		t.Errorf("%d bytes of names still charged after removing them all", fsys.meta)
	}
}
