package interop

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestGSIRunsAsMappedUser: ferry serve running as root does a grid-mapped
// session's file operations as the mapped local account: its uploads are
// the account's, and a file only root may read is refused.
func TestGSIRunsAsMappedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (CI runs as root)")
	}
	const account = "ferrygsimap"
	if _, err := user.Lookup(account); err != nil {
		if out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", account).CombinedOutput(); err != nil {
			t.Fatalf("useradd: %v: %s", err, out)
		}
	}
	u, err := user.Lookup(account)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	p := newPKI(t)
	p.gridmapRow = `"` + p.userDN + `" ` + account
	p.asUser = true
	root, err := os.MkdirTemp("", "ferry-runas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	mine := filepath.Join(root, "mine")
	os.Mkdir(mine, 0o755)
	os.Chown(mine, uid, -1)
	os.WriteFile(filepath.Join(root, "secret"), []byte("root only"), 0o600)
	writeRandom(t, filepath.Join(root, "public.bin"), 100000, 21)
	os.Chmod(filepath.Join(root, "public.bin"), 0o644)
	srv := gsiServer(t, p, root)
	env := []string{"X509_USER_PROXY=" + p.ferryProxy(t), "X509_CERT_DIR=" + filepath.Join(p.dir, "certificates")}
	guc := func(args ...string) result {
		return run(t, "", "", "env", append(append(env, "globus-url-copy"), args...)...)
	}
	local := t.TempDir()
	if r := guc("gsiftp://"+srv.addr+"/public.bin", "file://"+filepath.Join(local, "p")); r.err != nil {
		t.Fatalf("readable file: %v", r)
	}
	if r := guc("file://"+filepath.Join(local, "p"), "gsiftp://"+srv.addr+"/mine/up.bin"); r.err != nil {
		t.Fatalf("upload into the user's directory: %v", r)
	}
	fi, err := os.Stat(filepath.Join(mine, "up.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
		t.Errorf("upload owned by uid %d, want %d (%s)", st.Uid, uid, account)
	}
	if r := guc("gsiftp://"+srv.addr+"/secret", "file://"+filepath.Join(local, "s")); r.err == nil {
		t.Error("the mapped user read a file only root may read")
	}
	if r := guc("file://"+filepath.Join(local, "p"), "gsiftp://"+srv.addr+"/not-mine.bin"); r.err == nil {
		t.Error("the mapped user wrote into a directory only root may write")
	}
	if strings.Contains(srv.log.String(), "not a local user") {
		t.Errorf("the server did not switch to the local user:\n%s", srv.log)
	}
}
