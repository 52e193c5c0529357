package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
)

// gucHelpSpellings runs the installed GCT globus-url-copy -help and
// returns every option spelling its help lists (without the dash). It
// skips the test when GCT's globus-url-copy is not installed.
func gucHelpSpellings(t *testing.T) []string {
	t.Helper()
	p, err := exec.LookPath(gucName)
	if err != nil {
		t.Skipf("GCT's globus-url-copy is not installed (make deps): %v", err)
	}
	// It prints to stderr and exits 1.
	out, _ := exec.Command(p, "-version").CombinedOutput()
	if bytes.Contains(out, []byte("ferry")) {
		t.Skipf("%s is Ferry's drop-in, not GCT's globus-url-copy", p)
	}
	help, _ := exec.Command(p, "-help").CombinedOutput()
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		// Option lines are indented by two spaces; their descriptions
		// by more.
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		for _, part := range strings.Split(line, "|") {
			f := strings.Fields(part)
			if len(f) == 0 || !strings.HasPrefix(f[0], "-") {
				t.Fatalf("globus-url-copy -help: cannot read the option line %q", line)
			}
			// "-source-file-system-stack." has a stray full stop in the
			// help; globus-url-copy itself accepts only the spelling
			// without it.
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(f[0], "-"), "."))
		}
	}
	if len(names) < 100 {
		t.Fatalf("globus-url-copy -help lists only %d spellings:\n%s", len(names), help)
	}
	return names
}

// TestGUCOptionsMatchHelp compares the drop-in's option table with the
// help of the installed globus-url-copy: each spelling it lists is in
// the table and the table has none it lacks.
func TestGUCOptionsMatchHelp(t *testing.T) {
	listed := gucHelpSpellings(t)
	for _, n := range listed {
		if gucLookup[n] == nil {
			t.Errorf("globus-url-copy -help lists -%s, which the drop-in's table (gucOptions) lacks", n)
		}
	}
	for n := range gucLookup {
		if !slices.Contains(listed, n) && !slices.Contains(gucUnlisted, n) {
			t.Errorf("the drop-in's table has -%s, which globus-url-copy -help does not list (nor gucUnlisted)", n)
		}
	}
	for _, n := range gucUnlisted {
		if slices.Contains(listed, n) {
			t.Errorf("gucUnlisted has -%s, which globus-url-copy -help lists", n)
		}
		if gucLookup[n] == nil {
			t.Errorf("gucUnlisted has -%s, which the table lacks", n)
		}
	}
	t.Logf("%d spellings in globus-url-copy -help, %d in the table", len(listed), len(gucLookup))
}

// gucSample is a valid argument of each kind.
var gucSample = map[gucArg]string{gucInt: "3", gucSize: "2M", gucSeconds: "7", gucText: "x"}

// TestGUCEverySpelling parses every spelling of every option: a refused
// one stops with an error naming it and saying why; an accepted one
// parses the same as its other spellings, and ferry cp accepts what it
// maps onto.
func TestGUCEverySpelling(t *testing.T) {
	n := 0
	for _, o := range gucOptions {
		var first *gucConfig
		for _, name := range o.names {
			n++
			args := []string{"-" + name}
			if o.arg != gucSwitch {
				args = append(args, gucSample[o.arg])
			}
			args = append(args, "ftp://h/a", "file:///tmp/b")
			c, err := parseGUC(args)
			if o.refuse != "" {
				var r *gucRefusal
				if !errors.As(err, &r) || !strings.Contains(err.Error(), "-"+name+" ") || !strings.Contains(err.Error(), o.refuse) {
					t.Errorf("-%s: error %v, want it refused with its reason", name, err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("-%s: the refusal is not one line: %q", name, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%q: %v", args, err)
				continue
			}
			if !slices.Equal(c.urls, []string{"ftp://h/a", "file:///tmp/b"}) {
				t.Errorf("%q: URLs %q", args, c.urls)
			}
			if first == nil {
				first = c
			} else if !reflect.DeepEqual(c, first) {
				t.Errorf("-%s parses as %+v, -%s as %+v", name, c, o.names[0], first)
			}
			cp, err := c.cpArgs(func(string) string { return "" })
			if err != nil {
				t.Errorf("%q: %v", args, err)
				continue
			}
			if _, err := parseCpArgs(t, cp); err != nil {
				t.Errorf("%q: ferry cp %q: %v", args, cp, err)
			}
		}
	}
	if n != len(gucLookup) {
		t.Errorf("walked %d spellings, the table has %d", n, len(gucLookup))
	}
}

// parseCpArgs parses args with ferry cp's flag set.
func parseCpArgs(t *testing.T, args []string) (*cpFlags, error) {
	f, _, err := parseCpJobArgs(t, args)
	return f, err
}

// parseCpJobArgs parses args with ferry cp's flag set, returning the job
// flags too.
func parseCpJobArgs(t *testing.T, args []string) (*cpFlags, *jobFlags, error) {
	t.Helper()
	var out bytes.Buffer
	fs, f, jf, _ := newCopyFlagSet(commands["cp"], &env{stdout: &out, stderr: &out}, false)
	if err := fs.Parse(args); err != nil {
		return nil, nil, errors.New(out.String())
	}
	if fs.NArg() != 2 && !(fs.NArg() == 0 && (fs.Lookup("f").Value.String() != "" || fs.Lookup("list").Value.String() != "")) {
		return nil, nil, errors.New("not SRC DST after the flags: " + strings.Join(fs.Args(), " "))
	}
	return f, jf, nil
}

// TestGUCParse checks what options mean once mapped: seconds, globus-url-copy's
// defaults, its special values, and errors in the shape it gives them.
func TestGUCParse(t *testing.T) {
	var jf *jobFlags
	flags := func(args ...string) *cpFlags {
		t.Helper()
		c, err := parseGUC(append(args, "ftp://h/a", "file:///tmp/b"))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		cp, err := c.cpArgs(func(string) string { return "" })
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		f, j, err := parseCpJobArgs(t, cp)
		if err != nil {
			t.Fatalf("%q: %v", cp, err)
		}
		if err := checkCopyFlags(f, j); err != nil {
			t.Fatalf("%q: %v", cp, err)
		}
		jf = j
		return f
	}
	f := flags()
	if f.auto || jf.pipeline || jf.concurrency != 1 || f.retries != defaultRetries || f.stallTimeout != 600*time.Second || f.interval != time.Second || f.maxInterval != math.MaxInt64 || f.parallel != 1 {
		t.Errorf("defaults: auto %v, pipeline %v, cc %d, retries %d, stall %v, interval %v, p %d", f.auto, jf.pipeline, jf.concurrency, f.retries, f.stallTimeout, f.interval, f.parallel)
	}
	if f.history != "off" {
		t.Errorf("history %q, want off without FERRY_HISTORY", f.history)
	}
	// -rst-interval N is a fixed wait; -rst-timeout a deadline for
	// retries, not a bound on the transfer.
	f = flags("-rst-interval", "3", "-rst-timeout", "30", "-st", "5", "-rst-retries", "0")
	if f.interval != 3*time.Second || f.maxInterval != 3*time.Second || f.timeout != 0 || f.deadline != 30*time.Second || f.deadlineAt.IsZero() || f.stallTimeout != 5*time.Second || f.retries < 1<<30 {
		t.Errorf("seconds: interval %v (max %v), timeout %v, deadline %v, stall %v, retries %d", f.interval, f.maxInterval, f.timeout, f.deadline, f.stallTimeout, f.retries)
	}
	// -rst-interval 0: from one second, doubled without bound.
	f = flags("-stall-timeout", "1m30s", "-rst-interval", "0")
	if f.stallTimeout != 90*time.Second || f.interval != time.Second || f.maxInterval != math.MaxInt64 || !f.deadlineAt.IsZero() {
		t.Errorf("durations: stall %v, interval %v (max %v), deadline %v", f.stallTimeout, f.interval, f.maxInterval, f.deadlineAt)
	}
	f = flags("-p", "4", "-tcp-bs", "4M", "-bs", "1M", "-pp", "-cc", "3", "-stripe", "-sbs", "65536")
	if f.parallel != 4 || f.tcpBuffer != 4<<20 || f.blockSize != 1<<20 || !jf.pipeline || jf.concurrency != 3 || f.sbs != 65536 || !f.stripe {
		t.Errorf("performance: %+v", f)
	}
	if f = flags("-sbs", "65536"); f.sbs != 0 {
		t.Errorf("-sbs without -stripe: %d, want it dropped", f.sbs)
	}
	f = flags("-s", "/CN=both", "-ds", "/CN=dest", "-cred", "/tmp/p")
	// The destination is no gsiftp:// server: -s counts.
	if f.gsi.subject != "/CN=both" || f.gsi.cert != "/tmp/p" {
		t.Errorf("subject %q, cert %q", f.gsi.subject, f.gsi.cert)
	}
	c, _ := parseGUC([]string{"-ss", "/CN=a", "-ds", "/CN=b", "gsiftp://h/u", "gsiftp://i/v"})
	if _, err := c.cpArgs(os.Getenv); err == nil {
		t.Errorf("different subjects per side: accepted")
	}
	// Only the gsiftp:// side's subject and credential count.
	c, _ = parseGUC([]string{"-ss", "/CN=a", "-ds", "/CN=b", "-sc", "/tmp/s", "-dc", "/tmp/d", "file:///tmp/u", "gsiftp://i/v"})
	if args, err := c.cpArgs(os.Getenv); err != nil || !slices.Contains(args, "/CN=b") || !slices.Contains(args, "/tmp/d") {
		t.Errorf("per-side options for the gsiftp:// side: %q, %v", args, err)
	}
	c, _ = parseGUC([]string{"-t", "2", "-dbg", "-q", "-rp", "-c", "u", "v"})
	if c.timeLimit != 2*time.Second || !c.debug || !c.quiet || !c.relPaths || !c.continueOnError {
		t.Errorf("-t -dbg -q -rp -c: %+v", c)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-bogus", "u", "v"}, "Error, argument #1 (-bogus) : unknown option"},
		{[]string{"u", "-p"}, "Error, argument #2 (-p) : not enough arguments"},
		{[]string{"-p", "abc", "u", "v"}, "Error, argument #2 (abc) : argument is not a positive integer"},
		{[]string{"-rst-interval", "soon", "u", "v"}, "Error, argument #2 (soon) : argument is not a number of seconds"},
		{[]string{"-source-file-system-stack.", "x"}, "unknown option"},
	} {
		if _, err := parseGUC(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestSecondsFlag: the restart and stall flags of ferry cp take seconds
// or Go durations.
func TestSecondsFlag(t *testing.T) {
	for in, want := range map[string]time.Duration{"1": time.Second, "0": 0, "1.5": 1500 * time.Millisecond, "500ms": 500 * time.Millisecond, "2m": 2 * time.Minute, "600": 10 * time.Minute} {
		var d secondsFlag
		if err := d.Set(in); err != nil || time.Duration(d) != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{"", "x", "1x", "1..2", "-"} {
		var d secondsFlag
		if err := d.Set(in); err == nil {
			t.Errorf("Set(%q) = %v, want an error", in, time.Duration(d))
		}
	}
	f, err := parseCpArgs(t, []string{"-rst-interval", "1", "-st", "3", "a", "b"})
	if err != nil || f.interval != time.Second || f.stallTimeout != 3*time.Second {
		t.Errorf("ferry cp -rst-interval 1 -st 3: %v, interval %v, stall %v", err, f.interval, f.stallTimeout)
	}
}

// TestRelativeURL: -rp makes ftp:// paths relative to the login
// directory, except those starting with %2F.
func TestRelativeURL(t *testing.T) {
	for in, want := range map[string]string{
		"ftp://h/a/b":        "ftp://h/~/a/b",
		"gsiftp://h:2811/x/": "gsiftp://h:2811/~/x/",
		"ftp://h/%2Fetc/x":   "ftp://h/etc/x",
		"ftp://h/%2fetc/x":   "ftp://h/etc/x",
		"ftp://h/~/a":        "ftp://h/~/a",
		"ftp://h":            "ftp://h",
		"file:///tmp/a":      "file:///tmp/a",
	} {
		if got := relativeURL(in); got != want {
			t.Errorf("relativeURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// runGUCOut runs the drop-in in-process.
func runGUCOut(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = runGUC(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

// TestGUCRun runs the drop-in: its exit statuses are globus-url-copy's
// (1 for help, versions, bad options and failures), -v prints its
// shape, and a local copy works.
func TestGUCRun(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	dir := t.TempDir()
	src := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(src, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"-version"}, 1, "globus-url-copy: " + gucVersion + " (ferry "},
		{[]string{"-versions"}, 1, "ferry: "},
		{[]string{"-help"}, 1, "-stall-timeout | -st SECONDS"},
		{[]string{"-usage"}, 1, "usage: globus-url-copy"},
		{[]string{"-bogus", "a", "b"}, 1, "unknown option"},
		{[]string{"-udt", "a", "b"}, 1, "error: -udt is not supported by Ferry: "},
		{[]string{"onlyone"}, 1, "a source and a destination URL are required"},
		{[]string{"file://" + filepath.Join(dir, "missing"), "file://" + filepath.Join(dir, "x")}, 1, "\nerror: "},
		{[]string{"-v", "file://" + src, "file://" + filepath.Join(dir, "b.txt")}, 0, ""},
		{[]string{"-q", "file://" + src, "file://" + filepath.Join(dir, "c.txt")}, 0, ""},
	} {
		code, stdout, stderr := runGUCOut(t, tc.args...)
		wantOut := ""
		if tc.args[0] == "-v" {
			// On standard output, as globus-url-copy.
			wantOut = "Source: file://" + dir + "/\nDest:   file://" + dir + "/\n  a.txt  ->  b.txt\n"
		}
		if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != wantOut {
			t.Errorf("globus-url-copy %q: exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
	// -list: the URL, the names (a space after a file's), a blank line.
	if code, stdout, stderr := runGUCOut(t, "-list", "file://"+dir+"/"); code != 0 || !strings.HasPrefix(stdout, "file://"+dir+"/\n") || !strings.Contains(stdout, "\n    a.txt \n") || !strings.HasSuffix(stdout, " \n\n") {
		t.Errorf("-list: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// -do writes the pairs and copies nothing.
	dump := filepath.Join(dir, "dump")
	if code, _, stderr := runGUCOut(t, "-do", dump, "file://"+src, "file://"+filepath.Join(dir, "d.txt")); code != 0 {
		t.Errorf("-do: exit %d, %s", code, stderr)
	}
	if b, err := os.ReadFile(dump); err != nil || string(b) != "\"file://"+src+"\" \"file://"+filepath.Join(dir, "d.txt")+"\"\n" {
		t.Errorf("-do wrote %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d.txt")); err == nil {
		t.Errorf("-do copied the file")
	}
	for _, name := range []string{"b.txt", "c.txt"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != "hello\n" {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
}

// TestGUCArgv0: the binary installed under the name globus-url-copy (a
// symbolic link) is the drop-in.
func TestGUCArgv0(t *testing.T) {
	if !isGUCName("/usr/bin/globus-url-copy") || isGUCName("/usr/bin/ferry") || isGUCName("globus-url-copy.sh") {
		t.Errorf("isGUCName")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	link := filepath.Join(t.TempDir(), gucName)
	if err := os.Symlink(ferryBinary(t), link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "-version")
	cmd.Env = append(os.Environ(), "FERRY_HISTORY=off")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasPrefix(string(out), "globus-url-copy: "+gucVersion+" (ferry ") {
		t.Errorf("%s -version: %v, %q", link, err, out)
	}
}

// TestGUCProgressLines: -vb under the drop-in prints globus-url-copy's
// report lines, each ended by "\r", and a newline after the last.
func TestGUCProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := newGUCProgressPrinter(&b)
	t0 := p.start
	clock := t0
	p.now = func() time.Time { return clock }
	clock = t0.Add(time.Second)
	p.update(client.Progress{Bytes: 2 << 20, Streams: []int64{1 << 20, 1 << 20}})
	clock = t0.Add(2 * time.Second)
	p.update(client.Progress{Bytes: 3 << 20})
	p.done()
	want := "      2097152 bytes         2.00 MB/sec avg         2.00 MB/sec inst\r" +
		"      3145728 bytes         1.50 MB/sec avg         1.00 MB/sec inst\r\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// TestGUCReason: a server's refusal ends with a line holding the reply.
func TestGUCReason(t *testing.T) {
	re := &client.ReplyError{Reply: client.Reply{Code: 550, Lines: []string{"/nope: No such file or directory."}}}
	err := &opError{What: "download ftp://h/nope", Err: re}
	want := "download ftp://h/nope: the server responded with an error\n550 /nope: No such file or directory.\n"
	if got := gucReason(err); got != want {
		t.Errorf("gucReason = %q, want %q", got, want)
	}
	if got := gucReason(errors.New("plain")); got != "plain" {
		t.Errorf("gucReason(plain) = %q", got)
	}
}

// TestGUCDebugHandler: -dbg prints each command and reply after a
// "debug:" line naming the server.
func TestGUCDebugHandler(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newGUCDebugHandler(&b)).With("server", "h:21")
	log.Debug("send", "cmd", "RETR /a")
	log.Debug("reply", "code", 150, "text", "Opening")
	want := "debug: sending command to h:21:\nRETR /a\r\n\n" + "debug: response from h:21:\n150 Opening\r\n\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	// A server named by a URL of the command line; a reply of several
	// lines as on the wire.
	b.Reset()
	h := newGUCDebugHandler(&b)
	h.urls = map[string]string{"h:21": "ftp://h/a"}
	slog.New(h).With("server", "h:21").Debug("reply", "code", 214, "text", "The following commands are recognized:\n ALLO\nEnd")
	want = "debug: response from ftp://h/a:\n214-The following commands are recognized:\r\n  ALLO\r\n214 End\r\n\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	// Sessions dial at once (run with -race).
	root := slog.New(newGUCDebugHandler(io.Discard))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { root.With("server", i).Debug("send", "cmd", "NOOP") })
	}
	wg.Wait()
}
