//go:build unix

package auth

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReloadSetUserKeepsOwnerAndMode: a password file that a service
// account reads (group-readable, another group) stays readable by it after
// SetUser replaces it; the hashes never become world-readable.
func TestReloadSetUserKeepsOwnerAndMode(t *testing.T) {
	file := filepath.Join(t.TempDir(), "passwd")
	if err := SetUser(file, "alice", "one", ""); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file mode %v, want 0600", fi.Mode().Perm())
	}
	gid := os.Getgid()
	if os.Geteuid() == 0 {
		gid = 65534 // nogroup: root may give the file to another group
	}
	if err := os.Chown(file, -1, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SetUser(file, "bob", "two", ""); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after SetUser %v, want 0640 (group kept, others dropped)", fi.Mode().Perm())
	}
	if g := fi.Sys().(*syscall.Stat_t).Gid; int(g) != gid {
		t.Errorf("group after SetUser %d, want %d", g, gid)
	}
	p, err := Load(file)
	if err != nil || len(p.Users()) != 2 {
		t.Fatalf("Load: %v, %v", p, err)
	}
}
