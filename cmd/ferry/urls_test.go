package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    location
		wantErr string
	}{
		{in: "-", want: location{kind: locStdio, display: "-"}},
		{in: "data/x.bin", want: location{kind: locLocal, path: "data/x.bin", display: "data/x.bin"}},
		{in: "/abs/x", want: location{kind: locLocal, path: "/abs/x", display: "/abs/x"}},
		{in: "a:b/c", want: location{kind: locLocal, path: "a:b/c", display: "a:b/c"}},
		{in: "file:///abs/x%20y", want: location{kind: locLocal, path: "/abs/x y", display: "file:///abs/x%20y"}},
		{in: "file://localhost/abs", want: location{kind: locLocal, path: "/abs", display: "file://localhost/abs"}},
		{in: "ftp://host/dir/file", want: location{kind: locRemote, path: "/dir/file", addr: "host:21", hostname: "host", display: "ftp://host/dir/file"}},
		{in: "FTP://host:2811", want: location{kind: locRemote, path: "/", addr: "host:2811", hostname: "host", display: "ftp://host:2811"}},
		{in: "ftp://host/dir/", want: location{kind: locRemote, path: "/dir/", addr: "host:21", hostname: "host", display: "ftp://host/dir/"}},
		{in: "ftp://host/~/rel/f", want: location{kind: locRemote, path: "rel/f", addr: "host:21", hostname: "host", display: "ftp://host/~/rel/f"}},
		{in: "ftp://host/~", want: location{kind: locRemote, path: ".", addr: "host:21", hostname: "host", display: "ftp://host/~"}},
		{in: "ftp://host/~/", want: location{kind: locRemote, path: "./", addr: "host:21", hostname: "host", display: "ftp://host/~/"}},
		{in: "ftp://[::1]:2121/x", want: location{kind: locRemote, path: "/x", addr: "[::1]:2121", hostname: "::1", display: "ftp://[::1]:2121/x"}},
		{in: "ftp://bob@h/a%20b", want: location{kind: locRemote, path: "/a b", addr: "h:21", hostname: "h", user: "bob", hasUser: true, display: "ftp://bob@h/a%20b"}},
		{in: "ftp://bob:s%40cr%3At@h/x", want: location{kind: locRemote, path: "/x", addr: "h:21", hostname: "h", user: "bob", pass: "s@cr:t", hasUser: true, hasPass: true, display: "ftp://bob:xxxxx@h/x"}},
		{in: "ftp://u%3Ax:@h/x", want: location{kind: locRemote, path: "/x", addr: "h:21", hostname: "h", user: "u:x", pass: "", hasUser: true, hasPass: true, display: "ftp://u%3Ax:xxxxx@h/x"}},
		{in: "ftp://h/a%3Fb%23c", want: location{kind: locRemote, path: "/a?b#c", addr: "h:21", hostname: "h", display: "ftp://h/a%3Fb%23c"}},
		{in: "gsiftp://h/x", want: location{kind: locRemote, gsi: true, path: "/x", addr: "h:2811", hostname: "h", display: "gsiftp://h/x"}},
		{in: "ftps://h/x", want: location{kind: locRemote, ftps: true, path: "/x", addr: "h:21", hostname: "h", display: "ftps://h/x"}},
		{in: "FTPS://bob:pw@h:2811/~/x", want: location{kind: locRemote, ftps: true, path: "x", addr: "h:2811", hostname: "h", user: "bob", pass: "pw", hasUser: true, hasPass: true, display: "ftps://bob:xxxxx@h:2811/~/x"}},
		{in: "GSIFTP://bob@h:2812/~/x", want: location{kind: locRemote, gsi: true, path: "x", addr: "h:2812", hostname: "h", user: "bob", hasUser: true, display: "gsiftp://bob@h:2812/~/x"}},
		{in: "http://h/x", wantErr: "unsupported URL scheme"},
		{in: "ftp:///x", wantErr: "no host"},
		{in: "ftp://h:0/x", wantErr: "bad port"},
		{in: "ftp://h:99999/x", wantErr: "bad port"},
		{in: "ftp://h/a?b", wantErr: "%3F"},
		{in: "ftp://h/a#b", wantErr: "%3F"},
		{in: "ftp://h/a?", wantErr: "%3F"},
		{in: "ftp://h/a%0D%0ADELE%20x", wantErr: "line break"},
		{in: "ftp://u:pw@h:bad/x", wantErr: "bad URL"},
		{in: "file://remote/x", wantErr: "must be local"},
		{in: "", wantErr: "empty path"},
	} {
		got, err := parseLocation(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseLocation(%q) = %+v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("parseLocation(%q): error shows the password: %v", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseLocation(%q) =\n %+v, %v; want\n %+v", tc.in, got, err, tc.want)
		}
	}
}

const sampleNetrc = `# comment line
machine files.example.org login alice password "pa ss\"word"
machine other.example.org
	login bob
	password b0b   # trailing comment
	account acct
macdef init
cd /tmp
binary

machine after.macdef login carol password c
default login dflt password dpw
machine ignored.after.default login x password y
`

func TestParseNetrc(t *testing.T) {
	got, err := parseNetrc(sampleNetrc)
	if err != nil {
		t.Fatal(err)
	}
	want := []netrcEntry{
		{"files.example.org", "alice", `pa ss"word`},
		{"other.example.org", "bob", "b0b"},
		{"after.macdef", "carol", "c"},
		{"", "dflt", "dpw"},
		{"ignored.after.default", "x", "y"},
	}
	if len(got) != len(want) {
		t.Fatalf("parseNetrc = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	for _, bad := range []string{
		"login x",               // before machine
		"machine",               // no name
		"machine h login",       // no value
		`machine h password "x`, // unterminated quote
	} {
		if _, err := parseNetrc(bad); err == nil {
			t.Errorf("parseNetrc(%q) succeeded", bad)
		}
	}
	// Every prefix of a valid file either parses or fails cleanly.
	for i := range len(sampleNetrc) {
		_, _ = parseNetrc(sampleNetrc[:i])
	}
}

func TestLookupNetrc(t *testing.T) {
	entries, err := parseNetrc(sampleNetrc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, user      string
		login, password string
		ok              bool
	}{
		{"files.example.org", "", "alice", `pa ss"word`, true},
		{"FILES.example.org", "alice", "alice", `pa ss"word`, true},
		{"files.example.org", "zed", "", "", false}, // default's login differs
		{"after.macdef", "", "carol", "c", true},
		{"unknown", "", "dflt", "dpw", true},
		{"unknown", "dflt", "dflt", "dpw", true},
		{"ignored.after.default", "", "dflt", "dpw", true},
	} {
		e, ok := lookupNetrc(entries, tc.host, tc.user)
		if ok != tc.ok || e.login != tc.login || e.password != tc.password {
			t.Errorf("lookupNetrc(%q, %q) = %+v, %v", tc.host, tc.user, e, ok)
		}
	}
}

func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	netrc := filepath.Join(dir, "netrc")
	if err := os.WriteFile(netrc, []byte("machine h login joe password jpw\nmachine k login kim\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NETRC": netrc}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		url        string
		user, pass string
	}{
		{"ftp://h/x", "joe", "jpw"},
		{"ftp://u:p@h/x", "u", "p"},
		{"ftp://joe@h/x", "joe", "jpw"},
		{"ftp://other@h/x", "other", ""},
		{"ftp://anonymous@h/x", "anonymous", "ferry@"},
		{"ftp://k/x", "kim", ""},
		{"ftp://nowhere/x", "anonymous", "ferry@"},
	} {
		l, err := parseLocation(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		user, pass, err := credentials(l, getenv)
		if err != nil || user != tc.user || pass != tc.pass {
			t.Errorf("credentials(%s) = %q, %q, %v; want %q, %q", tc.url, user, pass, err, tc.user, tc.pass)
		}
	}

	// ~/.netrc when NETRC is unset; a missing file means anonymous.
	env = map[string]string{"HOME": dir}
	l, _ := parseLocation("ftp://h/x")
	if user, _, err := credentials(l, getenv); err != nil || user != "anonymous" {
		t.Errorf("without ~/.netrc: %q, %v", user, err)
	}
	if err := os.Rename(netrc, filepath.Join(dir, ".netrc")); err != nil {
		t.Fatal(err)
	}
	if user, pass, err := credentials(l, getenv); err != nil || user != "joe" || pass != "jpw" {
		t.Errorf("with ~/.netrc: %q, %q, %v", user, pass, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".netrc"), []byte(`machine "h`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := credentials(l, getenv); err == nil || !strings.Contains(err.Error(), ".netrc") {
		t.Errorf("a broken ~/.netrc: %v, want an error naming the file", err)
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		r    client.Reply
		want string
	}{
		{client.Reply{Code: 550, Lines: []string{"No such file."}}, "550 No such file."},
		{client.Reply{Code: 550, Lines: []string{
			"GlobusError: v=1 c=PATH_NOT_FOUND", "GridFTP-Errno: 2",
			"GridFTP-Reason: System error in stat", "GridFTP-Error-String: No such file or directory", "End.",
		}}, "550 System error in stat: No such file or directory"},
		{client.Reply{Code: 500, Lines: []string{"Command failed. : globus_l_gfs_file_open failed.", "globus_xio: x", "End."}},
			"500 Command failed. : globus_l_gfs_file_open failed.; globus_xio: x"},
	} {
		if got := describe(&client.ReplyError{Reply: tc.r}); got != tc.want {
			t.Errorf("describe(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
	if got := describe(errors.New("plain")); got != "plain" {
		t.Errorf("describe(plain) = %q", got)
	}
}

func TestRenameTarget(t *testing.T) {
	from, _ := parseLocation("ftp://h/dir/sub/f")
	for _, tc := range []struct{ in, want string }{
		{"g", "/dir/sub/g"},
		{"../g", "/dir/g"},
		{"/abs/g", "/abs/g"},
		{"ftp://h/x/y", "/x/y"},
	} {
		if got, err := renameTarget(from, tc.in); err != nil || got != tc.want {
			t.Errorf("renameTarget(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"ftp://other/x", "file:///x", ""} {
		if _, err := renameTarget(from, bad); !errors.Is(err, errUsage) {
			t.Errorf("renameTarget(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestResolveDestination(t *testing.T) {
	dir := t.TempDir()
	remote, _ := parseLocation("ftp://h/d/f.bin")
	local, _ := parseLocation(filepath.Join(dir, "src.txt"))
	stdin, _ := parseLocation("-")
	for _, tc := range []struct {
		src      location
		dst      string
		wantPath string
	}{
		{remote, dir, filepath.Join(dir, "f.bin")},
		{remote, dir + "/", filepath.Join(dir, "f.bin")},
		{remote, filepath.Join(dir, "new"), filepath.Join(dir, "new")},
		{local, "ftp://h/up/", "/up/src.txt"},
		{local, "ftp://h/up", "/up"},
		{remote, "ftp://h/~/", "./f.bin"},
	} {
		dst, err := parseLocation(tc.dst)
		if err != nil {
			t.Fatal(err)
		}
		if err := resolveDestination(tc.src, &dst); err != nil || dst.path != tc.wantPath {
			t.Errorf("resolveDestination(%s, %s) = %q, %v; want %q", tc.src, tc.dst, dst.path, err, tc.wantPath)
		}
	}
	dst, _ := parseLocation(dir)
	if err := resolveDestination(stdin, &dst); !errors.Is(err, errUsage) {
		t.Errorf("stdin into a directory: %v, want a usage error", err)
	}
}
