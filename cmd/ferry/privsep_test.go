//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/privsep"
)

func TestPrivsepHelperUsage(t *testing.T) {
	if r := ferry(t, nil, "privsep-helper"); r.code != 2 {
		t.Errorf("without -root: exit %d, %q", r.code, r.stderr)
	}
	if r := ferry(t, nil, "privsep-helper", "-root", "/", "-fd", "1"); r.code != 2 {
		t.Errorf("-fd 1: exit %d, %q", r.code, r.stderr)
	}
	f, err := os.CreateTemp(t.TempDir(), "notasocket")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := ferry(t, nil, "privsep-helper", "-root", "/", "-fd", strconv.Itoa(int(f.Fd())))
	if r.code != 1 || !strings.Contains(r.stderr, "not a socket") {
		t.Errorf("regular file as socket: exit %d, %q", r.code, r.stderr)
	}
}

// TestPrivsepHelperEOF: the helper ends cleanly when the server's end of
// the socket pair closes.
func TestPrivsepHelperEOF(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	server := os.NewFile(uintptr(fds[0]), "server")
	done := make(chan result, 1)
	go func() {
		done <- ferry(t, nil, "privsep-helper", "-root", t.TempDir(), "-fd", strconv.Itoa(fds[1]))
	}()
	server.Close()
	select {
	case r := <-done:
		if r.code != 0 {
			t.Errorf("exit %d, %q", r.code, r.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("helper did not exit when the socket closed")
	}
}

// TestPrivsepEndToEnd starts a freshly built ferry binary as the helper of
// a test account, as ferry serve does.
func TestPrivsepEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	const account = "ferrypriv"
	u, err := user.Lookup(account)
	if err != nil {
		if out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", account).CombinedOutput(); err != nil {
			t.Skipf("cannot create test account: %v: %s", err, out)
		}
		if u, err = user.Lookup(account); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)

	// The binary and the served tree must be reachable by the account.
	top, err := os.MkdirTemp("/tmp", "ferrypriv-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	root := filepath.Join(top, "root")
	for _, err := range []error{os.Chmod(top, 0o755), os.Mkdir(root, 0o755), os.Chown(root, uid, gid)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(top, "ferry")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	fsys, err := privsep.Start(ctx, bin, root, account)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	w, err := fsys.Create(ctx, "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("hi"), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := fsys.Stat(ctx, "/f")
	if err != nil || fi.UID != uid || fi.Size != 2 {
		t.Errorf("Stat(/f) = %+v, %v; want uid %d, size 2", fi, err, uid)
	}
	if err := fsys.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
