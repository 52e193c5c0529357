package interop

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPasswordLogin makes users with ferry passwd, serves with -passwd
// only (no anonymous logins) and checks with curl that good passwords
// work, bad ones fail, and a user with -home sees only that subtree.
func TestPasswordLogin(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "top.txt"), "top secret\n")
	writeFile(t, filepath.Join(root, "sub", "inner.txt"), "inner\n")
	file := filepath.Join(t.TempDir(), "passwd")
	mustRun(t, "", "secret\n", ferryBin, "passwd", file, "alice")
	mustRun(t, "", "bobpw\n", ferryBin, "passwd", "-home", "sub", file, "bob")
	if data, err := os.ReadFile(file); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(data), "secret") || strings.Contains(string(data), "bobpw") {
		t.Errorf("the password file holds a plain password:\n%s", data)
	}
	srv := startFerry(t, root, "-passwd", file)

	t.Run("alice", func(t *testing.T) {
		if out := mustRun(t, "", "", "curl", "-sS", "-u", "alice:secret", srv.url("/top.txt")); out != "top secret\n" {
			t.Errorf("alice gets /top.txt = %q", out)
		}
		src := filepath.Join(t.TempDir(), "a.bin")
		want := writeRandom(t, src, 100000, 11)
		mustRun(t, "", "", "curl", "-sS", "-u", "alice:secret", "-T", src, srv.url("/alice.bin"))
		sameFile(t, filepath.Join(root, "alice.bin"), want)
	})

	t.Run("wrong password", func(t *testing.T) {
		// curl exit 67: "The remote server denied curl to login".
		r := run(t, "", "", "curl", "-sS", "-u", "alice:wrong", srv.url("/top.txt"))
		if r.code != 67 || r.stdout != "" {
			t.Errorf("alice with a wrong password: %v, want exit 67", r)
		}
		if r := run(t, "", "", "curl", "-sS", "-u", "mallory:secret", srv.url("/top.txt")); r.code != 67 {
			t.Errorf("unknown user: %v, want exit 67", r)
		}
	})

	t.Run("no anonymous", func(t *testing.T) {
		if r := run(t, "", "", "curl", "-sS", srv.url("/top.txt")); r.code != 67 {
			t.Errorf("anonymous login without -anonymous: %v, want exit 67", r)
		}
	})

	t.Run("home", func(t *testing.T) {
		got := lines(mustRun(t, "", "", "curl", "-sS", "-u", "bob:bobpw", "--list-only", srv.url("/")))
		if !slices.Equal(got, []string{"inner.txt"}) {
			t.Errorf("bob lists / = %q, want [inner.txt]", got)
		}
		if out := mustRun(t, "", "", "curl", "-sS", "-u", "bob:bobpw", srv.url("/inner.txt")); out != "inner\n" {
			t.Errorf("bob gets /inner.txt = %q", out)
		}
		for _, p := range []string{"/top.txt", "/../top.txt", "/%2E%2E/top.txt"} {
			r := run(t, "", "", "curl", "-sS", "--path-as-is", "-u", "bob:bobpw", srv.url(p))
			if r.code == 0 || strings.Contains(r.stdout, "top secret") {
				t.Errorf("bob gets %s: %v; want a failure", p, r)
			}
		}
	})
}
