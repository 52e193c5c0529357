package posix

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"golang.org/x/sys/unix"
)

func TestSplitAligned(t *testing.T) {
	const a = 4096
	for _, c := range []struct {
		name      string
		off       int64
		n         int
		addr      uintptr
		head, mid int
	}{
		{"all aligned", 0, 8192, 0, 0, 8192},
		{"aligned, short tail", 4096, 10000, 8192, 0, 8192},
		{"shorter than a block", 0, 4095, 0, 4095, 0},
		{"empty", 0, 0, 0, 0, 0},
		{"unaligned head", 100, 10000, 100, 3996, 4096},
		{"head and tail", 4000, 3*a + 1, 4000, 96, 2 * a},
		{"head only", 100, 3996, 100, 3996, 0},
		{"head covers all", 100, 50, 100, 50, 0},
		{"buffer out of step", 0, 8192, 8, 8192, 0},
		{"buffer out of step after head", 100, 10000, 0, 10000, 0},
		{"exactly one block after head", 4095, 4097, 4095, 1, 4096},
		{"large offset", 1<<40 + 512, 1 << 20, 512, 3584, (1<<20 - 3584) / a * a},
	} {
		t.Run(c.name, func(t *testing.T) {
			head, mid := splitAligned(c.off, c.n, c.addr, a)
			if head != c.head || mid != c.mid {
				t.Fatalf("splitAligned(%d, %d, %d) = %d, %d; want %d, %d", c.off, c.n, c.addr, head, mid, c.head, c.mid)
			}
			if head+mid > c.n || mid%a != 0 || mid > 0 && (c.off+int64(head))%a != 0 {
				t.Fatalf("bad split %d, %d of %d at %d", head, mid, c.n, c.off)
			}
		})
	}
}

// directWorks reports whether the file system of dir takes an aligned
// O_DIRECT write, found independently of the code under test.
func directWorks(t *testing.T, dir string) bool {
	t.Helper()
	fd, err := unix.Open(filepath.Join(dir, ".probe"), unix.O_CREAT|unix.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Logf("O_DIRECT open refused: %v", err)
		return false
	}
	defer os.Remove(filepath.Join(dir, ".probe"))
	defer unix.Close(fd)
	buf := alignedBuf(int(minAlign), int(minAlign))
	if _, err := unix.Pwrite(fd, buf, 0); err != nil {
		t.Logf("O_DIRECT write refused: %v", err)
		return false
	}
	return true
}

// newDirectTest returns a back-end over a fresh directory with direct IO
// mode, and whether the directory's file system takes direct IO.
func newDirectTest(t *testing.T, mode DirectIO) (*FS, string, bool) {
	t.Helper()
	dir := t.TempDir()
	fsys, err := NewWithOptions(dir, Options{DirectIO: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys, dir, directWorks(t, dir)
}

// checkDirect checks that w writes directly when the file system can,
// and falls back to the page cache when it cannot.
func checkDirect(t *testing.T, w *Writer, works bool, before int64) {
	t.Helper()
	grew := DirectBytes() - before
	switch {
	case works && (!w.dio.active() || grew == 0):
		t.Errorf("direct IO not used (active %v, %d bytes) on a file system that takes it", w.dio.active(), grew)
	case !works && (w.dio.active() || grew != 0):
		t.Errorf("direct IO used (active %v, %d bytes) on a file system that refuses it", w.dio.active(), grew)
	case !works:
		t.Log("the file system refuses O_DIRECT: checked the fallback to the page cache")
	}
}

// TestDirectWriteAtShuffled writes a file whose size is not a multiple
// of the block size in blocks of odd sizes, from buffers at every
// alignment, in random order and concurrently: the file is the same,
// and the aligned parts went direct.
func TestDirectWriteAtShuffled(t *testing.T) {
	fsys, dir, works := newDirectTest(t, DirectIOOn)
	const size = 5<<20 + 12345
	data := pattern(size)
	type piece struct{ off, n int }
	var pieces []piece
	rng := rand.New(rand.NewPCG(1, 2))
	for off := 0; off < size; {
		n := min(size-off, []int{1 << 20, 100_000, 4096, 3, 256<<10 + 1}[rng.IntN(5)])
		pieces = append(pieces, piece{off, n})
		off += n
	}
	rng.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
	before := DirectBytes()
	dw, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := dw.(*Writer)
	ch := make(chan piece)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			// A copy at each offset from an aligned buffer: the buffer's
			// address and the file offset agree about alignment only
			// when (off - skew) is aligned.
			buf := alignedBuf(1<<20+2*int(minAlign), int(minAlign))
			for p := range ch {
				skew := p.off % int(minAlign)
				if p.n%7 == 0 {
					skew = (skew + 8) % int(minAlign) // out of step: all buffered
				}
				b := buf[skew : skew+p.n]
				copy(b, data[p.off:p.off+p.n])
				if n, err := w.WriteAt(b, int64(p.off)); n != p.n || err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for _, p := range pieces {
		ch <- p
	}
	close(ch)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	checkDirect(t, w, works, before)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("file differs: %d bytes, want %d", len(got), len(data))
	}
}

// TestDirectReadRangeFrom: from a socket and from a plain reader, in
// ranges starting at unaligned offsets and running to the end of the
// stream, ReadRangeFrom stores the same bytes with direct IO.
func TestDirectReadRangeFrom(t *testing.T) {
	fsys, dir, works := newDirectTest(t, DirectIOOn)
	const size = 9<<20 + 777
	data := pattern(size)
	dw, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	w := dw.(*Writer)
	before := DirectBytes()
	spliced := SplicedBytes()
	// The middle from a socket, first a part to its end-of-range, then
	// the rest up to the end of the stream.
	snd, rcv := tcpPair(t)
	a, b := int64(1<<20+5), int64(6<<20+1)
	go func() {
		snd.Write(data[a:b])
		snd.CloseWrite()
	}()
	mid := a + (b-a)/3
	if n, err := w.ReadRangeFrom(rcv, a, mid-a); n != mid-a || err != nil {
		t.Fatalf("ReadRangeFrom(socket) = %d, %v", n, err)
	}
	if n, err := w.ReadRangeFrom(rcv, mid, -1); n != b-mid || err != nil {
		t.Fatalf("ReadRangeFrom(socket, to EOF) = %d, %v", n, err)
	}
	if SplicedBytes() != spliced && works {
		t.Error("spliced with direct IO on")
	}
	// The ends from plain readers.
	if n, err := w.ReadRangeFrom(bytes.NewReader(data[b:]), b, size-b); n != size-b || err != nil {
		t.Fatalf("ReadRangeFrom(tail) = %d, %v", n, err)
	}
	if n, err := w.ReadRangeFrom(bytes.NewReader(data[:a]), 0, a); n != a || err != nil {
		t.Fatalf("ReadRangeFrom(head) = %d, %v", n, err)
	}
	// Short: the stream ends early.
	if n, err := w.ReadRangeFrom(bytes.NewReader(nil), size, 10); n != 0 || err != io.ErrUnexpectedEOF {
		t.Fatalf("ReadRangeFrom(short) = %d, %v; want 0, io.ErrUnexpectedEOF", n, err)
	}
	checkDirect(t, w, works, before)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("file differs: %d bytes, want %d", len(got), len(data))
	}
}

// TestDirectRestart: a file that is not truncated keeps its bytes
// outside the ranges written directly (REST, ESTO).
func TestDirectRestart(t *testing.T) {
	fsys, dir, works := newDirectTest(t, DirectIOOn)
	old := bytes.Repeat([]byte{'x'}, 3<<20+99)
	if err := os.WriteFile(filepath.Join(dir, "f"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	dw, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := dw.(*Writer)
	before := DirectBytes()
	patch := pattern(1 << 20)
	if n, err := w.ReadRangeFrom(bytes.NewReader(patch), 1000, int64(len(patch))); n != int64(len(patch)) || err != nil {
		t.Fatalf("ReadRangeFrom = %d, %v", n, err)
	}
	checkDirect(t, w, works, before)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(old)
	copy(want[1000:], patch)
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, want) {
		t.Fatal("file differs")
	}
}

// TestDirectModes: off never writes directly, auto only from
// DirectIOThreshold bytes (announced or written).
func TestDirectModes(t *testing.T) {
	for _, c := range []struct {
		mode      DirectIO
		announced int64
		written   int64 // bytes counted before the test's write
		want      bool
	}{
		{DirectIOOff, DirectIOThreshold, DirectIOThreshold, false},
		{DirectIOAuto, -1, 0, false},
		{DirectIOAuto, DirectIOThreshold - 1, 0, false},
		{DirectIOAuto, DirectIOThreshold, 0, true},
		{DirectIOAuto, -1, DirectIOThreshold - 1<<20, true}, // the write reaches it
		{DirectIOAuto, -1, DirectIOThreshold - 1<<20 - 1, false},
		{DirectIOOn, -1, 0, true},
	} {
		t.Run(c.mode.String(), func(t *testing.T) {
			fsys, dir, works := newDirectTest(t, c.mode)
			dw, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: c.announced})
			if err != nil {
				t.Fatal(err)
			}
			w := dw.(*Writer)
			defer w.Close()
			if w.dio != nil {
				w.dio.written.Store(c.written)
			}
			data := pattern(1 << 20)
			if n, err := w.WriteAt(alignedCopy(data), 0); n != len(data) || err != nil {
				t.Fatalf("WriteAt = %d, %v", n, err)
			}
			if got := w.dio.active(); got != (c.want && works) {
				t.Errorf("direct IO active = %v; want %v (file system takes it: %v)", got, c.want && works, works)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, data) {
				t.Fatal("file differs")
			}
		})
	}
}

func alignedCopy(b []byte) []byte {
	a := alignedBuf(len(b), int(minAlign))
	copy(a, b)
	return a
}

func TestParseDirectIO(t *testing.T) {
	for _, s := range []string{"auto", "on", "off"} {
		d, err := ParseDirectIO(s)
		if err != nil || d.String() != s {
			t.Errorf("ParseDirectIO(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := ParseDirectIO("yes"); err == nil {
		t.Error("ParseDirectIO(yes) succeeded")
	}
}

// TestDirectNoAllocs: in steady state, a direct ReadRangeFrom allocates
// nothing per block (pooled aligned buffers).
func TestDirectNoAllocs(t *testing.T) {
	fsys, _, works := newDirectTest(t, DirectIOOn)
	if !works {
		t.Skip("the file system refuses O_DIRECT: no direct path to measure (the fallback is checked by the other tests)")
	}
	if raceEnabled {
		t.Skip("sync.Pool drops buffers at random under the race detector")
	}
	dw, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := dw.(*Writer)
	defer w.Close()
	data := pattern(1 << 20)
	rd := bytes.NewReader(data)
	off := int64(0)
	allocs := testing.AllocsPerRun(20, func() {
		rd.Reset(data)
		if _, err := w.ReadRangeFrom(rd, off, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		off += int64(len(data))
	})
	if allocs >= 1 {
		t.Errorf("%v allocations per block; want none", allocs)
	}
	if !w.dio.active() {
		t.Error("direct IO not active")
	}
}

// TestDirectSmallWritesBuffered: a run shorter than minDirectWrite goes
// through the page cache even when aligned.
func TestDirectSmallWritesBuffered(t *testing.T) {
	fsys, dir, works := newDirectTest(t, DirectIOOn)
	dw, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := dw.(*Writer)
	data := pattern(2 * minDirectWrite)
	before := DirectBytes()
	small := alignedCopy(data[:minDirectWrite-int(minAlign)])
	if n, err := w.WriteAt(small, 0); n != len(small) || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if d := DirectBytes() - before; d != 0 {
		t.Errorf("a %d-byte write went direct (%d bytes)", len(small), d)
	}
	rest := alignedCopy(data[len(small):])
	if n, err := w.WriteAt(rest, int64(len(small))); n != len(rest) || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if d := DirectBytes() - before; works && d != int64(len(rest)) {
		t.Errorf("a %d-byte aligned write went direct for %d bytes", len(rest), d)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, data) {
		t.Fatal("file differs")
	}
}

// TestDirectShortRangeSpliced: a range too short for a direct run of
// minDirectWrite is spliced from a socket as without direct IO.
func TestDirectShortRangeSpliced(t *testing.T) {
	fsys, dir, _ := newDirectTest(t, DirectIOOn)
	dw, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := dw.(*Writer)
	data := pattern(100 << 10)
	snd, rcv := tcpPair(t)
	go func() {
		snd.Write(data)
		snd.CloseWrite()
	}()
	before, spliced := DirectBytes(), SplicedBytes()
	if n, err := w.ReadRangeFrom(rcv, 0, int64(len(data))); n != int64(len(data)) || err != nil {
		t.Fatalf("ReadRangeFrom = %d, %v", n, err)
	}
	if DirectBytes() != before || SplicedBytes()-spliced != int64(len(data)) {
		t.Errorf("%d bytes direct, %d spliced; want 0 and %d", DirectBytes()-before, SplicedBytes()-spliced, len(data))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, data) {
		t.Fatal("file differs")
	}
}
