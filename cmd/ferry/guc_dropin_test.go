package main

// Tests of the globus-url-copy options whose meaning was read in
// globus_url_copy.c: -a/-b, -af, -c and -do.

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/job"
)

// TestGUCAsciiBinary: -a changes only http:// copies in globus-url-copy
// (GASS text mode), so with Ferry's URLs it copies the bytes as they
// are, like -b; both together are refused with globus-url-copy's
// message and status.
func TestGUCAsciiBinary(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	dir := t.TempDir()
	src := filepath.Join(dir, "a")
	data := []byte("one\r\ntwo\n")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"-a", "-ascii", "-b", "-binary"} {
		dst := filepath.Join(dir, "out"+opt)
		if code, _, stderr := runGUCOut(t, opt, "file://"+src, "file://"+dst); code != 0 {
			t.Fatalf("%s: exit %d: %s", opt, code, stderr)
		}
		if got := mustRead(t, dst); !bytes.Equal(got, data) {
			t.Errorf("%s: copied %q, want %q", opt, got, data)
		}
	}
	code, _, stderr := runGUCOut(t, "-a", "-b", "file://"+src, "file://"+filepath.Join(dir, "x"))
	want := "\nERROR: option -ascii and -binary are mutually exclusive\n\nSyntax: globus-url-copy [-help] [-vb] [-dbg] [-r] [-rst] [-s <subject>]\n"
	if code != 1 || !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, "\nUse -help to display full usage\n") {
		t.Errorf("-a -b: exit %d, stderr %q", code, stderr)
	}
}

// TestGUCAliasParse reads alias files as globus_l_guc_load_alias_file
// does.
func TestGUCAliasParse(t *testing.T) {
	for _, tc := range []struct {
		text     string
		src, dst []string
		bad      int
	}{
		{"@source\nh1:2811\n  h2 trailing words\n\n# comment\n@destination\nd1\n", []string{"h1:2811", "h2"}, []string{"d1"}, 0},
		{"@ source\nh1\n@other\nx\n", []string{"h1"}, nil, 0},
		{"@source\n", []string{}, nil, 0},
		{"h1\n@source\n", nil, nil, 1},
		{"# c\n@\nh\n", nil, nil, 2},
		{"@source\na\n@source\nb\n", nil, nil, 3},
	} {
		al, bad := parseAliases(tc.text)
		if bad != tc.bad {
			t.Errorf("%q: bad line %d, want %d", tc.text, bad, tc.bad)
			continue
		}
		if bad == 0 && (len(al.src) != len(tc.src) || len(tc.src) > 0 && !reflect.DeepEqual(al.src, tc.src) || !reflect.DeepEqual(al.dst, tc.dst)) {
			t.Errorf("%q: source %q, destination %q", tc.text, al.src, al.dst)
		}
	}
	for in, want := range map[string]string{
		"gsiftp://u:p@logical:2811/a/b": "gsiftp://h:1/a/b",
		"ftp://logical/x":               "ftp://h:1/x",
		"sshftp://logical/x":            "sshftp://h:1/x",
		"file:///tmp/x":                 "file:///tmp/x",
		"ftp://logical":                 "ftp://logical",
	} {
		if got := replaceHost(in, "h:1"); got != want {
			t.Errorf("replaceHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGUCAliasFile copies with an alias file: the URLs name a logical
// host, the alias file the servers. With -cc 2 the pairs of a list go
// to the hosts of the alias in turn, one per connection; a bad alias
// file is reported with its line and the URLs' hosts are used.
func TestGUCAliasFile(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	f1, f2 := startFerrySrv(t), startFerrySrv(t)
	data := randomData(t, 10<<10)
	local := t.TempDir()
	src := filepath.Join(local, "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	host := func(f *ferrySrv) string { return strings.TrimPrefix(f.url, "ftp://") }
	alias := filepath.Join(local, "aliases")
	if err := os.WriteFile(alias, []byte("@destination\n"+host(f1)+"\n"+host(f2)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One pair: the first host (connection 0).
	if code, _, stderr := runGUCOut(t, "-af", alias, "file://"+src, "ftp://logical.example/one"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := mustRead(t, filepath.Join(f1.dir, "one")); !bytes.Equal(got, data) {
		t.Errorf("one: contents differ")
	}
	// A list with -cc 2: pairs 0 and 2 on connection 0 (f1), 1 and 3 on
	// connection 1 (f2).
	list := filepath.Join(local, "list")
	var lines string
	for _, n := range []string{"l0", "l1", "l2", "l3"} {
		lines += "file://" + src + " ftp://logical.example/" + n + "\n"
	}
	if err := os.WriteFile(list, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runGUCOut(t, "-af", alias, "-cc", "2", "-f", list); code != 0 {
		t.Fatalf("-f: exit %d: %s", code, stderr)
	}
	for n, f := range map[string]*ferrySrv{"l0": f1, "l1": f2, "l2": f1, "l3": f2} {
		if got, err := os.ReadFile(filepath.Join(f.dir, n)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: not on its host: %v", n, err)
		}
	}
	// A host before any alias: the message, then the URL's own host.
	if err := os.WriteFile(alias, []byte("# hosts\n"+host(f2)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runGUCOut(t, "-af", alias, "file://"+src, f1.url+"/two")
	if code != 0 || !strings.Contains(stderr, "Problem parsing alias file "+alias+": line 2\n") {
		t.Errorf("bad alias file: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(f1.dir, "two")); err != nil {
		t.Errorf("bad alias file: the URL's host was not used: %v", err)
	}
}

// TestGUCStopsAtFirstFailure: without -c the drop-in stops at the first
// failure, as globus-url-copy: the lines of an -f list before a pair that
// cannot be copied (a missing source, a destination below a file, no URL)
// are copied, the run stops there, and -df holds that pair and the ones
// after it; with -c the others are copied. (A file that fails while it
// is copied cancels the others: gucFiles.)
func TestGUCStopsAtFirstFailure(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "file") // a file where a directory should be
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := func(n string) string { return filepath.Join(dir, n) }
	list := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exists := func(n string) bool { _, err := os.Stat(out(n)); return err == nil }
	for _, bad := range []string{
		"file://" + src + " file://" + filepath.Join(blocker, "b"),
		"file://" + out("no-such-source") + " file://" + out("b"),
		src + " file://" + out("b"), // a path: globus-url-copy's lists want URLs
		"file://" + src + " " + out("b"),
	} {
		l := list("l", "file://"+src+" file://"+out("a"), bad, "file://"+src+" file://"+out("c"))
		df := out("df")
		code, _, stderr := runGUCOut(t, "-df", df, "-f", l)
		if code != 1 || !exists("a") || exists("c") || exists("b") {
			t.Errorf("%s without -c: exit %d, a %v, c %v; stderr %q", bad, code, exists("a"), exists("c"), stderr)
		}
		if pairs, err := job.ParseList(bytes.NewReader(mustRead(t, df))); err != nil || len(pairs) != 2 || pairs[0].Dst != "file://"+out("c") && pairs[1].Dst != "file://"+out("c") {
			t.Errorf("%s: -df: %v, %v", bad, pairs, err)
		}
		os.Remove(df)
		os.Remove(out("a"))
		code, _, stderr = runGUCOut(t, "-c", "-f", l)
		if code != 1 || !exists("a") || !exists("c") {
			t.Errorf("%s with -c: exit %d, a %v, c %v; stderr %q", bad, code, exists("a"), exists("c"), stderr)
		}
		os.Remove(out("a"))
		os.Remove(out("c"))
	}
}

// TestGUCDumpOnlyFormat: -do writes the pairs as globus-url-copy does:
// quoted URLs; a file found in a directory gets "0,-1" and its size,
// modification time and mode; "-" is standard output.
func TestGUCDumpOnlyFormat(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	dir := t.TempDir()
	srcDir := filepath.Join(dir, "src")
	if err := os.Mkdir(srcDir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(srcDir, "a")
	if err := os.WriteFile(a, []byte("abc"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runGUCOut(t, "-do", "-", "file://"+a, "file://"+filepath.Join(dir, "b"))
	if want := `"file://` + a + `" "file://` + filepath.Join(dir, "b") + `"` + "\n"; code != 0 || stdout != want {
		t.Errorf("-do - FILE: exit %d, stdout %q, want %q; stderr %q", code, stdout, want, stderr)
	}
	dump := filepath.Join(dir, "dump")
	if code, _, stderr := runGUCOut(t, "-do", dump, "file://"+srcDir+"/", "file://"+dir+"/out/"); code != 0 {
		t.Fatalf("-do DIR: exit %d: %s", code, stderr)
	}
	want := `"file://` + a + `" "file://` + dir + `/out/a" 0,-1 size=3;modify=` + strconv.FormatInt(fi.ModTime().Unix(), 10) + ";mode=0640;\n"
	if got := string(mustRead(t, dump)); got != want {
		t.Errorf("-do DIR wrote %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("-do copied")
	}
}
