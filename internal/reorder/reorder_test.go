package reorder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// block is one write.
type block struct {
	off int64
	n   int
}

// split cuts size bytes into blocks of bs bytes (the last shorter).
func split(size int64, bs int) []block {
	var out []block
	for off := int64(0); off < size; off += int64(bs) {
		out = append(out, block{off, int(min(int64(bs), size-off))})
	}
	return out
}

// readAll reads b to its end in a goroutine.
func readAll(b *Buffer) <-chan result {
	ch := make(chan result, 1)
	go func() {
		got, err := io.ReadAll(b)
		ch <- result{got, err}
	}()
	return ch
}

type result struct {
	data []byte
	err  error
}

// await waits for the reader, bounded.
func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(time.Minute):
		t.Fatal("the reader never ended")
		return result{}
	}
}

func TestOrders(t *testing.T) {
	data := make([]byte, 3<<20+777)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	size := int64(len(data))
	shuffled := func(bs int, seed uint64) []block {
		bl := split(size, bs)
		r := rand.New(rand.NewPCG(seed, 7))
		r.Shuffle(len(bl), func(i, j int) { bl[i], bl[j] = bl[j], bl[i] })
		return bl
	}
	reversed := func(bs int) []block {
		bl := split(size, bs)
		for i, j := 0, len(bl)-1; i < j; i, j = i+1, j-1 {
			bl[i], bl[j] = bl[j], bl[i]
		}
		return bl
	}
	cases := []struct {
		name      string
		window    int64
		blocks    []block
		writers   int
		wantSpill bool // some data must have gone to the spill file
		noSpill   bool // none may have
	}{
		{name: "in order, 1 MiB blocks", blocks: split(size, 1<<20), writers: 1, noSpill: true},
		{name: "in order, small writes", blocks: split(size, 1400), writers: 1},
		{name: "in order, blocks larger than a buffer", blocks: split(size, 3<<20), writers: 1, noSpill: true},
		{name: "reversed, all in the window", blocks: reversed(256 << 10), writers: 1, noSpill: true},
		{name: "reversed, past the window", window: 1 << 20, blocks: reversed(256 << 10), writers: 1, wantSpill: true},
		{name: "random, seeded", blocks: shuffled(64<<10, 3), writers: 1},
		{name: "random, tiny window", window: 64 << 10, blocks: shuffled(100_000, 4), writers: 1, wantSpill: true},
		{name: "random, 4 writers", blocks: shuffled(128<<10, 5), writers: 4},
		{name: "random, 4 writers, small window", window: 512 << 10, blocks: shuffled(128<<10, 6), writers: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Config{Window: tc.window, Dir: t.TempDir(), Limit: size})
			defer b.CloseRead(nil)
			ch := readAll(b)
			var wg sync.WaitGroup
			errs := make(chan error, tc.writers)
			for w := range tc.writers {
				wg.Go(func() {
					for i := w; i < len(tc.blocks); i += tc.writers {
						bl := tc.blocks[i]
						if n, err := b.WriteAt(data[bl.off:bl.off+int64(bl.n)], bl.off); err != nil || n != bl.n {
							errs <- fmt.Errorf("WriteAt(%d bytes at %d) = %d, %v", bl.n, bl.off, n, err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if b.End() != size {
				t.Errorf("End() = %d, want %d", b.End(), size)
			}
			b.Close()
			r := await(t, ch)
			if r.err != nil {
				t.Fatalf("read: %v", r.err)
			}
			if !bytes.Equal(r.data, data) {
				t.Fatalf("read %d bytes, not the %d written in order", len(r.data), size)
			}
			switch sp := b.Spilled(); {
			case tc.wantSpill && sp == 0:
				t.Error("nothing was spilled past the window")
			case tc.noSpill && sp != 0:
				t.Errorf("%d bytes spilled with room in the window", sp)
			}
			if b.held > b.window {
				t.Errorf("%d bytes of buffers held, over the %d window", b.held, b.window)
			}
		})
	}
}

// TestSpillFileRemoved: CloseRead removes the spill file.
func TestSpillFileRemoved(t *testing.T) {
	dir := t.TempDir()
	b := New(Config{Window: minChunk, Dir: dir})
	if _, err := b.WriteAt(make([]byte, 4*minChunk), 5*minChunk); err != nil {
		t.Fatal(err)
	}
	if b.Spilled() == 0 {
		t.Fatal("nothing spilled")
	}
	b.CloseRead(nil)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files left in the spill directory", len(ents))
	}
	// Writes after CloseRead are dropped, still counted.
	if n, err := b.WriteAt(make([]byte, 10), 0); n != 10 || err != nil {
		t.Errorf("WriteAt after CloseRead = %d, %v", n, err)
	}
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after CloseRead: %v", err)
	}
}

func TestOverlaps(t *testing.T) {
	cases := []struct {
		name   string
		writes []block
		// readFirst bytes are read before the last write.
		readFirst int
	}{
		{name: "duplicate", writes: []block{{0, 100}, {200, 100}, {200, 100}}},
		{name: "duplicate of a spilled block", writes: []block{{0, 100}, {50 << 20, 100}, {50 << 20, 100}}},
		{name: "already read", writes: []block{{0, 100}, {50, 10}}, readFirst: 100},
		{name: "continues into a later block", writes: []block{{100, 100}, {0, 150}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Config{Dir: t.TempDir()})
			defer b.CloseRead(nil)
			var werr error
			for i, w := range tc.writes {
				if i == len(tc.writes)-1 && tc.readFirst > 0 {
					if _, err := io.ReadFull(b, make([]byte, tc.readFirst)); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := b.WriteAt(make([]byte, w.n), w.off); err != nil {
					werr = err
				}
			}
			b.Close()
			_, rerr := io.ReadAll(b)
			// Either the write is refused, or the reader never sees a
			// clean end.
			if werr == nil && rerr == nil {
				t.Error("overlapping writes were taken as a clean stream")
			}
			if werr != nil && !errors.Is(werr, ErrOverlap) {
				t.Errorf("write error %v, want ErrOverlap", werr)
			}
		})
	}
}

func TestHoles(t *testing.T) {
	b := New(Config{})
	defer b.CloseRead(nil)
	b.WriteAt([]byte("abc"), 0)
	b.WriteAt([]byte("xyz"), 10)
	b.Close()
	got, err := io.ReadAll(b)
	if !errors.Is(err, ErrHoles) || string(got) != "abc" {
		t.Errorf("ReadAll = %q, %v; want abc and ErrHoles", got, err)
	}
}

// TestFailureMidway: CloseWithError reaches a reader waiting for data,
// and one with data still buffered.
func TestFailureMidway(t *testing.T) {
	boom := errors.New("data connection reset")
	for _, buffered := range []bool{false, true} {
		b := New(Config{})
		b.WriteAt([]byte("first"), 0)
		if buffered {
			b.WriteAt([]byte("later"), 100)
		}
		ch := readAll(b)
		b.CloseWithError(boom)
		r := await(t, ch)
		if !errors.Is(r.err, boom) {
			t.Errorf("buffered=%v: the reader got %q, %v; want the receive error", buffered, r.data, r.err)
		}
		if _, err := b.WriteAt([]byte("x"), 5); !errors.Is(err, ErrClosed) {
			t.Errorf("write after CloseWithError: %v", err)
		}
		b.CloseRead(nil)
	}
}

func TestLimit(t *testing.T) {
	b := New(Config{Limit: 1000})
	defer b.CloseRead(nil)
	for _, w := range []block{{990, 11}, {1000, 1}, {-1, 1}, {1 << 62, 1}} {
		if _, err := b.WriteAt(make([]byte, w.n), w.off); !errors.Is(err, dsi.ErrInvalid) {
			t.Errorf("WriteAt(%d bytes at %d) past the limit: %v", w.n, w.off, err)
		}
	}
	if n, err := b.WriteAt(make([]byte, 10), 990); n != 10 || err != nil {
		t.Errorf("WriteAt up to the limit: %d, %v", n, err)
	}
}

// TestNoAllocsInOrder: in steady state, an in-order write and its read
// allocate nothing.
func TestNoAllocsInOrder(t *testing.T) {
	b := New(Config{})
	defer b.CloseRead(nil)
	blk := make([]byte, 256<<10)
	out := make([]byte, 64<<10)
	var off int64
	step := func() {
		if _, err := b.WriteAt(blk, off); err != nil {
			t.Fatal(err)
		}
		off += int64(len(blk))
		for range len(blk) / len(out) {
			if _, err := io.ReadFull(b, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	step()
	if a := testing.AllocsPerRun(100, step); a > 0 {
		t.Errorf("%v allocations per block", a)
	}
}

// TestReady: Ready waits for the first byte, and reports a failed end.
func TestReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Config{})
		done := make(chan error, 1)
		go func() { done <- b.Ready() }()
		b.WriteAt([]byte("later"), 10) // not the first byte
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Ready returned %v before the first byte", err)
		default:
		}
		b.WriteAt([]byte("0123456789"), 0)
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Ready: %v", err)
			}
		default:
			t.Fatal("Ready did not return once the first byte came")
		}
		boom := errors.New("no data connection")
		f := New(Config{})
		go func() { done <- f.Ready() }()
		synctest.Wait()
		f.CloseWithError(boom)
		if err := <-done; !errors.Is(err, boom) {
			t.Errorf("Ready after CloseWithError: %v", err)
		}
	})
	e := New(Config{})
	e.Close()
	if err := e.Ready(); err != nil {
		t.Errorf("Ready of an empty, closed buffer: %v", err)
	}
}

// FuzzWrites: whatever writes a peer's blocks make (any offsets, sizes,
// overlaps, order), a reader that sees a clean end got exactly the bytes
// of accepted writes that were disjoint and left no hole.
func FuzzWrites(f *testing.F) {
	f.Add([]byte{0, 10, 10, 10, 5, 3})
	f.Add([]byte{20, 10, 0, 20, 10, 10})
	f.Add([]byte{0, 200, 100, 200, 50, 20})
	f.Fuzz(func(t *testing.T, ops []byte) {
		b := New(Config{Window: 3 * minChunk, Dir: t.TempDir(), Limit: 1 << 22})
		defer b.CloseRead(nil)
		type write struct {
			off int64
			n   int
			id  byte
		}
		var ok []write
		for i := 0; i+1 < len(ops) && i < 64; i += 2 {
			w := write{off: int64(ops[i]) * 997, n: int(ops[i+1]) * 131, id: byte(i/2 + 1)}
			// The first n bytes of a refused write may have been taken.
			n, _ := b.WriteAt(bytes.Repeat([]byte{w.id}, w.n), w.off)
			if w.n = n; n > 0 {
				ok = append(ok, w)
			}
		}
		b.Close()
		got, err := io.ReadAll(b)
		if err != nil {
			return
		}
		if int64(len(got)) != b.End() {
			t.Fatalf("clean end after %d bytes, writes reached %d", len(got), b.End())
		}
		covered := make([]bool, len(got))
		for _, w := range ok {
			for k := range int64(w.n) {
				if covered[w.off+k] {
					t.Fatalf("clean end with overlapping writes at %d", w.off+k)
				}
				covered[w.off+k] = true
				if got[w.off+k] != w.id {
					t.Fatalf("byte %d is from write %d, want %d", w.off+k, got[w.off+k], w.id)
				}
			}
		}
		for i, c := range covered {
			if !c {
				t.Fatalf("clean end with a hole at %d", i)
			}
		}
	})
}
