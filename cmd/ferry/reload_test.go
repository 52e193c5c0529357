package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ftpclient "github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gatedwriter"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
)

var (
	builtOnce sync.Once
	builtBin  string
	builtErr  error
)

// ferryBinary builds ferry once per test run, in a directory every
// account can read (privsep helpers and the packaged service run it).
func ferryBinary(t *testing.T) string {
	t.Helper()
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("/tmp", "ferry-bin-")
		if err != nil {
			builtErr = err
			return
		}
		os.Chmod(dir, 0o755)
		builtBin = filepath.Join(dir, "ferry")
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		if out, err := exec.Command(goBin, "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			builtErr = err
			builtErr = &buildError{err, string(out)}
		}
	})
	if builtErr != nil {
		t.Fatalf("go build: %v", builtErr)
	}
	return builtBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// lockedBuffer collects a child's log.
type lockedBuffer struct{ syncbuf.Buffer }

// count is how often text occurs in the log.
func (l *lockedBuffer) count(text string) int { return strings.Count(l.String(), text) }

// waitCount waits until text occurs n times in the log.
func (l *lockedBuffer) waitCount(t *testing.T, text string, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); l.count(text) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q (%d times) in the log:\n%s", text, n, l.String())
		}
	}
}

// serveChild runs cmd (a ferry serve) and returns its address once it
// listens; it must exit 0 on SIGTERM at the end of the test.
func serveChild(t *testing.T, cmd *exec.Cmd) (addr string, log *lockedBuffer) {
	t.Helper()
	log = &lockedBuffer{}
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	listening := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		a, _ := strings.CutPrefix(line, "Server listening at ")
		listening <- strings.TrimSpace(a)
		io.Copy(io.Discard, br)
		waited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("ferry serve after SIGTERM: %v\n%s", err, log.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("ferry serve did not stop on SIGTERM")
		}
	})
	select {
	case addr = <-listening:
	case <-time.After(30 * time.Second):
	}
	if addr == "" {
		t.Fatalf("ferry serve did not start:\n%s", log.String())
	}
	return addr, log
}

// TestReloadSIGHUP: a real SIGHUP to a ferry serve process re-reads its
// -config file and password file. A corrupt password file is refused
// (the old one kept); a good one takes over for new logins; a key that
// needs a restart is named in the log; a session logged in before, and its
// download, carry on.
func TestReloadSIGHUP(t *testing.T) {
	bin := ferryBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.Mkdir(root, 0o755)
	const size = 8 << 20
	if err := os.WriteFile(filepath.Join(root, "big"), bytes.Repeat([]byte("f"), size), 0o644); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "passwd")
	if err := auth.SetUser(pw, "alice", "one", ""); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "ferry.conf")
	writeConf := func(extra string) {
		t.Helper()
		body := "root " + root + "\npasswd " + pw + "\nrun-as-mapped-user false\n" + extra
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConf("")
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-config", conf)
	cmd.Env = append(os.Environ(), "X509_USER_CERT=", "X509_USER_KEY=")
	addr, log := serveChild(t, cmd)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	login := func(user, pass string) (*ftpclient.Conn, error) {
		c, err := ftpclient.Dial(ctx, addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, c.Login(ctx, user, pass)
	}
	old, err := login("alice", "one")
	if err != nil {
		t.Fatal(err)
	}
	g := gatedwriter.New()
	done := make(chan error, 1)
	go func() {
		_, err := old.RetrieveAt(ctx, "/big", g, nil)
		done <- err
	}()
	<-g.Started()

	// A corrupt password file: refused, the old one kept.
	good, _ := os.ReadFile(pw)
	os.WriteFile(pw, []byte("alice:not-a-hash\n"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	log.waitCount(t, "SIGHUP: reloaded", 1)
	if !strings.Contains(log.String(), "password file refused") {
		t.Fatalf("no refusal of the corrupt password file in the log:\n%s", log)
	}
	if _, err := login("alice", "one"); err != nil {
		t.Fatalf("the password file kept: %v", err)
	}

	// A new password, and a key that needs a restart.
	os.WriteFile(pw, good, 0o600)
	if err := auth.SetUser(pw, "alice", "two", ""); err != nil {
		t.Fatal(err)
	}
	writeConf("idle-timeout 5m\n")
	cmd.Process.Signal(syscall.SIGHUP)
	log.waitCount(t, "SIGHUP: reloaded", 2)
	if !strings.Contains(log.String(), "key=idle-timeout") {
		t.Errorf("the log does not name idle-timeout as needing a restart:\n%s", log)
	}
	if _, err := login("alice", "one"); err == nil {
		t.Error("the old password still logs in after the reload")
	}
	if _, err := login("alice", "two"); err != nil {
		t.Errorf("the new password: %v", err)
	}

	g.Open()
	if err := <-done; err != nil || g.N() != size {
		t.Fatalf("download across the reloads: %d bytes, %v", g.N(), err)
	}
	if err := old.Mkdir(ctx, "/after"); err != nil {
		t.Fatalf("session of before the reloads: %v", err)
	}
}

// TestReloadPrivsepHelperRestart: a privsep helper that dies is started
// again at the account's next login.
func TestReloadPrivsepHelperRestart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run privsep helpers")
	}
	bin := ferryBinary(t)
	pki := gsipki.New(t, "")
	uid, gid := gsipki.EnsureAccount(t, pki.Account)
	top, err := os.MkdirTemp("/tmp", "ferry-reload-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	if err := os.Chown(top, uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-root", top,
		"-cert", pki.HostCert, "-key", pki.HostKey, "-gridmap", pki.GridMap)
	cmd.Env = append(os.Environ(), "X509_CERT_DIR="+pki.TrustDir)
	addr, log := serveChild(t, cmd)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	session := func() *ftpclient.Conn {
		t.Helper()
		cred, err := ftpclient.LoadCredential(pki.Proxy(t, gsi.ProxyOptions{}), "")
		if err != nil {
			t.Fatal(err)
		}
		trust, err := ftpclient.LoadTrustStore(pki.TrustDir)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ftpclient.Dial(ctx, addr, &ftpclient.Config{GSI: &ftpclient.GSIConfig{Credential: cred, Trust: trust}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Login(ctx, "", "x"); err != nil {
			t.Fatalf("login: %v\n%s", err, log)
		}
		return c
	}
	if err := session().Mkdir(ctx, "/one"); err != nil {
		t.Fatal(err)
	}
	helpers := childrenOf(t, cmd.Process.Pid)
	if len(helpers) != 1 {
		t.Fatalf("privsep helpers: %v, want one", helpers)
	}
	syscall.Kill(helpers[0], syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); len(childrenOf(t, cmd.Process.Pid)) > 0 || processExists(helpers[0]); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed helper did not go")
		}
	}
	if err := session().Mkdir(ctx, "/two"); err != nil {
		t.Fatalf("after the helper died: %v\n%s", err, log)
	}
	fi, err := os.Stat(filepath.Join(top, "two"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
		t.Errorf("/two owned by uid %d, want the mapped account's %d", st.Uid, uid)
	}
	if n := len(childrenOf(t, cmd.Process.Pid)); n != 1 {
		t.Errorf("%d helpers after the restart, want 1", n)
	}
}

// childrenOf lists the running child processes of pid (from /proc).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

func processExists(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// TestReloadSIGHUPRevokes: through a real SIGHUP to a ferry serve process,
// a CRL that revokes the user's certificate refuses the user's new GSI
// logins, while the session logged in before carries on; a corrupt
// grid-mapfile is refused with an error naming it.
func TestReloadSIGHUPRevokes(t *testing.T) {
	bin := ferryBinary(t)
	pki := gsipki.New(t, "")
	root := t.TempDir()
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-root", root, "-run-as-mapped-user=false",
		"-cert", pki.HostCert, "-key", pki.HostKey, "-gridmap", pki.GridMap)
	cmd.Env = append(os.Environ(), "X509_CERT_DIR="+pki.TrustDir)
	addr, log := serveChild(t, cmd)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The client's trust store is loaded once, before the server's
	// directory changes.
	trust, err := ftpclient.LoadTrustStore(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	login := func() (*ftpclient.Conn, error) {
		cred, err := ftpclient.LoadCredential(pki.Proxy(t, gsi.ProxyOptions{}), "")
		if err != nil {
			t.Fatal(err)
		}
		c, err := ftpclient.Dial(ctx, addr, &ftpclient.Config{GSI: &ftpclient.GSIConfig{Credential: cred, Trust: trust}})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { c.Close() })
		return c, c.Login(ctx, "", "x")
	}
	old, err := login()
	if err != nil {
		t.Fatal(err)
	}

	os.WriteFile(pki.GridMap+".new", []byte("\"/C=US/O=broken\n"), 0o644)
	good, _ := os.ReadFile(pki.GridMap)
	os.Rename(pki.GridMap+".new", pki.GridMap)
	cmd.Process.Signal(syscall.SIGHUP)
	log.waitCount(t, "SIGHUP: reloaded", 1)
	if !strings.Contains(log.String(), `level=ERROR msg="SIGHUP: grid-mapfile refused; keeping the current one" file=`+pki.GridMap) {
		t.Errorf("no error naming the corrupt grid-mapfile:\n%s", log)
	}
	if _, err := login(); err != nil {
		t.Fatalf("login with the grid-mapfile kept: %v", err)
	}
	os.WriteFile(pki.GridMap, good, 0o644)

	pki.Revoke(t, pki.User)
	cmd.Process.Signal(syscall.SIGHUP)
	log.waitCount(t, "SIGHUP: reloaded", 2)
	if _, err := login(); err == nil {
		t.Fatal("a revoked certificate logged in after SIGHUP")
	}
	if err := old.Mkdir(ctx, "/still"); err != nil {
		t.Fatalf("the session of before the reload: %v", err)
	}
}

// TestReloadSIGHUPTranslogFIFO: a FIFO put at the transfer log's path is
// refused at once on SIGHUP (the old file kept), and the same SIGHUP
// still applies a new CRL.
func TestReloadSIGHUPTranslogFIFO(t *testing.T) {
	bin := ferryBinary(t)
	pki := gsipki.New(t, "")
	root := t.TempDir()
	tlog := filepath.Join(t.TempDir(), "transfers.log")
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-root", root, "-run-as-mapped-user=false",
		"-cert", pki.HostCert, "-key", pki.HostKey, "-gridmap", pki.GridMap, "-transfer-log", tlog)
	cmd.Env = append(os.Environ(), "X509_CERT_DIR="+pki.TrustDir)
	addr, log := serveChild(t, cmd)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	trust, err := ftpclient.LoadTrustStore(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	login := func() error {
		cred, err := ftpclient.LoadCredential(pki.Proxy(t, gsi.ProxyOptions{}), "")
		if err != nil {
			t.Fatal(err)
		}
		c, err := ftpclient.Dial(ctx, addr, &ftpclient.Config{GSI: &ftpclient.GSIConfig{Credential: cred, Trust: trust}})
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Login(ctx, "", "x")
	}
	if err := login(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tlog, tlog+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(tlog, 0o600); err != nil {
		t.Fatal(err)
	}
	pki.Revoke(t, pki.User)
	cmd.Process.Signal(syscall.SIGHUP)
	log.waitCount(t, "SIGHUP: transfer log not reopened", 1)
	if !strings.Contains(log.String(), "SIGHUP: reloaded") {
		t.Fatalf("no reload logged:\n%s", log)
	}
	if err := login(); err == nil {
		t.Fatal("a revoked certificate logged in after the SIGHUP that met a FIFO")
	}
}

// TestReloadSIGHUPPasswdMissing: removing the password file and sending
// SIGHUP revokes every password login (fail closed, a warning in the log);
// the file back and another SIGHUP restore them.
func TestReloadSIGHUPPasswdMissing(t *testing.T) {
	bin := ferryBinary(t)
	dir := t.TempDir()
	pw := filepath.Join(dir, "passwd")
	if err := auth.SetUser(pw, "alice", "one", ""); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-storage", "memory", "-passwd", pw, "-run-as-mapped-user=false")
	cmd.Env = append(os.Environ(), "X509_USER_CERT=", "X509_USER_KEY=")
	addr, log := serveChild(t, cmd)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	login := func() error {
		c, err := ftpclient.Dial(ctx, addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.Login(ctx, "alice", "one")
	}
	if err := login(); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(pw)
	os.Remove(pw)
	cmd.Process.Signal(syscall.SIGHUP)
	log.waitCount(t, "SIGHUP: reloaded", 1)
	if !strings.Contains(log.String(), `level=WARN msg="SIGHUP: the password file is gone`) {
		t.Errorf("no warning about the missing password file:\n%s", log)
	}
	if err := login(); err == nil {
		t.Fatal("a password login works after the password file was removed and the server reloaded")
	}
	os.WriteFile(pw, good, 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	log.waitCount(t, "SIGHUP: reloaded", 2)
	if err := login(); err != nil {
		t.Fatalf("password file back: %v", err)
	}
}
