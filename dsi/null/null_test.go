package null_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/null"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"4096", 4096, true},
		{"4096B", 4096, true},
		{"512K", 512 << 10, true},
		{"512k", 512 << 10, true},
		{"100M", 100 << 20, true},
		{"1G", 1 << 30, true},
		{"1GiB", 1 << 30, true},
		{"1gib", 1 << 30, true},
		{"1GB", 1 << 30, true},
		{"1gb", 1 << 30, true},
		{"2T", 2 << 40, true},
		{"3P", 3 << 50, true},
		{"4E", 1 << 62, true},
		{"4611686018427387904", 1 << 62, true},
		{"4611686018427387905", 0, false},
		{"5E", 0, false},
		{"4194304T", 1 << 62, true},
		{"4194305T", 0, false},
		{"99999999999999999999999", 0, false},
		{"99999999999999999999999G", 0, false},
		{"", 0, false},
		{"B", 0, false},
		{"iB", 0, false},
		{"GiB", 0, false},
		{"G", 0, false},
		{"10iB", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5G", 0, false},
		{"1 G", 0, false},
		{"1X", 0, false},
		{"1GG", 0, false},
		{"1BB", 0, false},
		{"file.dat", 0, false},
	} {
		got, ok := null.ParseSize(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestStat(t *testing.T) {
	fsys := null.New()
	ctx := t.Context()
	root, err := fsys.Stat(ctx, "/")
	if err != nil || !root.IsDir() || root.Name != "/" {
		t.Errorf("Stat(/) = %+v, %v", root, err)
	}
	for name, size := range map[string]int64{"/1G": 1 << 30, "/a/b/512K": 512 << 10, "/4096": 4096, "/0": 0} {
		fi, err := fsys.Stat(ctx, name)
		if err != nil || fi.Size != size || !fi.Mode.IsRegular() || fi.Mode.Perm() != 0o444 {
			t.Errorf("Stat(%q) = %+v, %v; want regular 0444 of %d", name, fi, err, size)
		}
		if !fi.ModTime.Equal(root.ModTime) {
			t.Errorf("Stat(%q).ModTime = %v; want the start time %v", name, fi.ModTime, root.ModTime)
		}
	}
	for _, name := range []string{"/x", "/1G/x", "/dir"} {
		if _, err := fsys.Stat(ctx, name); !errors.Is(err, dsi.ErrNotExist) {
			t.Errorf("Stat(%q) error %v; want ErrNotExist", name, err)
		}
	}
}

func TestNamespace(t *testing.T) {
	fsys := null.New()
	ctx := t.Context()
	if list, err := fsys.ReadDir(ctx, "/"); err != nil || len(list) != 0 || list == nil {
		t.Errorf("ReadDir(/) = %v, %v; want an empty list", list, err)
	}
	if _, err := fsys.ReadDir(ctx, "/x"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("ReadDir(/x) error %v", err)
	}
	if _, err := fsys.ReadDir(ctx, "/1M"); !errors.Is(err, dsi.ErrNotDir) {
		t.Errorf("ReadDir(/1M) error %v", err)
	}
	if _, err := fsys.Open(ctx, "/"); !errors.Is(err, dsi.ErrIsDir) {
		t.Errorf("Open(/) error %v", err)
	}
	if _, err := fsys.Open(ctx, "/nope"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("Open(/nope) error %v", err)
	}
	if err := fsys.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Errorf("Mkdir: %v", err)
	}
	if err := fsys.Remove(ctx, "/1G"); err != nil {
		t.Errorf("Remove(/1G): %v", err)
	}
	if err := fsys.Remove(ctx, "/x"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("Remove(/x) error %v", err)
	}
	if err := fsys.Rmdir(ctx, "/d"); !errors.Is(err, dsi.ErrNotSupported) {
		t.Errorf("Rmdir error %v", err)
	}
	if err := fsys.Rename(ctx, "/1G", "/2G"); !errors.Is(err, dsi.ErrNotSupported) {
		t.Errorf("Rename error %v", err)
	}
	if _, err := fsys.Create(ctx, "/", dsi.CreateOptions{}); !errors.Is(err, dsi.ErrIsDir) {
		t.Errorf("Create(/) error %v", err)
	}
}

func TestRead(t *testing.T) {
	fsys := null.New()
	r, err := fsys.Open(t.Context(), "/10K")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != 10240 {
		t.Errorf("Size = %d", r.Size())
	}
	b := bytes.Repeat([]byte{0xff}, 4096)
	if n, err := r.ReadAt(b, 0); n != 4096 || err != nil || !bytes.Equal(b, make([]byte, 4096)) {
		t.Errorf("ReadAt(0) = %d, %v, zeros %v", n, err, bytes.Equal(b, make([]byte, 4096)))
	}
	b = bytes.Repeat([]byte{0xff}, 4096)
	if n, err := r.ReadAt(b, 8192); n != 2048 || err != io.EOF || b[100] != 0 || b[2048] != 0xff {
		t.Errorf("ReadAt(across EOF) = %d, %v", n, err)
	}
	if n, err := r.ReadAt(b, 10240); n != 0 || err != io.EOF {
		t.Errorf("ReadAt(EOF) = %d, %v", n, err)
	}
	if _, err := r.ReadAt(b, -1); err == nil {
		t.Errorf("ReadAt(-1) succeeded")
	}
}

// countWriter counts bytes and checks they are zero.
type countWriter struct {
	n       int64
	nonzero bool
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if !bytes.Equal(p, make([]byte, len(p))) {
		w.nonzero = true
	}
	return len(p), nil
}

func TestWriteRangeTo(t *testing.T) {
	fsys := null.New()
	r, err := fsys.Open(t.Context(), "/4MiB")
	if err != nil {
		t.Fatal(err)
	}
	rw := r.(dsi.RangeWriterTo)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			var w countWriter
			off := int64(i) << 18
			n, err := rw.WriteRangeTo(&w, off, 2<<20+5)
			if n != 2<<20+5 || err != nil || w.n != n || w.nonzero {
				t.Errorf("WriteRangeTo(%d) = %d, %v; wrote %d, nonzero %v", off, n, err, w.n, w.nonzero)
			}
		})
	}
	wg.Wait()
	var w countWriter
	if n, err := rw.WriteRangeTo(&w, 4<<20-10, 100); n != 10 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("WriteRangeTo(across EOF) = %d, %v", n, err)
	}
	if n, err := rw.WriteRangeTo(&w, 5<<20, 100); n != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("WriteRangeTo(past EOF) = %d, %v", n, err)
	}
	if n, err := rw.WriteRangeTo(&w, 0, 0); n != 0 || err != nil {
		t.Errorf("WriteRangeTo(0 bytes) = %d, %v", n, err)
	}
	allocs := testing.AllocsPerRun(10, func() { rw.WriteRangeTo(io.Discard, 0, 4<<20) })
	if allocs > 0 && !raceEnabled {
		t.Errorf("WriteRangeTo allocates %v times per call", allocs)
	}
}

func TestWriter(t *testing.T) {
	fsys := null.New()
	w, err := fsys.Create(t.Context(), "/any/name", dsi.CreateOptions{Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.WriteAt(make([]byte, 1000), 1<<40); n != 1000 || err != nil {
		t.Errorf("WriteAt = %d, %v", n, err)
	}
	rf := w.(dsi.RangeReaderFrom)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if n, err := rf.ReadRangeFrom(strings.NewReader(strings.Repeat("x", 3<<20)), 0, -1); n != 3<<20 || err != nil {
				t.Errorf("ReadRangeFrom(-1) = %d, %v", n, err)
			}
		})
	}
	wg.Wait()
	if n, err := rf.ReadRangeFrom(strings.NewReader("abcdef"), 0, 4); n != 4 || err != nil {
		t.Errorf("ReadRangeFrom(4) = %d, %v", n, err)
	}
	if n, err := rf.ReadRangeFrom(strings.NewReader("ab"), 0, 4); n != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ReadRangeFrom(short) = %d, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if got, want := fsys.BytesWritten(), int64(1000+4*3<<20+4+2); got != want {
		t.Errorf("BytesWritten = %d; want %d", got, want)
	}
	src := bytes.NewReader(make([]byte, 5<<20))
	allocs := testing.AllocsPerRun(10, func() {
		src.Seek(0, io.SeekStart)
		rf.ReadRangeFrom(src, 0, -1)
	})
	if allocs > 0 && !raceEnabled {
		t.Errorf("ReadRangeFrom allocates %v times per call", allocs)
	}
}
