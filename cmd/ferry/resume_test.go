package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/server"
	"github.com/ferrygrid/ferry/transfer"
)

// ferrySrv is Ferry's server in-process, serving dir; slow throttles its
// reads while set.
type ferrySrv struct {
	dir, url string
	slow     atomic.Bool
	// hang, while set, makes reads past the first MiB of a file wait
	// until the test ends: the server starts the file and then sends
	// nothing.
	hang    atomic.Bool
	release chan struct{}
}

// slowFS makes reads slow while on is set, so that a transfer lasts long
// enough to be killed in the middle. It hides the zero-copy path.
type slowFS struct {
	dsi.Storage
	on *atomic.Bool
	f  *ferrySrv
}

func (s slowFS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := s.Storage.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return slowReader{r, s.on, s.f}, nil
}

type slowReader struct {
	dsi.Reader
	on *atomic.Bool
	f  *ferrySrv
}

// slowRate is the throttled read rate of one reader in bytes per second:
// with -p 4, a 128 MiB download lasts about 4 s, several of the resume
// state's 1 s saves.
const slowRate = 8 << 20

func (r slowReader) ReadAt(p []byte, off int64) (int, error) {
	if r.on.Load() {
		time.Sleep(time.Duration(len(p)) * time.Second / slowRate)
	}
	if r.f.hang.Load() && off+int64(len(p)) > 1<<20 {
		<-r.f.release
	}
	return r.Reader.ReadAt(p, off)
}

func startFerrySrv(t *testing.T) *ferrySrv { return startFerrySrvLog(t, nil) }

// startFerrySrvLog is startFerrySrv with the server's log going to log.
func startFerrySrvLog(t *testing.T, log *slog.Logger) *ferrySrv {
	t.Helper()
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	f := &ferrySrv{dir: t.TempDir(), release: make(chan struct{})}
	fs, err := posix.New(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Storage: slowFS{fs, &f.slow, f}, Anonymous: true, AnonymousWrite: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(l) })
	t.Cleanup(func() {
		close(f.release)
		srv.Close()
		wg.Wait()
	})
	f.url = "ftp://" + l.Addr().String()
	return f
}

func seededData(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// lastBytes returns the byte count of the last -vb report in stderr.
func lastBytes(t *testing.T, stderr string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*(\d+) bytes .* MB/sec inst`).FindAllStringSubmatch(stderr, -1)
	if len(m) == 0 {
		t.Fatalf("no progress report in %q", stderr)
	}
	n, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64)
	return n
}

// TestCpModeE copies with -p 4 both ways against GCT and Ferry's server,
// with the buffer, block size, progress and checksum flags.
func TestCpModeE(t *testing.T) {
	data := randomData(t, 6<<20+7)
	run := func(t *testing.T, dir, url string) {
		local := t.TempDir()
		src := filepath.Join(local, "src")
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_STATE_HOME", filepath.Join(local, "state"))
		r := ok(t, "cp", "-p", "4", "-tcp-bs", "1M", "-bs", "256K", "-vb", "-verify-checksum", "-checksum-alg", "adler32", src, url+"/up")
		if !bytes.Equal(mustRead(t, filepath.Join(dir, "up")), data) {
			t.Fatal("upload differs")
		}
		for _, want := range []string{"stream  0:", "stream  3:"} {
			if !strings.Contains(r.stderr, want) {
				t.Fatalf("upload -vb shows no %q: %q", want, r.stderr)
			}
		}
		if n := lastBytes(t, r.stderr); n != int64(len(data)) {
			t.Fatalf("upload -vb: %d bytes, want %d", n, len(data))
		}
		if entries, _ := os.ReadDir(filepath.Join(local, "state", "ferry", "resume")); len(entries) != 0 {
			t.Fatalf("upload state left behind: %v", entries)
		}
		dst := filepath.Join(local, "dst")
		r = ok(t, "cp", "-p", "4", "-vb", "-verify-checksum", url+"/up", dst)
		if !bytes.Equal(mustRead(t, dst), data) {
			t.Fatal("download differs")
		}
		if !strings.Contains(r.stderr, "stream  0:") || lastBytes(t, r.stderr) != int64(len(data)) {
			t.Fatalf("download -vb: %q", r.stderr)
		}
		if _, err := os.Stat(dst + transfer.RangesSuffix); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("ranges file left behind: %v", err)
		}
		// ERET with -p: the bytes land at the same offset.
		part := filepath.Join(local, "part")
		ok(t, "cp", "-p", "3", "-off", "1000", "-len", "5000", url+"/up", part)
		if got := mustRead(t, part); len(got) != 6000 || !bytes.Equal(got[1000:], data[1000:6000]) {
			t.Fatalf("partial MODE E download: %d bytes", len(got))
		}
		// -fast and -rst are accepted for a single file.
		ok(t, "cp", "-p", "2", "-fast", "-rst", "-rst-retries", "2", "-rst-interval", "10ms", "-stall-timeout", "30s", url+"/up", filepath.Join(local, "fast"))
		if !bytes.Equal(mustRead(t, filepath.Join(local, "fast")), data) {
			t.Fatal("-fast download differs")
		}
		// A missing source leaves no file behind.
		missing := filepath.Join(local, "missing")
		if r := ferry(t, nil, "cp", "-p", "4", url+"/nothing-here", missing); r.code != 1 {
			t.Fatalf("missing source: exit %d, %q", r.code, r.stderr)
		}
		for _, n := range []string{missing, missing + transfer.RangesSuffix} {
			if _, err := os.Stat(n); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s left behind: %v", n, err)
			}
		}
	}
	t.Run("gct", func(t *testing.T) {
		s := startGCT(t)
		run(t, s.dir, s.url)
	})
	t.Run("ferry", func(t *testing.T) {
		s := startFerrySrv(t)
		run(t, s.dir, s.url)
	})
}

// TestCpResumesFromState checks that a download and an upload continue
// from the ranges recorded by an earlier, interrupted run, and that state
// for another version of the source is ignored.
func TestCpResumesFromState(t *testing.T) {
	s := startFerrySrv(t)
	local := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(local, "state"))
	const size = 4 << 20
	data := seededData(size, 3)
	served := filepath.Join(s.dir, "f")
	if err := os.WriteFile(served, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(served)
	var half client.RangeSet
	half.Add(client.Range{Start: 0, End: size / 2})

	// Download: the first half is already in the destination.
	dst := filepath.Join(local, "dst")
	partial := make([]byte, size)
	copy(partial, data[:size/2])
	if err := os.WriteFile(dst, partial, 0o644); err != nil {
		t.Fatal(err)
	}
	url := s.url + "/f"
	st := transfer.ResumeState{Source: url, Dest: dst, Size: size, MTime: fi.ModTime().Truncate(time.Second).UnixNano(), Length: -1, Ranges: half}
	if err := transfer.WriteResumeState(dst+transfer.RangesSuffix, st); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "cp", "-p", "4", "-vb", url, dst)
	if n := lastBytes(t, r.stderr); n != size/2 {
		t.Fatalf("resumed download moved %d bytes, want %d", n, size/2)
	}
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("resumed download differs")
	}
	if _, err := os.Stat(dst + transfer.RangesSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("ranges file left behind")
	}

	// The same with state for another version of the source: ignored.
	if err := os.WriteFile(dst, partial, 0o644); err != nil {
		t.Fatal(err)
	}
	st.Size++
	if err := transfer.WriteResumeState(dst+transfer.RangesSuffix, st); err != nil {
		t.Fatal(err)
	}
	r = ok(t, "cp", "-p", "4", "-vb", url, dst)
	if n := lastBytes(t, r.stderr); n != size {
		t.Fatalf("download with stale state moved %d bytes, want %d", n, size)
	}
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("download with stale state differs")
	}

	// Upload: the server's file has the first half, the state says so.
	src := filepath.Join(local, "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "up"), partial, 0o644); err != nil {
		t.Fatal(err)
	}
	sfi, _ := os.Stat(src)
	upURL := s.url + "/up"
	name, err := transfer.UploadStatePath(os.Getenv, src, upURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := transfer.WriteResumeState(name, transfer.ResumeState{Source: src, Dest: upURL, Size: size, MTime: sfi.ModTime().UnixNano(), Length: -1, Ranges: half}); err != nil {
		t.Fatal(err)
	}
	r = ok(t, "cp", "-p", "4", "-vb", src, upURL)
	if n := lastBytes(t, r.stderr); n != size/2 {
		t.Fatalf("resumed upload moved %d bytes, want %d", n, size/2)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "up")), data) {
		t.Fatal("resumed upload differs")
	}
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("upload state left behind")
	}
}

// TestCpKilledResumes kills ferry cp -p 4 with SIGKILL in the middle of a
// download and runs the same command again: it resumes from the ranges
// file and leaves a complete file and no ranges file.
func TestCpKilledResumes(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s := startFerrySrv(t)
	const size = 128 << 20
	data := seededData(size, 4)
	if err := os.WriteFile(filepath.Join(s.dir, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	dst := filepath.Join(local, "big")
	args := []string{"cp", "-p", "4", "-vb", s.url + "/big", dst}
	env := append(os.Environ(), "NETRC="+filepath.Join(local, "no-netrc"), "XDG_STATE_HOME="+filepath.Join(local, "state"))

	s.slow.Store(true)
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Kill it once the ranges file records a good part of the file.
	var stored int64
	deadline := time.Now().Add(60 * time.Second)
	for stored < size/8 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("ranges file never reached %d bytes (%d); stderr %q", size/8, stored, stderr.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("ferry cp exited early: %v; %q", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if st, err := transfer.ReadResumeState(dst + transfer.RangesSuffix); err == nil {
			stored = st.Ranges.Total()
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	if stored >= size {
		t.Fatal("the download finished before the kill")
	}
	s.slow.Store(false)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	stderr.Reset()
	cmd.Stderr = &stderr
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		t.Fatalf("second run: %v; %q", err, stderr.String())
	}
	if n := lastBytes(t, stderr.String()); n > size-stored {
		t.Fatalf("second run moved %d bytes; %d were stored already", n, stored)
	}
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("contents differ")
	}
	if _, err := os.Stat(dst + transfer.RangesSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ranges file left behind: %v", err)
	}
}
