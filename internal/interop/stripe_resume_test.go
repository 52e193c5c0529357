package interop

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wan"
)

// labProc is a process running on a host of a wan.Lab.
type labProc struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	addr string // from its first line
}

// startLabProc runs program on host i and waits for its first line to
// match first (whose group 1 is the address it listens on). It is killed
// when the test ends.
func startLabProc(t *testing.T, lab *wan.Lab, host int, first *regexp.Regexp, program string, args ...string) *labProc {
	t.Helper()
	cmd := lab.Command(context.Background(), host, program, args...)
	out := &lineWatcher{first: make(chan string, 1)}
	p := &labProc{name: filepath.Base(program) + " " + args[0], cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if l := p.log.String(); strings.Contains(l, "panic") || strings.Contains(l, "DATA RACE") {
			t.Errorf("%s log shows a panic or race:\n%s", p.name, l)
		}
		if t.Failed() {
			t.Logf("%s (%s) log:\n%s", p.name, p.addr, p.log)
		}
	})
	select {
	case line := <-out.first:
		m := first.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: first line %q", p.name, line)
		}
		p.addr = m[1]
	case <-p.done:
		t.Fatalf("%s exited early:\n%s", p.name, p.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start within 30s", p.name)
	}
	return p
}

func (p *labProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *labProc) stop() {
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

var serverListening = regexp.MustCompile(`^Server listening at (\S+)\n`)

// labStriped is a striped Ferry on a lab: the frontend on host 0 (with
// the clients), mover k on host k+1, all serving root.
type labStriped struct {
	lab      *wan.Lab
	root     string
	secret   string
	movers   []*labProc
	frontend *labProc
}

func (s *labStriped) startMover(t *testing.T, k int, listen string) {
	s.movers[k] = startLabProc(t, s.lab, k+1, moverListening, ferryBin, "mover", "-listen", listen, "-root", s.root,
		"-secret", s.secret, "-heartbeat", "100ms", "-timeout", "2s")
}

func (s *labStriped) startFrontend(t *testing.T, listen string) {
	var addrs []string
	for _, m := range s.movers {
		addrs = append(addrs, m.addr)
	}
	s.frontend = startLabProc(t, s.lab, 0, serverListening, ferryBin, "serve", "-listen", listen, "-root", s.root,
		"-anonymous-write", "-allow-foreign-data", "-shutdown-grace", "3s", "-movers", strings.Join(addrs, ","),
		"-mover-secret", s.secret, "-mover-heartbeat", "100ms", "-mover-timeout", "2s")
}

func (s *labStriped) url(p string) string { return "ftp://" + s.frontend.addr + p }

// waitUp waits until the frontend reports every mover up (SITE STRIPES,
// asked from host 0).
func (s *labStriped) waitUp(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var text string
	for time.Now().Before(deadline) {
		var conn net.Conn
		s.lab.Do(0, func() (err error) {
			conn, err = net.DialTimeout("tcp", s.frontend.addr, 5*time.Second)
			return err
		})
		if conn != nil {
			c := &ctl{t: t, conn: conn, r: bufio.NewReader(conn)}
			if code, _, _ := c.reply(); code == 220 {
				c.login()
				_, text = c.cmd("SITE STRIPES")
				c.cmd("QUIT")
			}
			conn.Close()
			if strings.Count(text, " up since") == len(s.movers) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("movers not up within 20s: %q", text)
}

// runOnHost0 starts program on host 0, where the clients are.
func (s *labStriped) runOnHost0(program string, args ...string) (*exec.Cmd, *syncBuffer) {
	cmd := s.lab.Command(context.Background(), 0, program, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd, out
}

// TestStripedResumeCommandLine: ferry cp -rst downloads from and uploads
// to a striped Ferry while a mover is SIGKILLed in the middle and started
// again on its address, and while the frontend process is SIGKILLed and
// started again on its address; every copy ends with identical contents.
// The frontend with the client and each mover sit on their own host of a
// lab whose links are limited to 100 Mbit/s, so the transfers last long
// enough to be interrupted.
//
// globus-url-copy -rst is not here: when a mover dies the frontend
// answers the transfer with 426 (the session lives on), and
// globus-url-copy -rst -rst-retries 40 then exits with that error without
// a second attempt (the server logs no further login). It does the same
// against a striped GCT server (globus-gridftp-server -r, two -dn data
// nodes, on the same kind of lab) whose data node is SIGKILLed during a
// download: GCT answers "500 Command failed. : IPC failed while
// attempting to perform request" and globus-url-copy -rst exits with it
// after 7 MB of 20. Its restart plugin restarts after lost connections,
// not after error replies.
func TestStripedResumeCommandLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab, err := wan.StartLab(ctx, wan.LabConfig{Hosts: 3, Rate: 100e6, Name: "ferryitest"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	root := t.TempDir()
	os.Chmod(root, 0o755)
	s := &labStriped{lab: lab, root: root, secret: secretFile(t), movers: make([]*labProc, 2)}
	for k := range s.movers {
		s.startMover(t, k, fmt.Sprintf("%s:0", lab.Addr(k+1)))
	}
	s.startFrontend(t, lab.Addr(0).String()+":0")
	s.waitUp(t)
	const size = 20<<20 + 5 // ~1.7 s at 100 Mbit/s
	want := writeRandom(t, filepath.Join(root, "src.bin"), size, 21)
	local := t.TempDir()
	localSrc := filepath.Join(local, "src.bin")
	writeRandom(t, localSrc, size, 21)

	parent := t
	rst := []string{"-rst", "-rst-retries", "40", "-rst-interval", "250ms", "-stall-timeout", "30s"}
	for _, tc := range []struct {
		name    string
		fault   string // "mover" or "frontend"
		upload  bool
		program string
		args    func(src, dst string) []string
	}{
		{"ferry-down-mover", "mover", false, ferryBin, func(src, dst string) []string {
			return append(append([]string{"cp", "-q", "-stripe", "-p", "2"}, rst...), src, dst)
		}},
		{"ferry-up-mover", "mover", true, ferryBin, func(src, dst string) []string {
			return append(append([]string{"cp", "-q", "-stripe", "-p", "2"}, rst...), src, dst)
		}},
		{"ferry-down-frontend", "frontend", false, ferryBin, func(src, dst string) []string {
			return append(append([]string{"cp", "-q", "-stripe", "-p", "2"}, rst...), src, dst)
		}},
		{"ferry-up-frontend", "frontend", true, ferryBin, func(src, dst string) []string {
			return append(append([]string{"cp", "-q", "-stripe", "-p", "2"}, rst...), src, dst)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst, file := s.url("/src.bin"), "file://"+filepath.Join(local, tc.name), filepath.Join(local, tc.name)
			if tc.upload {
				src, dst, file = "file://"+localSrc, s.url("/"+tc.name), filepath.Join(root, tc.name)
			}
			if tc.program == ferryBin {
				src, dst = strings.TrimPrefix(src, "file://"), strings.TrimPrefix(dst, "file://")
			}
			program := tc.program
			if program != ferryBin {
				program = need(t, program)
			}
			cmd, out := s.runOnHost0(program, tc.args(src, dst)...)
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			finished := false
			defer func() {
				if !finished {
					cmd.Process.Kill()
					<-exited
				}
			}()
			// Interrupt once a quarter of the file has arrived.
			var at int64
			for range 600 {
				if n := arrived(file); n >= size/4 {
					at = n
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if at == 0 || at >= size {
				t.Fatalf("the copy did not reach a quarter within 6s (or was complete at once: %d bytes)\n%s", at, out)
			}
			switch tc.fault {
			case "mover":
				m := s.movers[1]
				m.kill()
				time.Sleep(500 * time.Millisecond)
				s.startMover(parent, 1, m.addr) // lives beyond this subtest
			case "frontend":
				s.frontend.kill()
				time.Sleep(500 * time.Millisecond)
				s.startFrontend(parent, s.frontend.addr)
			}
			t.Logf("%s killed after %d bytes, %v", tc.fault, at, time.Since(start).Round(time.Millisecond))
			select {
			case err := <-exited:
				finished = true
				if err != nil {
					t.Fatalf("%s: %v\n%s", tc.name, err, out)
				}
			case <-time.After(90 * time.Second):
				t.Fatalf("%s did not finish within 90s\n%s", tc.name, out)
			}
			sameFile(t, file, want)
			s.waitUp(t)
		})
	}
}

// arrived is how much of a copy to file has been written: the size of
// file, or, while ferry cp still writes a download to its temporary
// .NAME.ferry-* beside it (renamed into place when complete), of that.
func arrived(file string) int64 {
	if fi, err := os.Stat(file); err == nil {
		return fi.Size()
	}
	temps, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".ferry-*"))
	var n int64
	for _, tmp := range temps {
		if fi, err := os.Stat(tmp); err == nil {
			n = max(n, fi.Size())
		}
	}
	return n
}
