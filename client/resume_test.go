package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
	"github.com/ferrygrid/ferry/server"
)

// gate stops the data at given byte counts until the test lets it pass:
// the WriteAt (download destination) or ReadAt (upload source) that
// crosses the next limit reports on reached, and it and every later call
// block until open.
type gate struct {
	limits  []int64 // ascending
	n       atomic.Int64
	reached chan int // the index of each limit reached

	mu      sync.Mutex
	next    int           // index into limits; guarded by mu
	blocked bool          // guarded by mu
	wait    chan struct{} // closed by open; guarded by mu
}

func newGate(limits ...int64) *gate {
	return &gate{limits: limits, wait: make(chan struct{}), reached: make(chan int, len(limits))}
}

// pass counts n bytes and blocks while the gate is shut.
func (g *gate) pass(n int) {
	total := g.n.Add(int64(n))
	g.mu.Lock()
	if g.next < len(g.limits) && total > g.limits[g.next] {
		g.reached <- g.next
		g.next++
		g.blocked = true
	}
	w, blocked := g.wait, g.blocked
	g.mu.Unlock()
	if blocked {
		<-w
	}
}

// open lets the data through until the next limit.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.blocked = false
	close(g.wait)
	g.wait = make(chan struct{})
}

type gatedWriter struct {
	w io.WriterAt
	g *gate
}

func (w gatedWriter) WriteAt(p []byte, off int64) (int, error) {
	w.g.pass(len(p))
	return w.w.WriteAt(p, off)
}

type gatedReader struct {
	r io.ReaderAt
	g *gate
}

func (r gatedReader) ReadAt(p []byte, off int64) (int, error) {
	r.g.pass(len(p))
	return r.r.ReadAt(p, off)
}

// await waits for the gate to reach its next limit.
func await(t *testing.T, g *gate) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatal("the transfer never reached the gate")
	}
}

// session returns a restartable Session for addr whose Conns record their
// commands in rec.
func session(addr string, rec *recorder, retries int) *client.Session {
	return &client.Session{
		Dial: func(ctx context.Context) (*client.Conn, error) {
			c, err := client.Dial(ctx, addr, &client.Config{Logger: slog.New(rec)})
			if err != nil {
				return nil, err
			}
			if err := c.Login(ctx, "anonymous", "ferry@"); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
		Retry: client.RetryPolicy{Retries: retries, Interval: 20 * time.Millisecond, MaxInterval: 200 * time.Millisecond, StallTimeout: 30 * time.Second},
	}
}

// restCommands returns the REST commands recorded.
func restCommands(rec *recorder) []string {
	cmds, _ := rec.take()
	var out []string
	for _, c := range cmds {
		if strings.HasPrefix(c, "REST ") {
			out = append(out, c)
		}
	}
	return out
}

type outcome struct {
	n   int64
	err error
}

// TestResumeGCTKilled kills the GCT server in the middle of a MODE E
// download, starts it again on the same port, and checks that the
// transfer resumes with REST and completes.
func TestResumeGCTKilled(t *testing.T) {
	dir := gct.Dir(t)
	port := gct.FreePort(t)
	srv := gct.Launch(t, dir, port)
	const size = 200 << 20
	data := seeded(size, 42)
	writeServed(t, filepath.Join(dir, "big"), data)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dst := newLocal(t)
	g := newGate(40 << 20)
	t.Cleanup(g.open)
	rec := &recorder{}
	s := session(srv.Addr, rec, 5)
	defer s.Close(ctx)
	done := make(chan outcome, 1)
	var retries atomic.Int32
	s.Retry.OnRetry = func(int, error, time.Duration) { retries.Add(1) }
	go func() {
		n, err := s.Download(ctx, filepath.Join(dir, "big"), gatedWriter{dst, g}, &client.RetrieveOptions{Parallel: 4})
		done <- outcome{n, err}
	}()
	await(t, g)
	srv.Kill()
	gct.Launch(t, dir, port)
	g.open()
	var res outcome
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatal("the download did not finish")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if retries.Load() == 0 {
		t.Fatal("the download was not interrupted")
	}
	rests := restCommands(rec)
	if len(rests) == 0 {
		t.Fatal("the second attempt sent no REST")
	}
	// What the first attempt stored was not sent again.
	if res.n != size {
		t.Fatalf("%d bytes moved in all, want %d (REST %q)", res.n, size, rests)
	}
	if !bytes.Equal(readAll(t, dst.Name()), data) {
		t.Fatal("contents differ")
	}
}

// limits returns k ascending random byte counts within (size/20, size*9/10).
func limits(seed uint64, k int, size int64) []int64 {
	r := rand.New(rand.NewPCG(seed, 0))
	var out []int64
	for range k {
		out = append(out, size/20+r.Int64N(size*9/10-size/20))
	}
	slices.Sort(out)
	return out
}

// TestResumeFerryAborted stops Ferry's server at random points of MODE E
// and stream-mode downloads and uploads, starts it again on the same
// address, and checks that each transfer completes.
func TestResumeFerryAborted(t *testing.T) {
	const size = 48 << 20
	data := seeded(size, 43)
	for i, tc := range []struct {
		name     string
		upload   bool
		parallel int
	}{
		{"download p4", false, 4},
		{"download stream", false, 1},
		{"upload p4", true, 4},
		{"upload stream", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFerry(t)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			lims := limits(uint64(100+i), 3, size)
			g := newGate(lims...)
			t.Cleanup(g.open)
			rec := &recorder{}
			s := session(f.addr, rec, 10)
			defer s.Close(ctx)
			acked := make(chan struct{}, 1)
			done := make(chan outcome, 1)
			dst := newLocal(t)
			if !tc.upload {
				writeServed(t, filepath.Join(f.dir, "down"), data)
			}
			go func() {
				var n int64
				var err error
				if tc.upload {
					n, err = s.Upload(ctx, gatedReader{bytes.NewReader(data), g}, size, "/up", &client.StoreOptions{
						Parallel: tc.parallel, BlockSize: 256 << 10,
						Acknowledged: func(rs client.RangeSet) {
							select {
							case acked <- struct{}{}:
							default:
							}
						},
					})
				} else {
					n, err = s.Download(ctx, "/down", gatedWriter{dst, g}, &client.RetrieveOptions{Parallel: tc.parallel})
				}
				done <- outcome{n, err}
			}()
			for range lims {
				await(t, g)
				if tc.upload && tc.parallel > 1 {
					// Let a 111 marker confirm some of what arrived, so
					// that the next attempt can skip it.
					select {
					case <-acked:
					case <-time.After(30 * time.Second):
						t.Fatal("no range marker")
					}
				}
				f.restart()
				g.open()
			}
			g.open()
			var res outcome
			select {
			case res = <-done:
			case <-ctx.Done():
				t.Fatal("the transfer did not finish")
			}
			if res.err != nil {
				t.Fatal(res.err)
			}
			var got []byte
			if tc.upload {
				got = readAll(t, filepath.Join(f.dir, "up"))
			} else {
				got = readAll(t, dst.Name())
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("contents differ (%d bytes, want %d)", len(got), size)
			}
			if rests := restCommands(rec); len(rests) == 0 {
				t.Fatal("no attempt resumed with REST")
			}
			if res.n >= 2*size {
				t.Fatalf("%d bytes moved for a %d-byte file", res.n, size)
			}
		})
	}
}

// TestSessionGivesUp checks that refusals are not retried and that the
// retries end.
func TestSessionGivesUp(t *testing.T) {
	f := startFerry(t)
	ctx := testCtx(t)
	rec := &recorder{}
	s := session(f.addr, rec, 3)
	var retries atomic.Int32
	s.Retry.OnRetry = func(int, error, time.Duration) { retries.Add(1) }
	_, err := s.Download(ctx, "/missing", newLocal(t), &client.RetrieveOptions{Parallel: 2})
	var re *client.ReplyError
	if !errors.As(err, &re) || retries.Load() != 0 {
		t.Fatalf("missing file: %v after %d retries", err, retries.Load())
	}
	// No server at all: every attempt fails to dial.
	f.stop()
	_, err = s.Download(ctx, "/missing", newLocal(t), &client.RetrieveOptions{Parallel: 2})
	if err == nil || retries.Load() != 3 {
		t.Fatalf("no server: %v after %d retries", err, retries.Load())
	}
}

// hangFS makes the first read past limit hang until the test ends: a
// server whose disk stalls once.
type hangFS struct {
	dsi.Storage
	limit   int64
	release chan struct{}
	hung    *atomic.Bool
}

func (h hangFS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := h.Storage.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return hangReader{r, h}, nil
}

type hangReader struct {
	dsi.Reader
	h hangFS
}

func (r hangReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.h.limit && r.h.hung.CompareAndSwap(false, true) {
		<-r.h.release
	}
	return r.Reader.ReadAt(p, off)
}

// TestSessionStall checks that an attempt in which no data moves for the
// stall timeout is abandoned and the transfer resumed.
func TestSessionStall(t *testing.T) {
	dir := t.TempDir()
	const size = 8 << 20
	data := seeded(size, 44)
	writeServed(t, filepath.Join(dir, "f"), data)
	addr, hung := serveHanging(t, dir, size/2)

	for _, par := range []int{1, 4} {
		hung.Store(false)
		rec := &recorder{}
		s := session(addr, rec, 3)
		s.Retry.StallTimeout = 500 * time.Millisecond
		var stalls atomic.Int32
		s.Retry.OnRetry = func(_ int, err error, _ time.Duration) {
			if errors.Is(err, client.ErrStalled) {
				stalls.Add(1)
			}
		}
		dst := newLocal(t)
		ctx := testCtx(t)
		n, err := s.Download(ctx, "/f", dst, &client.RetrieveOptions{Parallel: par})
		s.Close(ctx)
		if err != nil {
			t.Fatalf("p=%d: %v", par, err)
		}
		if stalls.Load() != 1 {
			t.Fatalf("p=%d: %d stalls, want 1", par, stalls.Load())
		}
		if !bytes.Equal(readAll(t, dst.Name()), data) || n > size+size/2 {
			t.Fatalf("p=%d: contents differ or %d bytes moved", par, n)
		}
	}
}

// serveHanging serves dir anonymously from a disk whose reads hang at
// offset hangAt while the returned flag is set (until the test ends).
func serveHanging(t *testing.T, dir string, hangAt int64) (addr string, hung *atomic.Bool) {
	t.Helper()
	fs, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hung = new(atomic.Bool)
	return ftpserver.Start(t, server.Config{Storage: hangFS{fs, hangAt, release, hung}, Anonymous: true}), hung
}
