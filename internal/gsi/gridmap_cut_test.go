package gsi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGridMapCutShort: a grid-mapfile written halfway, whose last line
// lost the end of an account ("alice,bobby" cut to "alice,bob"), is
// refused rather than mapping the DN to an account it was never given.
func TestGridMapCutShort(t *testing.T) {
	full := "\"/O=Grid/CN=Alice\" alice,bobby\n"
	file := filepath.Join(t.TempDir(), "grid-mapfile")
	for _, cut := range []string{full[:len(full)-3], full[:len(full)-1]} {
		os.WriteFile(file, []byte(cut), 0o644)
		g, err := LoadGridMap(file)
		if !errors.Is(err, ErrGridMapCutShort) || !strings.Contains(err.Error(), file) {
			t.Errorf("LoadGridMap(%q) = %v, %v; want ErrGridMapCutShort naming the file", cut, g, err)
		}
	}
	for _, ok := range []string{full, ""} {
		os.WriteFile(file, []byte(ok), 0o644)
		if _, err := LoadGridMap(file); err != nil {
			t.Errorf("LoadGridMap(%q): %v", ok, err)
		}
	}
}
