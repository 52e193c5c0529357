package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/pkgdeb"
)

// TestPackage builds the Debian package (as make package does), installs
// it on this machine, checks its files, account and unit, starts the
// service (with systemd when it runs the machine, else the unit's
// ExecStart by hand as the unit's user, on a free port), adds a password
// user and reloads, copies a file in with the client, stops the server
// with SIGTERM (exit 0), and purges the package. Everything is undone at
// the end, pass or fail. It needs root and dpkg, as on the CI machines.
func TestPackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to install a package")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("needs dpkg (Debian)")
	}
	if exec.Command("dpkg-query", "-W", "-f", "${Status}", "ferry").Run() == nil {
		out, _ := exec.Command("dpkg-query", "-W", "-f", "${Status}", "ferry").Output()
		if strings.Contains(string(out), "installed") || strings.Contains(string(out), "config-files") {
			t.Fatalf("a ferry package is already on this machine (%s): purge it first (dpkg --purge ferry); this test installs and purges its own", out)
		}
	}
	if _, err := user.Lookup("ferry"); err == nil {
		t.Fatal("an account \"ferry\" already exists: the package's purge would remove it; remove it first (deluser --system ferry)")
	}

	bin := ferryBinary(t)
	work := t.TempDir()
	man := filepath.Join(work, "man")
	if r := ferry(t, nil, "man", "-dir", man); r.code != 0 {
		t.Fatalf("ferry man: %s", r.stderr)
	}
	deb, err := pkgdeb.Build(pkgdeb.Options{Binary: bin, ManDir: man, Source: "../../packaging", Version: "0.0.0~test", OutDir: work})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Logf("package contents:\n%s", run("dpkg", "-c", deb))

	t.Cleanup(func() {
		// Purge whatever state the test left the package in.
		if out, err := exec.Command("dpkg", "--purge", "ferry").CombinedOutput(); err != nil {
			t.Errorf("cleanup: dpkg --purge ferry: %v\n%s", err, out)
		}
	})
	run("dpkg", "-i", deb)

	// Files, account, directories.
	for _, f := range []string{"/usr/bin/ferry", pkgdeb.Unit, "/etc/ferry/ferry.conf", "/usr/share/ferry/privsep.conf", "/usr/share/man/man1/ferry-serve.1.gz", "/usr/share/man/man1/ferry.1.gz"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("installed file: %v", err)
		}
	}
	if !strings.Contains(run("dpkg-query", "-W", "-f", "${Conffiles}", "ferry"), "/etc/ferry/ferry.conf") {
		t.Error("/etc/ferry/ferry.conf is not a conffile")
	}
	acct, err := user.Lookup("ferry")
	if err != nil {
		t.Fatalf("the ferry account: %v", err)
	}
	uid, _ := strconv.Atoi(acct.Uid)
	gid, _ := strconv.Atoi(acct.Gid)
	if uid == 0 || uid >= 1000 {
		t.Errorf("ferry has uid %d, want a system uid", uid)
	}
	checkOwner := func(path string, wantUID, wantGID int, wantMode os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != wantUID || int(st.Gid) != wantGID || fi.Mode().Perm() != wantMode {
			t.Errorf("%s: %d:%d %v, want %d:%d %v", path, st.Uid, st.Gid, fi.Mode().Perm(), wantUID, wantGID, wantMode)
		}
	}
	checkOwner("/srv/ferry", uid, gid, 0o755)
	checkOwner("/etc/ferry/passwd", 0, gid, 0o640)

	// An admin's hardening survives a reinstall: existing directories
	// are neither chmodded nor chowned by the postinst.
	if err := os.Chmod("/srv/ferry", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown("/var/log/ferry", 0, -1); err != nil {
		t.Fatal(err)
	}
	run("dpkg", "-i", deb)
	checkOwner("/srv/ferry", uid, gid, 0o750)
	if fi, err := os.Stat("/var/log/ferry"); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("/var/log/ferry made root's was chowned by a reinstall: %v", err)
	}
	os.Chmod("/srv/ferry", 0o755)

	// The unit: verified where systemd-analyze is, and its ExecStart.
	unit, err := os.ReadFile(pkgdeb.Unit)
	if err != nil {
		t.Fatal(err)
	}
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		out, err := exec.Command(sa, "verify", pkgdeb.Unit).CombinedOutput()
		if err != nil {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		} else if len(bytes.TrimSpace(out)) > 0 {
			t.Logf("systemd-analyze verify:\n%s", out)
		}
	}
	execStart := unitValue(t, unit, "ExecStart")
	if unitValue(t, unit, "User") != "ferry" || unitValue(t, unit, "NoNewPrivileges") != "yes" {
		t.Errorf("the unit should run as ferry with NoNewPrivileges:\n%s", unit)
	}

	port := freePort(t)
	var stop func() // stops the server and checks it ended cleanly
	if fi, err := os.Stat("/run/systemd/system"); err == nil && fi.IsDir() {
		stop = startWithSystemd(t, execStart, port)
	} else {
		t.Log("systemd is not running this machine: running the unit's ExecStart by hand as ferry")
		stop = startByHand(t, execStart, unitValue(t, unit, "UMask"), port, uid, gid)
	}

	// A user added with ferry passwd, then a reload: the service reads it.
	pw := exec.Command("/usr/bin/ferry", "passwd", "/etc/ferry/passwd", "tester")
	pw.Stdin = strings.NewReader("s3cret\n")
	if out, err := pw.CombinedOutput(); err != nil {
		t.Fatalf("ferry passwd: %v\n%s", err, out)
	}
	checkOwner("/etc/ferry/passwd", 0, gid, 0o640)
	reloaded := reloadService(t)

	src := filepath.Join(work, "hello.txt")
	data := []byte("hello from the package test\n")
	os.WriteFile(src, data, 0o644)
	t.Cleanup(func() { os.Remove("/srv/ferry/hello.txt") })
	dst := fmt.Sprintf("ftp://tester:s3cret@127.0.0.1:%d/hello.txt", port)
	var out []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// The reload may land a moment after the signal.
		if out, err = exec.Command(bin, "cp", src, dst).CombinedOutput(); err == nil || time.Now().After(deadline) || !reloaded() {
			break
		}
	}
	if err != nil {
		t.Fatalf("ferry cp to the packaged server: %v\n%s", err, out)
	}
	if got, err := os.ReadFile("/srv/ferry/hello.txt"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copied file: %q, %v", got, err)
	}
	checkOwner("/srv/ferry/hello.txt", uid, gid, 0o640) // UMask=0027 of the unit
	stop()

	os.Remove("/srv/ferry/hello.txt")
	run("dpkg", "--purge", "ferry")
	for _, f := range []string{"/usr/bin/ferry", pkgdeb.Unit, "/etc/ferry", "/var/log/ferry", "/srv/ferry"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s is still there after the purge", f)
		}
	}
	if _, err := user.Lookup("ferry"); err == nil {
		t.Error("the ferry account is still there after the purge")
	}
}

// unitValue is the value of key in the [Service] (or any) section of a
// unit file; the last assignment wins, as in systemd.
func unitValue(t *testing.T, unit []byte, key string) string {
	t.Helper()
	var v string
	found := false
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, val, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == key {
			v, found = strings.TrimSpace(val), true
		}
	}
	if !found {
		t.Fatalf("no %s= in the unit", key)
	}
	return v
}

// freePort returns a TCP port of 127.0.0.1 nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// svc is the server process started by hand, for reloadService.
var svc *exec.Cmd

// svcLog is its standard error.
var svcLog *lockedBuffer

// startByHand runs the unit's ExecStart as the unit's user, with its
// UMask and systemd's empty environment, on 127.0.0.1:port (a command-line flag wins over
// the config file). The returned function sends SIGTERM and checks the
// server exits 0.
func startByHand(t *testing.T, execStart, umask string, port, uid, gid int) func() {
	t.Helper()
	// The shell sets the unit's UMask and becomes the server (exec).
	argv := append([]string{"/bin/sh", "-c", "umask " + umask + ` && exec "$0" "$@"`}, strings.Fields(execStart)...)
	argv = append(argv, "-listen", fmt.Sprintf("127.0.0.1:%d", port))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/srv/ferry", "USER=ferry", "LOGNAME=ferry"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	log := &lockedBuffer{}
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", execStart, err)
	}
	svc, svcLog = cmd, log
	waited := make(chan error, 1)
	listening := make(chan bool, 1)
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		listening <- strings.HasPrefix(line, "Server listening at ")
		io.Copy(io.Discard, br)
		waited <- cmd.Wait()
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("the server after SIGTERM: %v (want exit 0)\n%s", err, log)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("the server did not stop on SIGTERM\n%s", log)
		}
	}
	t.Cleanup(stop)
	select {
	case ok := <-listening:
		if !ok {
			t.Fatalf("the server did not start:\n%s", log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not start:\n%s", log)
	}
	return stop
}

// startWithSystemd starts ferry.service with a runtime drop-in that adds
// -listen 127.0.0.1:port to its ExecStart; the returned function stops it
// and checks it ended cleanly.
func startWithSystemd(t *testing.T, execStart string, port int) func() {
	t.Helper()
	dir := "/run/systemd/system/ferry.service.d"
	os.MkdirAll(dir, 0o755)
	dropIn := filepath.Join(dir, "zz-test.conf")
	body := fmt.Sprintf("[Service]\nExecStart=\nExecStart=%s -listen 127.0.0.1:%d\n", execStart, port)
	if err := os.WriteFile(dropIn, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	systemctl := func(args ...string) string {
		out, err := exec.Command("systemctl", args...).CombinedOutput()
		if err != nil {
			t.Errorf("systemctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		exec.Command("systemctl", "stop", "ferry.service").Run()
		os.Remove(dropIn)
		exec.Command("systemctl", "daemon-reload").Run()
	})
	systemctl("daemon-reload")
	systemctl("restart", "ferry.service")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			out, _ := exec.Command("journalctl", "-u", "ferry.service", "-n", "50", "--no-pager").CombinedOutput()
			t.Fatalf("ferry.service does not listen on %d:\n%s", port, out)
		}
	}
	return func() {
		systemctl("stop", "ferry.service")
		show := systemctl("show", "-p", "Result", "-p", "ExecMainStatus", "ferry.service")
		if !strings.Contains(show, "Result=success") || !strings.Contains(show, "ExecMainStatus=0") {
			t.Errorf("ferry.service did not stop cleanly:\n%s", show)
		}
	}
}

// reloadService sends the server SIGHUP (systemctl reload under systemd)
// and returns a function that reports whether the reload is still to be
// waited for.
func reloadService(t *testing.T) (pending func() bool) {
	t.Helper()
	if svc == nil {
		if out, err := exec.Command("systemctl", "reload", "ferry.service").CombinedOutput(); err != nil {
			t.Fatalf("systemctl reload ferry: %v\n%s", err, out)
		}
		return func() bool { return true }
	}
	before := svcLog.count("SIGHUP: reloaded")
	svc.Process.Signal(syscall.SIGHUP)
	svcLog.waitCount(t, "SIGHUP: reloaded", before+1)
	return func() bool { return false }
}
