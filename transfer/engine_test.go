package transfer

import (
	"bytes"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/server"
)

// testServer is Ferry's server in-process serving a temporary directory
// to anonymous users, reads and writes.
type testServer struct {
	dir  string
	addr string // host:port
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	s := &testServer{dir: t.TempDir()}
	fs, err := posix.New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ftpserver.Start(t, server.Config{Storage: fs, Anonymous: true, AnonymousWrite: true})
	return s
}

// loc is the Remote location of name on the server.
func (s *testServer) loc(name string) Location {
	host, _, _ := net.SplitHostPort(s.addr)
	return Location{Kind: Remote, Path: "/" + name, Addr: s.addr, Host: host, Display: "ftp://" + s.addr + "/" + name}
}

func randomData(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyMismatch: -verify-checksum compares the server's checksum
// with the local file's and reports a mismatch.
func TestVerifyMismatch(t *testing.T) {
	s := startServer(t)
	writeFile(t, filepath.Join(s.dir, "f"), randomData(t, 1000))
	other := filepath.Join(t.TempDir(), "other")
	writeFile(t, other, randomData(t, 1000))
	c := &copier{e: &Engine{}, o: Options{ChecksumAlg: "MD5"}}
	loc := s.loc("f")
	sess := c.session(loc)
	ctx := t.Context()
	defer sess.Close(ctx)
	err := c.verify(ctx, sess, loc, LocalLocation(other), 0, -1)
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("got %v", err)
	}
}

// TestEngineCopy uploads, downloads and copies server to server, in
// stream mode and MODE E, and checks the events and results.
func TestEngineCopy(t *testing.T) {
	s := startServer(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	data := randomData(t, 3<<20+5)
	local := t.TempDir()
	src := filepath.Join(local, "src")
	writeFile(t, src, data)
	for _, o := range []Options{{Length: -1}, {Length: -1, Parallel: 4}} {
		e := &Engine{}
		var starts, progress int
		on := func(ev Event) {
			switch ev.Kind {
			case EventStart:
				starts++
			case EventProgress:
				progress++
			}
		}
		ctx := t.Context()
		res, err := e.Copy(ctx, Request{Src: LocalLocation(src), Dst: s.loc("up"), Options: o}, on)
		if err != nil || res.Bytes != int64(len(data)) {
			t.Fatalf("upload %+v: %d bytes, %v", o, res.Bytes, err)
		}
		dst := filepath.Join(local, "down")
		if res, err = e.Copy(ctx, Request{Src: s.loc("up"), Dst: LocalLocation(dst), Options: o}, on); err != nil || res.Bytes != int64(len(data)) {
			t.Fatalf("download %+v: %d bytes, %v", o, res.Bytes, err)
		}
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
			t.Fatal("download differs")
		}
		if res, err = e.Copy(ctx, Request{Src: s.loc("up"), Dst: s.loc("third"), Options: o}, on); err != nil || res.Bytes != int64(len(data)) {
			t.Fatalf("third party %+v: %d bytes, %v", o, res.Bytes, err)
		}
		if got, _ := os.ReadFile(filepath.Join(s.dir, "third")); !bytes.Equal(got, data) {
			t.Fatal("third-party copy differs")
		}
		if starts != 3 || progress == 0 {
			t.Errorf("%+v: %d start events, %d progress events", o, starts, progress)
		}
	}
}

func TestETA(t *testing.T) {
	for _, c := range []struct {
		size, done int64
		elapsed    time.Duration
		want       time.Duration
	}{
		{100, 25, time.Second, 3 * time.Second},
		{-1, 25, time.Second, 0},
		{100, 0, time.Second, 0},
		{100, 100, time.Second, 0},
	} {
		if got := eta(c.size, c.done, c.elapsed); got != c.want {
			t.Errorf("eta(%d, %d, %v) = %v, want %v", c.size, c.done, c.elapsed, got, c.want)
		}
	}
}

// TestPlanJob plans and runs a tree download and a list with a bad
// line: the bad line fails alone, naming its line.
func TestPlanJob(t *testing.T) {
	s := startServer(t)
	dir := filepath.Join(s.dir, "tree")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		writeFile(t, filepath.Join(dir, n), []byte(n))
	}
	e := &Engine{}
	out := t.TempDir()
	req := JobRequest{
		Pairs: []job.URLPair{
			{Src: "ftp://" + s.addr + "/tree/", Dst: out + "/", Line: 1},
			{Src: "-", Dst: out + "/x", Line: 2},
		},
		FromList: true,
		Options:  Options{Length: -1, Pipeline: true},
		Plan:     job.Options{Recursive: true, CreateDirs: true},
	}
	jr, err := e.PlanJob(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close(t.Context())
	if len(jr.Plan.Pairs) != 2 || len(jr.Plan.Failed) != 1 || !strings.HasPrefix(jr.Plan.Failed[0].Err.Error(), "line 2: ") {
		t.Fatalf("plan: %d pairs, failed %v", len(jr.Plan.Pairs), jr.Plan.Failed)
	}
	sum := jr.Run(t.Context(), nil)
	if sum.Files != 2 || len(sum.Failed) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	for _, n := range []string{"a", "b"} {
		if got, err := os.ReadFile(filepath.Join(out, n)); err != nil || string(got) != n {
			t.Errorf("%s: %q, %v", n, got, err)
		}
	}
	req.FromList = false
	if _, err := e.PlanJob(t.Context(), req); err == nil || !strings.Contains(err.Error(), "standard input") {
		t.Errorf("without a list: %v", err)
	}
}
