package s3

// Reproductions of the r9 security review (dsi/s3 Writer). They need no
// S3 server: the Writer buffers before it talks to the store.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func r9FS(t *testing.T, endpoint string) *FS {
	t.Helper()
	cfg := Config{PartSize: DefaultPartSize, MaxMemParts: DefaultMaxMemParts, ReadChunk: DefaultReadChunk}
	f := &FS{bucket: "b", cfg: cfg}
	if endpoint != "" {
		c, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4("k", "s", ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
		if err != nil {
			t.Fatal(err)
		}
		c.SetAppInfo("r9", "0")
		f.c, f.core = c, minio.Core{Client: c}
	}
	return f
}

// TestR9SparseWritesPinMemory: one byte in each of 32 parts (32 MODE E
// blocks of one byte, 32 * 17 bytes on the wire) makes the Writer hold
// 32 * PartSize = 256 MiB of memory until the upload ends; every
// session can do it at once (no global bound).
func TestR9SparseWritesPinMemory(t *testing.T) {
	f := r9FS(t, "")
	w := newWriter(context.Background(), f, "/x", nil)
	defer w.Abort()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range int64(DefaultMaxMemParts) {
		if _, err := w.WriteAt([]byte{1}, i*f.cfg.PartSize); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Errorf("%d bytes written pinned %d MiB of memory in one Writer", DefaultMaxMemParts, grown>>20)
	}
}

// TestR9FragmentedPartQuadratic: part.add appends, sorts and re-sums
// the whole extent list on every write, under w.mu: n disjoint one-byte
// writes into one part cost O(n^2). The receiver allows up to
// eblock.DefaultMaxRanges (1<<20) separate ranges per transfer.
func TestR9FragmentedPartQuadratic(t *testing.T) {
	f := r9FS(t, "")
	w := newWriter(context.Background(), f, "/x", nil)
	defer w.Abort()
	const n = 30000
	start := time.Now()
	for i := range int64(n) {
		if _, err := w.WriteAt([]byte{1}, 2*i); err != nil {
			t.Fatal(err)
		}
	}
	d := time.Since(start)
	t.Logf("%d one-byte writes into one part: %v", n, d)
	if d > time.Second {
		t.Errorf("%d one-byte writes (1.7 MB of MODE E on the wire) took %v of CPU under the Writer's lock; 1<<20 of them take ~100 times longer", n, d)
	}
}

// TestR9HugeOffsetClose: nothing bounds a write's offset (no ALLO: the
// receiver has no limit), and S3 has at most 10000 parts, so a file
// past 10000*PartSize (78 GiB by default) can never be completed. A
// single one-byte block at 1 TiB makes Close build a map of 131072
// parts and allocate and zero 8 MiB for each of them (1 TiB in all),
// after the store refused the first: the session's goroutine burns CPU
// for minutes. At 1<<55 the map alone exhausts memory.
func TestR9HugeOffsetClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>`))
	}))
	defer srv.Close()
	f := r9FS(t, strings.TrimPrefix(srv.URL, "http://"))
	w := newWriter(context.Background(), f, "/x", nil)
	if _, err := w.WriteAt([]byte{1}, 1<<40); err != nil {
		t.Logf("WriteAt at 1 TiB refused: %v", err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- w.Close() }()
	select {
	case err := <-done:
		t.Logf("Close: %v", err)
	case <-time.After(15 * time.Second):
		t.Errorf("a write of one byte at 1 TiB was accepted (S3 allows %d parts of %d bytes), and Close still runs after 15 s", 10000, f.cfg.PartSize)
	}
}
