package posix_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/server"
	"golang.org/x/sys/unix"
)

// These tests upload through Ferry's server on loopback into a posix
// back-end with direct IO on, in a directory of t.TempDir() (a disk file
// system here; on one that refuses O_DIRECT they check the fallback).

// directServer serves a fresh directory with direct IO on; it returns
// the directory, the server's address and whether the directory's file
// system takes direct IO.
func directServer(t *testing.T) (dir, addr string, works bool) {
	t.Helper()
	dir = t.TempDir()
	fsys, err := posix.NewWithOptions(dir, posix.Options{DirectIO: posix.DirectIOOn})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Storage: fsys, Anonymous: true, AnonymousWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(l) })
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
		fsys.Close()
	})
	return dir, l.Addr().String(), probeDirect(t, dir)
}

// probeDirect reports whether dir's file system takes an aligned
// O_DIRECT write, found without the code under test.
func probeDirect(t *testing.T, dir string) bool {
	t.Helper()
	name := filepath.Join(dir, ".probe")
	defer os.Remove(name)
	fd, err := unix.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	_, err = unix.Pwrite(fd, buf, 0)
	return err == nil
}

func loginAnon(t *testing.T, addr string) *client.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(ctx, "anonymous", "ferry@"); err != nil {
		t.Fatal(err)
	}
	return c
}

func seededData(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
	return b
}

func sourceFile(t *testing.T, data []byte) *os.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// checkDirectUsed checks that the bytes went direct when the file system
// takes it, and through the page cache when it does not.
func checkDirectUsed(t *testing.T, works bool, before int64) {
	t.Helper()
	grew := posix.DirectBytes() - before
	switch {
	case works && grew == 0:
		t.Error("no byte written with O_DIRECT on a file system that takes it")
	case !works && grew != 0:
		t.Errorf("%d bytes written with O_DIRECT on a file system that refuses it", grew)
	case !works:
		t.Log("the file system refuses O_DIRECT: checked the fallback")
	}
}

// TestDirectUploadModeE: MODE E uploads with one and four streams, of
// sizes that are no multiple of the page, in blocks that are (1 MiB) and
// are not, arrive byte for byte (the streams' blocks land in whatever
// order they arrive).
func TestDirectUploadModeE(t *testing.T) {
	dir, addr, works := directServer(t)
	c := loginAnon(t, addr)
	for _, par := range []int{1, 4} {
		for _, bs := range []int{1 << 20, 256<<10 + 7} {
			t.Run(fmt.Sprintf("p%d/bs%d", par, bs), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				size := 5<<20 + 12345
				data := seededData(size, uint64(par*1000+bs))
				name := fmt.Sprintf("up-%d-%d", par, bs)
				before := posix.DirectBytes()
				n, err := c.StoreAt(ctx, "/"+name, sourceFile(t, data), int64(size), &client.StoreOptions{Parallel: par, ModeE: true, BlockSize: bs})
				if err != nil || n != int64(size) {
					t.Fatalf("StoreAt: %d, %v", n, err)
				}
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("uploaded file differs: %d bytes, want %d", len(got), size)
				}
				checkDirectUsed(t, works, before)
			})
		}
	}
}

// TestDirectUploadRestart: a restarted upload (REST with gaps) writes
// only the missing ranges, at unaligned offsets, and keeps the rest.
func TestDirectUploadRestart(t *testing.T) {
	dir, addr, works := directServer(t)
	c := loginAnon(t, addr)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const size = 4<<20 + 999
	data := seededData(size, 42)
	var have client.RangeSet
	have.Add(client.Range{Start: 0, End: 1<<20 + 100})
	have.Add(client.Range{Start: 2<<20 + 5, End: 3 << 20})
	local := make([]byte, size)
	for _, r := range have.Ranges() {
		copy(local[r.Start:r.End], data[r.Start:r.End])
	}
	if err := os.WriteFile(filepath.Join(dir, "restart"), local, 0o644); err != nil {
		t.Fatal(err)
	}
	before := posix.DirectBytes()
	missing := int64(size) - have.Total()
	n, err := c.StoreAt(ctx, "/restart", sourceFile(t, data), size, &client.StoreOptions{
		Parallel: 3, Restart: have, BlockSize: 300_001,
	})
	if err != nil || n != missing {
		t.Fatalf("restarted upload: %d bytes, %v; want %d", n, err, missing)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "restart")); !bytes.Equal(got, data) {
		t.Fatalf("restarted upload: contents differ (%d bytes, want %d)", len(got), size)
	}
	checkDirectUsed(t, works, before)
}

// TestDirectUploadFailed: an upload whose source ends early fails, and
// leaves no file under its name.
func TestDirectUploadFailed(t *testing.T) {
	dir, addr, _ := directServer(t)
	c := loginAnon(t, addr)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const size = 6 << 20
	data := seededData(size, 7)
	n, err := c.StoreAt(ctx, "/failed", sourceFile(t, data[:size/2+333]), size, &client.StoreOptions{Parallel: 4, ModeE: true})
	if err == nil {
		t.Fatalf("StoreAt of a source short of the size succeeded (%d bytes)", n)
	}
	if fi, err := os.Stat(filepath.Join(dir, "failed")); err == nil {
		t.Fatalf("a failed upload left %q (%d bytes)", "failed", fi.Size())
	}
}
