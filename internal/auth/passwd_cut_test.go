package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswdCutShort: a file written halfway, whose last line lost the
// end of its home ("bob:HASH:/data/bob" cut to "bob:HASH:/data" or
// "bob:HASH"), is refused rather than widening bob's access.
func TestPasswdCutShort(t *testing.T) {
	full := "alice:" + hashWith("pw", make([]byte, 16), 1000) + "\nbob:" + hashWith("pw", make([]byte, 16), 1000) + ":/data/bob\n"
	for _, cut := range []string{
		full[:len(full)-5],                                   // "…:/data"
		full[:strings.LastIndex(full, ":")],                  // "bob:HASH"
		full[:len(full)-1],                                   // only the newline lost
		full[:strings.LastIndex(full[:len(full)-1], "\n")+4], // "bob"
	} {
		p, err := Parse([]byte(cut))
		if !errors.Is(err, ErrCutShort) {
			t.Errorf("Parse(%q) = %v, %v; want ErrCutShort", cut, p, err)
		}
	}
	if _, err := Parse([]byte(full)); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(nil); err != nil {
		t.Errorf("empty file: %v", err)
	}
	file := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(file, []byte(full[:len(full)-5]), 0o600)
	if _, err := Load(file); !errors.Is(err, ErrCutShort) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "cut short?") {
		t.Errorf("Load: %v, want ErrCutShort naming %s", err, file)
	}
}
