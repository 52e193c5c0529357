package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobusURLCopyListStopsAtBadLine: a pair of an -f list that cannot
// be copied (no URL, an unknown scheme, a missing source) stops the run
// after the lines before it were copied, and the lines after it are not;
// with -c they are. Local copies only (file://), so GCT's client and
// Ferry as globus-url-copy must agree without a server.
func TestGlobusURLCopyListStopsAtBadLine(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(n string) string { return filepath.Join(dir, n) }
	exists := func(n string) bool { _, err := os.Stat(at(n)); return err == nil }
	for name, bad := range map[string]string{
		"path-destination": "file://" + src + " " + at("b"),
		"path-source":      src + " file://" + at("b"),
		"no-scheme":        "nonsense file://" + at("b"),
		"unknown-scheme":   "bogus://host/x file://" + at("b"),
		"missing-source":   "file://" + at("missing") + " file://" + at("b"),
	} {
		t.Run(name, func(t *testing.T) {
			list := at("list-" + name)
			text := strings.Join([]string{"file://" + src + " file://" + at("a"), bad, "file://" + src + " file://" + at("c")}, "\n") + "\n"
			if err := os.WriteFile(list, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cont := range []bool{false, true} {
				for _, n := range []string{"a", "b", "c"} {
					os.Remove(at(n))
				}
				args := []string{"-f", list}
				if cont {
					args = append([]string{"-c"}, args...)
				}
				r := run(t, dir, "", "globus-url-copy", args...)
				if r.code != 1 || !exists("a") || exists("b") || exists("c") != cont {
					t.Errorf("-c %v: exit %d, a %v, b %v, c %v (want exit 1, a, and c only with -c): %v", cont, r.code, exists("a"), exists("b"), exists("c"), r)
				}
			}
		})
	}
}
