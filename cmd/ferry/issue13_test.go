package main

// Tests of the defects a new user reported (issue 13).

import (
	"bytes"
	"flag"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// TestThirdPartyPlainToGSI copies between a plain ftp:// server (Ferry)
// and a gsiftp:// one (GCT) both ways: the gsiftp:// side cannot
// authenticate data channels with a peer that has no credential, so DCAU
// is dropped for the pair and stderr says so.
func TestThirdPartyPlainToGSI(t *testing.T) {
	s := startGSI(t, nil, nil)
	f := startFerrySrv(t)
	data := randomData(t, 100<<10)
	if err := os.WriteFile(filepath.Join(f.dir, "plain"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := ferry(t, nil, "cp", f.url+"/plain", s.url+"/fromplain")
	if r.code != 0 {
		t.Fatalf("cp ftp:// gsiftp://: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "DCAU") || !strings.Contains(r.stderr, "-nodcau") {
		t.Errorf("stderr %q does not say that DCAU was dropped", r.stderr)
	}
	if got := mustRead(t, filepath.Join(s.dir, "fromplain")); !bytes.Equal(got, data) {
		t.Fatal("ftp:// to gsiftp://: contents differ")
	}
	gctgsi.WriteFile(t, s.pki, filepath.Join(s.dir, "g"), data)
	r = ferry(t, nil, "cp", s.url+"/g", f.url+"/fromgsi")
	if r.code != 0 {
		t.Fatalf("cp gsiftp:// ftp://: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := mustRead(t, filepath.Join(f.dir, "fromgsi")); !bytes.Equal(got, data) {
		t.Fatal("gsiftp:// to ftp://: contents differ")
	}
	// With -nodcau nothing needs saying; protection without DCAU cannot be.
	r = ferry(t, nil, "cp", "-nodcau", f.url+"/plain", s.url+"/fromplain2")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("cp -nodcau: exit %d, stderr %q", r.code, r.stderr)
	}
	r = ferry(t, nil, "cp", "-dcpriv", f.url+"/plain", s.url+"/fromplain3")
	if r.code != 2 || !strings.Contains(r.stderr, "-dcpriv") {
		t.Errorf("cp -dcpriv ftp:// gsiftp://: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestCksumLocalAlgorithms: every algorithm of internal/checksum (the one
// list, shared with cp -checksum-alg) works on local files, and an unknown
// one is refused naming the valid ones.
func TestCksumLocalAlgorithms(t *testing.T) {
	data := randomData(t, 3000)
	local := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, alg := range checksum.Names() {
		want, err := checksum.Compute(t.Context(), bytes.NewReader(data), int64(len(data)), 10, 100, alg)
		if err != nil {
			t.Fatal(err)
		}
		r := ok(t, "cksum", "-a", strings.ToLower(alg), "-off", "10", "-len", "100", local)
		if r.stdout != want+"  "+local+"\n" {
			t.Errorf("cksum -a %s = %q, want %s", alg, r.stdout, want)
		}
	}
	r := ferry(t, nil, "cksum", "-a", "sha3", local)
	if r.code != 2 {
		t.Errorf("cksum -a sha3: exit %d", r.code)
	}
	for _, alg := range checksum.Names() {
		if !strings.Contains(r.stderr, alg) {
			t.Errorf("cksum -a sha3: %q does not list %s", r.stderr, alg)
		}
	}
}

// TestLsRmWildcards: ls and rm take wildcards in the last element of the
// URL, as cp and the shell do; rm -r removes a tree; cp -list hides
// dot-files as ls does without -a.
func TestLsRmWildcards(t *testing.T) {
	f := startFerrySrv(t)
	for _, name := range []string{"a.bin", "b.bin", "c.txt", ".h.bin", "d/x.bin", "d/.y", "d/e/z", "t/u/v/w"} {
		p := filepath.Join(f.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(p)))
		return err == nil
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", f.url + "/*.bin"}, "a.bin\nb.bin\n"},
		{[]string{"ls", f.url + "/?.bin"}, "a.bin\nb.bin\n"},
		{[]string{"ls", f.url + "/.*.bin"}, ".h.bin\n"},
		{[]string{"ls", f.url + "/[ab]*"}, "a.bin\nb.bin\n"},
		{[]string{"ls", f.url + "/"}, "a.bin\nb.bin\nc.txt\nd/\nt/\n"},
		{[]string{"ls", "-a", f.url + "/"}, ".h.bin\na.bin\nb.bin\nc.txt\nd/\nt/\n"},
		{[]string{"cp", "-list", f.url + "/"}, f.url + "/\n    a.bin\n    b.bin\n    c.txt\n    d/\n    t/\n"},
	} {
		if r := ok(t, tc.args...); r.stdout != tc.want {
			t.Errorf("ferry %s: stdout %q, want %q", strings.Join(tc.args, " "), r.stdout, tc.want)
		}
	}
	if r := ferry(t, nil, "ls", f.url+"/*.none"); r.code != 1 || !strings.Contains(r.stderr, "no match") {
		t.Errorf("ls of a pattern matching nothing: exit %d, stderr %q", r.code, r.stderr)
	}

	ok(t, "rm", f.url+"/?.bin")
	if exists("a.bin") || exists("b.bin") || !exists(".h.bin") || !exists("c.txt") {
		t.Error("rm ?.bin removed the wrong files")
	}
	if r := ferry(t, nil, "rm", f.url+"/d"); r.code != 1 || !exists("d/x.bin") {
		t.Errorf("rm of a directory: exit %d, stderr %q", r.code, r.stderr)
	}
	ok(t, "rm", "-r", f.url+"/d")
	if exists("d") {
		t.Error("rm -r d left d")
	}
	ok(t, "rm", "-r", f.url+"/[tc]*")
	if exists("t") || exists("c.txt") || !exists(".h.bin") {
		t.Error("rm -r [tc]* removed the wrong entries")
	}
	for _, root := range []string{f.url + "/", f.url, f.url + "//.", f.url + "/x/.."} {
		if r := ferry(t, nil, "rm", "-r", root); r.code != 2 || !strings.Contains(r.stderr, `"/"`) {
			t.Errorf("rm -r %s: exit %d, stderr %q", root, r.code, r.stderr)
		}
	}
	if !exists(".h.bin") {
		t.Error("rm -r / removed something")
	}
}

// TestShellScriptLineNumbers: in script mode every error names the line
// of the command that failed.
func TestShellScriptLineNumbers(t *testing.T) {
	f := startFerrySrv(t)
	script := "# a comment\n\nget missing " + t.TempDir() + "/x\nbogus\nls\nrm nothing\n"
	r := ferry(t, []byte(script), "shell", f.url)
	if r.code != 1 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	want := []string{"line 3: get", "line 4: unknown command", "line 6: rm", "ferry shell: 3 commands failed"}
	if len(lines) != len(want) {
		t.Fatalf("stderr %q, want %d lines", r.stderr, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("stderr line %d = %q, want it to start with %q", i+1, lines[i], w)
		}
	}
}

// TestMessages checks error and summary texts: each thing said once, no
// Go package prefixes, the names the user gave, correct plurals.
func TestMessages(t *testing.T) {
	f := startFerrySrv(t)
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(f.dir, "ok"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "tree", "one"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(d, "list")
	if err := os.WriteFile(list, []byte(f.url+"/missing "+d+"/out1\n"+f.url+"/ok "+d+"/out2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory this process may not write in, even as root.
	unwritable := "/sys/ferry-dest"
	if os.Getuid() != 0 {
		ro := filepath.Join(d, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		unwritable = filepath.Join(ro, "dest")
	}
	pki := gsipki.New(t, "")
	proxy := pki.Proxy(t, gsi.ProxyOptions{})
	closed := closedPort(t)

	for _, tc := range []struct {
		name       string
		env        map[string]string
		args       []string
		code       int
		want       []string // each exactly once
		wantPrefix string
	}{
		{name: "no host", args: []string{"cp", "ftp://", "x"}, code: 2, want: []string{"ferry cp: no host in URL ftp://\n"}},
		{name: "trust directory", env: map[string]string{"X509_CERT_DIR": "/nonexistent", "X509_USER_PROXY": proxy},
			args: []string{"ls", "gsiftp://127.0.0.1:1/"}, code: 1, wantPrefix: "ferry ls: gsiftp: trust directory: open /nonexistent: no such file or directory (set X509_CERT_DIR"},
		{name: "credential", env: map[string]string{"X509_USER_PROXY": "/nonexistent"},
			args: []string{"ls", "gsiftp://127.0.0.1:1/"}, code: 1, want: []string{"ferry ls: gsiftp: open /nonexistent: no such file or directory\n"}},
		{name: "refused", args: []string{"ls", "ftp://127.0.0.1:" + closed + "/"}, code: 1,
			want: []string{"ferry ls: connect to 127.0.0.1:" + closed + ": connection refused\n"}},
		{name: "list pair once", args: []string{"cp", "-f", list}, code: 1,
			want: []string{"failed: " + f.url + "/missing -> " + d + "/out1: line 1: 550 ", "1 file, "}},
		{name: "pair once", args: []string{"cp", "-r", f.url + "/missing", d + "/m"}, code: 1,
			want: []string{"ferry cp: " + f.url + "/missing: 550 "}},
		{name: "question mark", args: []string{"cp", f.url + "/x?", d + "/"}, code: 1,
			want: []string{f.url + "/x? -> ", "/x?: no match"}},
		{name: "destination named", args: []string{"cp", f.url + "/ok", unwritable}, code: 1,
			want: []string{"create " + unwritable + ": "}},
		{name: "plurals", args: []string{"cp", "-r", f.url + "/tree", d + "/tree"}, code: 0,
			want: []string{"1 file, ", "1 directory created"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := ferry(t, nil, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if n := strings.Count(r.stderr, w); n != 1 {
					t.Errorf("stderr %q has %q %d times, want once", r.stderr, w, n)
				}
			}
			if !strings.HasPrefix(r.stderr, tc.wantPrefix) {
				t.Errorf("stderr %q, want it to start with %q", r.stderr, tc.wantPrefix)
			}
			for _, bad := range []string{"usage error", "client: ", "gsi: ", "pi: ", "server: ", "%3F", "%3f", ".ferry-", "dial tcp", " 1 files", "1 directories"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("stderr %q contains %q", r.stderr, bad)
				}
			}
		})
	}
}

// closedPort returns a TCP port of 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}

// TestPort21Hint: a refused ftp:// connection to the default port 21
// hints that Ferry servers listen on 2811.
func TestPort21Hint(t *testing.T) {
	if c, err := net.Dial("tcp", "127.0.0.1:21"); err == nil {
		c.Close()
		t.Skip("something listens on 127.0.0.1:21")
	}
	for _, url := range []string{"ftp://127.0.0.1/", "ftp://127.0.0.1:21/x"} {
		r := ferry(t, nil, "ls", url)
		want := "ferry ls: connect to 127.0.0.1:21: connection refused (Ferry servers listen on port 2811 by default: try ftp://127.0.0.1:2811/)\n"
		if r.code != 1 || r.stderr != want {
			t.Errorf("ls %s: exit %d, stderr %q, want %q", url, r.code, r.stderr, want)
		}
	}
}

// TestDumpFileNote: an existing -df FILE replaces the sources given, and
// cp says so.
func TestDumpFileNote(t *testing.T) {
	f := startFerrySrv(t)
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(f.dir, "ok"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(d, "dump")
	r := ferry(t, nil, "cp", "-df", dump, f.url+"/ok", filepath.Join(d, "a"))
	if r.code != 0 || strings.Contains(r.stderr, "note") {
		t.Fatalf("first run: exit %d, stderr %q", r.code, r.stderr)
	}
	// The dump file of a run where ok failed.
	if err := os.WriteFile(dump, []byte(f.url+"/ok "+filepath.Join(d, "a")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = ferry(t, nil, "cp", "-df", dump, f.url+"/ok", filepath.Join(d, "b"))
	want := "ferry cp: note: -df " + dump + " exists (the pairs that failed in an earlier run): copying its pairs instead of " + f.url + "/ok " + filepath.Join(d, "b") + "; remove it to start afresh\n"
	if !strings.HasPrefix(r.stderr, want) {
		t.Errorf("second run: stderr %q, want it to start with %q", r.stderr, want)
	}
}

// placeholderRE is what a flag that takes a value must show after its
// name in the help: a word in capitals (FILE, SIZE, N, DURATION, H:M).
var placeholderRE = regexp.MustCompile(`^[A-Z][A-Z0-9_:,=]*(,\.\.\.)?$`)

// TestFlagPlaceholders walks the flags of every command and verb: each
// flag that takes a value names it with a placeholder word.
func TestFlagPlaceholders(t *testing.T) {
	var sets []*flag.FlagSet
	flagSetHook = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { flagSetHook = nil }()
	var runs [][]string
	for name := range commands {
		runs = append(runs, []string{name, "-h"})
	}
	for _, v := range []string{"ca", "host", "user"} {
		runs = append(runs, []string{"cert", v, "-h"})
	}
	for v := range proxyVerbs {
		runs = append(runs, []string{"proxy", v, "-h"})
	}
	runs = append(runs, []string{"bench", "wan", "-h"}, []string{"bench", "stripe", "-h"})
	for _, args := range runs {
		if r := ferry(t, nil, args...); r.code != 0 {
			t.Errorf("ferry %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if len(sets) < len(runs)-3 { // version and the verb lists have no flag set of their own
		t.Fatalf("saw %d flag sets for %d runs", len(sets), len(runs))
	}
	n := 0
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				return
			}
			n++
			name, _ := flag.UnquoteUsage(f)
			if key := fs.Name() + " -" + f.Name; !placeholderRE.MatchString(name) {
				t.Errorf("%s: placeholder %q; put a word like `FILE` in its usage", key, name)
			}
		})
	}
	if n < 50 {
		t.Errorf("only %d flags with values seen", n)
	}
}

// TestHelp: -h prints the usage on standard output and exits 0; help of
// an unknown command exits 2; each bench verb has its own usage; the help
// of commands without data channels does not mention -nodcau; sync's
// help leaves out the cp flags it implies; cp -h says what the code does
// about the round trips of pipelined uploads.
func TestHelp(t *testing.T) {
	for name := range commands {
		r := ferry(t, nil, name, "-h")
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: ferry "+name) {
			t.Errorf("ferry %s -h: exit %d, stdout %.40q, stderr %.80q", name, r.code, r.stdout, r.stderr)
		}
		if h := ferry(t, nil, "help", name); h.code != 0 || h.stdout != r.stdout {
			t.Errorf("ferry help %s: exit %d, differs from -h", name, h.code)
		}
	}
	if r := ferry(t, nil, "cert", "ca", "-h"); r.code != 0 || !strings.HasPrefix(r.stdout, "usage: ferry cert ca ") {
		t.Errorf("ferry cert ca -h: exit %d, stdout %.40q", r.code, r.stdout)
	}
	// A bad flag is an error: its message and the usage go to stderr.
	if r := ferry(t, nil, "ls", "-bogus"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "usage: ferry ls") {
		t.Errorf("ferry ls -bogus: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := ferry(t, nil, "help", "bogus"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "bogus"`) {
		t.Errorf("ferry help bogus: exit %d, stderr %q", r.code, r.stderr)
	}

	usages := map[string]bool{}
	for _, verb := range [][]string{{"bench", "-h"}, {"bench", "loopback", "-h"}, {"bench", "wan", "-h"}, {"bench", "stripe", "-h"}} {
		r := ferry(t, nil, verb...)
		first, _, _ := strings.Cut(r.stdout, "\n")
		if r.code != 0 || !strings.HasPrefix(first, "usage: ferry bench ") {
			t.Errorf("ferry %s: exit %d, %q", strings.Join(verb, " "), r.code, first)
		}
		usages[first] = true
	}
	if len(usages) != 3 { // bench -h is bench loopback -h
		t.Errorf("bench usages: %q, want 3 different ones", slices.Collect(maps.Keys(usages)))
	}

	for _, name := range []string{"mkdir", "rm", "mv", "cksum"} {
		if r := ferry(t, nil, name, "-h"); strings.Contains(r.stdout, "nodcau") {
			t.Errorf("ferry %s -h mentions -nodcau, which it lacks", name)
		}
	}
	if r := ferry(t, nil, "cp", "-h"); !strings.Contains(r.stdout, "nodcau") {
		t.Error("ferry cp -h does not mention -nodcau")
	}
	r := ferry(t, nil, "sync", "-h")
	for _, f := range []string{"-r", "-sync", "-list"} {
		if strings.Contains(r.stdout, "\n  "+f+"\n") || strings.Contains(r.stdout, "\n  "+f+" ") {
			t.Errorf("ferry sync -h lists %s", f)
		}
	}
	if !strings.Contains(r.stdout, "\n  -delete\n") {
		t.Error("ferry sync -h lacks -delete")
	}

	cp := strings.Join(strings.Fields(ferry(t, nil, "cp", "-h").stdout), " ")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rd := strings.Join(strings.Fields(string(readme)), " ")
	for _, doc := range []string{cp, rd} {
		if strings.Contains(doc, "and an upload one") || !strings.Contains(doc, "STOR-DRAIN") {
			t.Errorf("round trips of pipelined uploads: the text does not say that uploads to a STOR-DRAIN server cost none")
		}
	}
}
