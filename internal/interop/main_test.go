package interop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ferryBin is the ferry binary TestMain builds for the whole package.
var ferryBin string

// cmdTimeout bounds every external command; the largest transfer here
// (300 MB over loopback) takes seconds.
const cmdTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	// The ferry processes must not write to the user's transfer history.
	os.Setenv("FERRY_HISTORY", "off")
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		fmt.Fprintf(os.Stderr, "interop: cannot find the module root (go env GOMOD: %q, %v)\n", gomod, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "ferry-interop-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Mapped local users run the binary too (ferry serve's privsep helpers).
	os.Chmod(dir, 0o755)
	ferryBin = filepath.Join(dir, "ferry")
	args := []string{"build", "-o", ferryBin}
	if raceEnabled {
		// The ferry processes then report their own data races: a server's
		// fails the test in startFerry's cleanup, a client's makes it exit
		// with status 66.
		args = append(args, "-race")
		// Without this each race-enabled process sleeps 1s at exit.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	if bin := os.Getenv(ferryBinEnv); bin != "" {
		// A parent run built it (TestGlobusURLCopyIsFerryDropIn).
		ferryBin = bin
	} else {
		build := exec.Command("go", append(args, "./cmd/ferry")...)
		build.Dir = filepath.Dir(gomod)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "interop: go build ./cmd/ferry: %v\n%s", err, out)
			return 1
		}
	}
	if gucIsFerry() {
		if err := installGUCLink(dir, ferryBin); err != nil {
			fmt.Fprintln(os.Stderr, "interop: installing ferry as globus-url-copy:", err)
			return 1
		}
	}
	return m.Run()
}

// need fails the test unless program is installed.
func need(t testing.TB, program string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		t.Fatalf("%s is required (run 'make deps'): %v", program, err)
	}
	return p
}

// result is what an external command did.
type result struct {
	stdout, stderr string
	code           int // exit status; -1 if killed
	err            error
}

func (r result) String() string {
	return fmt.Sprintf("exit %d (%v)\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
}

// run runs program with args in dir (if not empty), feeding it stdin,
// and returns what it did; it never fails the test by itself except when
// program is missing or overruns cmdTimeout.
func run(t testing.TB, dir, stdin, program string, args ...string) result {
	t.Helper()
	path := need(t, program)
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: -1, err: err}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: no result within %v\n%v", program, strings.Join(args, " "), cmdTimeout, r)
	}
	return r
}

// mustRun is run for commands that must succeed; it returns stdout.
func mustRun(t testing.TB, dir, stdin, program string, args ...string) string {
	t.Helper()
	r := run(t, dir, stdin, program, args...)
	if r.err != nil {
		t.Fatalf("%s %s: %v", program, strings.Join(args, " "), r)
	}
	return r.stdout
}

// ferry runs the ferry binary and returns stdout; it must succeed.
func ferry(t testing.TB, args ...string) string {
	t.Helper()
	return mustRun(t, "", "", ferryBin, args...)
}

// server is a running "ferry serve".
type server struct {
	addr string // "127.0.0.1:PORT"
	port string
	root string
	log  *syncBuffer // its stderr
	proc *os.Process

	stopOnce sync.Once
	stopped  stopResult
	stopFn   func() stopResult
}

// stopResult is how a server ended.
type stopResult struct {
	code int   // exit status; -1 if it had to be killed
	err  error // from Wait; also set when it did not exit at all
}

// url returns ftp://127.0.0.1:PORT followed by p (which starts with /).
func (s *server) url(p string) string { return "ftp://" + s.addr + p }

// stop sends SIGTERM, waits for the server to exit (SIGKILL after 10s)
// and reports how it ended. Only the first call does anything.
func (s *server) stop() stopResult {
	s.stopOnce.Do(func() { s.stopped = s.stopFn() })
	return s.stopped
}

// listening matches the line ferry serve prints once it accepts connections.
var listening = regexp.MustCompile(`^Server listening at (\S+):(\d+)\n`)

// startFerry starts "ferry serve" on a free loopback port serving root
// with the extra flags (-anonymous-write unless flags are given). The
// server is stopped with SIGTERM when the test ends and must then exit
// with status 0; a panic or data race in its log fails the test.
func startFerry(t testing.TB, root string, flags ...string) *server {
	t.Helper()
	if len(flags) == 0 {
		flags = []string{"-anonymous-write"}
	}
	args := append([]string{"serve", "-listen", "127.0.0.1:0", "-root", root, "-shutdown-grace", "3s"}, flags...)
	// The server outlives single commands; its context bounds the whole
	// test and is cancelled by stop to deliver SIGTERM.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	cmd := exec.CommandContext(ctx, ferryBin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	out := &lineWatcher{first: make(chan string, 1)}
	s := &server{root: root, log: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = out, s.log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("ferry serve: %v", err)
	}
	s.proc = cmd.Process
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	s.stopFn = func() stopResult {
		cancel()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			return stopResult{code: -1, err: errors.New("ferry serve did not exit after SIGTERM and SIGKILL")}
		}
		return stopResult{code: cmd.ProcessState.ExitCode(), err: waitErr}
	}
	t.Cleanup(func() {
		r := s.stop()
		if r.code != 0 {
			t.Errorf("ferry serve: after SIGTERM: exit status %d (%v)", r.code, r.err)
		}
		if l := s.log.String(); strings.Contains(l, "panic") || strings.Contains(l, "DATA RACE") {
			t.Errorf("ferry serve log shows a panic or race:\n%s", l)
		}
		if t.Failed() {
			t.Logf("ferry serve %s log:\n%s", strings.Join(flags, " "), s.log)
		}
	})
	select {
	case line := <-out.first:
		m := listening.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("ferry serve: first stdout line %q is not 'Server listening at HOST:PORT'", line)
		}
		s.port = m[2]
		s.addr = net.JoinHostPort("127.0.0.1", s.port)
	case <-exited:
		t.Fatalf("ferry serve %s exited early: %v; stderr:\n%s", strings.Join(args, " "), waitErr, s.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("ferry serve did not report its address within 30s; stderr:\n%s", s.log)
	}
	return s
}

// lineWatcher is a process's stdout; it sends the first line to first.
type lineWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer // guarded by mu
	sent bool         // guarded by mu
	// first receives the first complete line, with its newline.
	first chan string
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if line, _, found := bytes.Cut(w.buf.Bytes(), []byte("\n")); found {
			w.sent = true
			w.first <- string(line) + "\n"
		}
	}
	return len(p), nil
}

// syncBuffer collects a process's output; the exec copier writes while
// the test may read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// writeRandom writes size bytes derived from seed to name (mode 0644) and
// returns their SHA-256. ChaCha8 makes hundreds of megabytes in about a
// second, unlike crypto/rand.
func writeRandom(t testing.TB, name string, size int64, seed uint64) string {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var s [32]byte
	copy(s[:], fmt.Sprintf("ferry-interop-%d", seed))
	src := rand.NewChaCha8(s)
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), src, size); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeFile writes a small file with mode 0644 (readable by GCT sessions,
// which run as nobody).
func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileSum returns the SHA-256 of a file's contents.
func fileSum(t testing.TB, name string) string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sameFile fails the test unless got has SHA-256 want.
func sameFile(t testing.TB, got, want string) {
	t.Helper()
	if sum := fileSum(t, got); sum != want {
		fi, _ := os.Stat(got)
		var size int64 = -1
		if fi != nil {
			size = fi.Size()
		}
		t.Errorf("%s: SHA-256 %s (%d bytes), want %s", got, sum, size, want)
	}
}

// treeOf describes the tree under root: each relative path maps to "dir"
// or the SHA-256 of the file.
func treeOf(t testing.TB, root string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".":
		case d.IsDir():
			tree[rel] = "dir"
		case d.Type().IsRegular():
			tree[rel] = fileSum(t, p)
		default:
			tree[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// sameTree fails the test unless the trees under got and want match.
func sameTree(t testing.TB, got, want string) {
	t.Helper()
	g, w := treeOf(t, got), treeOf(t, want)
	for p, ws := range w {
		if gs, ok := g[p]; !ok {
			t.Errorf("%s: missing %s", got, p)
		} else if gs != ws {
			t.Errorf("%s: %s is %s, want %s", got, p, gs, ws)
		}
	}
	for p := range g {
		if _, ok := w[p]; !ok {
			t.Errorf("%s: unexpected %s", got, p)
		}
	}
}

// makeTree makes a small tree under root: nested directories, an empty
// directory and a file with a space in its name.
func makeTree(t testing.TB, root string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "top.txt"), "top\n")
	writeFile(t, filepath.Join(root, "with space.txt"), "a name with a space\n")
	writeFile(t, filepath.Join(root, "sub", "mid.bin"), strings.Repeat("mid-level\n", 5000))
	writeFile(t, filepath.Join(root, "sub", "deeper", "leaf.txt"), "leaf\n")
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandom(t, filepath.Join(root, "sub", "deeper", "random.bin"), 3<<20+17, 99)
}

// lines splits out into trimmed, non-empty lines.
func lines(out string) []string {
	var ls []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}
