package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestLs(t *testing.T) {
	s := startGCT(t)
	writeServed(t, filepath.Join(s.dir, "b.txt"), []byte("12345"))
	writeServed(t, filepath.Join(s.dir, ".hidden"), nil)
	mkdirServed(t, filepath.Join(s.dir, "a"))

	if r := ok(t, "ls", s.url+"/"); r.stdout != "a/\nb.txt\n" {
		t.Errorf("ls = %q", r.stdout)
	}
	if r := ok(t, "ls", "-a", s.url); r.stdout != ".hidden\na/\nb.txt\n" {
		t.Errorf("ls -a = %q", r.stdout)
	}
	r := ok(t, "ls", "-l", s.url)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 ||
		!regexp.MustCompile(`^dir +\d+ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d a/$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^file +5 \d{4}-\d\d-\d\d \d\d:\d\d:\d\d b\.txt$`).MatchString(lines[1]) {
		t.Errorf("ls -l = %q", r.stdout)
	}
	// A file URL lists that one file.
	if r := ok(t, "ls", s.url+"/b.txt"); r.stdout != "b.txt\n" {
		t.Errorf("ls FILE = %q", r.stdout)
	}
	if r := ok(t, "ls", "-active", s.url+"/a"); r.stdout != "" {
		t.Errorf("ls of an empty directory = %q", r.stdout)
	}
	if r := ferry(t, nil, "ls", s.url+"/missing"); r.code != 1 || !strings.Contains(r.stderr, "ferry ls: "+s.url+"/missing: 550 ") {
		t.Errorf("ls missing: exit %d, %q", r.code, r.stderr)
	}
	if r := ferry(t, nil, "ls", "/local/path"); r.code != 2 {
		t.Errorf("ls of a local path: exit %d", r.code)
	}
}
