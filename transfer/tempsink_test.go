package transfer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// leftovers lists the temporary files in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.ferry-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTempSink: a download's file appears under its name only when
// committed, whole; an existing file keeps its permission bits; an
// aborted one leaves nothing; a directory (there at the start or by the
// commit) is refused and left alone, without a temporary file behind.
func TestTempSink(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("ferry"), 5000)
	write := func(s *tempSink) {
		t.Helper()
		if _, err := s.f.WriteAt(data[1000:], 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := s.f.WriteAt(data[:1000], 0); err != nil {
			t.Fatal(err)
		}
	}

	// A new file: invisible until committed.
	final := filepath.Join(dir, "new")
	s, err := openTempSink(final)
	if err != nil {
		t.Fatal(err)
	}
	write(s)
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Errorf("the file is there before the commit: %v", err)
	}
	if err := s.commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(final); !bytes.Equal(got, data) {
		t.Errorf("committed %d bytes, want %d", len(got), len(data))
	}

	// Replacing a file keeps its permission bits.
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(old, 0o640)
	if s, err = openTempSink(old); err != nil {
		t.Fatal(err)
	}
	write(s)
	if err := s.commit(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(old)
	if got, _ := os.ReadFile(old); err != nil || fi.Mode().Perm() != 0o640 || !bytes.Equal(got, data) {
		t.Errorf("replaced file: %v, mode %v, %d bytes", err, fi.Mode(), len(got))
	}

	// Aborted: nothing.
	if s, err = openTempSink(filepath.Join(dir, "aborted")); err != nil {
		t.Fatal(err)
	}
	write(s)
	s.abort()
	if _, err := os.Stat(filepath.Join(dir, "aborted")); !os.IsNotExist(err) {
		t.Errorf("aborted file: %v", err)
	}

	// A directory in the way, from the start or since.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	if _, err := openTempSink(sub); err == nil {
		t.Error("a directory was accepted as a download's destination")
	}
	later := filepath.Join(dir, "later")
	if s, err = openTempSink(later); err != nil {
		t.Fatal(err)
	}
	write(s)
	if err := os.Mkdir(later, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.commit(); err == nil {
		t.Error("commit replaced a directory")
	}
	if fi, err := os.Stat(later); err != nil || !fi.IsDir() {
		t.Errorf("the directory: %v, %v", fi, err)
	}
	if m := leftovers(t, dir); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
