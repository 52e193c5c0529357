package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
)

// flight is a slog handler that follows a Conn's commands and final
// replies in order, to see how many commands were in flight at once.
type flight struct {
	mu       sync.Mutex
	cmds     []string
	out, max int
}

func (f *flight) Enabled(context.Context, slog.Level) bool { return true }
func (f *flight) WithAttrs([]slog.Attr) slog.Handler       { return f }
func (f *flight) WithGroup(string) slog.Handler            { return f }
func (f *flight) Handle(_ context.Context, rec slog.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec.Attrs(func(a slog.Attr) bool {
		switch {
		case rec.Message == "send" && a.Key == "cmd":
			f.cmds = append(f.cmds, a.Value.String())
			f.out++
			f.max = max(f.max, f.out)
		case rec.Message == "reply" && a.Key == "code" && a.Value.Int64() >= 200:
			f.out--
		}
		return true
	})
	return nil
}

// take returns the commands sent and the most in flight, and forgets both.
func (f *flight) take() ([]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmds, m := f.cmds, f.max
	f.cmds, f.max = nil, f.out
	return cmds, m
}

func count(cmds []string, prefix string) int {
	n := 0
	for _, c := range cmds {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// batchSizes are the file sizes of the test batches: empty, tiny, the
// 16 KB of the small-file benchmark, and a few blocks' worth.
func batchSize(i int) int {
	switch i % 7 {
	case 0:
		return 0
	case 1:
		return 1
	case 6:
		return 3<<20 + 17
	}
	return 16 << 10
}

func TestGetFiles(t *testing.T) {
	peers(t, func(t *testing.T, p peer) {
		for _, par := range []int{1, 3} {
			t.Run(fmt.Sprint("p", par), func(t *testing.T) {
				ctx := testCtx(t)
				const n = 40
				const missing = 17
				want := make([][]byte, n)
				for i := range n {
					if i == missing {
						continue
					}
					want[i] = seeded(batchSize(i), uint64(i+100*par))
					writeServed(t, filepath.Join(p.dir, fmt.Sprintf("g%d-%d", par, i)), want[i])
				}
				fl := &flight{}
				c := login(t, p.addr, &client.Config{Logger: slog.New(fl)})
				local := t.TempDir()
				files := make([]client.Get, n)
				for i := range files {
					files[i] = client.Get{
						Path: p.remote(fmt.Sprintf("g%d-%d", par, i)),
						Open: func() (io.WriterAt, error) { return os.Create(filepath.Join(local, fmt.Sprint(i))) },
					}
				}
				var doneMu sync.Mutex
				done := map[int]bool{}
				opts := &client.BatchOptions{Window: 8, Parallel: par, Done: func(i int, err error) {
					doneMu.Lock()
					defer doneMu.Unlock()
					if done[i] {
						t.Errorf("Done called twice for %d", i)
					}
					done[i] = true
				}}
				errs := c.GetFiles(ctx, files, opts)
				checkGot(t, errs, missing, local, want)
				if len(done) != n {
					t.Errorf("Done called for %d files, want %d", len(done), n)
				}
				cmds, inFlight := fl.take()
				if inFlight < 4 {
					t.Errorf("at most %d commands in flight; the RETRs were not pipelined", inFlight)
				}
				if k := count(cmds, "RETR "); k != n {
					t.Errorf("%d RETR sent, want %d", k, n)
				}

				// A second batch reuses the data connections: no new
				// PORT/EPRT or OPTS.
				for i := range files {
					os.Remove(filepath.Join(local, fmt.Sprint(i)))
				}
				opts.Done = nil
				errs = c.GetFiles(ctx, files[:missing], opts)
				checkGot(t, errs, -1, local, want[:missing])
				cmds, _ = fl.take()
				for _, c := range cmds {
					if !strings.HasPrefix(c, "RETR ") {
						t.Errorf("second batch sent %q", c)
					}
				}
			})
		}
	})
}

// checkGot checks a download batch: file bad failed with a negative
// reply, the others arrived intact.
func checkGot(t *testing.T, errs []error, bad int, local string, want [][]byte) {
	t.Helper()
	for i, err := range errs {
		if i == bad {
			var re *client.ReplyError
			if !errors.As(err, &re) {
				t.Errorf("missing file %d: err %v, want a negative reply", i, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("file %d: %v", i, err)
			continue
		}
		got, err := os.ReadFile(filepath.Join(local, fmt.Sprint(i)))
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Errorf("file %d: %d bytes (err %v), want %d", i, len(got), err, len(want[i]))
		}
	}
}

func TestPutFiles(t *testing.T) {
	peers(t, func(t *testing.T, p peer) {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprint("p", par), func(t *testing.T) {
				ctx := testCtx(t)
				const n = 40
				const refused = 11 // its directory does not exist
				want := make([][]byte, n)
				files := make([]client.Put, n)
				for i := range n {
					want[i] = seeded(batchSize(i), uint64(i+1000*par))
					name := fmt.Sprintf("p%d-%d", par, i)
					if i == refused {
						name = "no/such/dir/" + name
					}
					files[i] = client.Put{Path: p.remote(name), Size: int64(len(want[i])), Open: func() (io.ReaderAt, error) {
						return bytes.NewReader(want[i]), nil
					}}
				}
				// One source cannot be opened: nothing is sent for it.
				files[5].Open = func() (io.ReaderAt, error) { return nil, os.ErrPermission }
				fl := &flight{}
				c := login(t, p.addr, &client.Config{Logger: slog.New(fl)})
				errs := c.PutFiles(ctx, files, &client.BatchOptions{Window: 8, Parallel: par})
				for i, err := range errs {
					switch {
					case i == 5:
						if !errors.Is(err, os.ErrPermission) {
							t.Errorf("file 5: err %v, want the Open error", err)
						}
					case i == refused:
						var re *client.ReplyError
						if !errors.As(err, &re) {
							t.Errorf("refused file: err %v, want a negative reply", err)
						}
					case err != nil:
						t.Errorf("file %d: %v", i, err)
					default:
						got := readAll(t, filepath.Join(p.dir, fmt.Sprintf("p%d-%d", par, i)))
						if !bytes.Equal(got, want[i]) {
							t.Errorf("file %d: %d bytes on the server, want %d", i, len(got), len(want[i]))
						}
					}
				}
				cmds, inFlight := fl.take()
				if inFlight < 4 {
					t.Errorf("at most %d commands in flight; the STORs were not pipelined", inFlight)
				}
				if k := count(cmds, "STOR "); k != n-1 {
					t.Errorf("%d STOR sent, want %d", k, n-1)
				}
				if k := count(cmds, "EPSV") + count(cmds, "PASV"); k != 1 {
					t.Errorf("%d passive commands, want 1", k)
				}
				// Ferry's server offers STOR-DRAIN, GCT's does not.
				drains := count(cmds, "OPTS PIPE STOR-DRAIN=ON")
				if want := map[string]int{"ferry": 1, "gct": 0}[p.name]; drains != want {
					t.Errorf("%d OPTS PIPE STOR-DRAIN=ON sent to %s, want %d", drains, p.name, want)
				}
			})
		}
	})
}

// With STOR-DRAIN a file's blocks follow its STOR at once; files the
// server refuses (the very first, before any data connection was
// accepted; a directory; a path through a file; the last) get their
// refusal, and the blocks sent for them do not spill into the next file.
func TestPutFilesDrain(t *testing.T) {
	f := startFerry(t)
	p := f.peer()
	if err := os.Mkdir(filepath.Join(p.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeServed(t, filepath.Join(p.dir, "afile"), []byte("x"))
	fl := &flight{}
	c := login(t, p.addr, &client.Config{Logger: slog.New(fl)})
	ctx := testCtx(t)
	for _, par := range []int{1, 3} {
		const n = 24
		refused := map[int]string{0: "no/such/dir/f", 7: "adir", 8: "afile/f", 9: "no/f", n - 1: "no/last"}
		want := make([][]byte, n)
		files := make([]client.Put, n)
		for i := range n {
			// Refused files carry blocks too, of every size.
			want[i] = seeded(batchSize(i+par), uint64(i+100*par))
			name := fmt.Sprintf("d%d-%d", par, i)
			if r, ok := refused[i]; ok {
				name = r
			}
			files[i] = client.Put{Path: p.remote(name), Size: int64(len(want[i])), Open: func() (io.ReaderAt, error) {
				return bytes.NewReader(want[i]), nil
			}}
		}
		// A command the server might not read as a STOR is not sent.
		const long = 12
		files[long].Path = p.remote(strings.Repeat("x", 4100))
		errs := c.PutFiles(ctx, files, &client.BatchOptions{Window: 6, Parallel: par})
		for i, err := range errs {
			if i == long {
				if err == nil || !strings.Contains(err.Error(), "longer than 4096") {
					t.Errorf("p%d: file with a 4100-byte name: %v, want refused locally", par, err)
				}
				continue
			}
			if _, ok := refused[i]; ok {
				var re *client.ReplyError
				if !errors.As(err, &re) || re.Reply.Code != 550 || errors.Is(err, client.ErrBatchStopped) {
					t.Errorf("p%d: refused file %d: err %v, want the server's 550", par, i, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("p%d: file %d: %v", par, i, err)
				continue
			}
			got := readAll(t, filepath.Join(p.dir, fmt.Sprintf("d%d-%d", par, i)))
			if !bytes.Equal(got, want[i]) {
				t.Errorf("p%d: file %d: %d bytes on the server, want %d", par, i, len(got), len(want[i]))
			}
		}
		if _, err := os.Stat(filepath.Join(p.dir, "no")); err == nil {
			t.Errorf("p%d: a refused upload created a directory", par)
		}
	}
	cmds, _ := fl.take()
	if k := count(cmds, "OPTS PIPE STOR-DRAIN=ON"); k != 1 {
		t.Errorf("OPTS PIPE STOR-DRAIN=ON sent %d times, want once per Conn", k)
	}

	// A single MODE E upload waits for its 150 and sends nothing for a
	// refused STOR: it turns the drain off first, or the server would
	// wait for blocks that never come.
	_, err := c.StoreAt(ctx, p.remote("no/single"), bytes.NewReader([]byte("abc")), 3, &client.StoreOptions{Parallel: 2})
	var re *client.ReplyError
	if !errors.As(err, &re) || re.Reply.Code != 550 {
		t.Fatalf("refused single upload: %v, want 550", err)
	}
	if _, err := c.StoreAt(ctx, p.remote("single"), bytes.NewReader([]byte("abc")), 3, &client.StoreOptions{Parallel: 2}); err != nil {
		t.Fatalf("single upload after a batch: %v", err)
	}
	if got := readAll(t, filepath.Join(p.dir, "single")); string(got) != "abc" {
		t.Errorf("single upload: %q", got)
	}
	cmds, _ = fl.take()
	if k := count(cmds, "OPTS PIPE STOR-DRAIN=OFF"); k != 1 {
		t.Errorf("OPTS PIPE STOR-DRAIN=OFF sent %d times, want 1", k)
	}
}

// A batch that cannot go on (its context is cancelled) says which files
// were not transferred, and the Conn is closed.
func TestBatchStopped(t *testing.T) {
	f := startFerry(t)
	p := f.peer()
	const n = 30
	for i := range n {
		writeServed(t, filepath.Join(p.dir, fmt.Sprint("s", i)), seeded(16<<10, uint64(i)))
	}
	c := login(t, p.addr, nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	local := t.TempDir()
	files := make([]client.Get, n)
	for i := range files {
		files[i] = client.Get{Path: p.remote(fmt.Sprint("s", i)), Open: func() (io.WriterAt, error) {
			if i == 10 {
				cancel()
			}
			return os.Create(filepath.Join(local, fmt.Sprint(i)))
		}}
	}
	errs := c.GetFiles(ctx, files, &client.BatchOptions{Window: 4})
	stopped := 0
	for i, err := range errs {
		switch {
		case err == nil && i >= 10:
			t.Errorf("file %d transferred after the cancel", i)
		case err != nil && i < 10:
			t.Errorf("file %d: %v", i, err)
		case errors.Is(err, client.ErrBatchStopped) || errors.Is(err, context.Canceled):
			stopped++
		case err != nil:
			t.Errorf("file %d: %v", i, err)
		}
	}
	if stopped != n-10 {
		t.Errorf("%d files stopped, want %d", stopped, n-10)
	}
	if _, err := c.Do(context.Background(), "NOOP"); !errors.Is(err, client.ErrClosed) {
		t.Errorf("after a stopped batch: %v, want ErrClosed", err)
	}
}

// StreamMode (and servers without MODE E) transfer the files one by one.
func TestBatchStreamMode(t *testing.T) {
	f := startFerry(t)
	p := f.peer()
	c := login(t, p.addr, nil)
	ctx := testCtx(t)
	want := [][]byte{seeded(100, 1), nil, seeded(20000, 2)}
	puts := make([]client.Put, len(want))
	gets := make([]client.Get, len(want))
	local := t.TempDir()
	for i := range want {
		puts[i] = client.Put{Path: fmt.Sprint("/m", i), Size: -1, Open: func() (io.ReaderAt, error) {
			return localFile(t, want[i]), nil
		}}
		gets[i] = client.Get{Path: fmt.Sprint("/m", i), Open: func() (io.WriterAt, error) {
			return os.Create(filepath.Join(local, fmt.Sprint(i)))
		}}
	}
	o := &client.BatchOptions{StreamMode: true}
	for i, err := range c.PutFiles(ctx, puts, o) {
		if err != nil {
			t.Errorf("put %d: %v", i, err)
		}
	}
	checkGot(t, c.GetFiles(ctx, gets, o), -1, local, want)
}

// TestBatchStallTimeout serves a batch from a disk that hangs in the
// middle of one file: the server has answered its RETR with 150 and then
// sends nothing. StallTimeout must end the batch: that file fails with
// ErrStalled, the ones after it are stopped, the ones before it arrive.
func TestBatchStallTimeout(t *testing.T) {
	dir := t.TempDir()
	const n, hangs = 8, 5
	const big = 4 << 20
	for i := range n {
		size := 16 << 10
		if i == hangs {
			size = big
		}
		writeServed(t, filepath.Join(dir, fmt.Sprint("s", i)), seeded(size, uint64(i)))
	}
	addr, hung := serveHanging(t, dir, big/2)

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			hung.Store(false)
			c := login(t, addr, nil)
			local := t.TempDir()
			files := make([]client.Get, n)
			for i := range files {
				files[i] = client.Get{Path: fmt.Sprint("/s", i), Open: func() (io.WriterAt, error) {
					return os.Create(filepath.Join(local, fmt.Sprint(i)))
				}}
			}
			// The test's own deadline is far beyond the stall timeout:
			// only the stall watch can end the batch in time.
			ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Minute)
			defer cancel()
			start := time.Now()
			errs := c.GetFiles(ctx, files, &client.BatchOptions{Window: 4, StreamMode: stream, StallTimeout: time.Second})
			if d := time.Since(start); d > time.Minute {
				t.Fatalf("the batch took %v", d)
			}
			for i, err := range errs {
				switch {
				case i < hangs && err != nil:
					t.Errorf("file %d: %v", i, err)
				case i == hangs && !errors.Is(err, client.ErrStalled):
					t.Errorf("the hung file: %v, want ErrStalled", err)
				case i > hangs && !(errors.Is(err, client.ErrBatchStopped) && errors.Is(err, client.ErrStalled)):
					t.Errorf("file %d: %v, want ErrBatchStopped and ErrStalled", i, err)
				}
			}
		})
	}
}
