package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/transfer"
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
until it is complete (see Restart). The bytes of a finished download are
in the page cache, as with cp and globus-url-copy; -fsync waits until
they are on disk, so that a crash of the machine cannot undo a copy
reported done. With -off/-len the destination is
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
-rst-interval, doubled after each failure up to -rst-max-interval (a
minute), for at most -rst-timeout in all, and none after -rst-deadline)
and resumes where it stopped: in MODE E with REST of the ranges already
at the receiver. A new download to a local file of
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
	anyHost bool // -data-any-host: data connections from any host (as globus-url-copy)
	nlb     bool // -nlb: report which leg limited the copy (bottleneck.go)
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
	maxInterval  time.Duration // -rst-max-interval (checkCopyFlags makes its 0 math.MaxInt64); 0 here: the default
	timeout      time.Duration
	deadline     time.Duration // -rst-deadline; 0: none
	deadlineAt   time.Time     // when -rst-deadline passes; set by checkCopyFlags
	stallTimeout time.Duration
	verify       bool
	checksumAlg  string
	fsync        bool
	fast         bool
	noTPT        bool       // -notpt
	stripe       bool       // -stripe
	gsi          *gsiFlags  // nil: the defaults
	history      string     // -history: the history database; "": $FERRY_HISTORY or the default
	concurrency  int        // of a job (-cc), for the history
	pipeline     bool       // of a job (-pp), for the history
	auto         bool       // -auto: let the advisor choose when -p and -tcp-bs are not given
	explicit     bool       // -p or -tcp-bs was given
	sources      int        // -sources: replicas an lfn: download reads from at once
	srcModule    moduleFlag // -src-module (cpmodules.go)
	dstModule    moduleFlag // -dst-module
	tar          bool       // -tar: -r as one tar stream (cptar.go)
}

// Defaults of the restart flags, those of globus-url-copy.
const (
	defaultRetries      = 5
	defaultStallTimeout = 600 * time.Second
)

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

// secondsFlag is a duration flag that also takes a plain number of
// seconds ("30", "1.5"), as globus-url-copy's -rst-interval,
// -rst-timeout and -stall-timeout do; "1m30s" and the other Go durations
// work too.
type secondsFlag time.Duration

func (d *secondsFlag) String() string { return time.Duration(*d).String() }

func (d *secondsFlag) Set(v string) error {
	n, err := parseSeconds(v)
	if err != nil {
		return err
	}
	*d = secondsFlag(n)
	return nil
}

// parseSeconds parses a number of seconds (digits, optionally with a
// fraction) or a Go duration ("500ms", "2m").
func parseSeconds(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t != "" && strings.Trim(t, "0123456789.") == "" {
		sec, err := strconv.ParseFloat(t, 64)
		if err != nil || sec > float64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("bad duration %q: want seconds (30) or a duration (1m30s)", s)
		}
		return time.Duration(sec * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want seconds (30) or a duration (1m30s)", s)
	}
	return d, nil
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
	{"Performance", []string{"auto", "sources", "p", "tcp-bs", "bs", "fast", "stripe", "sbs", "notpt", "active", "data-any-host"}},
	{"Part of a file", []string{"off", "len"}},
	{"Reliability and checks", []string{"rst", "rst-retries", "rst-interval", "rst-max-interval", "rst-timeout", "rst-deadline", "stall-timeout", "st", "verify-checksum", "checksum-alg", "fsync"}},
	{"Output", []string{"q", "v", "vb", "nlb", "nl-bottleneck", "history"}},
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
		switch fl.Name {
		case "cd":
			jf.cdSet = true
		case "p", "tcp-bs":
			f.explicit = true
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
	if err := checkModuleCopy(f, jf.wanted() || len(reqs) != 1 || isPattern(reqs[0].Src) || replica.IsLFN(reqs[0].Src) || replica.IsLFN(reqs[0].Dst)); err != nil {
		return err
	}
	lfn := len(reqs) == 1 && (replica.IsLFN(reqs[0].Src) || replica.IsLFN(reqs[0].Dst))
	if f.nlb && (lfn || f.tar || jf.wanted() || len(reqs) != 1 || isPattern(reqs[0].Src)) {
		fmt.Fprintf(e.stderr, "ferry %s: -nlb reports on a single-file copy only; this copy gets no report\n", name)
	}
	if lfn {
		return copyLFN(ctx, e, name, *f, *jf, reqs[0]) // replica_cp.go
	}
	if f.sources != 1 {
		return usagef("-sources reads one lfn: source from several replicas; SRC is no lfn:/PATH")
	}
	if err := f.gsi.mixedThirdParty(e.stderr, reqs, f.noTPT); err != nil {
		return err
	}
	if f.tar {
		return copyTarTree(ctx, e, *f, *jf, reqs)
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
		if !syncMode {
			fmt.Fprint(w, cpModulesHelp+cpTarHelp)
		}
	}
	f = &cpFlags{}
	jf = &jobFlags{mirror: syncMode}
	fs.BoolVar(&f.active, "active", false, "active data connections: the client listens (EPRT/PORT)")
	fs.BoolVar(&f.verbose, "v", false, "print each file copied, the bytes and the rate to stderr")
	fs.BoolVar(&f.quiet, "q", false, "print nothing but errors (overrides -v)")
	fs.Int64Var(&f.off, "off", 0, "copy from byte `OFFSET` of SRC, to the same offset of DST")
	fs.Int64Var(&f.length, "len", -1, "copy at most `N` bytes (-1: to the end)")
	fs.BoolVar(&f.auto, "auto", true, "without -p and -tcp-bs, let the advisor choose streams, TCP buffer and block size from the history of these hosts, this kernel's limits and the server's features (-v or -vb say what it chose and the predicted ETA); -auto=false: the plain defaults (stream mode, the system's buffers)")
	fs.IntVar(&f.parallel, "p", 1, "`N` parallel data connections; above 1 uses MODE E (extended block mode)")
	fs.Var(&f.tcpBuffer, "tcp-bs", "TCP buffer `SIZE` of the data connections (also sent as SITE RETRBUFSIZE/STORBUFSIZE); 0: system default")
	fs.Var(&f.blockSize, "bs", "MODE E block `SIZE` of uploads; 0: 1M")
	fs.Var(&f.sbs, "sbs", "with -stripe: stripe block `SIZE` of uploads (blocked layout) and of third-party copies; 0: 1M")
	fs.BoolVar(&f.progress, "vb", false, "show progress on stderr every second: bytes, average and current rate (one file: each data connection's too)")
	nlbHelp := "after a single-file copy to or from a server, print to stdout which leg limited it (source read, network, destination write), from the sending end's TCP accounting"
	fs.BoolVar(&f.nlb, "nlb", false, nlbHelp)
	fs.BoolVar(&f.nlb, "nl-bottleneck", false, "same as -nlb")
	fs.BoolVar(&f.restart, "rst", false, "retry failed transfers and resume them where they stopped")
	fs.IntVar(&f.retries, "rst-retries", defaultRetries, "with -rst: retry `N` times")
	f.interval = client.DefaultRetryInterval
	fs.Var((*secondsFlag)(&f.interval), "rst-interval", "with -rst: wait `DURATION` (seconds, or with a unit: 500ms, 2m) before the first retry, doubled after each further failure")
	f.maxInterval = client.DefaultMaxRetryInterval
	fs.Var((*secondsFlag)(&f.maxInterval), "rst-max-interval", "with -rst: the doubling of -rst-interval stops at `DURATION`; the same as -rst-interval: a fixed wait; 0: no bound")
	fs.Var((*secondsFlag)(&f.deadline), "rst-deadline", "with -rst: retry no failure later than `DURATION` after the start; unlike -rst-timeout it stops no attempt under way (globus-url-copy's -rst-timeout); 0: no limit")
	fs.Var((*secondsFlag)(&f.timeout), "rst-timeout", "with -rst: give up after `DURATION` (seconds, or with a unit) in all; 0: no limit")
	f.stallTimeout = defaultStallTimeout
	stall := "end a transfer (or, with -rst, the attempt) when no data moved for `DURATION` (seconds, or with a unit); 0: never"
	fs.Var((*secondsFlag)(&f.stallTimeout), "stall-timeout", stall)
	fs.Var((*secondsFlag)(&f.stallTimeout), "st", "the same as -stall-timeout `DURATION` (globus-url-copy's short name)")
	fs.BoolVar(&f.fsync, "fsync", false, "sync a downloaded local file to disk before it counts as complete (and before its DST.ferry-ranges lists a range): durable across a crash of the machine, at the cost of waiting for the disk")
	fs.BoolVar(&f.verify, "verify-checksum", false, "after the copy, compare the server's checksum (CKSM) with the local file's")
	fs.StringVar(&f.checksumAlg, "checksum-alg", "MD5", "checksum algorithm `NAME` for -verify-checksum and -sync-level 3: MD5, ADLER32, SHA1, SHA256, SHA512, CRC32C")
	fs.BoolVar(&f.fast, "fast", false, "use MODE E (even with -p 1), keep its data connections open and reuse them for the next transfer, as globus-url-copy -fast")
	fs.StringVar(&f.history, "history", "", historyFlagUsage)
	fs.BoolVar(&f.noTPT, "notpt", false, "server to server: route the bytes through this client instead of a third-party transfer")
	fs.IntVar(&f.sources, "sources", 1, "with an lfn: source and a local destination, read different byte ranges from `N` replicas at once (MODE E ranges sized by each one's measured rate), then verify the checksum")
	fs.BoolVar(&f.anyHost, "data-any-host", false, "take data connections from any host, not only the server's control address (as globus-url-copy does; the default of the globus-url-copy drop-in): a striped server's movers connect from their own hosts even without -stripe. With gsiftp:// DCAU still authenticates them; with ftp:// anybody who reaches the port in time could send data")
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
	fs.BoolVar(&jf.json, "json", false, "machine-readable output on stdout: a JSON object per file (with predicted_eta, seconds, when the advisor predicted one) and a summary object; with -vb also a progress object a second (bytes, total_bytes, bytes_per_second, eta)")
	listURL = fs.String("list", "", "list `URL` (names, directories with /) like globus-url-copy -list, and copy nothing; names starting with \".\" are left out, as by ferry ls without -a")
	f.gsi = &gsiFlags{}
	f.gsi.register(fs, true)
	fs.StringVar(&f.gsi.dataCred, "data-cred", "", "gsiftp: data channel credential: `PATH` of a certificate and key (a proxy) or auto (a generated self-signed one), sent to each server (DCSC P) so that both ends of every data connection present it instead of the user's proxy; for servers that do not trust each other's CA")
	if !syncMode {
		registerModuleFlags(fs, f)
	}
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
	if f.retries < 0 || f.interval < 0 || f.maxInterval < 0 || f.timeout < 0 || f.deadline < 0 || f.stallTimeout < 0 {
		return usagef("-rst-retries, -rst-interval, -rst-max-interval, -rst-timeout, -rst-deadline and -stall-timeout must not be negative")
	}
	if f.maxInterval == 0 {
		f.maxInterval = math.MaxInt64 // -rst-max-interval 0: no bound
	}
	if f.deadline > 0 {
		f.deadlineAt = time.Now().Add(f.deadline)
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
	eng := newEngine(e, f, f.stripe, name)
	defer closeEngine(eng)
	var nlb *nlbProbe
	if f.nlb {
		nlb = new(nlbProbe)
		nlb.attach(eng)
	}
	var pp *progressPrinter
	tty, _ := terminal(e.stderr)
	on := func(ev transfer.Event) {
		if nlb != nil {
			nlb.event(ev)
		}
		switch ev.Kind {
		case transfer.EventAuto:
			// Before the transfer, where output is verbose already.
			if !f.quiet && (f.verbose || f.progress || tty) {
				fmt.Fprintln(e.stderr, ev.Note)
			}
		case transfer.EventStart:
			pp = startProgress(e, f, src, ev.Size)
		case transfer.EventProgress:
			if pp != nil {
				pp.updateETA(ev.Progress, ev.ETA)
			}
		case transfer.EventNote:
			if !f.quiet {
				fmt.Fprintf(e.stderr, "ferry cp: %s\n", ev.Note)
			}
		}
	}
	res, err := eng.Copy(ctx, transfer.Request{Src: src.export(), Dst: dst.export(), Options: f.options(), CreateDirs: createDirs}, on)
	if pp != nil {
		pp.done()
	}
	if err != nil {
		return withNote(e, name, err)
	}
	if nlb != nil {
		w := e.stdout
		if dst.kind == locStdio {
			w = e.stderr // stdout holds the data
		}
		nlb.report(src, dst, res.Bytes, res.Start.Add(res.Duration)).write(w)
	}
	if f.verbose && !f.quiet {
		n, d := res.Bytes, res.Duration
		fmt.Fprintf(e.stderr, "%s -> %s: %d bytes in %v (%s/s)\n", src, res.Dst, n, d.Round(time.Millisecond), humanBytes(float64(n)/max(d.Seconds(), 1e-6)))
	}
	return nil
}

// newEngine is the copy engine of the flags for the command tool: it
// dials with the connection settings of f (striped: accept data from a
// striped server's movers) and records in the history of -history. The
// caller ends it with closeEngine.
func newEngine(e *env, f cpFlags, striped bool, tool string) *transfer.Engine {
	o := clientOptions{active: f.active, striped: striped || f.anyHost, gsi: f.gsi, log: e.ctlLog}
	eng := &transfer.Engine{
		Dial: func(ctx context.Context, l transfer.Location) (*client.Conn, error) {
			return connect(ctx, importLocation(l), o)
		},
		Stdin:  e.stdin,
		Stdout: e.stdout,
		Tool:   tool,
		Log:    warnLogger(e),
	}
	eng.DCAU, eng.Prot = dataChannelParams(f.gsi)
	eng.PlainPeerNoDCAU = f.gsi != nil && f.gsi.plainPeer
	if h := historyStore(e, f.history); h != nil {
		eng.History = h
	}
	return eng
}

// options are the transfer.Options of the flags.
func (f cpFlags) options() transfer.Options {
	o := transfer.Options{
		Offset:          f.off,
		Length:          f.length,
		Parallel:        f.parallel,
		TCPBuffer:       int64(f.tcpBuffer),
		BlockSize:       int64(f.blockSize),
		StripeBlockSize: int64(f.sbs),
		Fast:            f.fast,
		Stripe:          f.stripe,
		NoTPT:           f.noTPT,
		Active:          f.active,
		Restart:         f.restart,
		Retries:         f.retries,
		RetryInterval:   f.interval,
		RetryTimeout:    f.timeout,
		StallTimeout:    f.stallTimeout,
		Verify:          f.verify,
		ChecksumAlg:     f.checksumAlg,
		Fsync:           f.fsync,
		Concurrency:     f.concurrency,
		Pipeline:        f.pipeline,
		SrcModule:       f.srcModule.name,
		SrcModuleParams: f.srcModule.params,
		DstModule:       f.dstModule.name,
		DstModuleParams: f.dstModule.params,
	}
	o.MaxRetryInterval, o.RetryDeadline = f.maxInterval, f.deadlineAt
	if f.auto && !f.explicit && !f.hasModules() {
		// The engine asks the advisor (transfer.AutoChoice).
		o.Auto, o.Parallel, o.TCPBuffer = true, 0, 0
	}
	return o
}

// startProgress starts the progress display of a single copy from src:
// -vb reports progress anywhere; on a terminal a live display is shown
// anyway (without the line per data connection unless -vb). It returns
// nil when there is none.
func startProgress(e *env, f cpFlags, src location, size int64) *progressPrinter {
	if e.gucOutput {
		if f.quiet || !f.progress {
			return nil
		}
		return newGUCProgressPrinter(e.stderr)
	}
	tty, _ := terminal(e.stderr)
	if f.quiet || !f.progress && !tty {
		return nil
	}
	pp := newProgressPrinterStreams(e.stderr, f.progress)
	if fi, err := statLocal(src); size < 0 && err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	pp.begin(path.Base(src.path), size)
	return pp
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
