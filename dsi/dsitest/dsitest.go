// Package dsitest is the conformance suite for DSI back-ends: every
// statement of the contract in package dsi that can be checked from outside
// is a step of [Run]. A back-end's own test is then a few lines:
//
//	func TestConformance(t *testing.T) {
//		dsitest.Run(t, func(t *testing.T) dsi.Storage { return memory.New() })
//	}
//
// Optional capabilities (Chmoder, Chtimeser, RangeWriterTo,
// RangeReaderFrom) are tested when the back-end has them and skipped
// otherwise.
package dsitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// Run runs the suite. newStorage must return a fresh, empty storage for
// each call; it is called once per step, with that step's t.
func Run(t *testing.T, newStorage func(t *testing.T) dsi.Storage) {
	steps := []struct {
		name string
		f    func(t *testing.T, s dsi.Storage)
	}{
		{"StatRoot", testStatRoot},
		{"WriteOutOfOrder", testWriteOutOfOrder},
		{"WriteGap", testWriteGap},
		{"Truncate", testTruncate},
		{"CreatePerm", testCreatePerm},
		{"CreateErrors", testCreateErrors},
		{"ConcurrentWriteAt", testConcurrentWriteAt},
		{"ConcurrentReadAt", testConcurrentReadAt},
		{"ReadAtEOF", testReadAtEOF},
		{"SizeAtOpen", testSizeAtOpen},
		{"Stat", testStat},
		{"Unique", testUnique},
		{"ReadDir", testReadDir},
		{"Mkdir", testMkdir},
		{"Remove", testRemove},
		{"Rmdir", testRmdir},
		{"Rename", testRename},
		{"RenameDir", testRenameDir},
		{"Open", testOpen},
		{"Chmod", testChmod},
		{"Chtimes", testChtimes},
		{"RangeWriterTo", testRangeWriterTo},
		{"RangeReaderFrom", testRangeReaderFrom},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) { st.f(t, newStorage(t)) })
	}
}

// pattern returns n bytes that differ at nearby offsets, seeded by seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i/251) ^ seed
	}
	return b
}

// put creates name with data, failing the test on any error.
func put(t *testing.T, s dsi.Storage, name string, data []byte) {
	t.Helper()
	w, err := s.Create(t.Context(), name, dsi.CreateOptions{Truncate: true, Size: int64(len(data))})
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	if _, err := w.WriteAt(data, 0); err != nil {
		t.Fatalf("WriteAt(%q): %v", name, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close(%q): %v", name, err)
	}
}

// get reads all of name.
func get(t *testing.T, s dsi.Storage, name string) []byte {
	t.Helper()
	r, err := s.Open(t.Context(), name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer r.Close()
	b := make([]byte, r.Size())
	n, err := r.ReadAt(b, 0)
	if n != len(b) || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt(%q) = %d, %v; want %d", name, n, err, len(b))
	}
	return b
}

func mkdir(t *testing.T, s dsi.Storage, name string) {
	t.Helper()
	if err := s.Mkdir(t.Context(), name, 0o755); err != nil {
		t.Fatalf("Mkdir(%q): %v", name, err)
	}
}

func stat(t *testing.T, s dsi.Storage, name string) dsi.FileInfo {
	t.Helper()
	fi, err := s.Stat(t.Context(), name)
	if err != nil {
		t.Fatalf("Stat(%q): %v", name, err)
	}
	return fi
}

// wantErr fails unless err matches one of the sentinels.
func wantErr(t *testing.T, what string, err error, sentinels ...error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Errorf("%s: error %v, want one of %v", what, err, sentinels)
}

func wantMissing(t *testing.T, s dsi.Storage, name string) {
	t.Helper()
	_, err := s.Stat(t.Context(), name)
	wantErr(t, fmt.Sprintf("Stat(%q) after removal", name), err, dsi.ErrNotExist)
}

func testStatRoot(t *testing.T, s dsi.Storage) {
	fi := stat(t, s, "/")
	if !fi.IsDir() || fi.Name != "/" {
		t.Errorf("Stat(/) = %+v; want a directory named /", fi)
	}
}

func testWriteOutOfOrder(t *testing.T, s dsi.Storage) {
	const block = 1000
	data := pattern(10*block+123, 1)
	w, err := s.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Blocks in the order 9, 7, 5, ..., 0, 10 (the tail), as MODE E may deliver them.
	order := []int{9, 7, 5, 3, 1, 8, 6, 4, 2, 0, 10}
	for _, i := range order {
		end := min((i+1)*block, len(data))
		n, err := w.WriteAt(data[i*block:end], int64(i*block))
		if n != end-i*block || err != nil {
			t.Fatalf("WriteAt(block %d) = %d, %v", i, n, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if fi := stat(t, s, "/f"); fi.Size != int64(len(data)) || !fi.Mode.IsRegular() {
		t.Errorf("Stat = size %d mode %v; want %d, regular", fi.Size, fi.Mode, len(data))
	}
	if got := get(t, s, "/f"); !bytes.Equal(got, data) {
		t.Errorf("content differs after out-of-order writes")
	}
	// Reading back at offsets, out of order too.
	r, err := s.Open(t.Context(), "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, off := range []int64{5000, 0, 9999, 123, int64(len(data)) - 1} {
		b := make([]byte, 1)
		if n, err := r.ReadAt(b, off); n != 1 || (err != nil && err != io.EOF) || b[0] != data[off] {
			t.Errorf("ReadAt(1 byte at %d) = %d, %v, %x; want %x", off, n, err, b[0], data[off])
		}
	}
}

func testWriteGap(t *testing.T, s dsi.Storage) {
	w, err := s.Create(t.Context(), "/gap", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("tail"), 100); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := append(make([]byte, 100), "tail"...)
	if got := get(t, s, "/gap"); !bytes.Equal(got, want) {
		t.Errorf("content = %q; want 100 zero bytes then tail", got)
	}
}

func testTruncate(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	put(t, s, "/t", []byte("hello world"))
	// Without Truncate, content stays and writes land at their offsets.
	w, err := s.Create(ctx, "/t", dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("J"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("!"), 11); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := string(get(t, s, "/t")); got != "Jello world!" {
		t.Errorf("after Create without Truncate: %q; want %q", got, "Jello world!")
	}
	// With Truncate, the file is emptied.
	w, err = s.Create(ctx, "/t", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi := stat(t, s, "/t"); fi.Size != 0 {
		t.Errorf("size after Truncate = %d; want 0", fi.Size)
	}
	// A write after truncation must not resurrect old bytes in the gap.
	w, err = s.Create(ctx, "/t", dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("x"), 5); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "/t"); !bytes.Equal(got, []byte("\x00\x00\x00\x00\x00x")) {
		t.Errorf("after truncate and write at 5: %q", got)
	}
}

func testCreatePerm(t *testing.T, s dsi.Storage) {
	w, err := s.Create(t.Context(), "/p", dsi.CreateOptions{Truncate: true, Size: -1, Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// 0600 survives any usual umask.
	if fi := stat(t, s, "/p"); fi.Mode.Perm() != 0o600 {
		t.Errorf("mode = %v; want -rw-------", fi.Mode)
	}
	w, err = s.Create(t.Context(), "/q", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi := stat(t, s, "/q"); fi.Mode.Perm()&0o600 != 0o600 {
		t.Errorf("default mode = %v; want owner read and write", fi.Mode)
	}
}

func testCreateErrors(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	mkdir(t, s, "/d")
	put(t, s, "/f", []byte("x"))
	opts := dsi.CreateOptions{Truncate: true, Size: -1}
	for _, c := range []struct {
		name string
		want []error
	}{
		{"/d", []error{dsi.ErrIsDir}},
		{"/", []error{dsi.ErrIsDir}},
		{"/missing/f", []error{dsi.ErrNotExist}},
		{"/f/g", []error{dsi.ErrNotDir}},
	} {
		w, err := s.Create(ctx, c.name, opts)
		if err == nil {
			w.Close()
		}
		wantErr(t, fmt.Sprintf("Create(%q)", c.name), err, c.want...)
	}
}

func testConcurrentWriteAt(t *testing.T, s dsi.Storage) {
	const writers, blocks, block = 8, 16, 4096
	data := pattern(writers*blocks*block, 2)
	w, err := s.Create(t.Context(), "/c", dsi.CreateOptions{Truncate: true, Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	// Writer g owns blocks g, g+8, g+16, ... and writes them backwards,
	// so ranges are disjoint but interleaved and the file grows unevenly.
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			for i := blocks - 1; i >= 0; i-- {
				off := (i*writers + g) * block
				if _, err := w.WriteAt(data[off:off+block], int64(off)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "/c"); !bytes.Equal(got, data) {
		t.Errorf("content differs after concurrent writes")
	}
}

func testConcurrentReadAt(t *testing.T, s dsi.Storage) {
	const readers, block = 8, 8192
	data := pattern(readers*4*block, 3)
	put(t, s, "/r", data)
	r, err := s.Open(t.Context(), "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	for g := range readers {
		wg.Go(func() {
			b := make([]byte, block)
			for i := range 4 {
				off := (i*readers + g) * block
				n, err := r.ReadAt(b, int64(off))
				if n != block || (err != nil && err != io.EOF) {
					t.Errorf("ReadAt(%d) = %d, %v", off, n, err)
					return
				}
				if !bytes.Equal(b, data[off:off+block]) {
					t.Errorf("ReadAt(%d): wrong data", off)
				}
			}
		})
	}
	wg.Wait()
}

func testReadAtEOF(t *testing.T, s dsi.Storage) {
	put(t, s, "/e", []byte("0123456789"))
	r, err := s.Open(t.Context(), "/e")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := make([]byte, 4)
	if n, err := r.ReadAt(b, 10); n != 0 || err != io.EOF {
		t.Errorf("ReadAt(at EOF) = %d, %v; want 0, EOF", n, err)
	}
	if n, err := r.ReadAt(b, 100); n != 0 || err != io.EOF {
		t.Errorf("ReadAt(after EOF) = %d, %v; want 0, EOF", n, err)
	}
	if n, err := r.ReadAt(b, 8); n != 2 || err != io.EOF || string(b[:2]) != "89" {
		t.Errorf("ReadAt(across EOF) = %d, %v, %q; want 2, EOF, 89", n, err, b[:n])
	}
	if n, err := r.ReadAt(b, 6); n != 4 || (err != nil && err != io.EOF) || string(b) != "6789" {
		t.Errorf("ReadAt(up to EOF) = %d, %v, %q; want 4, 6789", n, err, b[:n])
	}
	if _, err := r.ReadAt(b, -1); err == nil {
		t.Errorf("ReadAt(-1) succeeded")
	}
	if n, err := r.ReadAt(nil, 3); n != 0 || err != nil {
		t.Errorf("ReadAt(empty) = %d, %v; want 0, nil", n, err)
	}
}

func testSizeAtOpen(t *testing.T, s dsi.Storage) {
	put(t, s, "/s", pattern(1234, 4))
	r, err := s.Open(t.Context(), "/s")
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != 1234 {
		t.Errorf("Size() = %d; want 1234", r.Size())
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	w, err := s.Create(t.Context(), "/empty", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = s.Open(t.Context(), "/empty")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != 0 {
		t.Errorf("Size() of empty file = %d", r.Size())
	}
	if n, err := r.ReadAt(make([]byte, 1), 0); n != 0 || err != io.EOF {
		t.Errorf("ReadAt(empty file) = %d, %v; want 0, EOF", n, err)
	}
}

func testStat(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	before := time.Now().Add(-time.Hour)
	mkdir(t, s, "/dir")
	put(t, s, "/dir/file.dat", pattern(42, 5))
	fi := stat(t, s, "/dir/file.dat")
	if fi.Name != "file.dat" || fi.Size != 42 || !fi.Mode.IsRegular() || fi.IsDir() {
		t.Errorf("Stat(file) = %+v", fi)
	}
	if fi.ModTime.Before(before) || fi.ModTime.After(time.Now().Add(time.Hour)) {
		t.Errorf("Stat(file).ModTime = %v; want about now", fi.ModTime)
	}
	if fi.Link != "" {
		t.Errorf("Stat(file).Link = %q; want empty", fi.Link)
	}
	fi = stat(t, s, "/dir")
	if fi.Name != "dir" || !fi.IsDir() {
		t.Errorf("Stat(dir) = %+v", fi)
	}
	_, err := s.Stat(ctx, "/missing")
	wantErr(t, "Stat(missing)", err, dsi.ErrNotExist)
	_, err = s.Stat(ctx, "/dir/missing/deeper")
	wantErr(t, "Stat(missing/deeper)", err, dsi.ErrNotExist)
	_, err = s.Stat(ctx, "/dir/file.dat/x")
	wantErr(t, "Stat(file/x)", err, dsi.ErrNotDir, dsi.ErrNotExist)
}

func testUnique(t *testing.T, s dsi.Storage) {
	put(t, s, "/a", []byte("a"))
	put(t, s, "/b", []byte("b"))
	a1, a2, b := stat(t, s, "/a"), stat(t, s, "/a"), stat(t, s, "/b")
	if a1.Unique != a2.Unique {
		t.Errorf("Unique changes between Stats: %q, %q", a1.Unique, a2.Unique)
	}
	if a1.Unique != "" && a1.Unique == b.Unique {
		t.Errorf("two files share Unique %q", a1.Unique)
	}
	// Unique follows the object through a rename.
	if err := s.Rename(t.Context(), "/a", "/c"); err != nil {
		t.Fatal(err)
	}
	if c := stat(t, s, "/c"); c.Unique != a1.Unique {
		t.Errorf("Unique after rename = %q; want %q", c.Unique, a1.Unique)
	}
}

func testReadDir(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	mkdir(t, s, "/d")
	for _, n := range []string{"c", "a", "B", "b.txt"} {
		put(t, s, "/d/"+n, []byte(n))
	}
	mkdir(t, s, "/d/sub")
	list, err := s.ReadDir(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range list {
		names = append(names, fi.Name)
		switch fi.Name {
		case "sub":
			if !fi.IsDir() {
				t.Errorf("entry sub is not a directory: %+v", fi)
			}
		default:
			if !fi.Mode.IsRegular() || fi.Size != int64(len(fi.Name)) {
				t.Errorf("entry %s = %+v; want regular of size %d", fi.Name, fi, len(fi.Name))
			}
		}
	}
	if want := []string{"B", "a", "b.txt", "c", "sub"}; !slices.Equal(names, want) {
		t.Errorf("ReadDir names = %q; want %q (sorted, no . or ..)", names, want)
	}
	list, err = s.ReadDir(ctx, "/d/sub")
	if err != nil || len(list) != 0 {
		t.Errorf("ReadDir(empty) = %v, %v; want empty", list, err)
	}
	list, err = s.ReadDir(ctx, "/")
	if err != nil || len(list) != 1 || list[0].Name != "d" {
		t.Errorf("ReadDir(/) = %v, %v; want [d]", list, err)
	}
	_, err = s.ReadDir(ctx, "/missing")
	wantErr(t, "ReadDir(missing)", err, dsi.ErrNotExist)
	_, err = s.ReadDir(ctx, "/d/a")
	wantErr(t, "ReadDir(file)", err, dsi.ErrNotDir)
}

func testMkdir(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	mkdir(t, s, "/m")
	mkdir(t, s, "/m/n")
	if !stat(t, s, "/m/n").IsDir() {
		t.Errorf("Mkdir did not make a directory")
	}
	wantErr(t, "Mkdir(existing)", s.Mkdir(ctx, "/m", 0o755), dsi.ErrExist)
	wantErr(t, "Mkdir(/)", s.Mkdir(ctx, "/", 0o755), dsi.ErrExist)
	wantErr(t, "Mkdir(parent missing)", s.Mkdir(ctx, "/x/y", 0o755), dsi.ErrNotExist)
	put(t, s, "/f", nil)
	wantErr(t, "Mkdir(over file)", s.Mkdir(ctx, "/f", 0o755), dsi.ErrExist)
	wantErr(t, "Mkdir(under file)", s.Mkdir(ctx, "/f/y", 0o755), dsi.ErrNotDir)
}

func testRemove(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	put(t, s, "/f", []byte("x"))
	mkdir(t, s, "/d")
	if err := s.Remove(ctx, "/f"); err != nil {
		t.Fatalf("Remove(file): %v", err)
	}
	wantMissing(t, s, "/f")
	wantErr(t, "Remove(dir)", s.Remove(ctx, "/d"), dsi.ErrIsDir)
	wantErr(t, "Remove(/)", s.Remove(ctx, "/"), dsi.ErrIsDir)
	wantErr(t, "Remove(missing)", s.Remove(ctx, "/f"), dsi.ErrNotExist)
	wantErr(t, "Remove(parent missing)", s.Remove(ctx, "/x/y"), dsi.ErrNotExist)
	stat(t, s, "/d")
}

func testRmdir(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	mkdir(t, s, "/d")
	mkdir(t, s, "/full")
	put(t, s, "/full/f", []byte("x"))
	if err := s.Rmdir(ctx, "/d"); err != nil {
		t.Fatalf("Rmdir(empty): %v", err)
	}
	wantMissing(t, s, "/d")
	wantErr(t, "Rmdir(non-empty)", s.Rmdir(ctx, "/full"), dsi.ErrNotEmpty)
	wantErr(t, "Rmdir(file)", s.Rmdir(ctx, "/full/f"), dsi.ErrNotDir)
	wantErr(t, "Rmdir(missing)", s.Rmdir(ctx, "/d"), dsi.ErrNotExist)
	if err := s.Rmdir(ctx, "/"); err == nil {
		t.Errorf("Rmdir(/) succeeded")
	}
	stat(t, s, "/full/f")
}

func testRename(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	put(t, s, "/a", []byte("aaa"))
	put(t, s, "/b", []byte("b"))
	mkdir(t, s, "/d")
	if err := s.Rename(ctx, "/a", "/d/a2"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	wantMissing(t, s, "/a")
	if got := string(get(t, s, "/d/a2")); got != "aaa" {
		t.Errorf("renamed content = %q", got)
	}
	// Replacing an existing file.
	if err := s.Rename(ctx, "/b", "/d/a2"); err != nil {
		t.Fatalf("Rename(replace): %v", err)
	}
	wantMissing(t, s, "/b")
	if got := string(get(t, s, "/d/a2")); got != "b" {
		t.Errorf("replaced content = %q; want b", got)
	}
	wantErr(t, "Rename(missing)", s.Rename(ctx, "/nope", "/x"), dsi.ErrNotExist)
	wantErr(t, "Rename(to missing dir)", s.Rename(ctx, "/d/a2", "/nodir/x"), dsi.ErrNotExist)
	wantErr(t, "Rename(file over dir)", s.Rename(ctx, "/d/a2", "/d"), dsi.ErrIsDir, dsi.ErrExist, dsi.ErrInvalid)
	if err := s.Rename(ctx, "/", "/x"); err == nil {
		t.Errorf("Rename(/) succeeded")
	}
	if err := s.Rename(ctx, "/d/a2", "/d/a2"); err != nil {
		t.Errorf("Rename onto itself: %v", err)
	}
	get(t, s, "/d/a2")
}

func testRenameDir(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	mkdir(t, s, "/d")
	mkdir(t, s, "/d/e")
	put(t, s, "/d/e/f", []byte("f"))
	if err := s.Rename(ctx, "/d", "/g"); err != nil {
		t.Fatalf("Rename(dir): %v", err)
	}
	wantMissing(t, s, "/d")
	if got := string(get(t, s, "/g/e/f")); got != "f" {
		t.Errorf("content after directory rename = %q", got)
	}
	if err := s.Rename(ctx, "/g", "/g/e/inside"); err == nil {
		t.Errorf("Rename(dir into itself) succeeded")
	}
	mkdir(t, s, "/full")
	put(t, s, "/full/x", nil)
	wantErr(t, "Rename(dir over non-empty dir)", s.Rename(ctx, "/g", "/full"), dsi.ErrNotEmpty, dsi.ErrExist)
}

func testOpen(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	mkdir(t, s, "/d")
	put(t, s, "/f", nil)
	for _, c := range []struct {
		name string
		want []error
	}{
		{"/d", []error{dsi.ErrIsDir}},
		{"/", []error{dsi.ErrIsDir}},
		{"/missing", []error{dsi.ErrNotExist}},
		{"/f/x", []error{dsi.ErrNotDir, dsi.ErrNotExist}},
	} {
		r, err := s.Open(ctx, c.name)
		if err == nil {
			r.Close()
		}
		wantErr(t, fmt.Sprintf("Open(%q)", c.name), err, c.want...)
	}
}

func testChmod(t *testing.T, s dsi.Storage) {
	c, ok := s.(dsi.Chmoder)
	if !ok {
		t.Skip("no dsi.Chmoder")
	}
	ctx := t.Context()
	put(t, s, "/f", []byte("x"))
	mkdir(t, s, "/d")
	for _, m := range []fs.FileMode{0o600, 0o751, 0o644} {
		if err := c.Chmod(ctx, "/f", m); err != nil {
			t.Fatalf("Chmod(%v): %v", m, err)
		}
		if fi := stat(t, s, "/f"); fi.Mode.Perm() != m || !fi.Mode.IsRegular() {
			t.Errorf("after Chmod(%v): mode %v", m, fi.Mode)
		}
	}
	if err := c.Chmod(ctx, "/d", 0o700); err != nil {
		t.Fatal(err)
	}
	if fi := stat(t, s, "/d"); fi.Mode.Perm() != 0o700 || !fi.IsDir() {
		t.Errorf("after Chmod(dir): mode %v", fi.Mode)
	}
	wantErr(t, "Chmod(missing)", c.Chmod(ctx, "/missing", 0o600), dsi.ErrNotExist)
}

func testChtimes(t *testing.T, s dsi.Storage) {
	c, ok := s.(dsi.Chtimeser)
	if !ok {
		t.Skip("no dsi.Chtimeser")
	}
	ctx := t.Context()
	put(t, s, "/f", []byte("x"))
	mkdir(t, s, "/d")
	when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, name := range []string{"/f", "/d"} {
		if err := c.Chtimes(ctx, name, when); err != nil {
			t.Fatalf("Chtimes(%s): %v", name, err)
		}
		if fi := stat(t, s, name); !fi.ModTime.Equal(when) {
			t.Errorf("Chtimes(%s): ModTime %v; want %v", name, fi.ModTime, when)
		}
	}
	wantErr(t, "Chtimes(missing)", c.Chtimes(ctx, "/missing", when), dsi.ErrNotExist)
}

func testRangeWriterTo(t *testing.T, s dsi.Storage) {
	data := pattern(3<<20+17, 6)
	put(t, s, "/f", data)
	r, err := s.Open(t.Context(), "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rw, ok := r.(dsi.RangeWriterTo)
	if !ok {
		t.Skip("no dsi.RangeWriterTo")
	}
	size := int64(len(data))
	// Concurrent ranges, each into its own buffer or pipe.
	ranges := []struct{ off, n int64 }{{0, 1}, {5, 1 << 20}, {1 << 20, 2<<20 + 17}, {size - 3, 3}, {100, 0}, {size, 0}}
	var wg sync.WaitGroup
	for i, rg := range ranges {
		wg.Go(func() {
			var buf bytes.Buffer
			var n int64
			var err error
			if i%2 == 1 { // through a pipe, as to a socket
				pr, pw := io.Pipe()
				copied := make(chan struct{})
				go func() {
					defer close(copied)
					io.Copy(&buf, pr)
				}()
				n, err = rw.WriteRangeTo(pw, rg.off, rg.n)
				pw.Close()
				<-copied
			} else {
				n, err = rw.WriteRangeTo(&buf, rg.off, rg.n)
			}
			if n != rg.n || err != nil {
				t.Errorf("WriteRangeTo(%d, %d) = %d, %v", rg.off, rg.n, n, err)
			}
			if !bytes.Equal(buf.Bytes(), data[rg.off:rg.off+rg.n]) {
				t.Errorf("WriteRangeTo(%d, %d): wrong data", rg.off, rg.n)
			}
		})
	}
	wg.Wait()
	// Ranges passing the end.
	var buf bytes.Buffer
	n, err := rw.WriteRangeTo(&buf, size-10, 100)
	if n != 10 || !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(buf.Bytes(), data[size-10:]) {
		t.Errorf("WriteRangeTo(across EOF) = %d, %v; want 10, ErrUnexpectedEOF", n, err)
	}
	buf.Reset()
	n, err = rw.WriteRangeTo(&buf, size+10, 5)
	if n != 0 || !errors.Is(err, io.ErrUnexpectedEOF) || buf.Len() != 0 {
		t.Errorf("WriteRangeTo(past EOF) = %d, %v; want 0, ErrUnexpectedEOF", n, err)
	}
	// A failing writer stops the copy with its error.
	errSink := errors.New("sink failed")
	pr, pw := io.Pipe()
	pr.CloseWithError(errSink)
	if _, err := rw.WriteRangeTo(pw, 0, 1000); !errors.Is(err, errSink) {
		t.Errorf("WriteRangeTo(failing writer) error %v; want %v", err, errSink)
	}
}

func testRangeReaderFrom(t *testing.T, s dsi.Storage) {
	ctx := t.Context()
	w, err := s.Create(ctx, "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	rf, ok := w.(dsi.RangeReaderFrom)
	if !ok {
		w.Close()
		t.Skip("no dsi.RangeReaderFrom")
	}
	data := pattern(3<<20+5, 7)
	// Disjoint ranges concurrently, out of order, from buffers and pipes;
	// the last one reads until EOF (n < 0).
	ranges := []struct{ off, n int64 }{{2 << 20, -1}, {1 << 20, 1 << 20}, {7, 1<<20 - 7}, {0, 7}}
	var wg sync.WaitGroup
	for i, rg := range ranges {
		wg.Go(func() {
			end := rg.off + rg.n
			if rg.n < 0 {
				end = int64(len(data))
			}
			var r io.Reader = bytes.NewReader(data[rg.off:end])
			if i%2 == 0 {
				pr, pw := io.Pipe()
				go func() {
					pw.Write(data[rg.off:end])
					pw.Close()
				}()
				r = pr
			}
			n, err := rf.ReadRangeFrom(r, rg.off, rg.n)
			if n != end-rg.off || err != nil {
				t.Errorf("ReadRangeFrom(%d, %d) = %d, %v", rg.off, rg.n, n, err)
			}
		})
	}
	wg.Wait()
	// A zero-length range reads nothing.
	if n, err := rf.ReadRangeFrom(errReader{}, 0, 0); n != 0 || err != nil {
		t.Errorf("ReadRangeFrom(n=0) = %d, %v; want 0, nil", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "/f"); !bytes.Equal(got, data) {
		t.Errorf("content differs after ReadRangeFrom (len %d, want %d)", len(got), len(data))
	}
	// A source ending early.
	w, err = s.Create(ctx, "/short", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.(dsi.RangeReaderFrom).ReadRangeFrom(bytes.NewReader([]byte("abc")), 2, 10)
	if n != 3 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ReadRangeFrom(short) = %d, %v; want 3, ErrUnexpectedEOF", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "/short"); string(got) != "\x00\x00abc" {
		t.Errorf("after short ReadRangeFrom: %q", got)
	}
}

// errReader fails every read.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("read called") }
