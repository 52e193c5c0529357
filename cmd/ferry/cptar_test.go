package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// makeSmallTree makes n small files in nested directories under root,
// readable and writable by the server.
func makeSmallTree(t *testing.T, root string, n int) map[string]string {
	t.Helper()
	want := map[string]string{}
	for i := range n {
		rel := filepath.Join(fmt.Sprintf("d%d", i%7), fmt.Sprintf("e%d", i%3), fmt.Sprintf("f%03d.txt", i))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o777); err != nil {
			t.Fatal(err)
		}
		content := strings.Repeat(fmt.Sprintf("file %d\n", i), i%50)
		writeServed(t, filepath.Join(root, rel), []byte(content))
		want[rel] = content
	}
	return want
}

// checkTree fails unless root holds exactly the files of want.
func checkTree(t *testing.T, root string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		got[rel] = string(mustRead(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d files, want %d", root, len(got), len(want))
	}
	for rel, w := range want {
		if g, found := got[rel]; !found || g != w {
			t.Errorf("%s: %s is %q (present %v), want %q", root, rel, g, found, w)
		}
	}
}

// TestCpTarTree: ferry cp -r -tar downloads a tree of small files as one
// tar stream and uploads it back, when the server offers the tar module;
// a server without it gets the copy file by file, with a note.
func TestCpTarTree(t *testing.T) {
	dir, url := startModuleSrv(t, "tar", "gzip")
	want := makeSmallTree(t, filepath.Join(dir, "tree"), 120)
	local := t.TempDir()

	down := filepath.Join(local, "down")
	r := ok(t, "cp", "-v", "-r", "-tar", url+"/tree", down)
	if !strings.Contains(r.stderr, "bytes of tar") {
		t.Errorf("-r -tar download did not go as tar: %q", r.stderr)
	}
	checkTree(t, down, want)
	// Again into the directory the first download made: unpacked through
	// part files renamed into place (the first, into a new directory,
	// wrote each file straight to its name).
	if r := ok(t, "cp", "-v", "-r", "-tar", url+"/tree", down); !strings.Contains(r.stderr, "bytes of tar") {
		t.Errorf("second -r -tar download did not go as tar: %q", r.stderr)
	}
	checkTree(t, down, want)

	r = ok(t, "cp", "-v", "-r", "-tar", down, url+"/up")
	if !strings.Contains(r.stderr, "bytes of tar") {
		t.Errorf("-r -tar upload did not go as tar: %q", r.stderr)
	}
	checkTree(t, filepath.Join(dir, "up"), want)

	// A missing tree: an error, and no directory made for it.
	missing := filepath.Join(local, "missing")
	if r := ferry(t, nil, "cp", "-r", "-tar", url+"/no-such-tree", missing); r.code != 1 || !strings.Contains(r.stderr, "as tar") {
		t.Errorf("-r -tar of a missing tree: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a failed -r -tar download left %s: %v", missing, err)
	}

	// Without the tar module on the server: file by file.
	dir2, url2 := startModuleSrv(t, "gzip")
	r = ok(t, "cp", "-r", "-tar", down+"/", url2+"/plain/")
	if !strings.Contains(r.stderr, "does not offer the tar module") {
		t.Errorf("no note of the fallback: %q", r.stderr)
	}
	checkTree(t, filepath.Join(dir2, "plain"), want)

	for _, args := range [][]string{
		{"cp", "-tar", url + "/tree", down},
		{"cp", "-r", "-tar", "-src-module", "gzip", url + "/tree", down},
		{"cp", "-r", "-tar", url + "/tree", url + "/tree2"},
		{"cp", "-r", "-tar", "-sync", url + "/tree", down},
	} {
		if r := ferry(t, nil, args...); r.code != 2 {
			t.Errorf("ferry %q: exit %d (stderr %q), want 2", args, r.code, r.stderr)
		}
	}
}
