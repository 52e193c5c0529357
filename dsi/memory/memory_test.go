package memory_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
	"github.com/ferrygrid/ferry/dsi/memory"
)

func TestConformance(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage { return memory.New() })
}

// TestConformanceLimited: limits big enough for the suite's files change
// nothing else.
func TestConformanceLimited(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		return memory.NewWithLimits(memory.Limits{MaxFileSize: 8 << 20, MaxTotal: 64 << 20})
	})
}

func create(t *testing.T, s dsi.Storage, name string, opts dsi.CreateOptions) dsi.Writer {
	t.Helper()
	w, err := s.Create(context.Background(), name, opts)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return w
}

func size(t *testing.T, s dsi.Storage, name string) int64 {
	t.Helper()
	fi, err := s.Stat(context.Background(), name)
	if err != nil {
		t.Fatalf("stat %s: %v", name, err)
	}
	return fi.Size
}

// write writes n bytes of 'x' at off and reports the error.
func write(w dsi.Writer, off int64, n int) error {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	_, err := w.WriteAt(b, off)
	return err
}

func wantNoSpace(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, dsi.ErrNoSpace) {
		t.Fatalf("%s: %v, want dsi.ErrNoSpace", what, err)
	}
}

// TestWriteAtHugeOffset is the attack "ESTO A 100000000000 /x" plus one
// byte, against the default limits: the write must fail with ErrNoSpace
// instead of growing the file to 100 GB (which ended the process with
// "fatal error: runtime: out of memory").
func TestWriteAtHugeOffset(t *testing.T) {
	s := memory.New()
	w := create(t, s, "/x", dsi.CreateOptions{Size: -1})
	defer w.Close()
	for _, off := range []int64{100_000_000_000, 1 << 40, math.MaxInt64 - 1, math.MaxInt64} {
		n, err := w.WriteAt([]byte{1}, off)
		if n != 0 {
			t.Errorf("WriteAt at %d wrote %d bytes", off, n)
		}
		wantNoSpace(t, fmt.Sprintf("WriteAt at %d", off), err)
	}
	if got := size(t, s, "/x"); got != 0 {
		t.Fatalf("size after refused writes: %d", got)
	}
	// The file still works.
	if err := write(w, 3, 2); err != nil {
		t.Fatal(err)
	}
	if got := size(t, s, "/x"); got != 5 {
		t.Fatalf("size: %d, want 5", got)
	}
}

// TestZeroLengthWriteDoesNotExtend: as pwrite(2), writing nothing at a
// huge offset leaves the file alone.
func TestZeroLengthWriteDoesNotExtend(t *testing.T) {
	s := memory.NewWithLimits(memory.Limits{MaxTotal: 100})
	w := create(t, s, "/x", dsi.CreateOptions{Size: -1})
	defer w.Close()
	if n, err := w.WriteAt(nil, 100_000_000_000); n != 0 || err != nil {
		t.Fatalf("WriteAt(nil): %d, %v", n, err)
	}
	if got := size(t, s, "/x"); got != 0 {
		t.Fatalf("size: %d", got)
	}
}

func TestMaxFileSize(t *testing.T) {
	s := memory.NewWithLimits(memory.Limits{MaxFileSize: 1000, MaxTotal: 1 << 20})
	w := create(t, s, "/f", dsi.CreateOptions{Size: -1})
	defer w.Close()
	if err := write(w, 999, 1); err != nil {
		t.Fatalf("write up to the limit: %v", err)
	}
	wantNoSpace(t, "write at the limit", write(w, 1000, 1))
	wantNoSpace(t, "write across the limit", write(w, 990, 11))
	if got := size(t, s, "/f"); got != 1000 {
		t.Fatalf("size: %d, want 1000", got)
	}
	// Rewriting inside the file is always allowed.
	if err := write(w, 0, 1000); err != nil {
		t.Fatal(err)
	}
	// A second file has its own size limit.
	w2 := create(t, s, "/g", dsi.CreateOptions{Size: -1})
	defer w2.Close()
	if err := write(w2, 0, 1000); err != nil {
		t.Fatal(err)
	}
}

// TestMaxTotal: the budget is shared by all files, and removing,
// truncating or replacing a file gives its bytes back.
func TestMaxTotal(t *testing.T) {
	ctx := context.Background()
	s := memory.NewWithLimits(memory.Limits{MaxTotal: 100})
	if got := s.Limits(); got != (memory.Limits{MaxFileSize: 100, MaxTotal: 100}) {
		t.Fatalf("Limits: %+v", got)
	}
	fill := func(name string, n int) error {
		w := create(t, s, name, dsi.CreateOptions{Size: -1})
		defer w.Close()
		return write(w, 0, n)
	}
	if err := fill("/a", 60); err != nil {
		t.Fatal(err)
	}
	wantNoSpace(t, "second file past the budget", fill("/b", 41))
	if err := fill("/b", 40); err != nil {
		t.Fatal(err)
	}
	wantNoSpace(t, "third file with the budget spent", fill("/c", 1))

	// Remove gives /a's 60 bytes back.
	if err := s.Remove(ctx, "/a"); err != nil {
		t.Fatal(err)
	}
	if err := fill("/c", 60); err != nil {
		t.Fatalf("after remove: %v", err)
	}

	// Truncation gives /c's bytes back before the rewrite.
	w := create(t, s, "/c", dsi.CreateOptions{Truncate: true, Size: -1})
	if err := write(w, 0, 60); err != nil {
		t.Fatalf("rewrite after truncate: %v", err)
	}
	w.Close()

	// Renaming /b (40) over /c (60) frees 60: 40 are in use.
	if err := s.Rename(ctx, "/b", "/c"); err != nil {
		t.Fatal(err)
	}
	if err := fill("/d", 60); err != nil {
		t.Fatalf("after rename over: %v", err)
	}
	wantNoSpace(t, "full again", fill("/e", 1))

	// An append that does not fit fails and leaves the file as it was.
	w = create(t, s, "/d", dsi.CreateOptions{Size: -1})
	wantNoSpace(t, "append", write(w, 60, 1))
	w.Close()
	if got := size(t, s, "/d"); got != 60 {
		t.Fatalf("size after refused append: %d", got)
	}
}

// TestRemovedOpenFileKeepsBudget: a file removed while open still holds
// memory, so its bytes, and what is still written to it, count until the
// last close.
func TestRemovedOpenFileKeepsBudget(t *testing.T) {
	ctx := context.Background()
	s := memory.NewWithLimits(memory.Limits{MaxTotal: 100})
	w := create(t, s, "/a", dsi.CreateOptions{Size: -1})
	if err := write(w, 0, 50); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "/a"); err != nil {
		t.Fatal(err)
	}
	// The detached file can grow, within the budget.
	if err := write(w, 50, 30); err != nil {
		t.Fatal(err)
	}
	wantNoSpace(t, "detached file past the budget", write(w, 80, 21))
	w2 := create(t, s, "/b", dsi.CreateOptions{Size: -1})
	defer w2.Close()
	wantNoSpace(t, "new file while the detached one is open", write(w2, 0, 21))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantNoSpace(t, "with a reader still open", write(w2, 0, 21))
	// The reader still sees the data.
	b := make([]byte, 80)
	if n, err := r.ReadAt(b, 0); n != 80 || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt of detached file: %d, %v", n, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := write(w2, 0, 100); err != nil {
		t.Fatalf("after the last close: %v", err)
	}
	// Closing twice gives nothing back twice.
	if err := r.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	w3 := create(t, s, "/c", dsi.CreateOptions{Size: -1})
	defer w3.Close()
	wantNoSpace(t, "after a double close", write(w3, 0, 1))
}

// TestCreateSize: an announced size (ALLO) that cannot fit is refused by
// Create, before the file is created or truncated.
func TestCreateSize(t *testing.T) {
	ctx := context.Background()
	s := memory.NewWithLimits(memory.Limits{MaxFileSize: 100, MaxTotal: 150})
	_, err := s.Create(ctx, "/big", dsi.CreateOptions{Truncate: true, Size: 100_000_000_000})
	wantNoSpace(t, "Create with Size 1e11", err)
	if _, err := s.Stat(ctx, "/big"); !errors.Is(err, dsi.ErrNotExist) {
		t.Fatalf("refused Create left a file: %v", err)
	}
	w := create(t, s, "/a", dsi.CreateOptions{Truncate: true, Size: 100})
	if err := write(w, 0, 100); err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, err = s.Create(ctx, "/b", dsi.CreateOptions{Truncate: true, Size: 51})
	wantNoSpace(t, "Create with Size past the budget", err)
	_, err = s.Create(ctx, "/a", dsi.CreateOptions{Truncate: true, Size: 101})
	wantNoSpace(t, "Create with Size past the file limit", err)
	if got := size(t, s, "/a"); got != 100 {
		t.Fatalf("refused Create truncated /a to %d", got)
	}
	// Replacing /a with a file of the same size fits: truncation frees it.
	w = create(t, s, "/a", dsi.CreateOptions{Truncate: true, Size: 100})
	w.Close()
}

// TestLimitsConcurrent: many writers racing for the budget never take
// more than it holds, and get it all back when their files go.
func TestLimitsConcurrent(t *testing.T) {
	ctx := context.Background()
	const total, writers, block = 1 << 16, 16, 1000
	s := memory.NewWithLimits(memory.Limits{MaxTotal: total})
	var mu sync.Mutex
	stored := int64(0)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("/f%d", i)
			w, err := s.Create(ctx, name, dsi.CreateOptions{Size: -1})
			if err != nil {
				t.Error(err)
				return
			}
			defer w.Close()
			for off := int64(0); ; off += block {
				if err := write(w, off, block); err != nil {
					if !errors.Is(err, dsi.ErrNoSpace) {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				stored += block
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if stored > total || stored <= total-block {
		t.Fatalf("stored %d bytes with a budget of %d", stored, total)
	}
	var sum int64
	for i := range writers {
		name := fmt.Sprintf("/f%d", i)
		sum += size(t, s, name)
		if err := s.Remove(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if sum != stored {
		t.Fatalf("files hold %d bytes, writes stored %d", sum, stored)
	}
	w := create(t, s, "/all", dsi.CreateOptions{Size: -1})
	defer w.Close()
	if err := write(w, 0, total); err != nil {
		t.Fatalf("whole budget after removing everything: %v", err)
	}
}

func TestDefaultLimits(t *testing.T) {
	l := memory.DefaultLimits()
	if l.MaxTotal <= 0 || l.MaxFileSize <= 0 || l.MaxFileSize > l.MaxTotal || l.MaxTotal > math.MaxInt {
		t.Fatalf("DefaultLimits: %+v", l)
	}
	if got := memory.New().Limits(); got != l {
		t.Fatalf("New().Limits() = %+v, want %+v", got, l)
	}
	// A file size limit above the budget is clamped to it.
	if got := memory.NewWithLimits(memory.Limits{MaxFileSize: 1 << 40, MaxTotal: 1 << 20}).Limits(); got.MaxFileSize != 1<<20 {
		t.Fatalf("clamped Limits: %+v", got)
	}
}
