package client_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
	"github.com/ferrygrid/ferry/server"
)

// These tests run MODE E transfers against two real peers: GCT's server
// and Ferry's own, in-process.

// peer is a running server and the directory it serves; paths on the
// server are absolute paths of that directory (GCT) or relative to it
// (Ferry), as path() gives them.
type peer struct {
	name string
	dir  string
	addr string
	// remote maps a file name to its path on the server.
	remote func(name string) string
}

// ferryServer is Ferry's server running in-process on 127.0.0.1, which a
// test may stop and start again on the same address.
type ferryServer struct {
	t    testing.TB
	dir  string
	addr string

	mu  sync.Mutex
	srv *server.Server
	wg  sync.WaitGroup
}

func startFerry(t testing.TB) *ferryServer {
	t.Helper()
	f := &ferryServer{t: t, dir: t.TempDir()}
	f.start("127.0.0.1:0")
	t.Cleanup(f.stop)
	return f
}

// start launches a server on addr.
func (f *ferryServer) start(addr string) {
	f.t.Helper()
	fs, err := posix.New(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	srv, err := server.New(server.Config{Storage: fs, Anonymous: true, AnonymousWrite: true})
	if err != nil {
		f.t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.srv, f.addr = srv, l.Addr().String()
	f.mu.Unlock()
	f.wg.Go(func() { _ = srv.Serve(l) })
}

// stop closes the server and every session at once, like a crash.
func (f *ferryServer) stop() {
	f.mu.Lock()
	srv := f.srv
	f.mu.Unlock()
	srv.Close()
	f.wg.Wait()
}

// restart stops the server and starts a new one on the same address.
func (f *ferryServer) restart() {
	f.stop()
	f.start(f.addr)
}

func (f *ferryServer) peer() peer {
	return peer{name: "ferry", dir: f.dir, addr: f.addr, remote: func(n string) string { return "/" + n }}
}

func gctPeer(t *testing.T) peer {
	dir := gct.Dir(t)
	return peer{name: "gct", dir: dir, addr: gct.Start(t, dir), remote: func(n string) string { return filepath.Join(dir, n) }}
}

// peers runs f against GCT and against Ferry's server.
func peers(t *testing.T, f func(t *testing.T, p peer)) {
	t.Run("gct", func(t *testing.T) { f(t, gctPeer(t)) })
	t.Run("ferry", func(t *testing.T) { f(t, startFerry(t).peer()) })
}

// recorder is a slog handler that keeps the commands sent and the reply
// codes received by a Conn.
type recorder struct {
	mu      sync.Mutex
	cmds    []string
	replies []int
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec.Attrs(func(a slog.Attr) bool {
		switch {
		case rec.Message == "send" && a.Key == "cmd":
			r.cmds = append(r.cmds, a.Value.String())
		case rec.Message == "reply" && a.Key == "code":
			r.replies = append(r.replies, int(a.Value.Int64()))
		}
		return true
	})
	return nil
}

// take returns and forgets what was recorded.
func (r *recorder) take() (cmds []string, replies []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmds, replies = r.cmds, r.replies
	r.cmds, r.replies = nil, nil
	return cmds, replies
}

func hasPrefix(cmds []string, prefix string) bool {
	return slices.ContainsFunc(cmds, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// loginRec logs in with a recorder.
func loginRec(t *testing.T, addr string) (*client.Conn, *recorder) {
	rec := &recorder{}
	return login(t, addr, &client.Config{Logger: slog.New(rec)}), rec
}

// seeded returns n pseudo-random bytes.
func seeded(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(b)
	return b
}

// localFile writes data to a new local file and opens it for reading.
func localFile(t *testing.T, data []byte) *os.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "local")
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

// newLocal creates an empty local file for writing.
func newLocal(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "dst"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// writeShared writes a file the server (running as nobody) may rewrite.
func writeShared(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o666); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestModeERoundTrip(t *testing.T) {
	peers(t, func(t *testing.T, p peer) {
		for _, par := range []int{1, 4, 16} {
			for _, size := range []int{0, 1, 10<<20 + 12345} {
				t.Run(fmt.Sprintf("p%d/%dB", par, size), func(t *testing.T) {
					ctx := testCtx(t)
					c := login(t, p.addr, nil)
					data := seeded(size, uint64(size+par))
					name := fmt.Sprintf("rt-%d-%d", par, size)
					var up []client.Progress
					var mu sync.Mutex
					n, err := c.StoreAt(ctx, p.remote(name), localFile(t, data), int64(size), &client.StoreOptions{
						Parallel: par, ModeE: true, BlockSize: 256 << 10,
						Progress: func(pr client.Progress) { mu.Lock(); up = append(up, pr); mu.Unlock() },
					})
					if err != nil || n != int64(size) {
						t.Fatalf("StoreAt: %d, %v", n, err)
					}
					if got := readAll(t, filepath.Join(p.dir, name)); !bytes.Equal(got, data) {
						t.Fatalf("uploaded file differs: %d bytes, want %d", len(got), size)
					}
					dst := newLocal(t)
					var down []client.Progress
					n, err = c.RetrieveAt(ctx, p.remote(name), dst, &client.RetrieveOptions{
						Parallel: par, ModeE: true,
						Progress: func(pr client.Progress) { mu.Lock(); down = append(down, pr); mu.Unlock() },
					})
					if err != nil || n != int64(size) {
						t.Fatalf("RetrieveAt: %d, %v", n, err)
					}
					if got := readAll(t, dst.Name()); !bytes.Equal(got, data) {
						t.Fatalf("downloaded file differs: %d bytes, want %d", len(got), size)
					}
					mu.Lock()
					defer mu.Unlock()
					checkStreams(t, "upload", up, par, int64(size))
					checkStreams(t, "download", down, par, int64(size))
				})
			}
		}
	})
}

// checkStreams checks the last progress report: one count per data
// connection, adding up to the size.
func checkStreams(t *testing.T, what string, ps []client.Progress, par int, size int64) {
	t.Helper()
	if len(ps) == 0 {
		t.Fatalf("%s: no progress reports", what)
	}
	last := ps[len(ps)-1]
	var sum int64
	for _, n := range last.Streams {
		sum += n
	}
	if last.Bytes != size || sum != size || len(last.Streams) > par || size > 0 && len(last.Streams) == 0 {
		t.Fatalf("%s: last progress %+v, want %d bytes over at most %d streams", what, last, size, par)
	}
	if what == "upload" && len(last.Streams) != par {
		t.Fatalf("upload used %d streams, want %d", len(last.Streams), par)
	}
}

func TestModeEPartial(t *testing.T) {
	peers(t, func(t *testing.T, p peer) {
		ctx := testCtx(t)
		c := login(t, p.addr, nil)
		data := seeded(300_000, 7)
		writeShared(t, filepath.Join(p.dir, "part"), data)

		// ERET P 1000 5000: the bytes land at the same offsets.
		dst := newLocal(t)
		n, err := c.RetrieveAt(ctx, p.remote("part"), dst, &client.RetrieveOptions{Offset: 1000, Length: 5000, Parallel: 4})
		if err != nil || n != 5000 {
			t.Fatalf("ERET: %d, %v", n, err)
		}
		got := readAll(t, dst.Name())
		if len(got) != 6000 || !bytes.Equal(got[1000:], data[1000:6000]) {
			t.Fatalf("ERET wrote %d bytes", len(got))
		}
		// From an offset to the end (REST 0-offset, RETR).
		dst = newLocal(t)
		if n, err := c.RetrieveAt(ctx, p.remote("part"), dst, &client.RetrieveOptions{Offset: 250_000, Parallel: 2}); err != nil || n != 50_000 {
			t.Fatalf("offset RETR: %d, %v", n, err)
		}
		if got := readAll(t, dst.Name()); !bytes.Equal(got[250_000:], data[250_000:]) {
			t.Fatal("offset RETR: contents differ")
		}

		// ESTO A 2000: bytes 2000-2300 of the local file replace those of
		// the server's, the rest is kept.
		patch := seeded(300_000, 8)
		n, err = c.StoreAt(ctx, p.remote("part"), localFile(t, patch), 300, &client.StoreOptions{Offset: 2000, Parallel: 3})
		if err != nil || n != 300 {
			t.Fatalf("ESTO: %d, %v", n, err)
		}
		want := bytes.Clone(data)
		copy(want[2000:2300], patch[2000:2300])
		if got := readAll(t, filepath.Join(p.dir, "part")); !bytes.Equal(got, want) {
			t.Fatal("ESTO: unexpected server file")
		}
	})
}

func TestModeERestartGapped(t *testing.T) {
	peers(t, func(t *testing.T, p peer) {
		ctx := testCtx(t)
		c, rec := loginRec(t, p.addr)
		const size = 3 << 20
		data := seeded(size, 9)
		writeServed(t, filepath.Join(p.dir, "gapped"), data)
		var have client.RangeSet
		have.Add(client.Range{Start: 0, End: 1 << 20})
		have.Add(client.Range{Start: 1<<20 + 300_000, End: 2 << 20})
		missing := size - have.Total()

		// Download: the local file holds the ranges in have; the rest is
		// zeros until the missing bytes arrive.
		local := make([]byte, size)
		for _, r := range have.Ranges() {
			copy(local[r.Start:r.End], data[r.Start:r.End])
		}
		dst := newLocal(t)
		if _, err := dst.Write(local); err != nil {
			t.Fatal(err)
		}
		var committed client.RangeSet
		n, err := c.RetrieveAt(ctx, p.remote("gapped"), dst, &client.RetrieveOptions{
			Parallel: 4, Restart: have,
			Committed: func(rs client.RangeSet) { committed = rs },
		})
		if err != nil || n != missing {
			t.Fatalf("restarted download: %d bytes, %v; want %d", n, err, missing)
		}
		if got := readAll(t, dst.Name()); !bytes.Equal(got, data) {
			t.Fatal("restarted download: contents differ")
		}
		if committed.Len() != 1 || committed.Total() != size {
			t.Fatalf("committed %v, want 0-%d", committed.String(), size)
		}
		cmds, _ := rec.take()
		if !slices.Contains(cmds, "REST "+have.String()) {
			t.Fatalf("no REST %s in %q", have.String(), cmds)
		}

		// Upload: the server's file holds the ranges in have.
		writeShared(t, filepath.Join(p.dir, "gapped-up"), local)
		var acked client.RangeSet
		n, err = c.StoreAt(ctx, p.remote("gapped-up"), localFile(t, data), size, &client.StoreOptions{
			Parallel: 3, Restart: have, BlockSize: 64 << 10,
			Acknowledged: func(rs client.RangeSet) { acked = rs },
		})
		if err != nil || n != missing {
			t.Fatalf("restarted upload: %d bytes, %v; want %d", n, err, missing)
		}
		if got := readAll(t, filepath.Join(p.dir, "gapped-up")); !bytes.Equal(got, data) {
			t.Fatal("restarted upload: contents differ")
		}
		if acked.Len() != 1 || acked.Total() != size {
			t.Fatalf("acknowledged %v, want 0-%d", acked.String(), size)
		}
		cmds, _ = rec.take()
		if !slices.Contains(cmds, "REST "+have.String()) {
			t.Fatalf("no REST %s in %q", have.String(), cmds)
		}
	})
}

func TestModeEReuse(t *testing.T) {
	peers(t, func(t *testing.T, p peer) {
		ctx := testCtx(t)
		c, rec := loginRec(t, p.addr)
		data := seeded(2<<20, 10)
		writeServed(t, filepath.Join(p.dir, "a"), data)
		writeServed(t, filepath.Join(p.dir, "b"), data[:1000])
		for i, name := range []string{"a", "b", "a"} {
			dst := newLocal(t)
			if _, err := c.RetrieveAt(ctx, p.remote(name), dst, &client.RetrieveOptions{Parallel: 2, Reuse: true}); err != nil {
				t.Fatal(err)
			}
			cmds, replies := rec.take()
			wantPort := i == 0
			if got := hasPrefix(cmds, "EPRT") || hasPrefix(cmds, "PORT"); got != wantPort {
				t.Fatalf("download %d: data address sent %v, want %v: %q", i, got, wantPort, cmds)
			}
			if reused := slices.Contains(replies, 125); reused == wantPort {
				t.Fatalf("download %d: replies %v", i, replies)
			}
		}
		// Uploads: the cached download connections go the wrong way, so
		// the first upload sets up new ones, the second reuses them.
		src := localFile(t, data)
		for i := range 2 {
			if _, err := c.StoreAt(ctx, p.remote(fmt.Sprintf("up%d", i)), src, int64(len(data)), &client.StoreOptions{Parallel: 2, Reuse: true}); err != nil {
				t.Fatal(err)
			}
			cmds, replies := rec.take()
			if got := hasPrefix(cmds, "EPSV") || hasPrefix(cmds, "PASV"); got != (i == 0) {
				t.Fatalf("upload %d: passive %v: %q", i, got, cmds)
			}
			if reused := slices.Contains(replies, 125); reused != (i == 1) {
				t.Fatalf("upload %d: replies %v", i, replies)
			}
			if got := readAll(t, filepath.Join(p.dir, fmt.Sprintf("up%d", i))); !bytes.Equal(got, data) {
				t.Fatalf("upload %d differs", i)
			}
		}
		// A stream-mode transfer afterwards drops the cache and works.
		var buf bytes.Buffer
		if _, err := c.Retrieve(ctx, p.remote("b"), &buf, nil); err != nil || !bytes.Equal(buf.Bytes(), data[:1000]) {
			t.Fatalf("stream after MODE E: %v", err)
		}
		if cmds, _ := rec.take(); !slices.Contains(cmds, "MODE S") {
			t.Fatalf("no MODE S: %q", cmds)
		}
	})
}

func TestTCPBuffer(t *testing.T) {
	peers(t, func(t *testing.T, p peer) {
		ctx := testCtx(t)
		c, rec := loginRec(t, p.addr)
		data := seeded(1<<20, 11)
		for _, par := range []int{1, 4} {
			if _, err := c.StoreAt(ctx, p.remote("buf"), localFile(t, data), int64(len(data)), &client.StoreOptions{Parallel: par, TCPBuffer: 4 << 20}); err != nil {
				t.Fatal(err)
			}
			cmds, _ := rec.take()
			if !slices.Contains(cmds, "SITE STORBUFSIZE 4194304") {
				t.Fatalf("p=%d upload: %q", par, cmds)
			}
			dst := newLocal(t)
			if _, err := c.RetrieveAt(ctx, p.remote("buf"), dst, &client.RetrieveOptions{Parallel: par, TCPBuffer: 1 << 20}); err != nil {
				t.Fatal(err)
			}
			cmds, _ = rec.take()
			if !slices.Contains(cmds, "SITE RETRBUFSIZE 1048576") {
				t.Fatalf("p=%d download: %q", par, cmds)
			}
			if !bytes.Equal(readAll(t, dst.Name()), data) {
				t.Fatalf("p=%d: contents differ", par)
			}
		}
	})
}
