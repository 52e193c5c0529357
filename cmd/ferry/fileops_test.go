package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMkdirRmMv(t *testing.T) {
	s := startGCT(t)
	isDir := func(p string) bool {
		fi, err := os.Stat(filepath.Join(s.dir, p))
		return err == nil && fi.IsDir()
	}
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(s.dir, p))
		return err == nil
	}

	ok(t, "mkdir", s.url+"/one")
	if !isDir("one") {
		t.Fatal("mkdir did not create one")
	}
	if r := ferry(t, nil, "mkdir", s.url+"/one"); r.code != 1 || !strings.HasPrefix(r.stderr, "ferry mkdir: "+s.url+"/one: 5") {
		t.Errorf("mkdir of an existing directory: exit %d, %q", r.code, r.stderr)
	}
	ok(t, "mkdir", "-p", s.url+"/one/two/three/")
	ok(t, "mkdir", "-p", s.url+"/one/two")
	if !isDir("one/two/three") {
		t.Fatal("mkdir -p did not create one/two/three")
	}
	writeServed(t, filepath.Join(s.dir, "file"), []byte("x"))
	if r := ferry(t, nil, "mkdir", "-p", s.url+"/file/sub"); r.code != 1 || !strings.Contains(r.stderr, "not a directory") {
		t.Errorf("mkdir -p below a file: exit %d, %q", r.code, r.stderr)
	}

	// mv: relative to the URL's directory, absolute, or a URL.
	ok(t, "cp", "-", s.url+"/one/f")
	ok(t, "mv", s.url+"/one/f", "g")
	ok(t, "mv", s.url+"/one/g", filepath.Join(s.dir, "one/two/h"))
	ok(t, "mv", s.url+"/one/two/h", s.url+"/h2")
	if !exists("h2") || exists("one/f") || exists("one/g") || exists("one/two/h") {
		t.Error("mv did not move the file along")
	}
	if r := ferry(t, nil, "mv", s.url+"/missing", "x"); r.code != 1 || !strings.HasPrefix(r.stderr, "ferry mv: rename ") {
		t.Errorf("mv of a missing file: exit %d, %q", r.code, r.stderr)
	}
	if r := ferry(t, nil, "mv", s.url+"/h2"); r.code != 2 {
		t.Errorf("mv with one argument: exit %d", r.code)
	}

	// rm and rm -d.
	if r := ferry(t, nil, "rm", s.url+"/one/two/three"); r.code != 1 {
		t.Errorf("rm of a directory: exit %d", r.code)
	}
	ok(t, "rm", s.url+"/h2")
	ok(t, "rm", "-d", s.url+"/one/two/three/")
	if exists("h2") || exists("one/two/three") {
		t.Error("rm did not remove")
	}
	if r := ferry(t, nil, "rm", "-d", s.url+"/one"); r.code != 1 {
		t.Errorf("rm -d of a non-empty directory: exit %d", r.code)
	}
}
