package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pty is the master side of a pseudo-terminal whose output is collected.
type pty struct {
	master, slave *os.File
	mu            sync.Mutex
	out           bytes.Buffer // guarded by mu
	wg            sync.WaitGroup
}

// openPTY opens a pseudo-terminal of 100x24 through /dev/ptmx.
func openPTY(t *testing.T) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	mfd := fileFd(m)
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(fileFd(s), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatal(err)
	}
	p := &pty{master: m, slave: s}
	p.wg.Go(func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	t.Cleanup(func() {
		s.Close()
		m.Close()
		p.wg.Wait()
	})
	return p
}

func (p *pty) send(t *testing.T, keys string) {
	t.Helper()
	if _, err := p.master.WriteString(keys); err != nil {
		t.Fatal(err)
	}
}

func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until cond holds, for at most 15 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expect waits for text in the output after mark and returns the new mark.
func (p *pty) expect(t *testing.T, mark int, text string) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out := p.output()
		if i := strings.Index(out[mark:], text); i >= 0 {
			return mark + i + len(text)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q; output after the mark:\n%q", text, out[mark:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fileIs waits until name holds want.
func fileIs(t *testing.T, name string, want []byte) {
	t.Helper()
	waitFor(t, name, func() bool {
		b, err := os.ReadFile(name)
		return err == nil && bytes.Equal(b, want)
	})
}

// runShellPTY runs ferry shell on a new pseudo-terminal; done is closed
// with *code set when it ends.
func runShellPTY(t *testing.T, args ...string) (p *pty, done <-chan struct{}, code *int) {
	t.Helper()
	p = openPTY(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	ch := make(chan struct{})
	code = new(int)
	go func() {
		defer close(ch)
		defer cancel()
		*code = runMain(ctx, &env{stdin: p.slave, stdout: p.slave, stderr: p.slave}, append([]string{"shell"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		// A shell waiting for keys ends when the terminal goes away
		// (a failed test left it at its prompt).
		p.master.Close()
		<-ch
	})
	return p, ch, code
}

// TestShellPTY drives ferry shell through a pseudo-terminal against
// Ferry's server: completion of remote and local names (with spaces),
// ambiguous completion, get and put, mget's live display, errors that
// keep the shell alive, history.
func TestShellPTY(t *testing.T) {
	srv := startFerrySrv(t)
	report := randomData(t, 100_000)
	alpha := []byte("alpha\n")
	if err := os.WriteFile(filepath.Join(srv.dir, "report 2024.txt"), report, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(srv.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"alpha.txt": alpha, "another.txt": nil} {
		if err := os.WriteFile(filepath.Join(srv.dir, "sub", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	local := t.TempDir()
	upload := randomData(t, 70_000)
	if err := os.WriteFile(filepath.Join(local, "upload me.dat"), upload, 0o644); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(t.TempDir(), "history")

	p, done, code := runShellPTY(t, "-history", hist, srv.url+"/")
	mark := p.expect(t, 0, "ferry 127.0.0.1:/> ")
	p.send(t, "lcd "+escapeWord(local)+"\r")
	mark = p.expect(t, mark, "local directory: "+local)

	// A remote name with a space, completed uniquely.
	p.send(t, "get rep\t")
	mark = p.expect(t, mark, `get report\ 2024.txt `)
	p.send(t, "\r")
	fileIs(t, filepath.Join(local, "report 2024.txt"), report)

	// Ambiguous: Tab lists the candidates, more letters and Tab finish.
	p.send(t, "get sub/a\t")
	mark = p.expect(t, mark, "alpha.txt    another.txt")
	p.send(t, "l\t")
	mark = p.expect(t, mark, "get sub/alpha.txt ")
	p.send(t, "\r")
	fileIs(t, filepath.Join(local, "alpha.txt"), alpha)

	// A local name with a space, and a directory completed with '/'.
	p.send(t, "put upl\t")
	mark = p.expect(t, mark, `put upload\ me.dat `)
	p.send(t, "su\t")
	mark = p.expect(t, mark, `put upload\ me.dat sub/`)
	p.send(t, "\r")
	fileIs(t, filepath.Join(srv.dir, "sub", "upload me.dat"), upload)
	// The upload dropped the cached listing: the new file completes.
	p.send(t, "ls sub/u\t")
	mark = p.expect(t, mark, `ls sub/upload\ me.dat `)
	p.send(t, "\r")

	// mget runs through the job runner with one live display for all
	// files: the files-done line, then the summary.
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(srv.dir, fmt.Sprintf("big%d.bin", i)), make([]byte, 12<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv.slow.Store(true)
	p.send(t, "mget -cc 2 big*\r")
	mark = p.expect(t, mark, "/3 files] ")
	mark = p.expect(t, mark, " / 12.0 MiB  ")
	mark = p.expect(t, mark, "3 files, 37748736 bytes in ")
	srv.slow.Store(false)
	for i := range 3 {
		if fi, err := os.Stat(filepath.Join(local, fmt.Sprintf("big%d.bin", i))); err != nil || fi.Size() != 12<<20 {
			t.Errorf("big%d.bin: %v", i, err)
		}
	}

	// Errors print the server's reply and the shell goes on.
	p.send(t, "get nothing.here\r")
	mark = p.expect(t, mark, "get: 550 ")
	p.send(t, "quote SITE NOSUCHTHING\r")
	mark = p.expect(t, mark, "quote: 5")
	p.send(t, "frobnicate\r")
	mark = p.expect(t, mark, `unknown command "frobnicate"`)
	p.send(t, "cd su\t\r")
	p.send(t, "pwd\r")
	mark = p.expect(t, mark, "\n/sub\r\n")

	// Ctrl-C abandons a line (not kept in the history); Up recalls the
	// last command.
	p.send(t, "garbage\x03")
	mark = p.expect(t, mark, "garbage^C\r")
	p.send(t, "\x1b[A")
	mark = p.expect(t, mark, "ferry 127.0.0.1:/sub> pwd")
	p.send(t, "\r")
	mark = p.expect(t, mark, "/sub\r\n")
	// At an empty prompt Ctrl-C gives a new prompt.
	p.send(t, "\x03")
	mark = p.expect(t, mark, "ferry 127.0.0.1:/sub> ^C\r")
	mark = p.expect(t, mark, "ferry 127.0.0.1:/sub> ")
	// A pasted line (bracketed) runs as typed.
	p.send(t, "\x1b[200~lpwd\r\x1b[201~")
	mark = p.expect(t, mark, "\n"+local+"\r\n")

	// Ctrl-D leaves and the history is saved.
	p.send(t, "\x04")
	select {
	case <-done:
		if *code != 0 {
			t.Errorf("exit %d; output:\n%s", *code, p.output())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the shell did not end on Ctrl-D; output:\n%s", p.output())
	}
	h, err := os.ReadFile(hist)
	if err != nil || !strings.Contains(string(h), "get report\\ 2024.txt \n") || !strings.Contains(string(h), "pwd\n") ||
		strings.Contains(string(h), "garbage") {
		t.Errorf("history file %q, %v", h, err)
	}
	// Bracketed paste is switched on for the prompt and off at the end.
	if out := p.output(); !strings.Contains(out, "\x1b[?2004h") || !strings.HasSuffix(out, "\x1b[?2004l") {
		t.Errorf("bracketed paste mode not switched on and off: %q", out[max(len(out)-200, 0):])
	}
}

// TestShellPTYGCT drives ferry shell through a pseudo-terminal against
// GCT's server: Tab completes a remote file name with a space and a
// remote directory (also for cd), and the completed get and put copy.
func TestShellPTYGCT(t *testing.T) {
	srv := startGCT(t)
	report := randomData(t, 80_000)
	inner := []byte("inner\n")
	writeServed(t, filepath.Join(srv.dir, "gct report.txt"), report)
	mkdirServed(t, filepath.Join(srv.dir, "subdir"))
	writeServed(t, filepath.Join(srv.dir, "subdir", "inner.dat"), inner)
	local := t.TempDir()
	upload := randomData(t, 60_000)
	if err := os.WriteFile(filepath.Join(local, "upload.dat"), upload, 0o644); err != nil {
		t.Fatal(err)
	}

	p, done, code := runShellPTY(t, "-history", "none", srv.url)
	mark := p.expect(t, 0, "ferry 127.0.0.1:"+srv.dir+"> ")
	p.send(t, "lcd "+escapeWord(local)+"\r")
	mark = p.expect(t, mark, "local directory: "+local)

	// A remote file name with a space.
	p.send(t, "get gct\t")
	mark = p.expect(t, mark, `get gct\ report.txt `)
	p.send(t, "\r")
	fileIs(t, filepath.Join(local, "gct report.txt"), report)
	mark = p.expect(t, mark, "gct report.txt: 80000 bytes in ")

	// A remote directory gets its '/', then the file in it.
	p.send(t, "get subd\t")
	mark = p.expect(t, mark, "get subdir/")
	p.send(t, "in\t")
	mark = p.expect(t, mark, "get subdir/inner.dat ")
	p.send(t, "\r")
	fileIs(t, filepath.Join(local, "inner.dat"), inner)

	// A local name, then the remote directory as the destination.
	p.send(t, "put upl\t")
	mark = p.expect(t, mark, "put upload.dat ")
	p.send(t, "sub\t")
	mark = p.expect(t, mark, "put upload.dat subdir/")
	p.send(t, "\r")
	fileIs(t, filepath.Join(srv.dir, "subdir", "upload.dat"), upload)

	// cd completes directories only.
	p.send(t, "cd s\t")
	mark = p.expect(t, mark, "cd subdir/")
	p.send(t, "\r")
	mark = p.expect(t, mark, srv.dir[len(srv.dir)-8:]+"/subdir> ")
	// The upload dropped the cached listing: the new file completes.
	p.send(t, "ls up\t")
	mark = p.expect(t, mark, "ls upload.dat ")
	p.send(t, "\r")
	mark = p.expect(t, mark, "upload.dat\r\n")

	p.send(t, "\x04")
	select {
	case <-done:
		if *code != 0 {
			t.Errorf("exit %d; output:\n%s", *code, p.output())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the shell did not end on Ctrl-D; output:\n%s", p.output()[mark:])
	}
}

// TestShellScriptGCT runs commands from standard input (not a terminal)
// against GCT's server: ls, get, put, mget, mput, mkdir, mv, rm, cksum,
// and a failing command that makes the exit status 1.
func TestShellScriptGCT(t *testing.T) {
	s := startGCT(t)
	a := randomData(t, 300_000)
	writeServed(t, filepath.Join(s.dir, "a.bin"), a)
	writeServed(t, filepath.Join(s.dir, "b one.txt"), []byte("b\n"))
	writeServed(t, filepath.Join(s.dir, "c.log"), []byte("c\n"))
	local := t.TempDir()
	up := randomData(t, 200_000)
	if err := os.WriteFile(filepath.Join(local, "up.dat"), up, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "m1.txt"), []byte("m1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "m2.txt"), []byte("m2"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"# a comment",
		"lcd " + local,
		"ls",
		"get a.bin",
		"get 'b one.txt' b-copy.txt",
		"put up.dat",
		"mkdir -p new/deeper",
		"mput m*.txt",
		"mv up.dat new/up2.dat",
		"ls -l new",
		"cksum -a adler32 a.bin",
		"get does-not-exist",
		"pwd",
		"mget *.log",
		"rm m*.txt",
		"ls",
	}, "\n") + "\n"
	r := ferry(t, []byte(script), "shell", s.url)
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (one command failed); stderr:\n%s", r.code, r.stderr)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(local, "a.bin")), a) ||
		string(mustRead(t, filepath.Join(local, "b-copy.txt"))) != "b\n" ||
		string(mustRead(t, filepath.Join(local, "c.log"))) != "c\n" ||
		!bytes.Equal(mustRead(t, filepath.Join(s.dir, "new", "up2.dat")), up) {
		t.Error("a transferred file differs")
	}
	if _, err := os.Stat(filepath.Join(s.dir, "m1.txt")); !os.IsNotExist(err) {
		t.Errorf("rm m*.txt left m1.txt: %v", err)
	}
	if !strings.Contains(r.stderr, "get: 550 ") || !strings.Contains(r.stderr, "1 command failed") {
		t.Errorf("stderr %q", r.stderr)
	}
	// The first ls, the ls -l of new/, the checksum, pwd, and the last ls.
	want := "a.bin\nb one.txt\nc.log\n"
	if !strings.HasPrefix(r.stdout, "local directory: "+local+"\n"+want) {
		t.Errorf("stdout starts %q", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^dir +\d+ [-0-9: ]+ deeper/\nfile +200000 [-0-9: ]+ up2\.dat\n`).MatchString(r.stdout) {
		t.Errorf("ls -l new: %q", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^[0-9a-f]{8}  a\.bin\n` + regexp.QuoteMeta(s.dir) + "\n").MatchString(r.stdout) {
		t.Errorf("cksum, pwd: %q", r.stdout)
	}
	if !strings.HasSuffix(r.stdout, want+"new/\n") {
		t.Errorf("last ls: %q", r.stdout)
	}
	assertNoTemp(t, local)
}

// TestShellScriptFerry covers recursive get and put, -e and the exit
// status against Ferry's server.
func TestShellScriptFerry(t *testing.T) {
	srv := startFerrySrv(t)
	local := t.TempDir()
	tree := filepath.Join(local, "tree")
	files := map[string][]byte{
		"top.txt":          []byte("top"),
		"d1/one.bin":       randomData(t, 50_000),
		"d1/d2/two words":  []byte("two"),
		"d1/d2/three.data": nil,
	}
	for name, data := range files {
		p := filepath.Join(tree, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := "lcd " + local + "\nput -r tree up\nget -r up back\nls up/d1\n"
	r := ferry(t, []byte(script), "shell", srv.url)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr %s", r.code, r.stderr)
	}
	for name, data := range files {
		for _, p := range []string{filepath.Join(srv.dir, "up", name), filepath.Join(local, "back", name)} {
			if got := mustRead(t, p); !bytes.Equal(got, data) {
				t.Errorf("%s differs", p)
			}
		}
	}
	if !strings.Contains(r.stdout, "4 files, 50006 bytes\n4 files, 50006 bytes\nd2/\none.bin\n") {
		t.Errorf("stdout %q", r.stdout)
	}
	// -e stops at the first failure.
	r = ferry(t, []byte("rm nothing\nmkdir made\n"), "shell", "-e", srv.url)
	if r.code != 1 {
		t.Errorf("-e: exit %d", r.code)
	}
	if _, err := os.Stat(filepath.Join(srv.dir, "made")); !os.IsNotExist(err) {
		t.Errorf("-e ran the command after the failure")
	}
	// No URL: commands need open first.
	r = ferry(t, []byte("ls\nopen "+srv.url+"\nls /\nclose\nquit\nls\n"), "shell")
	if r.code != 1 || !strings.Contains(r.stderr, "ls: not connected; use open URL") || !strings.Contains(r.stdout, "up/") {
		t.Errorf("open/close: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if r := ferry(t, nil, "shell", "/local"); r.code != 2 {
		t.Errorf("shell /local: exit %d", r.code)
	}
}

// TestProgressLivePTY runs ferry cp -vb -p 4 with standard error on a
// pseudo-terminal: the live display shows every data connection of an
// upload (globus-url-copy -vb stays silent when pushing with parallel
// streams) and of a download.
func TestProgressLivePTY(t *testing.T) {
	srv := startFerrySrv(t)
	local := t.TempDir()
	data := randomData(t, 8<<20)
	src := filepath.Join(local, "big.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"up", "down"} {
		p := openPTY(t)
		args := []string{"cp", "-vb", "-p", "4", src, srv.url + "/big.bin"}
		if dir == "down" {
			args = []string{"cp", "-vb", "-p", "4", srv.url + "/big.bin", filepath.Join(local, "back.bin")}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		code := runMain(ctx, &env{stdin: bytes.NewReader(nil), stdout: p.slave, stderr: p.slave}, args)
		cancel()
		if code != 0 {
			t.Fatalf("%s: exit %d", dir, code)
		}
		// The last frame: the file's total and four streams adding up.
		mark := p.expect(t, 0, "8.00 MiB")
		for i := range 4 {
			mark = p.expect(t, mark, fmt.Sprintf("stream %2d  ", i))
		}
		out := p.output()
		if strings.Contains(out, "stream  4") || !strings.Contains(out, "\x1b[K\r") || strings.Contains(out, " 0 B/s  transfer") {
			t.Errorf("%s: output %q", dir, out)
		}
	}
	if !bytes.Equal(mustRead(t, filepath.Join(local, "back.bin")), data) {
		t.Error("the download differs")
	}
}

// TestShellInterruptPTY stops a slow download, and a slow mget, with
// Ctrl-C: the shell stays, leaves no partial file, and reconnects for the
// next command.
func TestShellInterruptPTY(t *testing.T) {
	srv := startFerrySrv(t)
	if err := os.WriteFile(filepath.Join(srv.dir, "slow.bin"), make([]byte, 64<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.slow.Store(true)
	local := t.TempDir()
	p, done, code := runShellPTY(t, "-history", "none", "-vb", srv.url+"/")
	mark := p.expect(t, 0, "ferry 127.0.0.1:/> ")
	p.send(t, "lcd "+escapeWord(local)+"\r")
	mark = p.expect(t, mark, "local directory: ")
	p.send(t, "get slow.bin\r")
	// The live display shows the download's data connection.
	mark = p.expect(t, mark, "stream  0")
	p.send(t, "\x03")
	mark = p.expect(t, mark, "get: interrupted")
	srv.slow.Store(false)
	assertNoTemp(t, local)
	if _, err := os.Stat(filepath.Join(local, "slow.bin")); !os.IsNotExist(err) {
		t.Errorf("partial download left: %v", err)
	}
	// The same through the job runner (mget): one Ctrl-C stops it all.
	srv.slow.Store(true)
	p.send(t, "mget slow.bin\r")
	mark = p.expect(t, mark, "[0/1 files]")
	p.send(t, "\x03")
	mark = p.expect(t, mark, "mget: interrupted")
	srv.slow.Store(false)
	assertNoTemp(t, local)
	if _, err := os.Stat(filepath.Join(local, "slow.bin")); !os.IsNotExist(err) {
		t.Errorf("partial mget left: %v", err)
	}
	p.send(t, "ls\r")
	mark = p.expect(t, mark, "slow.bin\r\n")
	p.send(t, "quit\r")
	select {
	case <-done:
		if *code != 0 {
			t.Errorf("exit %d", *code)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no exit; output %q", p.output()[mark:])
	}
}

// TestShellJobs runs the many-file commands through the job runner
// against both servers: wildcards in directory names, -cd, -cc, a tree
// into missing parents, and per-file failures that leave the other files
// copied and make the command's error count them.
func TestShellJobs(t *testing.T) {
	for _, srvName := range []string{"ferry", "gct"} {
		t.Run(srvName, func(t *testing.T) {
			var dir, url, remoteDir string // remoteDir: dir as the server names it
			if srvName == "gct" {
				s := startGCT(t)
				dir, url, remoteDir = s.dir, s.url, s.dir
			} else {
				s := startFerrySrv(t)
				dir, url = s.dir, s.url+"/"
			}
			remote := map[string][]byte{
				"a.txt": []byte("a"), "b.txt": []byte("bb"), "c.txt": randomData(t, 40_000),
				"d1/one.bin": randomData(t, 30_000), "d2/two.bin": []byte("two"), "d2/skip.log": []byte("no"),
			}
			for _, d := range []string{"d1", "d2", "up2.dat"} {
				mkdirServed(t, filepath.Join(dir, d))
			}
			for name, data := range remote {
				writeServed(t, filepath.Join(dir, filepath.FromSlash(name)), data)
			}
			local := t.TempDir()
			// A local directory where b.txt would land: its download fails.
			if err := os.MkdirAll(filepath.Join(local, "b.txt", "keep"), 0o755); err != nil {
				t.Fatal(err)
			}
			tree := map[string][]byte{"tree/top": []byte("top"), "tree/in/deep": randomData(t, 20_000)}
			for name, data := range map[string][]byte{"up1.dat": []byte("u1"), "up2.dat": []byte("u2"), "tree/top": tree["tree/top"], "tree/in/deep": tree["tree/in/deep"]} {
				p := filepath.Join(local, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			script := strings.Join([]string{
				"lcd " + local,
				"mget -cc 2 *.txt",
				"mput up*.dat",
				"get -cd 'd*/*.bin' out/deep/",
				"put -r -cc 3 tree a/b/c",
				"get nothing*",
			}, "\n") + "\n"
			r := ferry(t, []byte(script), "shell", url)
			if r.code != 1 || !strings.Contains(r.stderr, "3 commands failed") {
				t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			for _, want := range []string{"\nline 2: mget b.txt: ", "\nline 2: mget: 1 of 3 failed\n", "\nline 3: mput up2.dat: ", "\nline 3: mput: 1 of 2 failed\n", "line 6: get: " + remoteDir + "/nothing*: no match\n"} {
				if !strings.Contains("\n"+r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			for _, want := range []string{"2 files, 40001 bytes, 1 failed\n", "1 file, 2 bytes, 1 failed\n", "2 files, 30003 bytes\n", "2 files, 20003 bytes\n"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			checks := map[string][]byte{
				filepath.Join(local, "a.txt"):                   remote["a.txt"],
				filepath.Join(local, "c.txt"):                   remote["c.txt"],
				filepath.Join(local, "out", "deep", "one.bin"):  remote["d1/one.bin"],
				filepath.Join(local, "out", "deep", "two.bin"):  remote["d2/two.bin"],
				filepath.Join(dir, "up1.dat"):                   []byte("u1"),
				filepath.Join(dir, "a", "b", "c", "top"):        tree["tree/top"],
				filepath.Join(dir, "a", "b", "c", "in", "deep"): tree["tree/in/deep"],
			}
			for p, want := range checks {
				if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes, %v; want %d bytes", p, len(got), err, len(want))
				}
			}
			if fi, err := os.Stat(filepath.Join(local, "b.txt", "keep")); err != nil || !fi.IsDir() {
				t.Errorf("the failed download touched b.txt/: %v", err)
			}
			assertNoTemp(t, local)
		})
	}
}
