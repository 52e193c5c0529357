package interop

// What globus-url-copy prints and writes where scripts read it, checked
// the same way against GCT's client and (in the run with Ferry as
// globus-url-copy, gucferry_test.go) against Ferry's drop-in.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobusURLCopyDumpOnly: -do writes quoted pairs; a file found in a
// directory gets "0,-1" and its size, modification time and mode; "-"
// writes to standard output; nothing is copied.
func TestGlobusURLCopyDumpOnly(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(src, "a")
	if err := os.WriteFile(a, []byte("abc"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "", "", "globus-url-copy", "-do", "-", "file://"+a, "file://"+dir+"/b")
	if want := fmt.Sprintf("%q %q\n", "file://"+a, "file://"+dir+"/b"); out != want {
		t.Errorf("-do - FILE: stdout %q, want %q", out, want)
	}
	dump := filepath.Join(dir, "dump")
	mustRun(t, "", "", "globus-url-copy", "-do", dump, "file://"+src+"/", "file://"+dir+"/out/")
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%q %q 0,-1 size=3;modify=%d;mode=0640;\n", "file://"+a, "file://"+dir+"/out/a", fi.ModTime().Unix())
	if string(b) != want {
		t.Errorf("-do DIR wrote %q, want %q", b, want)
	}
	for _, n := range []string{"b", "out"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("-do copied %s", n)
		}
	}
}

// TestGlobusURLCopyVerboseOnStdout: -v prints the Source/Dest block on
// standard output, one per file of a directory, and nothing on standard
// error.
func TestGlobusURLCopyVerboseOnStdout(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(src, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, "", "", "globus-url-copy", "-v", "file://"+src+"/a", "file://"+dir+"/c")
	want := "Source: file://" + src + "/\nDest:   file://" + dir + "/\n  a  ->  c\n"
	if r.err != nil || r.stdout != want || r.stderr != "" {
		t.Errorf("-v FILE: %v, stdout %q (want %q), stderr %q", r.err, r.stdout, want, r.stderr)
	}
	r = run(t, "", "", "globus-url-copy", "-v", "-cd", "file://"+src+"/", "file://"+dir+"/out/")
	if r.err != nil || r.stderr != "" {
		t.Fatalf("-v DIR: %v, stderr %q", r.err, r.stderr)
	}
	for _, n := range []string{"a", "b"} {
		block := "Source: file://" + src + "/\nDest:   file://" + dir + "/out/\n  " + n + "\n"
		if strings.Count(r.stdout, block) != 1 {
			t.Errorf("-v DIR: stdout %q lacks %q", r.stdout, block)
		}
	}
}

// TestGlobusURLCopyStopsAtFailure: without -c the copies of a list stop
// at the first file that fails (the earlier ones are made, the later ones
// not) and the status is 1; with -c all the others are made.
func TestGlobusURLCopyStopsAtFailure(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "blocker") // a file where a directory should be
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	exists := func(n string) bool { _, err := os.Stat(filepath.Join(dir, n)); return err == nil }
	for _, c := range []bool{false, true} {
		tag := fmt.Sprint(c)
		list := filepath.Join(dir, "list-"+tag)
		lines := fmt.Sprintf("file://%s file://%s/a-%s\nfile://%s file://%s/b-%s\nfile://%s file://%s/c-%s\n",
			src, dir, tag, src, blocker, tag, src, dir, tag)
		if err := os.WriteFile(list, []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-f", list}
		if c {
			args = append([]string{"-c"}, args...)
		}
		r := run(t, "", "", "globus-url-copy", args...)
		if r.code != 1 || !exists("a-"+tag) || exists("c-"+tag) != c {
			t.Errorf("-c %v: exit %d, a %v, c %v; stderr %q", c, r.code, exists("a-"+tag), exists("c-"+tag), r.stderr)
		}
	}
}

// TestGlobusURLCopyAsciiBinary: -a and -b together are refused with
// globus-url-copy's message and status; -a alone copies a local file as
// it is.
func TestGlobusURLCopyAsciiBinary(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := "one\r\ntwo\n"
	if err := os.WriteFile(src, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "", "globus-url-copy", "-a", "-b", "file://"+src, "file://"+dir+"/x")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "\nERROR: option -ascii and -binary are mutually exclusive\n\nSyntax: globus-url-copy ") {
		t.Errorf("-a -b: exit %d, stderr %q", r.code, r.stderr)
	}
	mustRun(t, "", "", "globus-url-copy", "-a", "file://"+src, "file://"+dir+"/y")
	if b, err := os.ReadFile(filepath.Join(dir, "y")); err != nil || string(b) != data {
		t.Errorf("-a: copied %q, %v", b, err)
	}
}

// TestGlobusURLCopyAliasFile: an alias file names the server that
// @destination stands for; the URL's host is a name that resolves to
// nothing.
func TestGlobusURLCopyAliasFile(t *testing.T) {
	srv := startFerry(t, t.TempDir())
	local := t.TempDir()
	want := writeRandom(t, filepath.Join(local, "src"), 100<<10, 3)
	alias := filepath.Join(local, "aliases")
	if err := os.WriteFile(alias, []byte("# where the copies go\n@destination\n"+srv.addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "", "globus-url-copy", "-af", alias, "file://"+filepath.Join(local, "src"), "ftp://logical.invalid/aliased")
	sameFile(t, filepath.Join(srv.root, "aliased"), want)
}
