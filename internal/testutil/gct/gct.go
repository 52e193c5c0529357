// Package gct starts the Grid Community Toolkit GridFTP server
// (globus-gridftp-server) for tests that need the reference peer.
//
// The server runs anonymous-only on 127.0.0.1 with a kernel-chosen port, as
// user nobody (the tests run as root), and is killed with its per-session
// children when the test ends. A missing binary fails the test: the
// project's test command installs GCT, so a skip would hide a broken setup.
package gct

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
)

// Binary is where the GCT server is installed.
const Binary = "/usr/sbin/globus-gridftp-server"

// startTimeout bounds how long Start waits for the server to listen.
const startTimeout = 30 * time.Second

// Dir returns a new world-writable directory for the server to serve,
// removed when the test ends. The anonymous session runs as nobody, so the
// directory (and every file a test puts there for the server to read) must
// be accessible to others; t.TempDir is not (its parent is mode 0700).
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ferry-gct-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("gct: remove %s: %v", dir, err)
		}
	})
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listening matches the line the server prints once it accepts connections.
var listening = regexp.MustCompile(`Server listening at [^\s:]+:(\d+)\n`)

// Start starts an anonymous GCT server whose sessions begin in root (which
// must be world-writable; see Dir) and returns its control address
// "127.0.0.1:PORT". The server and its session processes are killed when
// the test ends. Extra server options may follow root, such as
// "-disable-command-list", "EPSV,FEAT" to imitate a plainer server.
func Start(t testing.TB, root string, extra ...string) string {
	t.Helper()
	return Launch(t, root, 0, extra...).Addr
}

// Server is a running GCT server.
type Server struct {
	// Addr is the control address, "127.0.0.1:PORT".
	Addr string

	pid  int
	once sync.Once
	wait func()
}

// Launch is Start on a given port (0: chosen by the kernel) that returns
// the Server, so that a test can Kill it and launch another on the same
// port.
func Launch(t testing.TB, root string, port int, extra ...string) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Fatalf("gct: the GCT GridFTP server is required: %v", err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		t.Fatalf("gct: %v", err)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Fatalf("gct: %s has mode %v; the server runs as nobody and needs 0777 (use gct.Dir)", root, fi.Mode().Perm())
	}
	out := NewWatcher()
	var stderr syncbuf.Buffer
	args := []string{
		"-aa", "-anonymous-user", "nobody",
		"-p", strconv.Itoa(port),
		"-control-interface", "127.0.0.1",
		"-data-interface", "127.0.0.1",
		"-home-dir", root,
		"-disable-usage-stats",
	}
	cmd := exec.Command(Binary, append(args, extra...)...)
	cmd.Dir = root
	cmd.Stdout = out
	cmd.Stderr = &stderr
	// A process group of its own, so that Kill also kills the session
	// processes the server forks for each connection.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	AdoptOrphans()
	if err := cmd.Start(); err != nil {
		t.Fatalf("gct: %v", err)
	}
	s := &Server{pid: cmd.Process.Pid}
	s.wait = func() {
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		_ = cmd.Wait()
		ReapGroup(s.pid)
	}
	t.Cleanup(s.Kill)
	if port != 0 {
		// GCT announces its port only when it chose it: wait until the
		// given one accepts connections.
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		deadline := time.Now().Add(startTimeout)
		for pause := 5 * time.Millisecond; time.Now().Before(deadline); pause = min(2*pause, 200*time.Millisecond) {
			if nc, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
				nc.Close()
				return s
			}
			time.Sleep(pause)
		}
		s.Kill()
		t.Fatalf("gct: server did not listen on %s within %v; stderr %q", s.Addr, startTimeout, stderr.String())
	}
	select {
	case p := <-out.found:
		s.Addr = "127.0.0.1:" + p
		return s
	case <-time.After(startTimeout):
		s.Kill()
		t.Fatalf("gct: server did not report its port within %v; stdout %q; stderr %q",
			startTimeout, out.String(), stderr.String())
	}
	return nil
}

// Kill kills the server and its session processes with SIGKILL, as a
// crash would, and waits for them. Later calls do nothing.
func (s *Server) Kill() { s.once.Do(s.wait) }

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for Launch.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Watcher collects a GCT server's output and reports, once, the port of its
// "Server listening at" line on Found.
type Watcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer // guarded by mu
	sent  bool         // guarded by mu
	found chan string
}

// NewWatcher returns a Watcher; use it as the server's stdout.
func NewWatcher() *Watcher { return &Watcher{found: make(chan string, 1)} }

// Found delivers the listening port once.
func (w *Watcher) Found() <-chan string { return w.found }

func (w *Watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if m := listening.FindSubmatch(w.buf.Bytes()); m != nil {
			w.sent = true
			w.found <- string(m[1])
		}
	}
	return len(p), nil
}

func (w *Watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
