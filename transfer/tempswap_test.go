package transfer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTempSinkDirSwapped: the destination directory of a download under
// a root is swapped for a symbolic link (inside the root, or out of it)
// while its temporary file is being written. Whether the copy then
// fails or completes, the temporary file is gone from the directory it
// was made in, a namesake of it elsewhere is left alone, and a
// completed file lands where the temporary file was, not through the
// link.
func TestTempSinkDirSwapped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commit  bool
		outside bool
	}{
		{"abort, link in the root", false, false},
		{"commit, link in the root", true, false},
		{"abort, link out of the root", false, true},
		{"commit, link out of the root", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir, outside := confinedDirs(t)
			sub, other := filepath.Join(dir, "sub"), filepath.Join(dir, "other")
			for _, d := range []string{sub, other} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s, err := openTempSinkIn(fsOf(confined(root, filepath.Join(sub, "f"))), filepath.Join(sub, "f"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.f.Write([]byte("data")); err != nil {
				t.Fatal(err)
			}
			// A namesake of the temporary file where the link leads.
			target := other
			if tc.outside {
				target = filepath.Join(outside, "d")
				if err := os.Mkdir(target, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			namesake := filepath.Join(target, filepath.Base(s.temp))
			writeFile(t, namesake, []byte("keep"))
			old := filepath.Join(dir, "old")
			if err := os.Rename(sub, old); err != nil {
				t.Fatal(err)
			}
			link := target // absolute: os.Root refuses to follow it
			if !tc.outside {
				link = "other" // relative: os.Root follows it
			}
			if err := os.Symlink(link, sub); err != nil {
				t.Fatal(err)
			}
			if tc.commit {
				if err := s.commit(); err != nil {
					t.Fatalf("commit: %v", err)
				}
			} else {
				s.abort()
			}
			es, _ := os.ReadDir(old)
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			want := ""
			if tc.commit {
				want = "f"
			}
			if strings.Join(names, " ") != want {
				t.Errorf("the directory the file was made in holds %q, want %q", names, want)
			}
			if tc.commit {
				if b, _ := os.ReadFile(filepath.Join(old, "f")); string(b) != "data" {
					t.Errorf("the copy holds %q", b)
				}
			}
			if b, err := os.ReadFile(namesake); string(b) != "keep" {
				t.Errorf("the namesake through the link: %q, %v", b, err)
			}
			if _, err := os.Lstat(filepath.Join(target, "f")); err == nil {
				t.Errorf("the copy went through the link")
			}
		})
	}
}
