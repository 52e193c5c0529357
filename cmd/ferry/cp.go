package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/xfer"
)

func init() {
	register(&command{
		name:    "cp",
		summary: "copy files and trees between GridFTP/FTP servers, local files and stdin/stdout",
		usage:   "[flags] SRC DST",
		run:     runCp,
	})
}

const cpHelp = `
SRC and DST are each one of
  ftp://[user[:password]@]host[:port]/path   a file on a server (port 21 by
                                             default; /~/path is relative to
                                             the login directory)
  gsiftp://[user@]host[:port]/path           a file on a GridFTP server with
                                             GSI security (port 2811)
  file:///abs/path or a plain path           a local file
  -                                          standard input or output
If DST is an existing local directory or ends in "/", SRC's base name is
appended. Credentials come from the URL, else from ~/.netrc ($NETRC), else
the login is anonymous.

A download never leaves a partial file that looks complete, not even when
ferry is killed: a file of up to 64 MiB, and one that replaces an existing
file, is written to a temporary .DST.ferry-* beside DST and renamed into
place when complete; a larger new file has DST.ferry-ranges beside it
until it is complete (see Restart). With -off/-len the destination is
written at the same offset (like globus-url-copy), in place. A failed or
interrupted upload says what it may have left on the server. An existing
directory on a server as DST receives SRC under its own name, as with a
local one; -cd creates missing directories above DST (both ways).

Parallel transfers: -p N (N > 1) uses MODE E with N data connections, as
globus-url-copy does (the server connects for downloads, the client for
uploads); -p 1 or no -p uses stream mode. Standard input and output always
use stream mode.

Many files (-r, wildcards, -f, ferry sync): -cc workers (4 by default)
each keep one session per server. Files of up to 64 MiB between a server
and local files go in pipelined batches on each session (-pp, on by
default): MODE E over data connections kept from file to file, the
commands of later files sent before earlier ones are answered, so a
download costs no round trip of its own, nor does an upload to a server
offering STOR-DRAIN (Ferry's); an upload to another server (GCT's) costs
one, its blocks waiting for its 150. Small files between two servers go
in third-party batches likewise: no round trip per file to a Ferry
destination, one to others. A server that refuses MODE E gets the files
one by one in stream mode. -pp=false copies every file on its own
(stream mode, unless -p or -fast). A batched file that fails is copied
again whole; files that never started because their batch broke are
tried again on a new connection (with -rst, every network failure is).
Larger files go one by one, with resume as below.

Restart: with -rst a failed transfer is retried (-rst-retries times, waiting
-rst-interval, doubled after each failure up to a minute, for at most
-rst-timeout in all) and resumes where it stopped: in MODE E with REST of
the ranges already at the receiver. A new download to a local file of
more than 64 MiB (in any mode) also survives Ctrl-C or a crash of ferry
itself: the ranges stored so far are kept in DST.ferry-ranges (with the
source's size and modification time), and running the same copy again
resumes it (it says so); the file disappears on success. A destination
with a .ferry-ranges file beside it is incomplete. Smaller files (and
batched ones) are written to a temporary .DST.ferry-* beside DST and
renamed into place when complete.
Uploads keep the ranges the server acknowledged under
$XDG_STATE_HOME/ferry/resume/ (default ~/.local/state/ferry/resume/).

Sizes (-tcp-bs, -bs) are bytes, or a number with K, M or G (powers of 1024).

` + gsiHelp + gsiDataHelp + `
Server to server copies (ftp:// or gsiftp:// on both sides) are third-party
transfers: the bytes flow directly between the servers and ferry only
steers them, as globus-url-copy does (PASV, or SPAS with -stripe, on the
destination; PORT or SPOR on the source). -p, -off/-len, -rst (resuming
with REST of the destination's restart markers on both servers),
-verify-checksum (CKSM on both) and the data channel flags apply to both
servers. -notpt routes the bytes through this client instead, in stream
mode. Between a gsiftp:// server and one without GSI (ftp://, ftps://)
data channels cannot be authenticated: ferry then runs without DCAU
(DCAU N, as -nodcau) and says so on stderr; -dcsafe and -dcpriv are
refused there.
`

// cpFlags are the flags of ferry cp.
type cpFlags struct {
	active  bool
	verbose bool
	quiet   bool
	off     int64
	length  int64

	parallel     int
	tcpBuffer    sizeFlag
	blockSize    sizeFlag
	sbs          sizeFlag // -sbs
	progress     bool     // -vb
	restart      bool     // -rst
	retries      int
	interval     time.Duration
	timeout      time.Duration
	stallTimeout time.Duration
	verify       bool
	checksumAlg  string
	fast         bool
	noTPT        bool      // -notpt
	stripe       bool      // -stripe
	gsi          *gsiFlags // nil: the defaults
}

// Defaults of the restart flags, those of globus-url-copy.
const (
	defaultRetries      = 5
	defaultStallTimeout = 600 * time.Second
)

// modeE reports whether the flags ask for MODE E.
func (f *cpFlags) modeE() bool { return f.parallel > 1 || f.fast }

// resumable reports whether local files are written in place with resume
// state: MODE E transfers and -rst.
func (f *cpFlags) resumable() bool { return f.modeE() || f.restart }

// retryPolicy is the client.RetryPolicy of the flags.
func (f *cpFlags) retryPolicy() client.RetryPolicy {
	p := client.RetryPolicy{StallTimeout: f.stallTimeout, Interval: f.interval, Timeout: f.timeout}
	if f.restart {
		p.Retries = f.retries
	}
	return p
}

// sizeFlag is a byte count flag that takes K, M and G suffixes.
type sizeFlag int64

func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// parseSize parses a byte count: plain digits, or digits followed by K, M
// or G (optionally with B: KB, MiB...), meaning powers of 1024, as
// globus-url-copy reads -tcp-bs and -bs.
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || t == "" || t[0] == '+' || t[0] == '-' {
		return 0, fmt.Errorf("bad size %q: want bytes, or a number with K, M or G", s)
	}
	if n > math.MaxInt32/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

func runCp(ctx context.Context, e *env, args []string) error { return runCopy(ctx, e, args, false) }

// cpFlagGroups orders the help of ferry cp and ferry sync.
var cpFlagGroups = []struct {
	title string
	names []string
}{
	{"Many files (trees, wildcards, lists, sync)", []string{"r", "cd", "links", "preserve", "f", "df", "cc", "pp", "sync", "sync-level", "delete", "dry-run", "json", "list"}},
	{"Performance", []string{"p", "tcp-bs", "bs", "fast", "stripe", "sbs", "notpt", "active"}},
	{"Part of a file", []string{"off", "len"}},
	{"Reliability and checks", []string{"rst", "rst-retries", "rst-interval", "rst-timeout", "stall-timeout", "verify-checksum", "checksum-alg"}},
	{"Output", []string{"q", "v", "vb"}},
	{"Security (gsiftp://)", []string{"nodcau", "dcsafe", "dcpriv", "ss", "cert", "key", "nodelegate"}},
}

// syncHiddenFlags are the flags of ferry cp that ferry sync's help leaves
// out: it implies -r and -sync, and lists nothing.
var syncHiddenFlags = map[string]bool{"r": true, "sync": true, "list": true}

// printFlagGroups prints the flags of fs in cpFlagGroups' order, as
// flag.PrintDefaults would, each group under its title; flags in no
// group come last, flags in hide not at all.
func printFlagGroups(fs *flag.FlagSet, hide map[string]bool) {
	w := fs.Output()
	seen := maps.Clone(hide)
	if seen == nil {
		seen = map[string]bool{}
	}
	one := func(f *flag.Flag) {
		seen[f.Name] = true
		name, usage := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if d := f.DefValue; d != "" && d != "false" && d != "0" {
			line += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintln(w, line)
	}
	for _, g := range cpFlagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, n := range g.names {
			if f := fs.Lookup(n); f != nil && !hide[n] {
				one(f)
			}
		}
	}
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			rest = append(rest, f)
		}
	})
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nOther:\n")
		for _, f := range rest {
			one(f)
		}
	}
}

// runCopy runs ferry cp, or with syncMode ferry sync (cp -r -sync).
func runCopy(ctx context.Context, e *env, args []string, syncMode bool) error {
	name := "cp"
	if syncMode {
		name = "sync"
	}
	fs, f, jf, listURL := newCopyFlagSet(commands[name], e, syncMode)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "cd" {
			jf.cdSet = true
		}
	})
	if !jf.cdSet && jf.recursive {
		jf.createDirs = true
	}
	if err := checkCopyFlags(f, jf); err != nil {
		return err
	}
	if *listURL != "" {
		if fs.NArg() != 0 {
			return usagef("-list takes no other arguments")
		}
		return runList(ctx, e, *f, *listURL)
	}
	if f.off < 0 {
		return usagef("-off must not be negative")
	}
	if f.length == 0 || f.length < -1 {
		return usagef("-len must be positive (or -1 for all)")
	}
	reqs, err := copyRequests(e, fs, jf)
	if err != nil {
		return err
	}
	if err := f.gsi.mixedThirdParty(e.stderr, reqs, f.noTPT); err != nil {
		return err
	}
	if jf.wanted() || len(reqs) != 1 || isPattern(reqs[0].Src) {
		if f.off > 0 || f.length > 0 {
			return usagef("-off and -len copy part of one file; they do not go with -r, -f, -sync or wildcards")
		}
		return runJob(ctx, e, *f, *jf, reqs)
	}
	return copyOne(ctx, e, name, *f, jf.createDirs, reqs[0])
}

// newCopyFlagSet makes the flag set of ferry cp (or, with syncMode, ferry
// sync) with its grouped help, and the flags it fills: those of a copy,
// those of a job, and -list.
func newCopyFlagSet(c0 *command, e *env, syncMode bool) (fs *flag.FlagSet, f *cpFlags, jf *jobFlags, listURL *string) {
	fs = newFlagSet(c0, e)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: ferry %s %s\n\n%s\n", c0.name, c0.usage, c0.summary)
		var hide map[string]bool
		if syncMode {
			hide = syncHiddenFlags
		}
		printFlagGroups(fs, hide)
		if syncMode {
			fmt.Fprint(w, syncHelp)
		}
		fmt.Fprint(w, cpHelp)
	}
	f = &cpFlags{}
	jf = &jobFlags{mirror: syncMode}
	fs.BoolVar(&f.active, "active", false, "active data connections: the client listens (EPRT/PORT)")
	fs.BoolVar(&f.verbose, "v", false, "print each file copied, the bytes and the rate to stderr")
	fs.BoolVar(&f.quiet, "q", false, "print nothing but errors (overrides -v)")
	fs.Int64Var(&f.off, "off", 0, "copy from byte `OFFSET` of SRC, to the same offset of DST")
	fs.Int64Var(&f.length, "len", -1, "copy at most `N` bytes (-1: to the end)")
	fs.IntVar(&f.parallel, "p", 1, "`N` parallel data connections; above 1 uses MODE E (extended block mode)")
	fs.Var(&f.tcpBuffer, "tcp-bs", "TCP buffer `SIZE` of the data connections (also sent as SITE RETRBUFSIZE/STORBUFSIZE); 0: system default")
	fs.Var(&f.blockSize, "bs", "MODE E block `SIZE` of uploads; 0: 1M")
	fs.Var(&f.sbs, "sbs", "with -stripe: stripe block `SIZE` of uploads (blocked layout) and of third-party copies; 0: 1M")
	fs.BoolVar(&f.progress, "vb", false, "show progress on stderr every second: bytes, average and current rate (one file: each data connection's too)")
	fs.BoolVar(&f.restart, "rst", false, "retry failed transfers and resume them where they stopped")
	fs.IntVar(&f.retries, "rst-retries", defaultRetries, "with -rst: retry `N` times")
	fs.DurationVar(&f.interval, "rst-interval", client.DefaultRetryInterval, "with -rst: wait `DURATION` before the first retry, doubled after each further failure")
	fs.DurationVar(&f.timeout, "rst-timeout", 0, "with -rst: give up after `DURATION` in all; 0: no limit")
	fs.DurationVar(&f.stallTimeout, "stall-timeout", defaultStallTimeout, "end a transfer (or, with -rst, the attempt) when no data moved for `DURATION`; 0: never")
	fs.BoolVar(&f.verify, "verify-checksum", false, "after the copy, compare the server's checksum (CKSM) with the local file's")
	fs.StringVar(&f.checksumAlg, "checksum-alg", "MD5", "checksum algorithm `NAME` for -verify-checksum and -sync-level 3: MD5, ADLER32, SHA1, SHA256, SHA512, CRC32C")
	fs.BoolVar(&f.fast, "fast", false, "use MODE E (even with -p 1), keep its data connections open and reuse them for the next transfer, as globus-url-copy -fast")
	fs.BoolVar(&f.noTPT, "notpt", false, "server to server: route the bytes through this client instead of a third-party transfer")
	fs.BoolVar(&f.stripe, "stripe", false, "striped (MODE E): uploads ask for striped passive addresses (SPAS) and send to every stripe; downloads accept data connections from a striped server's movers; server to server, the destination gets SPAS and the source SPOR")
	fs.BoolVar(&jf.recursive, "r", syncMode, "copy directories with everything below them")
	fs.BoolVar(&jf.createDirs, "cd", false, "create missing destination directories and their parents (on by default with -r; -cd=false turns it off)")
	fs.StringVar(&jf.links, "links", "", "symbolic links in the source, `POLICY`: follow (copy what they point to; the default, as globus-url-copy), ignore, or copy (recreate the link)")
	fs.BoolVar(&jf.preserve, "preserve", false, "give copies the source's modification time (MFMT) and permission bits (SITE CHMOD)")
	fs.StringVar(&jf.listFile, "f", "", "read source/destination URL pairs from `FILE`, one pair a line (\"quoted\" if they hold spaces; # comments); - is stdin")
	fs.StringVar(&jf.dumpFile, "df", "", "write the pairs that failed to `FILE` in the -f format, to run again with -f; if FILE exists, it is read instead of the other sources (as globus-url-copy); removed when all succeed")
	fs.IntVar(&jf.concurrency, "cc", 0, fmt.Sprintf("copy `N` files at once, each worker with its own sessions; 0: %d for many files", job.DefaultWorkers))
	fs.BoolVar(&jf.pipeline, "pp", true, "pipeline small files (up to 64 MiB) in batches on each session: MODE E with cached data connections; no round trip per download, nor per upload or third-party copy to a Ferry server (STOR-DRAIN), one per upload or third-party copy to others (the default; -pp=false copies them one by one)")
	fs.BoolVar(&jf.sync, "sync", syncMode, "copy only files the destination lacks or that differ at -sync-level")
	fs.IntVar(&jf.syncLevel, "sync-level", job.DefaultSyncLevel, "with -sync, `LEVEL`: 0 copy if missing; 1 also if the size differs; 2 also if the destination is older; 3 if the size or checksum (-checksum-alg) differs")
	fs.BoolVar(&jf.del, "delete", false, "with -r: remove destination files and directories the source does not have")
	fs.BoolVar(&jf.dryRun, "dry-run", false, "print what would be created, copied and deleted, and do nothing")
	fs.BoolVar(&jf.json, "json", false, "machine-readable output on stdout: a JSON object per file and a summary object")
	listURL = fs.String("list", "", "list `URL` (names, directories with /) like globus-url-copy -list, and copy nothing; names starting with \".\" are left out, as by ferry ls without -a")
	f.gsi = &gsiFlags{}
	f.gsi.register(fs, true)
	return fs, f, jf, listURL
}

// checkCopyFlags refuses flag values and combinations that ferry cp and
// ferry sync cannot run (those of -off and -len come later, after
// -list), and upper-cases -checksum-alg.
func checkCopyFlags(f *cpFlags, jf *jobFlags) error {
	if err := f.gsi.check(); err != nil {
		return err
	}
	if f.parallel < 1 || f.parallel > 64 {
		return usagef("-p must be 1 to 64")
	}
	if f.sbs != 0 && !f.stripe {
		return usagef("-sbs needs -stripe")
	}
	if jf.concurrency < 0 || jf.concurrency > 256 {
		return usagef("-cc must be 0 to 256")
	}
	if jf.syncLevel < 0 || jf.syncLevel > 3 {
		return usagef("-sync-level must be 0 to 3")
	}
	if jf.del && !jf.recursive {
		return usagef("-delete needs -r (or ferry sync)")
	}
	if f.retries < 0 || f.interval < 0 || f.timeout < 0 || f.stallTimeout < 0 {
		return usagef("-rst-retries, -rst-interval, -rst-timeout and -stall-timeout must not be negative")
	}
	f.checksumAlg = strings.ToUpper(f.checksumAlg)
	if _, err := checksum.New(f.checksumAlg); (f.verify || jf.syncLevel == job.SyncChecksum) && err != nil {
		return usagef("-checksum-alg: %v", err)
	}
	return nil
}

// copyRequests returns the source and destination pairs to copy: those
// of the -f list file, or the SRC DST arguments; a source URL's "?" is
// a wildcard. As with globus-url-copy, an existing -df dump file is the
// list file (jf.listFile is set to it), and a note says so.
func copyRequests(e *env, fs *flag.FlagSet, jf *jobFlags) ([]job.URLPair, error) {
	var reqs []job.URLPair
	if jf.dumpFile != "" {
		if _, err := os.Stat(jf.dumpFile); err == nil {
			// As globus-url-copy: an existing dump file is the input.
			jf.listFile = jf.dumpFile
			fmt.Fprintln(e.stderr, dumpFileNote(jf.dumpFile, fs.Args()))
		}
	}
	switch {
	case jf.listFile != "":
		if fs.NArg() != 0 && jf.listFile != jf.dumpFile {
			return nil, usagef("-f takes its pairs from the file; give no SRC DST")
		}
		var err error
		if reqs, err = readListFile(e, jf.listFile); err != nil {
			return nil, err
		}
	case fs.NArg() != 2:
		return nil, usagef("want SRC DST")
	default:
		reqs = []job.URLPair{{Src: fs.Arg(0), Dst: fs.Arg(1)}}
	}
	for i := range reqs {
		reqs[i].Src = wildcardURL(reqs[i].Src)
	}
	return reqs, nil
}

// copyOne copies a single file, req, for the command name (cp or sync):
// createDirs (-cd) creates the missing directories above the
// destination.
func copyOne(ctx context.Context, e *env, name string, f cpFlags, createDirs bool, req job.URLPair) error {
	src, err := parseLocation(req.Src)
	if err != nil {
		return usagef("%v", err)
	}
	dst, err := parseLocation(req.Dst)
	if err != nil {
		return usagef("%v", err)
	}
	if src.kind != locStdio {
		if fi, err := statLocal(src); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory (copy it with -r)", src)
		}
	}
	if err := resolveDestination(src, &dst); err != nil {
		return err
	}
	c := &copier{env: e, flags: f, opts: clientOptions{active: f.active, striped: f.stripe, gsi: f.gsi},
		sessions: map[string]*client.Session{}}
	// After Ctrl-C (ctx done) the sessions close without QUIT.
	defer c.closeSessions(ctx)
	if !f.quiet {
		c.notes = e.stderr
	}
	if err := c.prepare(ctx, src, &dst, createDirs); err != nil {
		return err
	}
	c.startProgress(src)
	start := time.Now()
	n, err := c.copy(ctx, src, dst)
	if c.progress != nil {
		c.progress.done()
	}
	if err != nil {
		return withNote(e, name, err)
	}
	if f.verbose && !f.quiet {
		d := time.Since(start)
		fmt.Fprintf(e.stderr, "%s -> %s: %d bytes in %v (%s/s)\n", src, dst, n, d.Round(time.Millisecond), humanBytes(float64(n)/max(d.Seconds(), 1e-6)))
	}
	return nil
}

// startProgress starts the progress display of a single copy from src.
// -vb reports progress anywhere; on a terminal a live display is shown
// anyway (without the line per data connection unless -vb).
func (c *copier) startProgress(src location) {
	if tty, _ := terminal(c.env.stderr); !c.flags.quiet && (c.flags.progress || tty) {
		c.progress = newProgressPrinterStreams(c.env.stderr, c.flags.progress)
		size := int64(-1)
		if fi, err := statLocal(src); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		c.progress.begin(path.Base(src.path), size)
	}
}

// wildcardURL lets a source URL hold the wildcard "?": in ftp:// and
// gsiftp:// URLs it would start a query, which FTP has no use for, so it
// is escaped as a path character (which the wildcard expansion reads as
// "any one character"; a name with a literal "?" still matches).
func wildcardURL(arg string) string {
	scheme, _, ok := strings.Cut(arg, "://")
	switch strings.ToLower(scheme) {
	case "ftp", "gsiftp":
	default:
		return arg
	}
	if !ok || !strings.Contains(arg, "?") {
		return arg
	}
	return strings.ReplaceAll(arg, "?", "%3f") // lower case: see parseLocation
}

// statLocal stats a local location; remote ones give an error.
func statLocal(l location) (os.FileInfo, error) {
	if l.kind != locLocal {
		return nil, errors.New("not local")
	}
	return os.Stat(l.path)
}

// resolveDestination appends SRC's base name to a destination that is a
// directory: an existing local directory, or any path ending in "/".
func resolveDestination(src location, dst *location) error {
	var isDir bool
	switch dst.kind {
	case locLocal:
		isDir = strings.HasSuffix(dst.path, "/") || strings.HasSuffix(dst.path, string(filepath.Separator))
		if fi, err := os.Stat(dst.path); err == nil && fi.IsDir() {
			isDir = true
		}
	case locRemote:
		isDir = strings.HasSuffix(dst.path, "/")
	}
	if !isDir {
		return nil
	}
	var base string
	switch src.kind {
	case locLocal:
		base = filepath.Base(src.path)
	case locRemote:
		base = path.Base(src.path)
	}
	if base == "" || base == "." || base == "/" || base == ".." || base == string(filepath.Separator) {
		return usagef("%s is a directory; name the destination file", dst)
	}
	switch dst.kind {
	case locLocal:
		dst.path = filepath.Join(dst.path, base)
	case locRemote:
		dst.path += base
	}
	dst.display = strings.TrimSuffix(dst.display, "/") + "/" + base
	return nil
}

// copier runs one ferry cp, or the copies of one worker of a job.
type copier struct {
	env      *env
	flags    cpFlags
	opts     clientOptions
	progress *progressPrinter // nil without -vb

	// prog, when not nil, receives the progress of the current copy
	// (a job's worker); it replaces progress.
	prog func(client.Progress)
	// sessions, when not nil, keeps one session per endpoint for the
	// copies that follow (a job's worker, or the looks before a single
	// copy); else each copy hangs up. closeSessions ends them.
	sessions map[string]*client.Session
	// notes, when not nil, gets what a single copy tells the user on the
	// way (that it resumes); nil in jobs and with -q.
	notes io.Writer
}

// notef prints a note of a single copy.
func (c *copier) notef(format string, args ...any) {
	if c.notes != nil {
		fmt.Fprintf(c.notes, "ferry cp: "+format+"\n", args...)
	}
}

// closeSessions ends the kept sessions (without QUIT once ctx is done).
func (c *copier) closeSessions(ctx context.Context) {
	for _, s := range c.sessions {
		closeSession(ctx, s)
	}
	c.sessions = map[string]*client.Session{}
}

// progressFunc is the Progress callback of the transfers.
func (c *copier) progressFunc() func(client.Progress) {
	if c.prog != nil {
		return c.prog
	}
	if c.progress == nil {
		return nil
	}
	return c.progress.update
}

// getenv is the environment of the copy.
func (c *copier) getenv(k string) string {
	if c.opts.getenv != nil {
		return c.opts.getenv(k)
	}
	return os.Getenv(k)
}

// session returns a restartable session for the remote location l: a
// new one, or with sessions the one kept for l's endpoint.
func (c *copier) session(l location) *client.Session { return c.sessionAs(l, "") }

// sessionAs is session for a role: a third-party copy between two paths
// of one server needs two control connections.
func (c *copier) sessionAs(l location, role string) *client.Session {
	key := role + endpointKey(l)
	if s, ok := c.sessions[key]; ok {
		return s
	}
	s := &client.Session{
		Dial: func(ctx context.Context) (*client.Conn, error) {
			return connect(ctx, l, c.opts)
		},
		Retry: c.flags.retryPolicy(),
	}
	if c.sessions != nil {
		c.sessions[key] = s
	}
	return s
}

// tptDest is the session of a third-party copy's destination: the one
// the endpoint has (logged in already when it was planned), unless the
// source is on the same endpoint, as a third-party copy needs two control
// connections.
func (c *copier) tptDest(src, dst location) *client.Session {
	if endpointKey(src) != endpointKey(dst) {
		return c.session(dst)
	}
	return c.sessionAs(dst, "third-party destination ")
}

// release ends a copy's use of s: it hangs up unless s is kept.
func (c *copier) release(ctx context.Context, s *client.Session) {
	if c.sessions == nil {
		closeSession(ctx, s)
	}
}

// limit returns the RetrieveOptions.Length / io limit of the flags: 0 for
// "to the end".
func (c *copier) limit() int64 { return max(c.flags.length, 0) }

func (c *copier) copy(ctx context.Context, src, dst location) (int64, error) {
	switch {
	case src.kind == locRemote && dst.kind == locRemote:
		n, err := c.remoteToRemote(ctx, src, dst)
		return n, c.dirSource(ctx, src, err)
	case src.kind == locRemote:
		n, err := c.download(ctx, src, dst)
		return n, c.dirSource(ctx, src, err)
	case dst.kind == locRemote:
		return c.upload(ctx, src, dst)
	default:
		return c.localCopy(ctx, src, dst)
	}
}

// openSource opens a local or standard-input source, positioned at -off
// and limited to -len. size is the number of bytes it will give, or -1.
// An *os.File stays an *os.File (or an *io.LimitedReader of one), so that
// the copy can use sendfile or copy_file_range.
func (c *copier) openSource(src location) (r io.Reader, size int64, done func(), err error) {
	off, n := c.flags.off, c.limit()
	if src.kind == locStdio {
		if off > 0 {
			if _, err := io.CopyN(io.Discard, c.env.stdin, off); err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, nil, &opError{what: "read standard input", err: err}
			}
		}
		r = c.env.stdin
		if n > 0 {
			r = &io.LimitedReader{R: r, N: n}
		}
		return r, -1, func() {}, nil
	}
	f, err := os.Open(src.path)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = fmt.Errorf("%s is a directory", src.path)
	}
	if err == nil && off > 0 {
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	size = -1
	if fi.Mode().IsRegular() {
		size = max(fi.Size()-off, 0)
		if n > 0 {
			size = min(size, n)
		}
	}
	r = f
	if n > 0 {
		r = &io.LimitedReader{R: f, N: n}
	}
	return r, size, func() { f.Close() }, nil
}

// localCopy copies between local files and standard input and output.
func (c *copier) localCopy(ctx context.Context, src, dst location) (int64, error) {
	r, _, done, err := c.openSource(src)
	if err != nil {
		return 0, err
	}
	defer done()
	sink, err := c.openSink(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(sink.w, ctxReader{ctx, r})
	if err == nil {
		err = sink.commit()
	}
	if err != nil {
		sink.abort()
		return n, &opError{what: fmt.Sprintf("copy %s to %s", src, dst), err: err}
	}
	return n, nil
}

// ctxReader stops a local copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// upload stores a local file or standard input on a server.
func (c *copier) upload(ctx context.Context, src, dst location) (int64, error) {
	if src.kind == locLocal {
		return c.uploadFile(ctx, src, dst)
	}
	r, size, done, err := c.openSource(src)
	if err != nil {
		return 0, err
	}
	defer done()
	return c.uploadStream(ctx, r, size, dst)
}

// uploadFile stores a local file on a server through a restartable
// session; MODE E uploads (and -rst) keep the acknowledged ranges in a
// state file so that a later run resumes.
func (c *copier) uploadFile(ctx context.Context, src, dst location) (int64, error) {
	f, err := os.Open(src.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.IsDir() {
		return 0, fmt.Errorf("%s is a directory", src.path)
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or device has no offsets: stream it.
		var r io.Reader = f
		if n := c.limit(); n > 0 {
			r = io.LimitReader(f, n)
		}
		return c.uploadStream(ctx, r, -1, dst)
	}
	off := c.flags.off
	size := max(fi.Size()-off, 0)
	if n := c.limit(); n > 0 {
		size = min(size, n)
	}
	opts := &client.StoreOptions{
		Offset:          off,
		Parallel:        c.flags.parallel,
		BlockSize:       int(c.flags.blockSize),
		TCPBuffer:       int(c.flags.tcpBuffer),
		ModeE:           c.flags.fast || c.flags.stripe,
		Striped:         c.flags.stripe,
		StripeBlockSize: int64(c.flags.sbs),
		Reuse:           c.flags.fast,
		Progress:        c.progressFunc(),
	}
	var saver *stateSaver
	if c.flags.resumable() {
		abs, err := filepath.Abs(src.path)
		if err != nil {
			return 0, err
		}
		name, err := uploadStatePath(c.getenv, abs, dst.String())
		if err != nil {
			return 0, err
		}
		want := resumeState{source: abs, dest: dst.String(), size: fi.Size(), mtime: fi.ModTime().UnixNano(),
			offset: off, length: c.flags.length}
		if st, err := readState(name); err == nil && st.matches(want) {
			want.ranges = st.ranges
			opts.Restart = st.ranges
			if k := st.ranges.Total(); k > 0 {
				c.notef("resuming the upload to %s: %s already on the server", dst, ofSize(k, fi.Size()))
			}
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return 0, err
		}
		saver = &stateSaver{name: name, st: want}
		opts.Acknowledged = func(rs client.RangeSet) { _ = saver.update(rs, false) }
	}
	s := c.session(dst)
	defer c.release(ctx, s)
	n, err := s.Upload(ctx, f, size, dst.path, opts)
	if err != nil {
		err = &opError{what: "upload to " + dst.String(), err: err}
		if saver == nil {
			return n, c.leftOnServer(ctx, dst, n, size, err)
		}
		_ = saver.flush()
		saver.mu.Lock()
		kept := saver.st.ranges.Total()
		saver.mu.Unlock()
		if kept == 0 {
			// No range to resume from: no state to keep.
			os.Remove(saver.name)
			return n, c.leftOnServer(ctx, dst, n, size, err)
		}
		return n, &leftError{err: err, note: fmt.Sprintf("%s on the server is incomplete: %s acknowledged; run the same command again to resume, or remove it with: %s",
			dst, ofSize(kept, size), removeHint(dst))}
	}
	if saver != nil {
		os.Remove(saver.name)
	}
	if c.flags.verify {
		if err := c.verify(ctx, s, dst, src.path, off, size); err != nil {
			return n, err
		}
	}
	return n, nil
}

// uploadStream stores standard input or a non-seekable local file (at
// most size bytes, -1: unknown) in stream mode.
func (c *copier) uploadStream(ctx context.Context, r io.Reader, size int64, dst location) (int64, error) {
	s := c.session(dst)
	defer c.release(ctx, s)
	conn, err := s.Conn(ctx)
	if err != nil {
		return 0, err
	}
	n, err := conn.Store(ctx, dst.path, r, &client.StoreOptions{Size: size, Offset: c.flags.off,
		TCPBuffer: int(c.flags.tcpBuffer), Progress: c.progressFunc()})
	if err != nil {
		return n, c.leftOnServer(ctx, dst, n, size, &opError{what: "upload to " + dst.String(), err: err})
	}
	return n, nil
}

// leftOnServer is the error of an upload that failed after n bytes of
// size (-1: unknown) were sent: when bytes went, or the upload was
// interrupted once under way, the server may keep a partial file, and
// the note says so.
func (c *copier) leftOnServer(ctx context.Context, dst location, n, size int64, err error) error {
	if n == 0 && ctx.Err() == nil {
		return err
	}
	sent := ""
	if n > 0 {
		sent = " (" + ofSize(n, size) + " sent)"
	}
	return &leftError{err: err, note: fmt.Sprintf("the server may keep a partial %s%s; run the same command again to replace it, or remove it with: %s",
		dst, sent, removeHint(dst))}
}

// removeHint says how to remove what an interrupted upload to dst left:
// the file itself (GCT, or a Ferry server with -upload-in-place), or the
// hidden part file a Ferry server keeps until an upload completes
// (docs/extensions.md).
func removeHint(dst location) string {
	shown := dst.String()
	i := strings.LastIndexByte(shown, '/')
	base := shown[i+1:]
	if i < 0 || base == "" || len(base) > 200 {
		return "ferry rm " + shown
	}
	part := shown[:i+1] + "." + base + xfer.PartSuffix
	return "ferry rm " + shown + " (a Ferry server keeps it as " + part + " until it is complete: ferry rm " + part + ")"
}

// verify compares the server's checksum of length bytes of remote from
// off with the local file's.
func (c *copier) verify(ctx context.Context, s *client.Session, remote location, local string, off, length int64) error {
	alg := c.flags.checksumAlg
	conn, err := s.Conn(ctx)
	if err != nil {
		return &opError{what: "verify " + remote.String(), err: err}
	}
	rsum, err := conn.Checksum(ctx, alg, remote.path, off, length)
	if err != nil {
		return &opError{what: "checksum of " + remote.String(), err: err}
	}
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	lsum, err := checksum.Compute(ctx, f, fi.Size(), off, length, alg)
	if err != nil {
		return fmt.Errorf("checksum of %s: %w", local, err)
	}
	if !strings.EqualFold(lsum, rsum) {
		return fmt.Errorf("checksum mismatch (%s): %s has %s, %s has %s", alg, local, lsum, remote, rsum)
	}
	return nil
}

// download retrieves a file from a server into a local file or standard
// output. A regular local file is never left looking complete when the
// copy fails or ferry is killed (see downloadResumable).
func (c *copier) download(ctx context.Context, src, dst location) (int64, error) {
	if dst.kind == locStdio {
		return c.downloadStdout(ctx, src)
	}
	fi, err := os.Stat(dst.path)
	switch {
	case err == nil && fi.IsDir():
		return 0, fmt.Errorf("%s is a directory", dst.path)
	case err == nil && !fi.Mode().IsRegular():
		return c.downloadDirect(ctx, src, dst)
	}
	return c.downloadResumable(ctx, src, dst)
}

// downloadDirect downloads into a local file that is no regular file (a
// device, a FIFO), writing it directly.
func (c *copier) downloadDirect(ctx context.Context, src, dst location) (int64, error) {
	sink, err := c.openSink(dst)
	if err != nil {
		return 0, err
	}
	s := c.session(src)
	defer c.release(ctx, s)
	n, err := s.Download(ctx, src.path, sink.f, c.retrieveOptions())
	if err == nil {
		if err = sink.commit(); err != nil {
			err = &opError{what: "write " + dst.String(), err: err}
		}
	} else {
		err = &opError{what: "download " + src.String(), err: err}
	}
	if err != nil {
		sink.abort()
		return n, err
	}
	return n, nil
}

// retrieveOptions are the RetrieveOptions of the flags.
func (c *copier) retrieveOptions() *client.RetrieveOptions {
	return &client.RetrieveOptions{
		Offset:    c.flags.off,
		Length:    c.limit(),
		Parallel:  c.flags.parallel,
		TCPBuffer: int(c.flags.tcpBuffer),
		ModeE:     c.flags.fast || c.flags.stripe,
		Reuse:     c.flags.fast,
		Progress:  c.progressFunc(),
	}
}

// downloadStdout streams a file to standard output. A reader that goes
// away (ferry cp URL - | head) ends the copy quietly, as it does cat's.
func (c *copier) downloadStdout(ctx context.Context, src location) (int64, error) {
	if f, ok := c.env.stdout.(*os.File); ok && f == os.Stdout {
		// A write to a closed pipe fails with EPIPE instead of killing
		// the process with SIGPIPE.
		sigpipe := make(chan os.Signal, 1)
		signal.Notify(sigpipe, syscall.SIGPIPE)
		defer signal.Stop(sigpipe)
	}
	s := c.session(src)
	defer c.release(ctx, s)
	conn, err := s.Conn(ctx)
	if err != nil {
		return 0, err
	}
	n, err := conn.Retrieve(ctx, src.path, c.env.stdout, &client.RetrieveOptions{Offset: c.flags.off, Length: c.limit(),
		TCPBuffer: int(c.flags.tcpBuffer), Progress: c.progressFunc()})
	if errors.Is(err, syscall.EPIPE) {
		return n, nil
	}
	if err != nil {
		return n, &opError{what: "download " + src.String(), err: err}
	}
	return n, nil
}

// downloadResumable downloads into the local file dst so that neither a
// failure nor a crash of ferry leaves what looks like a complete file
// under its name. A small file, and one that replaces an existing file,
// goes to a temporary file renamed into place when complete
// (downloadWhole). Larger new files, and part of a file (-off/-len), are
// written in place with the ranges stored so far in DST.ferry-ranges,
// which exists before the file does and is removed at the end: a failed
// or killed copy leaves it beside the file, and the next run of the same
// copy resumes from it.
func (c *copier) downloadResumable(ctx context.Context, src, dst location) (int64, error) {
	s := c.session(src)
	defer c.release(ctx, s)
	conn, err := s.Conn(ctx)
	if err != nil {
		return 0, err
	}
	want, err := c.sourceState(ctx, conn, src, dst)
	if err != nil {
		return 0, err
	}
	name := dst.path + rangesSuffix
	st, err := readState(name)
	resuming := err == nil && st.matches(want)
	whole := c.flags.off == 0 && c.flags.length < 0
	_, statErr := os.Stat(dst.path)
	created := errors.Is(statErr, os.ErrNotExist)
	if created && resuming && st.ranges.Total() > 0 {
		// The file that held the ranges is gone.
		resuming = false
	}
	if !resuming && whole && (!created || want.size >= 0 && want.size <= batchMaxSize) {
		// A small file is not worth a state file (written and synced
		// before the first byte, removed at the end), and an existing
		// file stays as it is until the new one is complete: a
		// temporary file, copied again whole if this run fails.
		return c.downloadWhole(ctx, s, src, dst, !errors.Is(err, os.ErrNotExist))
	}
	if resuming {
		want.ranges = st.ranges
		c.notef("resuming %s: %s already here (%s lists them)", dst, ofSize(st.ranges.Total(), want.size), name)
	}
	return c.downloadInPlace(ctx, s, src, dst, inPlace{state: name, want: want, resuming: resuming, whole: whole, created: created})
}

// sourceState is the resume state of a download of src to dst before any
// byte arrived: the source's size and modification time when the server
// tells them. A source the server says is missing (550 to SIZE) fails the
// download.
func (c *copier) sourceState(ctx context.Context, conn *client.Conn, src, dst location) (resumeState, error) {
	want := resumeState{source: src.String(), dest: dst.path, size: -1, offset: c.flags.off, length: c.flags.length}
	var re *client.ReplyError
	if size, err := conn.Size(ctx, src.path); err == nil {
		want.size = size
	} else if errors.As(err, &re) && re.Reply.Code == 550 {
		return want, &opError{what: "download " + src.String(), err: err}
	}
	if mt, err := conn.ModTime(ctx, src.path); err == nil {
		want.mtime = mt.UnixNano()
	}
	return want, nil
}

// inPlace is how downloadInPlace writes a file.
type inPlace struct {
	state    string      // the state file, DST.ferry-ranges
	want     resumeState // what it is to hold, with the ranges already here
	resuming bool        // continue from the ranges of the state file
	whole    bool        // the whole file, not -off/-len
	created  bool        // the destination does not exist yet
}

// downloadInPlace writes the download of src into the local file dst
// itself, keeping the ranges stored so far in the state file p.state
// (see downloadResumable). A failure after some bytes arrived leaves the
// state file for the next run; one before, in a file it created, leaves
// nothing.
func (c *copier) downloadInPlace(ctx context.Context, s *client.Session, src, dst location, p inPlace) (int64, error) {
	name, want, created := p.state, p.want, p.created
	flags := os.O_WRONLY | os.O_CREATE
	if !p.resuming && p.whole {
		// A whole new copy: no old bytes may survive in the file.
		flags |= os.O_TRUNC
	}
	if created {
		// Mark the destination incomplete before it exists.
		if err := writeState(name, want); err != nil {
			return 0, fmt.Errorf("write %s: %w", name, err)
		}
	}
	f, err := os.OpenFile(dst.path, flags, 0o666)
	if err != nil {
		if created {
			os.Remove(name)
		}
		return 0, err
	}
	defer f.Close()
	saver := &stateSaver{name: name, st: want, sync: f.Sync}
	// Mark the destination incomplete before a byte lands in it.
	if err := saver.update(want.ranges, true); err != nil {
		return 0, fmt.Errorf("write %s: %w", name, err)
	}
	opts := c.retrieveOptions()
	opts.Restart = want.ranges
	opts.Committed = func(rs client.RangeSet) { _ = saver.update(rs, false) }
	n, err := s.Download(ctx, src.path, f, opts)
	if err != nil {
		saver.mu.Lock()
		kept := saver.st.ranges.Total()
		saver.mu.Unlock()
		err = &opError{what: "download " + src.String(), err: err}
		if kept == 0 && created {
			// Nothing arrived in a file we created: leave no trace.
			f.Close()
			os.Remove(dst.path)
			os.Remove(name)
			return n, err
		}
		_ = saver.flush()
		return n, &leftError{err: err, note: fmt.Sprintf("%s is incomplete: %s are here (%s lists them); run the same command again to resume",
			dst, ofSize(kept, want.size), name)}
	}
	if want.size >= 0 && p.whole {
		// A resumed file may be longer than the source (an older copy).
		err = f.Truncate(want.size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = saver.flush()
		return n, &opError{what: "write " + dst.String(), err: err}
	}
	if err := os.Remove(name); err != nil {
		return n, err
	}
	if c.flags.verify {
		if err := c.verify(ctx, s, src, dst.path, c.flags.off, c.flags.length); err != nil {
			return n, err
		}
	}
	return n, nil
}

// downloadWhole downloads a whole file through a temporary file renamed
// into place when complete; stale, when set, says a state file of
// another copy may be in the way and is removed on success.
func (c *copier) downloadWhole(ctx context.Context, s *client.Session, src, dst location, stale bool) (int64, error) {
	sink, err := openTempSink(dst.path)
	if err != nil {
		return 0, err
	}
	n, err := s.Download(ctx, src.path, sink.f, c.retrieveOptions())
	if err != nil {
		sink.abort()
		return n, &opError{what: "download " + src.String(), err: err}
	}
	if err := sink.commit(); err != nil {
		return n, &opError{what: "write " + dst.String(), err: err}
	}
	if stale {
		os.Remove(dst.path + rangesSuffix)
	}
	if c.flags.verify {
		if err := c.verify(ctx, s, src, dst.path, 0, -1); err != nil {
			return n, err
		}
	}
	return n, nil
}

// remoteToRemote copies a file from one server to another: a third-party
// transfer, or with -notpt through this client.
func (c *copier) remoteToRemote(ctx context.Context, src, dst location) (int64, error) {
	if c.flags.noTPT {
		return c.throughClient(ctx, src, dst)
	}
	return c.thirdParty(ctx, src, dst)
}

// thirdParty moves the file directly between the two servers; with -rst
// a failure dials both again and resumes.
func (c *copier) thirdParty(ctx context.Context, src, dst location) (int64, error) {
	ss, ds := c.session(src), c.tptDest(src, dst)
	defer c.release(ctx, ss)
	defer c.release(ctx, ds)
	dialTogether(ctx, ss, ds)
	opts := &client.ThirdPartyOptions{
		Offset:          c.flags.off,
		Length:          c.limit(),
		Parallel:        c.flags.parallel,
		ModeE:           c.flags.fast || c.flags.stripe,
		Striped:         c.flags.stripe,
		StripeBlockSize: int64(c.flags.sbs),
		TCPBuffer:       int(c.flags.tcpBuffer),
		Progress:        c.progressFunc(),
	}
	n, err := ss.ThirdParty(ctx, src.path, ds, dst.path, opts)
	if err != nil {
		return n, c.leftOnServer(ctx, dst, n, -1, &opError{what: fmt.Sprintf("third-party copy %s to %s", src, dst), err: err})
	}
	if c.flags.verify {
		if err := c.verifyBoth(ctx, ss, src, ds, dst); err != nil {
			return n, err
		}
	}
	return n, nil
}

// verifyBoth compares the checksums (CKSM) of the copied range on both
// servers.
func (c *copier) verifyBoth(ctx context.Context, ss *client.Session, src location, ds *client.Session, dst location) error {
	alg := c.flags.checksumAlg
	sum := func(s *client.Session, l location) (string, error) {
		conn, err := s.Conn(ctx)
		if err != nil {
			return "", &opError{what: "verify " + l.String(), err: err}
		}
		v, err := conn.Checksum(ctx, alg, l.path, c.flags.off, c.flags.length)
		if err != nil {
			return "", &opError{what: "checksum of " + l.String(), err: err}
		}
		return v, nil
	}
	a, err := sum(ss, src)
	if err != nil {
		return err
	}
	b, err := sum(ds, dst)
	if err != nil {
		return err
	}
	if !strings.EqualFold(a, b) {
		return fmt.Errorf("checksum mismatch (%s): %s has %s, %s has %s", alg, src, a, dst, b)
	}
	return nil
}

// throughClient streams a file from one server to another through this
// client: RETR on one connection feeds STOR on the other through a pipe.
func (c *copier) throughClient(ctx context.Context, src, dst location) (int64, error) {
	ss, ds := c.session(src), c.tptDest(src, dst)
	defer c.release(ctx, ss)
	defer c.release(ctx, ds)
	dialTogether(ctx, ss, ds)
	sconn, err := ss.Conn(ctx)
	if err != nil {
		return 0, err
	}
	dconn, err := ds.Conn(ctx)
	if err != nil {
		return 0, err
	}

	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := sconn.Retrieve(tctx, src.path, pw, &client.RetrieveOptions{Offset: c.flags.off, Length: c.limit()})
		if err != nil {
			err = &opError{what: "download " + src.String(), err: err}
			cancel(err)
		}
		// A failed download must not look like the end of the file.
		pw.CloseWithError(err)
	})
	n, err := dconn.Store(tctx, dst.path, pr, &client.StoreOptions{Offset: c.flags.off})
	if err != nil {
		err = &opError{what: "upload to " + dst.String(), err: err}
		cancel(err)
	}
	pr.CloseWithError(errors.New("upload ended"))
	wg.Wait()
	switch {
	case ctx.Err() != nil:
		return n, context.Cause(ctx)
	case context.Cause(tctx) != nil && !errors.Is(context.Cause(tctx), context.Canceled):
		// The first failure; the other side's error is its consequence.
		return n, context.Cause(tctx)
	}
	return n, nil
}

// sink is a local destination being written.
type sink struct {
	w      io.Writer
	f      *os.File  // nil for standard output
	tmp    *tempSink // a regular file written under a temporary name; nil: f is written in place
	remove bool      // in place: remove the file on abort (we created it)
}

// openSink opens a local destination or standard output. A regular file
// (new or existing) is written under a temporary name that commit
// renames into place, so that a failure or a crash leaves nothing that
// looks complete under its name; -off/-len update part of the file in
// place, and other files (devices, FIFOs) are written directly.
func (c *copier) openSink(dst location) (*sink, error) {
	if dst.kind == locStdio {
		return &sink{w: c.env.stdout}, nil
	}
	partial := c.flags.off > 0 || c.flags.length > 0
	fi, err := os.Stat(dst.path)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err
	case exists && fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", dst.path)
	case exists && !fi.Mode().IsRegular(), partial:
		flags := os.O_WRONLY
		if !exists {
			flags |= os.O_CREATE | os.O_EXCL
		}
		f, err := os.OpenFile(dst.path, flags, 0o666)
		if err != nil {
			return nil, err
		}
		s := &sink{w: f, f: f, remove: !exists}
		if c.flags.off > 0 {
			if _, err := f.Seek(c.flags.off, io.SeekStart); err != nil {
				s.abort()
				return nil, err
			}
		}
		return s, nil
	}
	ts, err := openTempSink(dst.path)
	if err != nil {
		return nil, err
	}
	return &sink{w: ts.f, f: ts.f, tmp: ts}, nil
}

// commit finishes a successful copy.
func (s *sink) commit() error {
	switch {
	case s.tmp != nil:
		return s.tmp.commit()
	case s.f == nil:
		return nil
	}
	err := s.f.Close()
	if err != nil && s.remove {
		os.Remove(s.f.Name())
	}
	return err
}

// abort drops a failed copy: a file we created is removed.
func (s *sink) abort() {
	switch {
	case s.tmp != nil:
		s.tmp.abort()
	case s.f != nil:
		s.f.Close()
		if s.remove {
			os.Remove(s.f.Name())
		}
	}
}

// humanBytes formats a byte count (or rate) with a binary unit.
func humanBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
