package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// waitDelay bounds how long a killed process may hold its output pipes.
const waitDelay = 5 * time.Second

// command returns cmd for path and args in a process group of its own,
// killed as a group when ctx ends: GCT's server forks a process per
// session, and a terminal's ^C must not reach the servers before the
// benchmark stops them.
func command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	return cmd
}

// usage is what a process that ended used.
type usage struct {
	wall time.Duration // from Start to the end of Wait
	cpu  time.Duration // user + system, from wait4
	rss  int64         // peak RSS in bytes (see peakOf); rssUnknown if not known
	// machine is what the machine's CPUs did while the process ran (set
	// by runClient only).
	machine cpuShare
}

// rssUnknown is a peak RSS that could not be measured: the process ended
// before the first sample and wait4 could not tell either (see peakOf).
const rssUnknown = -1

// usageOf reads the CPU time of an ended process.
func usageOf(ps *os.ProcessState, wall time.Duration) usage {
	return usage{wall: wall, cpu: ps.UserTime() + ps.SystemTime()}
}

// inheritSlack is how much above the benchmark's own peak RSS a child's
// ru_maxrss must be before it is taken as the child's own (the kernel's
// RSS counters are summed lazily, per CPU).
const inheritSlack = 2 << 20

// peakOf returns the peak RSS of a child process that this process has
// reaped: the sampled peak when a sample saw the process alive, else its
// ru_maxrss from wait4 if that is certainly its own, else rssUnknown.
//
// A fast child can exit (and a zombie has no memory lines) before the
// first sample is read, on a loaded machine even a run of 100 ms. wait4's
// ru_maxrss is the fallback only: Go starts programs with a vfork-style
// clone, and exec records the high-water mark of the memory it replaces,
// the benchmark's own, in the child's ru_maxrss. So ru_maxrss is the
// child's own peak only when it exceeds selfHWM, the benchmark's VmHWM
// read after the child was started (after its exec); otherwise the child's
// peak is at most selfHWM, but not known.
func peakOf(sampled int64, ps *os.ProcessState, selfHWM int64) int64 {
	// A sample under minPlausibleRSS caught the child between fork and
	// exec, not the program itself: it does not count.
	if sampled >= minPlausibleRSS {
		return sampled
	}
	if ps != nil && selfHWM > 0 {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru.Maxrss<<10 > selfHWM+inheritSlack {
			return ru.Maxrss << 10
		}
	}
	return rssUnknown
}

// minPlausibleRSS is less than any program the benchmark runs needs.
const minPlausibleRSS = 1 << 20

// selfPeak returns this process's VmHWM, or 0 if it cannot be read.
func selfPeak() int64 {
	m, err := readMem(os.Getpid())
	if err != nil {
		return 0
	}
	return m.peak()
}

// runClient runs path with args, bounded by timeout, and returns its
// usage and standard output. env, when not nil, is the environment. A
// failure carries the end of its stderr.
func runClient(parent context.Context, timeout time.Duration, env []string, path string, args ...string) (usage, []byte, error) {
	u, out, _, err := runClientStderr(parent, timeout, env, path, args...)
	return u, out, err
}

// runClientStderr is runClient that also returns the end of the client's
// standard error (its last tailSize bytes).
func runClientStderr(parent context.Context, timeout time.Duration, env []string, path string, args ...string) (usage, []byte, string, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	cmd := command(ctx, path, args...)
	cmd.Env = env
	var stdout bytes.Buffer
	stderr := &tail{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cpus := startMachine()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return usage{}, nil, "", fmt.Errorf("bench: %w", err)
	}
	// Start returns once the program has been executed, so the first
	// sample already sees the client's own memory (unless it has already
	// exited: see peakOf).
	watch := watchPeak(func() []int { return []int{cmd.Process.Pid} })
	self := selfPeak()
	err := cmd.Wait()
	u := usageOf(cmd.ProcessState, time.Since(start))
	u.machine = cpus.share()
	u.rss = peakOf(watch.stop(), cmd.ProcessState, self)
	if err != nil {
		switch {
		case parent.Err() != nil:
			return u, nil, stderr.String(), context.Cause(parent)
		case ctx.Err() != nil:
			err = fmt.Errorf("no result within %v (-timeout): %w", timeout, err)
		}
		return u, stdout.Bytes(), stderr.String(), fmt.Errorf("bench: %s: %w%s", commandLine(path, args), err, stderr.suffix())
	}
	return u, stdout.Bytes(), stderr.String(), nil
}

// commandLine renders a command for error messages.
func commandLine(path string, args []string) string {
	return strings.Join(append([]string{path}, args...), " ")
}

// server is a server process the benchmark started.
type server struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	port   int
	log    *tail // its stderr and stdout
	exited chan struct{}
	err    error // from Wait; set before exited closes

	stopOnce sync.Once
}

// listening matches the line ferry serve, ferry mover and the GCT server
// print once they accept connections.
var listening = regexp.MustCompile(`(?:Server|Mover) listening at \S*:(\d+)\s`)

// startTimeout bounds how long a server may take to report its port.
const startTimeout = 30 * time.Second

// startServer runs path with args in dir, with environment env (nil: this
// process's), and waits for its "Server listening at HOST:PORT" line. The
// caller must call stop.
func startServer(ctx context.Context, name, dir string, env []string, path string, args ...string) (*server, error) {
	cmd := command(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = env
	return startServerCmd(ctx, name, cmd)
}

// startServerCmd starts cmd, a server in a process group of its own, and
// waits for its "Server listening at HOST:PORT" line. The caller must call
// stop.
func startServerCmd(ctx context.Context, name string, cmd *exec.Cmd) (*server, error) {
	s := &server{name: name, cmd: cmd, log: &tail{}, exited: make(chan struct{})}
	w := &portWatcher{w: s.log, found: make(chan int, 1)}
	cmd.Stdout, cmd.Stderr = w, s.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", name, err)
	}
	s.pid = cmd.Process.Pid
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case s.port = <-w.found:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("bench: %s exited before listening: %v%s", name, s.err, s.log.suffix())
	case <-timer.C:
		err := fmt.Errorf("bench: %s did not report its port within %v%s", name, startTimeout, s.log.suffix())
		s.stop()
		return nil, err
	case <-ctx.Done():
		s.stop()
		return nil, context.Cause(ctx)
	}
}

// stop ends the server's process group: SIGTERM, then SIGKILL after a few
// seconds, and SIGKILL again for session processes that outlived it. It
// waits for the server process to be reaped.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		_ = syscall.Kill(-s.pid, syscall.SIGTERM)
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		select {
		case <-s.exited:
		case <-t.C:
			_ = syscall.Kill(-s.pid, syscall.SIGKILL)
			<-s.exited
		}
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	})
}

// alive returns an error if the server has exited.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("bench: %s exited: %v%s", s.name, s.err, s.log.suffix())
	default:
		return nil
	}
}

// portWatcher passes a server's stdout to w and sends the port of its
// first "Server listening at" line to found.
type portWatcher struct {
	w     *tail
	mu    sync.Mutex
	buf   []byte // guarded by mu; nil once the port is found
	done  bool   // guarded by mu
	found chan int
}

func (p *portWatcher) Write(b []byte) (int, error) {
	p.w.Write(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return len(b), nil
	}
	p.buf = append(p.buf, b...)
	if m := listening.FindSubmatch(p.buf); m != nil {
		if port, err := strconv.Atoi(string(m[1])); err == nil && port > 0 && port < 1<<16 {
			p.done, p.buf = true, nil
			p.found <- port
		}
	} else if len(p.buf) > 1<<16 {
		p.buf = p.buf[len(p.buf)-1<<10:]
	}
	return len(b), nil
}

// tailSize is how much of a process's output a tail keeps.
const tailSize = 8 << 10

// tail keeps the last tailSize bytes written to it. It is safe for
// concurrent use.
type tail struct {
	mu  sync.Mutex
	buf []byte // guarded by mu
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(b), nil
}

// String returns the kept output.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > tailSize {
		b = b[len(b)-tailSize:]
	}
	return string(b)
}

// suffix returns the kept output for an error message: empty, or a colon,
// a newline and the output.
func (t *tail) suffix() string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	return ":\n" + s
}
