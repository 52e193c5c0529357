package posix

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSpliceAtCopies: without a socket SpliceAt copies at the offset,
// leaves the file offset alone, and reports short sources.
func TestSpliceAtCopies(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := pattern(3<<20 + 17)
	if n, err := SpliceAt(f, bytes.NewReader(data), 100, int64(len(data))); n != int64(len(data)) || err != nil {
		t.Fatalf("SpliceAt = %d, %v", n, err)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != 0 {
		t.Errorf("file offset moved to %d", pos)
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got[100:], data) || !bytes.Equal(got[:100], make([]byte, 100)) {
		t.Errorf("contents differ (len %d)", len(got))
	}
	if n, err := SpliceAt(f, bytes.NewReader([]byte("abc")), 0, 10); n != 3 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short source: %d, %v; want 3, ErrUnexpectedEOF", n, err)
	}
	if n, err := SpliceAt(f, bytes.NewReader([]byte("xyz")), 0, -1); n != 3 || err != nil {
		t.Errorf("to EOF: %d, %v; want 3, nil", n, err)
	}
	if _, err := SpliceAt(f, bytes.NewReader(nil), -1, 1); err == nil {
		t.Error("negative offset accepted")
	}
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var pe *os.PathError
	if _, err := SpliceAt(ro, bytes.NewReader([]byte("abc")), 0, 3); !errors.As(err, &pe) || pe.Op != "write" {
		t.Errorf("write to a read-only file: %v; want an *os.PathError of write", err)
	}
}
