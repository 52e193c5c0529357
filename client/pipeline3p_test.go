package client_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// tpPairs are the server pairs of the third-party batch tests: a Ferry
// destination drains refused STORs (the source leads), GCT's does not
// (the destination leads).
var tpPairs = []struct {
	name     string
	src, dst func(t *testing.T) peer
	drain    bool
}{
	{"ferry-ferry", ferryPeer, ferryPeer, true},
	{"ferry-gct", ferryPeer, gctPeer, false},
	{"gct-ferry", gctPeer, ferryPeer, true},
	{"gct-gct", gctPeer, gctPeer, false},
}

// tpTree writes n files of the batch sizes (empty ones included) into
// the source's directory under prefix and returns their contents.
func tpTree(t *testing.T, src peer, prefix string, n int, seed uint64) [][]byte {
	t.Helper()
	want := make([][]byte, n)
	for i := range n {
		want[i] = seeded(batchSize(i), seed+uint64(i))
		writeShared(t, filepath.Join(src.dir, fmt.Sprintf("%s%d", prefix, i)), want[i])
	}
	return want
}

// checkNotMixed fails when a destination file holds another file's bytes.
func checkNotMixed(t *testing.T, path string, want [][]byte, i int) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || len(got) == 0 {
		return
	}
	for k, w := range want {
		if k != i && bytes.Equal(got, w) {
			t.Errorf("%s holds the bytes of file %d", path, k)
		}
	}
	if !bytes.Equal(got, want[i]) {
		t.Errorf("%s: %d bytes, none of them its own file's %d", path, len(got), len(want[i]))
	}
}

// TestThirdPartyFiles copies a batch with files of every size between
// each pair of servers, with one and three data connections, and checks
// every byte, the cached data channel (one PASV for the batch) and the
// Conns' state afterwards.
func TestThirdPartyFiles(t *testing.T) {
	for _, pr := range tpPairs {
		t.Run(pr.name, func(t *testing.T) {
			src, dst := pr.src(t), pr.dst(t)
			const n = 30
			ctx := testCtx(t)
			for _, par := range []int{1, 3} {
				want := tpTree(t, src, fmt.Sprintf("s%d-", par), n, uint64(par*1000))
				fl := &flight{}
				sc := login(t, src.addr, nil)
				dc := login(t, dst.addr, &client.Config{Logger: slog.New(fl)})
				files := make([]client.ThirdPartyFile, n)
				for i := range n {
					files[i] = client.ThirdPartyFile{Src: src.remote(fmt.Sprintf("s%d-%d", par, i)), Dst: dst.remote(fmt.Sprintf("d%d-%d", par, i))}
				}
				done := 0
				errs := client.ThirdPartyFiles(ctx, sc, dc, files, &client.BatchOptions{Window: 8, Parallel: par, Done: func(int, error) { done++ }})
				for i, err := range errs {
					if err != nil {
						t.Errorf("p%d: file %d: %v", par, i, err)
						continue
					}
					if got := readAll(t, filepath.Join(dst.dir, fmt.Sprintf("d%d-%d", par, i))); !bytes.Equal(got, want[i]) {
						t.Errorf("p%d: file %d: %d bytes at the destination, want %d", par, i, len(got), len(want[i]))
					}
				}
				if done != n {
					t.Errorf("p%d: Done called %d times, want %d", par, done, n)
				}
				cmds, _ := fl.take()
				if k := count(cmds, "PASV"); k != 1 {
					t.Errorf("p%d: %d PASV for the batch, want 1 (cached data connections)", par, k)
				}
				if k := count(cmds, "STOR "); k != n {
					t.Errorf("p%d: %d STOR, want %d", par, k, n)
				}
				for _, c := range []*client.Conn{sc, dc} {
					if _, err := c.Size(ctx, "/"); errors.Is(err, client.ErrClosed) {
						t.Errorf("p%d: Conn closed after a clean batch", par)
					}
				}
			}
		})
	}
}

// TestThirdPartyFilesRefused: destinations the server refuses (no such
// directory, a directory) fail alone and the batch goes on; a missing
// source fails alone when the destination drains, and stops the batch
// cleanly (the files after it ErrBatchStopped, both Conns closed) when it
// does not. No destination file ever holds another file's bytes.
func TestThirdPartyFilesRefused(t *testing.T) {
	for _, pr := range tpPairs {
		t.Run(pr.name, func(t *testing.T) {
			src, dst := pr.src(t), pr.dst(t)
			if err := os.Mkdir(filepath.Join(dst.dir, "adir"), 0o777); err != nil {
				t.Fatal(err)
			}
			const n = 24
			want := tpTree(t, src, "s", n, 7)
			ctx := testCtx(t)
			badDst := map[int]string{3: "no/such/dir/f", 9: "adir", 10: "no/f"}
			const missing = 15
			files := make([]client.ThirdPartyFile, n)
			dstName := func(i int) string {
				if d, ok := badDst[i]; ok {
					return d
				}
				return fmt.Sprintf("d%d", i)
			}
			for i := range n {
				files[i] = client.ThirdPartyFile{Src: src.remote(fmt.Sprintf("s%d", i)), Dst: dst.remote(dstName(i))}
			}
			files[missing].Src = src.remote("missing")
			for _, par := range []int{1, 3} {
				for i := range n {
					os.Remove(filepath.Join(dst.dir, fmt.Sprintf("d%d", i)))
				}
				sc, dc := login(t, src.addr, nil), login(t, dst.addr, nil)
				errs := client.ThirdPartyFiles(ctx, sc, dc, files, &client.BatchOptions{Window: 5, Parallel: par})
				for i, err := range errs {
					var re *client.ReplyError
					_, bad := badDst[i]
					switch {
					case bad || i == missing:
						if !errors.As(err, &re) || re.Reply.Code/100 != 5 || errors.Is(err, client.ErrBatchStopped) {
							t.Errorf("p%d: file %d: %v, want the server's 5xx", par, i, err)
						}
					case i > missing && !pr.drain:
						if !errors.Is(err, client.ErrBatchStopped) {
							t.Errorf("p%d: file %d after the stop: %v, want ErrBatchStopped", par, i, err)
						}
					case err != nil:
						t.Errorf("p%d: file %d: %v", par, i, err)
					}
					if !bad {
						p := filepath.Join(dst.dir, dstName(i))
						if err == nil {
							if got := readAll(t, p); !bytes.Equal(got, want[i]) {
								t.Errorf("p%d: file %d: %d bytes at the destination, want %d", par, i, len(got), len(want[i]))
							}
						} else {
							checkNotMixed(t, p, want, i)
						}
					}
				}
				_, serr := sc.Size(ctx, "/")
				_, derr := dc.Size(ctx, "/")
				closed := errors.Is(serr, client.ErrClosed) && errors.Is(derr, client.ErrClosed)
				if closed != !pr.drain {
					t.Errorf("p%d: Conns closed = %v (%v, %v), want %v", par, closed, serr, derr, !pr.drain)
				}
			}
		})
	}
}
