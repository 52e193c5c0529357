package history

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestQuickCheckStamp: a database past the size that is checked at every
// Open is quick-checked once, then not again while its stamp is fresh;
// an old stamp, or none, brings the check back.
func TestQuickCheckStamp(t *testing.T) {
	oldBelow := checkAlwaysBelow
	checkAlwaysBelow = 0 // every file counts as large
	t.Cleanup(func() { checkAlwaysBelow = oldBelow })
	name := filepath.Join(t.TempDir(), "h.db")
	stamp := name + checkStampSuffix

	open := func() {
		t.Helper()
		s, err := Open(t.Context(), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(t.Context(), &Record{Start: time.Now(), End: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		before func()
		checks int64
	}{
		{"new database", func() {}, 1},
		{"fresh stamp", func() {}, 0},
		{"fresh stamp again", func() {}, 0},
		{"stamp a day old", func() {
			old := time.Now().Add(-checkEvery - time.Hour)
			if err := os.Chtimes(stamp, old, old); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"stamp renewed", func() {}, 0},
		{"stamp in the future", func() {
			future := time.Now().Add(time.Hour)
			if err := os.Chtimes(stamp, future, future); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"stamp removed", func() {
			if err := os.Remove(stamp); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, st := range steps {
		st.before()
		before := quickChecks.Load()
		open()
		if got := quickChecks.Load() - before; got != st.checks {
			t.Errorf("%s: %d quick checks, want %d", st.name, got, st.checks)
		}
		if _, err := os.Stat(stamp); err != nil {
			t.Errorf("%s: no stamp after Open: %v", st.name, err)
		}
	}
}
