package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/testutil/scripted"
	"github.com/ferrygrid/ferry/transfer"
)

// silentQuitServer is a scripted FTP server that logs anyone in and
// never answers QUIT (ferry serve and GCT both answer it). It returns
// its address and a channel that gets every QUIT it reads.
func silentQuitServer(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	quits := make(chan struct{}, 16)
	addr := scripted.Serve(t, func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		fmt.Fprint(c, "220 hi\r\n")
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch verb, _, _ := strings.Cut(strings.TrimSpace(line), " "); strings.ToUpper(verb) {
			case "USER":
				fmt.Fprint(c, "230 in\r\n")
			case "FEAT":
				fmt.Fprint(c, "211 End\r\n")
			case "QUIT":
				quits <- struct{}{}
				// No reply, connection kept open.
			default:
				fmt.Fprint(c, "200 ok\r\n")
			}
		}
	})
	return addr, quits
}

// TestHangUpBounded checks that hanging up on a server that never
// answers QUIT returns after transfer.QuitTimeout, and that after Ctrl-C (ctx
// done) no QUIT is sent at all.
func TestHangUpBounded(t *testing.T) {
	addr, quits := silentQuitServer(t)
	defer func(d time.Duration) { transfer.QuitTimeout = d }(transfer.QuitTimeout)
	transfer.QuitTimeout = 200 * time.Millisecond
	dial := func() *client.Conn {
		c, err := client.Dial(t.Context(), addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Login(t.Context(), "u", "p"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	session := func() *client.Session {
		s := &client.Session{Dial: func(context.Context) (*client.Conn, error) { return dial(), nil }}
		if _, err := s.Conn(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		quit  bool
		close func(ctx context.Context)
	}{
		{"hangUp", context.Background(), true, func(ctx context.Context) { hangUp(ctx, dial()) }},
		{"hangUp after Ctrl-C", cancelled, false, func(ctx context.Context) { hangUp(ctx, dial()) }},
		{"transfer.CloseSession", context.Background(), true, func(ctx context.Context) {
			transfer.CloseSession(ctx, session())
		}},
		{"transfer.CloseSession after Ctrl-C", cancelled, false, func(ctx context.Context) {
			transfer.CloseSession(ctx, session())
		}},
	} {
		done := make(chan struct{})
		go func() { tc.close(tc.ctx); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still waiting for the reply to QUIT after 30 s", tc.name)
		}
		select {
		case <-quits:
			if !tc.quit {
				t.Errorf("%s: sent QUIT", tc.name)
			}
		default:
			if tc.quit {
				t.Errorf("%s: sent no QUIT", tc.name)
			}
		}
	}
}

// TestBatchStallTimeout downloads a tree whose largest file the server
// starts and then stops sending: the pipelined batch must give up after
// -stall-timeout instead of hanging, and the other files arrive.
func TestBatchStallTimeout(t *testing.T) {
	f := startFerrySrv(t)
	src := filepath.Join(f.dir, "tree")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(src, 0o777)
	small := seededData(16<<10, 1)
	for i := range 3 {
		writeServed(t, filepath.Join(src, fmt.Sprint("a", i)), small)
	}
	writeServed(t, filepath.Join(src, "big"), seededData(4<<20, 2))
	f.hang.Store(true)
	dst := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	r := ferry(t, nil, "cp", "-r", "-cc", "1", "-rst=false", "-stall-timeout", "1s", f.url+"/tree/", dst+"/")
	if d := time.Since(start); d > 45*time.Second {
		t.Fatalf("cp took %v with a 1 s stall timeout", d)
	}
	if r.code == 0 || !strings.Contains(r.stderr, "stalled") {
		t.Errorf("exit %d, stderr %q; want a stall reported", r.code, r.stderr)
	}
	for i := range 3 {
		if got, err := os.ReadFile(filepath.Join(dst, fmt.Sprint("a", i))); err != nil || !bytes.Equal(got, small) {
			t.Errorf("a%d: %d bytes, %v", i, len(got), err)
		}
	}
}
