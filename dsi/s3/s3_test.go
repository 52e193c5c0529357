package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
	"github.com/ferrygrid/ferry/dsi/s3"
	"github.com/ferrygrid/ferry/internal/testutil/leak"
	"github.com/ferrygrid/ferry/internal/testutil/s3server"
)

func TestMain(m *testing.M) {
	code := m.Run()
	s3server.StopShared()
	if code == 0 {
		if err := leak.Check("github.com/ferrygrid/ferry/dsi/s3"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

var prefixes atomic.Int64

// newFS returns a storage on the shared server under a prefix of its own.
func newFS(t *testing.T, tune func(*s3.Config)) *s3.FS {
	t.Helper()
	srv := s3server.StartShared(t)
	cfg := s3.Config{
		Endpoint:  srv.Endpoint,
		Bucket:    srv.Bucket,
		Prefix:    fmt.Sprintf("t%d-%s", prefixes.Add(1), strings.ReplaceAll(t.Name(), "/", "-")),
		Region:    s3server.Region,
		AccessKey: s3server.AccessKey,
		SecretKey: s3server.SecretKey,
		PartSize:  s3.MinPartSize,
		ReadChunk: 1 << 20,
	}
	if tune != nil {
		tune(&cfg)
	}
	fsys, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func TestConformance(t *testing.T) {
	// The suite's gap steps write at 5 and at 100 into empty files and
	// expect zeros before: a few bytes of zero fill, which the default
	// (no file with holes is stored) refuses; TestHolesRefused checks that.
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		return newFS(t, func(c *s3.Config) { c.MaxZeroFill = 1 << 10 })
	})
}

// random returns n random bytes.
func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func readAll(t *testing.T, fsys dsi.Storage, name string) []byte {
	t.Helper()
	r, err := fsys.Open(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	if _, err := r.(dsi.RangeWriterTo).WriteRangeTo(&buf, 0, r.Size()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// uploads lists the multipart uploads in progress under the storage.
func uploads(t *testing.T, fsys *s3.FS) []string {
	t.Helper()
	var keys []string
	for u := range fsys.Client().ListIncompleteUploads(t.Context(), fsys.Bucket(), fsys.Key("/"), true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		keys = append(keys, u.Key)
	}
	return keys
}

// TestMultipartOutOfOrder writes a file of several parts in MODE E
// blocks in a scrambled order from several goroutines, with the part
// boundaries falling inside blocks, and some parts spilled to disk.
func TestMultipartOutOfOrder(t *testing.T) {
	fsys := newFS(t, func(c *s3.Config) { c.MaxMemParts = 2 })
	const block = 256<<10 + 3
	data := random(4*s3.MinPartSize + 12345)
	w, err := fsys.Create(t.Context(), "/big", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	nblocks := (len(data) + block - 1) / block
	const streams = 8
	errs := make(chan error, streams)
	for g := range streams {
		go func() {
			// Stream g sends blocks g, g+8, ... from the last to the first.
			for i := (nblocks-1-g)/streams*streams + g; i >= 0; i -= streams {
				if i >= nblocks {
					continue
				}
				end := min((i+1)*block, len(data))
				if _, err := w.WriteAt(data[i*block:end], int64(i*block)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range streams {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Not visible before Close.
	if _, err := fsys.Stat(t.Context(), "/big"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("Stat before Close: %v; want ErrNotExist", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, fsys, "/big"); !bytes.Equal(got, data) {
		t.Fatalf("content differs (len %d, want %d)", len(got), len(data))
	}
	if u := uploads(t, fsys); len(u) != 0 {
		t.Errorf("uploads left in progress: %v", u)
	}
	// A restart over part of it keeps the rest (Create without Truncate).
	w, err = fsys.Create(t.Context(), "/big", dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	patch := random(1000)
	off := int64(2*s3.MinPartSize - 500)
	if _, err := w.WriteAt(patch, off); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	copy(data[off:], patch)
	if got := readAll(t, fsys, "/big"); !bytes.Equal(got, data) {
		t.Fatalf("content differs after a patch")
	}
}

// TestAbort: an upload aborted, or failing, leaves no object and no
// upload in progress, and the old content in place.
func TestAbort(t *testing.T) {
	fsys := newFS(t, nil)
	ctx := t.Context()
	old := []byte("old content")
	w, err := fsys.Create(ctx, "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt(old, 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"abort", "cancel"} {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w, err := fsys.Create(cctx, "/f", dsi.CreateOptions{Truncate: true, Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		// Two full parts (uploaded already) and a partial one.
		if _, err := w.WriteAt(random(2*s3.MinPartSize+10), 0); err != nil {
			t.Fatal(err)
		}
		if len(uploads(t, fsys)) != 1 {
			t.Errorf("%s: want one upload in progress", how)
		}
		switch how {
		case "abort":
			if err := w.(*s3.Writer).Abort(); err != nil {
				t.Fatal(err)
			}
			cancel()
		case "cancel":
			cancel()
			if err := w.Close(); !errors.Is(err, context.Canceled) {
				t.Errorf("Close after cancel: %v; want context.Canceled", err)
			}
		}
		if got := readAll(t, fsys, "/f"); !bytes.Equal(got, old) {
			t.Errorf("%s: content %q; want the old %q", how, got, old)
		}
		if u := uploads(t, fsys); len(u) != 0 {
			t.Errorf("%s: uploads left: %v", how, u)
		}
	}
	// A new file that fails leaves nothing.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err = fsys.Create(cctx, "/new", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt([]byte("x"), 0)
	cancel()
	w.Close()
	if _, err := fsys.Stat(ctx, "/new"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("Stat of an aborted new file: %v", err)
	}
}

// TestRanges reads ranges of a multi-chunk object through ReadAt and
// WriteRangeTo (short and long: one GET streamed).
func TestRanges(t *testing.T) {
	fsys := newFS(t, func(c *s3.Config) { c.ReadChunk = 64 << 10 })
	data := random(1<<20 + 77)
	w, _ := fsys.Create(t.Context(), "/r", dsi.CreateOptions{Truncate: true, Size: -1})
	w.WriteAt(data, 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := fsys.Open(t.Context(), "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rg := range []struct{ off, n int64 }{{0, 10}, {65535, 3}, {100, 300 << 10}, {1 << 19, 1<<19 + 77}} {
		b := make([]byte, rg.n)
		if n, err := r.ReadAt(b, rg.off); n != int(rg.n) || (err != nil && err != io.EOF) || !bytes.Equal(b, data[rg.off:rg.off+rg.n]) {
			t.Errorf("ReadAt(%d, %d) = %d, %v", rg.off, rg.n, n, err)
		}
		var buf bytes.Buffer
		if n, err := r.(dsi.RangeWriterTo).WriteRangeTo(&buf, rg.off, rg.n); n != rg.n || err != nil || !bytes.Equal(buf.Bytes(), data[rg.off:rg.off+rg.n]) {
			t.Errorf("WriteRangeTo(%d, %d) = %d, %v", rg.off, rg.n, n, err)
		}
	}
}

// TestDirectoryMarkers: a directory made by Mkdir survives its last
// file, and one that exists only through keys written by another client
// is a directory too.
func TestDirectoryMarkers(t *testing.T) {
	fsys := newFS(t, nil)
	ctx := t.Context()
	if _, err := fsys.Client().PutObject(ctx, fsys.Bucket(), fsys.Key("/implicit/deep/file"), strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/implicit", "/implicit/deep"} {
		if fi, err := fsys.Stat(ctx, d); err != nil || !fi.IsDir() {
			t.Errorf("Stat(%s) = %+v, %v; want a directory", d, fi, err)
		}
	}
	if err := fsys.Remove(ctx, "/implicit/deep/file"); err != nil {
		t.Fatal(err)
	}
	list, err := fsys.ReadDir(ctx, "/implicit/deep")
	if err != nil || len(list) != 0 {
		t.Errorf("ReadDir after removing the last file = %v, %v; want an empty directory", list, err)
	}
}

func TestChecksum(t *testing.T) {
	fsys := newFS(t, nil)
	w, _ := fsys.Create(t.Context(), "/c", dsi.CreateOptions{Truncate: true, Size: -1})
	w.WriteAt([]byte("hello\n"), 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := fsys.Checksum(t.Context(), "/c", "MD5")
	if err != nil || sum != "b1946ac92492d2347c6235b4d2611184" {
		t.Errorf("Checksum(MD5) = %q, %v", sum, err)
	}
	if _, err := fsys.Checksum(t.Context(), "/c", "ADLER32"); !errors.Is(err, dsi.ErrNotSupported) {
		t.Errorf("Checksum(ADLER32) error %v; want ErrNotSupported", err)
	}
}

// TestHolesRefused: a file whose writes leave a hole is not stored
// (Close fails with ErrInvalid, the upload is aborted, the old object
// stays); one whose holes are old content is.
func TestHolesRefused(t *testing.T) {
	fsys := newFS(t, nil)
	ctx := t.Context()
	data := random(2*s3.MinPartSize + 100)
	w, err := fsys.Create(ctx, "/h", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The first part whole (uploaded at once), then a hole, then the tail.
	if _, err := w.WriteAt(data[:s3.MinPartSize], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(data[len(data)-100:], int64(len(data)-100)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, dsi.ErrInvalid) {
		t.Fatalf("Close of a file with a hole: %v; want ErrInvalid", err)
	}
	if _, err := fsys.Stat(ctx, "/h"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("Stat after a refused Close: %v; want ErrNotExist", err)
	}
	if u := uploads(t, fsys); len(u) != 0 {
		t.Errorf("uploads left: %v", u)
	}
	// Past the end of an old object, the same write is a hole; below
	// it, the old bytes fill it.
	put := func(b []byte) {
		w, err := fsys.Create(ctx, "/h", dsi.CreateOptions{Truncate: true, Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	put(data)
	w, err = fsys.Create(ctx, "/h", dsi.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("XY"), 10); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close of a rewrite inside the old object: %v", err)
	}
	want := bytes.Clone(data)
	copy(want[10:], "XY")
	if got := readAll(t, fsys, "/h"); !bytes.Equal(got, want) {
		t.Error("a rewrite inside the old object changed other bytes")
	}
}

// TestDeclaredSize: a truncating Create with a size refuses writes past
// it; one past the largest object is refused too, before any request.
func TestDeclaredSize(t *testing.T) {
	fsys := newFS(t, func(c *s3.Config) { c.MaxObjectSize = 1 << 30 })
	w, err := fsys.Create(t.Context(), "/d", dsi.CreateOptions{Truncate: true, Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.(*s3.Writer).Abort()
	if _, err := w.WriteAt([]byte("0123456789"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("x"), 10); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("write past the declared size: %v; want ErrInvalid", err)
	}
	w2, err := fsys.Create(t.Context(), "/e", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.(*s3.Writer).Abort()
	if _, err := w2.WriteAt([]byte("x"), 1<<30); !errors.Is(err, dsi.ErrNoSpace) {
		t.Errorf("write past MaxObjectSize: %v; want ErrNoSpace", err)
	}
}
