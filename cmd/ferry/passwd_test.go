package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswdHomeCheck: a -home that does not exist under -root is reported
// when the user is added, not only by a failing login later.
func TestPasswdHomeCheck(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "alice"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "users")
	r := ferry(t, []byte("pw\n"), "passwd", "-home", "/bob", "-root", root, file, "bob")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: /bob is not a directory under "+root) {
		t.Errorf("missing home: exit %d, stderr %q; want a warning", r.code, r.stderr)
	}
	r = ferry(t, []byte("pw\n"), "passwd", "-home", "alice", "-root", root, file, "alice")
	if r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Errorf("existing home: exit %d, stderr %q; want no warning", r.code, r.stderr)
	}
	r = ferry(t, []byte("pw\n"), "passwd", "-home", "/carol", file, "carol")
	if r.code != 0 || !strings.Contains(r.stderr, "relative to the server's -root") {
		t.Errorf("home without -root: exit %d, stderr %q; want a note", r.code, r.stderr)
	}
}

// TestPasswdHomeClimbsOut: a -home that climbs out of the served root
// would clean to the whole tree; it is refused, not silently widened.
func TestPasswdHomeClimbsOut(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users")
	for _, home := range []string{"../..", "a/../../b", ".."} {
		r := ferry(t, []byte("pw\n"), "passwd", "-home", home, file, "eve")
		if r.code != 2 || !strings.Contains(r.stderr, "climbs out") {
			t.Errorf("-home %s: exit %d, stderr %q; want a refusal", home, r.code, r.stderr)
		}
	}
}
