package main

// Interrupted and killed copies, run with the real ferry binary: what
// they leave behind, what they tell the user, and how soon they exit.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/transfer"
)

// Create makes writes from the second MiB on wait while hang is set, as
// reads do: an upload then starts and stalls.
func (s slowFS) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	w, err := s.Storage.Create(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return hangWriter{w, s.f}, nil
}

type hangWriter struct {
	dsi.Writer
	f *ferrySrv
}

func (w hangWriter) WriteAt(p []byte, off int64) (int, error) {
	if w.f.hang.Load() && off >= 1<<20 {
		<-w.f.release
	}
	return w.Writer.WriteAt(p, off)
}

// ferryProc is a ferry binary started by a test.
type ferryProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan error
}

// startBin starts bin with args in env; the test's end kills it if it
// still runs.
func startBin(t *testing.T, bin string, env []string, args ...string) *ferryProc {
	t.Helper()
	p := &ferryProc{cmd: exec.Command(bin, args...), stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		p.exited <- nil
	})
	return p
}

// waitUntil polls cond every 20 ms for up to 30 s; it fails the test if
// p exits first or cond never holds.
func (p *ferryProc) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30 s; stderr %q", what, p.stderr.String())
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("ferry exited (%v) before %s; stderr %q", err, what, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends sig and returns how long ferry took to exit, and its exit
// status (-1 when killed by a signal); it gives up after 30 s.
func (p *ferryProc) stop(t *testing.T, sig os.Signal) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("ferry still runs 30 s after %v; stderr %q", sig, p.stderr.String())
	}
	return time.Since(start), p.cmd.ProcessState.ExitCode()
}

// binEnv is the environment of the ferry binary in a test: no ~/.netrc,
// upload state under dir.
func binEnv(dir string) []string {
	return append(os.Environ(), "NETRC="+filepath.Join(dir, "no-netrc"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
}

// sizeOf is the size of name, -1 if it is missing.
func sizeOf(name string) int64 {
	fi, err := os.Stat(name)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// anyBytes reports whether a file in dir (a temporary one included) has
// received bytes.
func anyBytes(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && !strings.HasSuffix(e.Name(), transfer.RangesSuffix) {
			return true
		}
	}
	return false
}

// TestCpKilledStreamDownload kills a stream-mode ferry cp (SIGKILL) while
// the server stalls in the middle of a large file: nothing under the
// destination's name may look complete. A file there must have its
// .ferry-ranges beside it, and running the same command again resumes
// and completes it, saying so.
func TestCpKilledStreamDownload(t *testing.T) {
	bin := buildFerry(t)
	s := startFerrySrv(t)
	const size = 80 << 20 // above batchMaxSize: no small-file shortcut
	data := seededData(size, 7)
	writeServed(t, filepath.Join(s.dir, "big"), data)
	local := t.TempDir()
	dst := filepath.Join(local, "big")
	env := binEnv(local)

	s.hang.Store(true)
	p := startBin(t, bin, env, "cp", s.url+"/big", dst)
	p.waitUntil(t, "bytes at the destination", func() bool { return anyBytes(local) })
	time.Sleep(200 * time.Millisecond)
	p.stop(t, syscall.SIGKILL)
	s.hang.Store(false)

	n, ranges := sizeOf(dst), sizeOf(dst+transfer.RangesSuffix)
	if n >= 0 && ranges < 0 {
		t.Fatalf("killed download left %s (%d of %d bytes) with nothing marking it incomplete", dst, n, size)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "cp", "-vb", s.url+"/big", dst)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("second run: %v; %q", err, stderr.String())
	}
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("contents differ")
	}
	if _, err := os.Stat(dst + transfer.RangesSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ranges file left behind: %v", err)
	}
	if n > 0 && !strings.Contains(stderr.String(), "resuming") {
		t.Errorf("second run does not say it resumes: %q", stderr.String())
	}
}

// TestCpInterruptedDownloadResumes interrupts ferry cp -p 4 (SIGINT) while
// the server stalls: it exits promptly (it used to wait out the 2 s
// ABOR timeout; 1.9 s is far above the fraction of a second it takes
// now), tells the user the file is incomplete and that the same command
// resumes it; the same command then says it resumes and completes it.
func TestCpInterruptedDownloadResumes(t *testing.T) {
	bin := buildFerry(t)
	s := startFerrySrv(t)
	const size = 80 << 20
	data := seededData(size, 8)
	writeServed(t, filepath.Join(s.dir, "big"), data)
	local := t.TempDir()
	dst := filepath.Join(local, "big")
	env := binEnv(local)
	args := []string{"cp", "-p", "4", s.url + "/big", dst}

	s.hang.Store(true)
	p := startBin(t, bin, env, args...)
	p.waitUntil(t, "ranges stored", func() bool {
		st, err := transfer.ReadResumeState(dst + transfer.RangesSuffix)
		return err == nil && st.Ranges.Total() > 0
	})
	took, code := p.stop(t, os.Interrupt)
	s.hang.Store(false)
	stderr := p.stderr.String()
	if code != 1 {
		t.Errorf("exit status %d after Ctrl-C, want 1", code)
	}
	if took > 1900*time.Millisecond {
		t.Errorf("ferry took %v to exit after Ctrl-C", took)
	}
	if !strings.Contains(stderr, "incomplete") || !strings.Contains(stderr, "run the same command again to resume") {
		t.Errorf("no word on resuming after Ctrl-C: %q", stderr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("second run: %v; %q", err, out.String())
	}
	if !strings.Contains(out.String(), "resuming "+dst) {
		t.Errorf("second run does not say it resumes: %q", out.String())
	}
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("contents differ")
	}
}

// TestCpInterruptedUploadNote interrupts a stream-mode upload (SIGINT)
// while the server stalls: ferry exits promptly and says what it left on
// the server and how to remove it.
func TestCpInterruptedUploadNote(t *testing.T) {
	bin := buildFerry(t)
	s := startFerrySrv(t)
	local := t.TempDir()
	src := filepath.Join(local, "up")
	if err := os.WriteFile(src, seededData(16<<20, 9), 0o644); err != nil {
		t.Fatal(err)
	}
	s.hang.Store(true)
	p := startBin(t, bin, binEnv(local), "cp", src, s.url+"/up")
	// (Under its name, or a temporary one the server renames.)
	p.waitUntil(t, "bytes on the server", func() bool { return anyBytes(s.dir) })
	took, code := p.stop(t, os.Interrupt)
	stderr := p.stderr.String()
	if code != 1 {
		t.Errorf("exit status %d after Ctrl-C, want 1", code)
	}
	if took > 1900*time.Millisecond {
		t.Errorf("ferry took %v to exit after Ctrl-C", took)
	}
	for _, want := range []string{"partial " + s.url + "/up", "bytes sent", "ferry rm " + s.url + "/up"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("no %q in what ferry said after Ctrl-C: %q", want, stderr)
		}
	}
}

// TestCpStdoutClosedPipe: ferry cp URL - | head -c 10 ends quietly with
// status 0 when head goes away, as cat does.
func TestCpStdoutClosedPipe(t *testing.T) {
	bin := buildFerry(t)
	s := startFerrySrv(t)
	writeServed(t, filepath.Join(s.dir, "big"), seededData(32<<20, 10))
	local := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "cp", s.url+"/big", "-")
	cmd.Env = binEnv(local)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	out.Close()
	err = cmd.Wait()
	if err != nil || stderr.Len() > 0 {
		t.Errorf("after its reader went away: %v, stderr %q; want status 0 and nothing said", err, stderr.String())
	}
}
