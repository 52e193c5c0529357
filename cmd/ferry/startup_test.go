package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// cmdLog collects the commands a Ferry server logs.
type cmdLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *cmdLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *cmdLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *cmdLog) WithGroup(string) slog.Handler            { return l }
func (l *cmdLog) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "command" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "cmd" {
			l.mu.Lock()
			l.cmds = append(l.cmds, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *cmdLog) count(cmd string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.cmds {
		if c == cmd || strings.HasPrefix(c, cmd+" ") {
			n++
		}
	}
	return n
}

// loggedSrv starts a Ferry server that records its commands.
func loggedSrv(t *testing.T) (dir, addr string, log *cmdLog) {
	t.Helper()
	log = &cmdLog{}
	f := startFerrySrvLog(t, slog.New(log))
	return f.dir, strings.TrimPrefix(f.url, "ftp://"), log
}

// gate holds the first control connection to each of its fronts until
// every front has one (or a generous while has passed), and records
// whether they all met: two logins under way at the same time.
type gate struct {
	mu      sync.Mutex
	waiting int
	fronts  int
	all     chan struct{}
	met     bool
	expired bool // a connection waited in vain
}

// front forwards a listener of its own to addr and returns its address;
// fronts is how many a gate gets.
func (g *gate) front(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		first := true
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if first {
				first = false
				g.arrive()
			}
			wg.Go(func() { forward(c, addr) })
		}
	})
	return l.Addr().String()
}

func (g *gate) arrive() {
	g.mu.Lock()
	g.waiting++
	if g.waiting == g.fronts {
		g.met = !g.expired
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(10 * time.Second):
		// Let it through; the others came too late.
		g.mu.Lock()
		g.expired = true
		g.mu.Unlock()
	}
}

func (g *gate) allMet() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.met
}

// forward copies between c and a new connection to addr until either
// side ends.
func forward(c net.Conn, addr string) {
	defer c.Close()
	s, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(s, c); s.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, s); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// TestCpThirdPartyStartup: ferry cp -r between two servers logs in to
// both at the same time, asks the destination about its directory once,
// and sends no SIZE (the listing gave the sizes); the tree arrives.
func TestCpThirdPartyStartup(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	sdir, saddr, slog := loggedSrv(t)
	ddir, daddr, dlog := loggedSrv(t)
	g := &gate{fronts: 2, all: make(chan struct{})}
	surl, durl := "ftp://"+g.front(t, saddr), "ftp://"+g.front(t, daddr)
	files := map[string][]byte{"a": seededData(1000, 1), "b": nil, "sub/c": seededData(70000, 2)}
	for _, d := range []string{"tree", "tree/sub"} {
		os.MkdirAll(filepath.Join(sdir, d), 0o777)
		os.Chmod(filepath.Join(sdir, d), 0o777)
	}
	os.Chmod(ddir, 0o777)
	for name, data := range files {
		writeServed(t, filepath.Join(sdir, "tree", name), data)
	}
	ok(t, "cp", "-r", "-cc", "1", surl+"/tree/", durl+"/out/")
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(ddir, "out", name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes (%v), want %d", name, len(got), err, len(data))
		}
	}
	if !g.allMet() {
		t.Error("the logins to the two servers were not under way at the same time")
	}
	if n := dlog.count("MLST /out/"); n != 1 {
		t.Errorf("destination got MLST /out/ %d times, want 1", n)
	}
	if n := slog.count("SIZE"); n != 0 {
		t.Errorf("source got %d SIZE, want none (the listing has the sizes)", n)
	}
	if n := dlog.count("USER"); n != 1 {
		t.Errorf("destination got %d logins, want 1 (the planning session copies too)", n)
	}
}

// TestGSIThirdPartyStartupGCT: the pipelined third-party set-up over
// GSI-wrapped control channels, between two GCT servers: a tree
// (batches) and a single file, with DCAU on both sides.
func TestGSIThirdPartyStartupGCT(t *testing.T) {
	pki := gsipki.New(t, "")
	a, b := startGSI(t, pki, nil), startGSI(t, pki, nil)
	files := map[string][]byte{"f0": randomData(t, 5000), "f1": nil, "sub/f2": randomData(t, 300000)}
	for name, data := range files {
		p := filepath.Join(a.dir, "tree", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		gctgsi.WriteFile(t, pki, p, data)
	}
	ok(t, "cp", "-r", "-cc", "2", a.url+"/tree/", b.url+"/out/")
	ok(t, "cp", "-p", "2", a.url+"/tree/sub/f2", b.url+"/single")
	for name, data := range files {
		if got := mustRead(t, filepath.Join(b.dir, "out", name)); !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes, want %d", name, len(got), len(data))
		}
	}
	if got := mustRead(t, filepath.Join(b.dir, "single")); !bytes.Equal(got, files["sub/f2"]) {
		t.Errorf("single: %d bytes, want %d", len(got), len(files["sub/f2"]))
	}
}
