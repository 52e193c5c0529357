package checksum

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestVectors(t *testing.T) {
	for _, c := range []struct{ alg, in, want string }{
		{"MD5", "", "d41d8cd98f00b204e9800998ecf8427e"},
		{"md5", "123456789", "25f9e794323b453885f5181f1b624d0b"},
		{"ADLER32", "", "00000001"},
		{"adler32", "Wikipedia", "11e60398"},
		{"ADLER32", "a", "00620062"},
		{"SHA1", "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{"SHA256", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"SHA512", "abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"},
		{"CRC32C", "123456789", "e3069283"},
		{"Crc32c", "", "00000000"},
	} {
		got, err := Compute(context.Background(), strings.NewReader(c.in), int64(len(c.in)), 0, -1, c.alg)
		if err != nil || got != c.want {
			t.Errorf("Compute(%s, %q) = %q, %v; want %q", c.alg, c.in, got, err, c.want)
		}
		h, err := New(c.alg)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(c.in))
		if got := hex.EncodeToString(h.Sum(nil)); got != c.want {
			t.Errorf("New(%s) over %q = %q; want %q", c.alg, c.in, got, c.want)
		}
	}
}

func TestRanges(t *testing.T) {
	ctx := context.Background()
	const s = "xx123456789yy"
	r := strings.NewReader(s)
	size := int64(len(s))
	for _, c := range []struct {
		off, length int64
		want        string
	}{
		{2, 9, "e3069283"},         // "123456789"
		{0, 0, "00000000"},         // empty range
		{size, -1, "00000000"},     // at the end
		{size + 5, 10, "00000000"}, // past the end
		{13, 100, "00000000"},
	} {
		got, err := Compute(ctx, r, size, c.off, c.length, "CRC32C")
		if err != nil || got != c.want {
			t.Errorf("Compute(off %d, length %d) = %q, %v; want %q", c.off, c.length, got, err, c.want)
		}
	}
	// A length passing the end is cut at the end.
	a, _ := Compute(ctx, r, size, 2, 100, "MD5")
	b, _ := Compute(ctx, r, size, 2, -1, "MD5")
	c, _ := Compute(ctx, strings.NewReader(s[2:]), size-2, 0, -1, "MD5")
	if a != b || b != c {
		t.Errorf("tail checksums differ: %s %s %s", a, b, c)
	}
	if _, err := Compute(ctx, r, size, -1, 1, "MD5"); err == nil {
		t.Errorf("negative offset accepted")
	}
}

func TestLarge(t *testing.T) {
	data := make([]byte, 3<<20+77)
	for i := range data {
		data[i] = byte(i * 31)
	}
	off, length := int64(1<<20-3), int64(2<<20+50)
	sum := sha256.Sum256(data[off : off+length])
	got, err := Compute(context.Background(), bytes.NewReader(data), int64(len(data)), off, length, "sha256")
	if err != nil || got != hex.EncodeToString(sum[:]) {
		t.Errorf("Compute over chunks = %q, %v; want %x", got, err, sum)
	}
}

func TestErrors(t *testing.T) {
	if _, err := New("CRC64"); !errors.Is(err, ErrUnknownAlgorithm) {
		t.Errorf("New(CRC64) error %v", err)
	}
	if _, err := Compute(context.Background(), strings.NewReader("x"), 1, 0, -1, "nope"); !errors.Is(err, ErrUnknownAlgorithm) {
		t.Errorf("Compute(nope) error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compute(ctx, strings.NewReader("abc"), 3, 0, -1, "MD5"); !errors.Is(err, context.Canceled) {
		t.Errorf("Compute(cancelled) error %v", err)
	}
	// The reader is shorter than the size claimed.
	if _, err := Compute(context.Background(), strings.NewReader("abc"), 10, 0, -1, "MD5"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Compute(short reader) error %v", err)
	}
	failing := errors.New("disk on fire")
	if _, err := Compute(context.Background(), errReaderAt{failing}, 10, 0, -1, "MD5"); !errors.Is(err, failing) {
		t.Errorf("Compute(failing reader) error %v", err)
	}
}

type errReaderAt struct{ err error }

func (e errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, e.err }

func TestFeature(t *testing.T) {
	if got, want := Feature(), "MD5:10;ADLER32:10;SHA1:10;SHA256:11;SHA512:12;CRC32C:13;"; got != want {
		t.Errorf("Feature() = %q; want %q", got, want)
	}
	if got, want := Names(), []string{"MD5", "ADLER32", "SHA1", "SHA256", "SHA512", "CRC32C"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q", got)
	}
	for _, n := range Names() {
		if _, err := New(strings.ToLower(n)); err != nil {
			t.Errorf("New(%s): %v", n, err)
		}
	}
	// Callers may not change the package's list.
	Names()[0] = "X"
	if Names()[0] != "MD5" {
		t.Errorf("Names() shares its slice")
	}
}

// TestUnknownAlgorithmMessage: the error of an unknown name says which
// names are valid, without a Go package prefix.
func TestUnknownAlgorithmMessage(t *testing.T) {
	_, err := New("sha3")
	want := `unknown checksum algorithm "sha3" (want MD5, ADLER32, SHA1, SHA256, SHA512, CRC32C)`
	if err == nil || err.Error() != want {
		t.Errorf("New(sha3) error %v, want %s", err, want)
	}
}
