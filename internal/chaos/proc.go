package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// syncBuffer is a bytes.Buffer safe for concurrent use that sends the
// rest of the first line starting with ready on found.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready string
	found chan string
	line  []byte // the current line, while ready is not found
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 4<<20 {
		s.b.Write(p)
	}
	if s.ready == "" {
		return len(p), nil
	}
	for _, c := range p {
		if c != '\n' {
			s.line = append(s.line, c)
			continue
		}
		if rest, ok := strings.CutPrefix(string(s.line), s.ready); ok {
			s.found <- strings.TrimSpace(rest)
			s.ready = ""
			break
		}
		s.line = s.line[:0]
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a ferry process: a server or a mover, restartable with the same
// arguments.
type proc struct {
	name  string
	bin   string
	args  []string
	ready string // prefix of the stdout line that carries the address
	cmd   *exec.Cmd
	out   *syncBuffer
	done  chan struct{}
	addr  string
	logs  []string // output of the earlier incarnations
}

// start runs p and waits for its ready line, at most bound.
func (p *proc) start(bound time.Duration) error {
	out := &syncBuffer{ready: p.ready, found: make(chan string, 1)}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd, p.out, p.done = cmd, out, make(chan struct{})
	done := p.done
	go func() { cmd.Wait(); close(done) }()
	select {
	case a := <-out.found:
		p.addr = a
		return nil
	case <-done:
		return fmt.Errorf("%s exited at start: %s", p.name, out)
	case <-time.After(bound):
		p.kill()
		return fmt.Errorf("%s did not start within %v: %s", p.name, bound, out)
	}
}

// restartOn starts p again listening on its former address.
func (p *proc) restartOn(bound time.Duration) error {
	if p.out != nil {
		p.logs = append(p.logs, p.out.String())
	}
	for i, a := range p.args {
		if a == "-listen" && i+1 < len(p.args) {
			p.args[i+1] = p.addr
		}
	}
	var err error
	// The old listener's port is free at once (SO_REUSEADDR), but allow
	// for a slow exit.
	for range 20 {
		if err = p.start(bound); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func (p *proc) alive() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to p's process group and waits for it.
func (p *proc) kill() {
	if !p.alive() {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.cmd.Process.Kill()
	<-p.done
}

// stop asks p to end (SIGTERM) and kills it after a few seconds.
func (p *proc) stop() {
	if !p.alive() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.kill()
	}
}

// dump sends SIGQUIT (a Go goroutine dump), waits for p to exit and
// returns its output.
func (p *proc) dump() string {
	if p.alive() {
		p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(3 * time.Second):
			p.kill()
		}
	}
	if p.out == nil {
		return ""
	}
	return p.out.String()
}

// runResult is the outcome of one bounded run of a command.
type runResult struct {
	err    error
	out    string
	hung   bool
	killed bool // by us (the kill scenario)
	took   time.Duration
}

// runCmd runs bin args with env, bounded by bound; a command that
// outlives it is sent SIGQUIT (its goroutine dump lands in out) and
// killed, after the goroutine dumps of the servers it talks to, taken
// first by hangDump when not nil, while the hang lasts. kill, if not
// nil, is a channel on which a value makes runCmd SIGKILL the process at
// once.
func runCmd(ctx context.Context, bin string, env []string, bound time.Duration, kill <-chan struct{}, hangDump func() string, args ...string) runResult {
	out := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runResult{err: err}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	var r runResult
	select {
	case err := <-done:
		r.err = err
	case <-kill:
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		r.err, r.killed = <-done, true
	case <-timer.C:
		r.hung = true
		if hangDump != nil {
			fmt.Fprintf(out, "\n=== the servers, while ferry hangs:\n%s\n=== ferry:\n", hangDump())
		}
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		r.err = fmt.Errorf("hang: no exit within %v", bound)
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		r.err = ctx.Err()
	}
	r.out, r.took = out.String(), time.Since(start)
	return r
}

// exitCode is err's exit status, -1 if it is not an exit error.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// writeFileNoErr is os.WriteFile ignoring errors, for reports.
func writeFileNoErr(name, data string) { _ = os.WriteFile(name, []byte(data), 0o644) }
