package dpm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
)

// layoutTree makes a tree with long names (PAX records), empty files,
// empty and nested directories and files of several blocks below /d.
func layoutTree(t *testing.T) dsi.Storage {
	t.Helper()
	var st dsi.Storage = memory.New()
	ctx := context.Background()
	long := "/d/" + strings.Repeat("long-directory-name-", 6)
	for _, d := range []string{"/d", "/d/empty", "/d/n1", "/d/n1/n2", "/d/n1/n2/n3", long} {
		if err := st.Mkdir(ctx, d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	put(t, st, "/d/a.txt", []byte("alpha"))
	put(t, st, "/d/zero", nil)
	put(t, st, "/d/n1/n2/n3/zero", nil)
	put(t, st, "/d/n1/exact", data(1024, 2))
	put(t, st, "/d/n1/n2/big", data(1<<20+3000, 3))
	put(t, st, long+"/"+strings.Repeat("f", 150), []byte("under a long name"))
	for i := range 40 {
		put(t, st, fmt.Sprintf("/d/n1/f%02d", i), data(i*97, uint64(i)))
	}
	// Sub-second times, as a file system gives them.
	if err := st.(dsi.Chtimeser).Chtimes(ctx, "/d/a.txt", time.Unix(1700000000, 123456789)); err != nil {
		t.Fatal(err)
	}
	return st
}

// readLayout reads all of l.
func readLayout(t *testing.T, l *Layout) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(l, 0, l.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkRandomReads compares reads of l at seeded random offsets with want.
func checkRandomReads(t *testing.T, l *Layout, want []byte) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	for range 300 {
		off := r.Int64N(int64(len(want)) + 10)
		p := make([]byte, r.IntN(3000)+1)
		if r.IntN(10) == 0 {
			p = make([]byte, r.IntN(2<<20)+1)
		}
		n, err := l.ReadAt(p, off)
		wantN := max(0, min(len(p), len(want)-int(off)))
		if n != wantN || (n < len(p)) != (err == io.EOF) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d", len(p), off, n, err, wantN)
		}
		if n > 0 && !bytes.Equal(p[:n], want[off:off+int64(n)]) {
			t.Fatalf("ReadAt(%d bytes at %d): not the packed bytes", len(p), off)
		}
	}
}

// TestTarLayoutMatchesPack: the laid-out archive is byte for byte what
// tarPack writes, read whole or at random offsets, and unpacks to the
// same tree.
func TestTarLayoutMatchesPack(t *testing.T) {
	st := layoutTree(t)
	ctx := context.Background()
	for _, p := range []string{"/d", "/d/n1/n2/big", "/d/empty"} {
		env := Env{Storage: st, Path: p}
		var want bytes.Buffer
		if err := tarPack(ctx, env, &want); err != nil {
			t.Fatal(err)
		}
		l, ok, err := chain(t, `tar="" /x`, false).Open(ctx, env)
		if !ok || err != nil {
			t.Fatalf("Open %s: %v, %v", p, ok, err)
		}
		if l.Size() != int64(want.Len()) {
			t.Fatalf("%s: Size() = %d, tarPack wrote %d", p, l.Size(), want.Len())
		}
		if got := readLayout(t, l); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%s: the laid-out archive differs from tarPack's", p)
		}
		checkRandomReads(t, l, want.Bytes())
	}
	// Round trip through the unpacking.
	l, _, _ := chain(t, `tar="" /x`, false).Open(ctx, Env{Storage: st, Path: "/d"})
	dst := memory.New()
	if err := tarUnpack(ctx, Env{Storage: dst, Path: "/out"}, bytes.NewReader(readLayout(t, l))); err != nil {
		t.Fatal(err)
	}
	want := tree(t, st, "/d")
	got := tree(t, dst, "/out")
	for i := range got {
		got[i] = strings.Replace(got[i], "/out", "/d", 1)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the tree came back different:\n%v\nwant\n%v", got, want)
	}
}

// TestCatLayoutMatchesPack: cat laid out equals catPack's output.
func TestCatLayoutMatchesPack(t *testing.T) {
	st := layoutTree(t)
	ctx := context.Background()
	for _, tc := range []struct{ path, params string }{
		{"/d/n1", ""}, {"/d/n1", "f03,n2/big,exact,f00"}, {"/d/a.txt", ""},
	} {
		env := Env{Storage: st, Path: tc.path, Params: tc.params}
		var want bytes.Buffer
		if err := catPack(ctx, env, &want); err != nil {
			t.Fatal(err)
		}
		l, ok, err := chain(t, fmt.Sprintf(`cat="%s" /x`, tc.params), false).Open(ctx, Env{Storage: st, Path: tc.path})
		if !ok || err != nil {
			t.Fatalf("Open %s: %v, %v", tc.path, ok, err)
		}
		if got := readLayout(t, l); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("cat %s %q: %d bytes laid out, %d packed, or different", tc.path, tc.params, len(got), want.Len())
		}
		if want.Len() > 0 {
			checkRandomReads(t, l, want.Bytes())
		}
	}
	if _, _, err := chain(t, `cat="n2" /x`, false).Open(ctx, Env{Storage: st, Path: "/d/n1"}); !errors.Is(err, dsi.ErrIsDir) {
		t.Errorf("cat of a directory by name: %v", err)
	}
}

// TestLayoutFileChanged: a file whose size or time changed after the
// layout fails the read of its data, never gives other bytes.
func TestLayoutFileChanged(t *testing.T) {
	ctx := context.Background()
	for _, change := range []string{"grown", "shrunk", "touched"} {
		st := layoutTree(t)
		l, _, err := chain(t, `tar="" /x`, false).Open(ctx, Env{Storage: st, Path: "/d"})
		if err != nil {
			t.Fatal(err)
		}
		switch change {
		case "grown":
			put(t, st, "/d/n1/n2/big", data(1<<20+4000, 3))
		case "shrunk":
			put(t, st, "/d/n1/n2/big", data(10, 3))
		case "touched":
			st.(dsi.Chtimeser).Chtimes(ctx, "/d/n1/n2/big", time.Unix(1, 0))
		}
		_, err = io.ReadAll(io.NewSectionReader(l, 0, l.Size()))
		if !errors.Is(err, ErrChanged) || !errors.Is(l.Changed(), ErrChanged) {
			t.Errorf("%s: reading the archive: %v (Changed: %v); want ErrChanged", change, err, l.Changed())
		}
	}
}

// TestChainOpen: only a source alone is laid out; the limit holds.
func TestChainOpen(t *testing.T) {
	st := layoutTree(t)
	ctx := context.Background()
	for _, spec := range []string{`tar,gzip=""`, `gzip=""`, `tar,zstd=""`} {
		if _, ok, _ := chain(t, spec+` /x`, false).Open(ctx, Env{Storage: st, Path: "/d/a.txt"}); ok {
			t.Errorf("%s was laid out", spec)
		}
	}
	_, ok, err := chain(t, `tar="" /x`, false).Open(ctx, Env{Storage: st, Path: "/d", Limits: Limits{MaxBytes: 4096}})
	if !ok || !errors.Is(err, ErrLimit) {
		t.Errorf("tar past the limit: %v, %v", ok, err)
	}
	_, _, err = chain(t, `tar="" /x`, false).Open(ctx, Env{Storage: st, Path: "/missing"})
	if !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("tar of a missing path: %v", err)
	}
}
