package client_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// progressLog keeps the Progress reports of one transfer.
type progressLog struct {
	mu sync.Mutex
	ps []client.Progress
}

func (l *progressLog) add(p client.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ps = append(l.ps, p)
}

// last is the final report (the one the meter makes when it stops).
func (l *progressLog) last(t *testing.T, what string) client.Progress {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ps) == 0 {
		t.Fatalf("%s: no progress reports", what)
	}
	return l.ps[len(l.ps)-1]
}

// checkConns checks the kernel's view of every data connection in the last
// report of a transfer of size bytes over want streams: on Linux one
// plausible ConnStats per stream whose Bytes add up to size; elsewhere
// none.
func checkConns(t *testing.T, what string, l *progressLog, want int, size int64) {
	t.Helper()
	p := l.last(t, what)
	if runtime.GOOS != "linux" {
		if len(p.Conns) != 0 {
			t.Fatalf("%s: Conns %+v on %s", what, p.Conns, runtime.GOOS)
		}
		return
	}
	if len(p.Streams) != want || len(p.Conns) != want {
		t.Fatalf("%s: %d streams, %d conns, want %d: %+v", what, len(p.Streams), len(p.Conns), want, p)
	}
	var sum int64
	for i, cs := range p.Conns {
		if cs.Bytes != p.Streams[i] {
			t.Errorf("%s: conn %d: Bytes %d, Streams[%d] %d", what, i, cs.Bytes, i, p.Streams[i])
		}
		if cs.RTT <= 0 || cs.MSS <= 0 || cs.SndBuf <= 0 || cs.RcvBuf <= 0 || cs.Cwnd <= 0 || cs.SegsOut <= 0 || cs.SegsIn <= 0 {
			t.Errorf("%s: conn %d: implausible %+v", what, i, cs)
		}
		sum += cs.Bytes
	}
	if sum != size || p.Bytes != size {
		t.Errorf("%s: conns moved %d bytes, Bytes %d, want %d", what, sum, p.Bytes, size)
	}
}

// TestProgressConns uploads and downloads a few MiB with GCT's server and
// Ferry's, in stream mode and in MODE E with 4 streams, over closed, kept
// and reused connections, passive and active, and checks that the last
// Progress reports every data connection's TCP_INFO.
func TestProgressConns(t *testing.T) {
	peers(t, func(t *testing.T, s peer) {
		const size = 3<<20 + 777
		data := seeded(size, 42)
		for _, active := range []bool{false, true} {
			for _, par := range []int{1, 4} {
				t.Run(fmt.Sprintf("active=%v/p%d", active, par), func(t *testing.T) {
					ctx := testCtx(t)
					c := login(t, s.addr, &client.Config{Active: active})
					name := s.remote(fmt.Sprintf("conns-%v-%d", active, par))
					// Round 0 closes its MODE E connections, round 1 keeps them
					// and round 2 uses those. Round 0 reports only at the end:
					// what was read of a connection before it closed must be
					// there.
					for round := range 3 {
						reuse := round > 0
						every := 2 * time.Millisecond
						if round == 0 {
							every = time.Hour
						}
						var up, down progressLog
						n, err := c.StoreAt(ctx, name, localFile(t, data), size, &client.StoreOptions{
							Parallel: par, Reuse: reuse, BlockSize: 256 << 10,
							Progress: up.add, ProgressInterval: every,
						})
						if err != nil || n != size {
							t.Fatalf("StoreAt: %d, %v", n, err)
						}
						checkConns(t, fmt.Sprintf("upload %d", round), &up, par, size)
						dst := newLocal(t)
						n, err = c.RetrieveAt(ctx, name, dst, &client.RetrieveOptions{
							Parallel: par, Reuse: reuse,
							Progress: down.add, ProgressInterval: every,
						})
						if err != nil || n != size {
							t.Fatalf("RetrieveAt: %d, %v", n, err)
						}
						if got := readAll(t, dst.Name()); !bytes.Equal(got, data) {
							t.Fatal("downloaded file differs")
						}
						checkConns(t, fmt.Sprintf("download %d", round), &down, par, size)
					}
				})
			}
		}
	})
}

// TestProgressConnsTLS: data connections under TLS (FTPS PROT P) report
// the TCP connection under them.
func TestProgressConnsTLS(t *testing.T) {
	pki := gsipki.New(t, "")
	s := startFTPSServer(t, pki, pki.HostCert, pki.HostKey)
	c := ftpsLogin(t, s.addr, ftpsConfig(t, pki), false, "alice", "secret")
	const size = 2<<20 + 5
	data := seeded(size, 43)
	for _, par := range []int{1, 4} {
		ctx := testCtx(t)
		name := fmt.Sprintf("tls-%d", par)
		var up, down progressLog
		if _, err := c.StoreAt(ctx, "/"+name, bytes.NewReader(data), size, &client.StoreOptions{Parallel: par, Progress: up.add}); err != nil {
			t.Fatal(err)
		}
		checkConns(t, fmt.Sprintf("p%d upload", par), &up, par, size)
		dst := newLocal(t)
		if _, err := c.RetrieveAt(ctx, "/"+name, dst, &client.RetrieveOptions{Parallel: par, Progress: down.add}); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, filepath.Clean(dst.Name())); !bytes.Equal(got, data) {
			t.Fatal("downloaded file differs")
		}
		checkConns(t, fmt.Sprintf("p%d download", par), &down, par, size)
	}
}
