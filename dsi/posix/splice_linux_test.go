package posix

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSpliceAtSocket: from a TCP connection SpliceAt moves the bytes with
// splice(2) (SplicedBytes grows by them), in pieces at several offsets.
func TestSpliceAtSocket(t *testing.T) {
	snd, rcv := tcpPair(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := pattern(5<<20 + 3)
	go func() {
		snd.Write(data)
		snd.CloseWrite()
	}()
	before := SplicedBytes()
	half := int64(len(data) / 2)
	rest := int64(len(data)) - half
	// The stream's first half goes to the end of the file: offsets are
	// explicit.
	if n, err := SpliceAt(f, rcv, rest, half); n != half || err != nil {
		t.Fatalf("SpliceAt(first piece) = %d, %v", n, err)
	}
	if n, err := SpliceAt(f, rcv, 0, -1); n != rest || err != nil {
		t.Fatalf("SpliceAt(to EOF) = %d, %v", n, err)
	}
	if d := SplicedBytes() - before; d < int64(len(data)) {
		t.Errorf("SplicedBytes grew by %d, want at least %d", d, len(data))
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got[rest:], data[:half]) || !bytes.Equal(got[:rest], data[half:]) {
		t.Error("contents differ")
	}
}

// TestSpliceAtSocketShort: a socket that ends early gives
// io.ErrUnexpectedEOF after storing what came.
func TestSpliceAtSocketShort(t *testing.T) {
	snd, rcv := tcpPair(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snd.Write([]byte("hello"))
	snd.CloseWrite()
	if n, err := SpliceAt(f, rcv, 2, 10); n != 5 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("SpliceAt = %d, %v; want 5, ErrUnexpectedEOF", n, err)
	}
	if got, _ := os.ReadFile(f.Name()); string(got) != "\x00\x00hello" {
		t.Errorf("file = %q", got)
	}
}
