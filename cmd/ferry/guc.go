package main

// The globus-url-copy drop-in: when the ferry binary runs under the name
// globus-url-copy (a symbolic or hard link), it reads globus-url-copy's
// options with their syntax, defaults and meaning, and runs them with
// ferry cp's engine. gucOptions is the one table of those options; the
// tests compare it with the help of the installed globus-url-copy.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/version"
	"github.com/ferrygrid/ferry/internal/wire"
)

// gucName is the program name that turns the binary into the drop-in.
const gucName = "globus-url-copy"

// gucVersion is the globus-url-copy release whose options the drop-in
// follows; -version reports it next to Ferry's own version.
const gucVersion = "10.12"

// gucArg is the kind of argument an option takes.
type gucArg int

const (
	gucSwitch  gucArg = iota // no argument
	gucInt                   // a non-negative integer
	gucSize                  // bytes, or a number with K, M or G
	gucSeconds               // seconds, or a Go duration
	gucText                  // a file name, a URL, a subject, an algorithm...
)

// gucOption is one option of globus-url-copy.
type gucOption struct {
	names []string // every spelling, without the leading dash; the first is the short one
	arg   gucArg
	// refuse, when not empty, says why the option is refused: the
	// drop-in stops with an error naming the option and this reason.
	refuse string
	// apply records the option's value in c; nil for refused options.
	apply func(c *gucConfig, v string) error
}

// gucConfig is a parsed globus-url-copy command line.
type gucConfig struct {
	help, version, versions bool

	// cp holds the ferry cp flags the options map onto, in order.
	cp []string

	quiet, verbose, perf bool
	debug                bool          // -dbg: the control channel exchange on stderr
	continueOnError      bool          // -c
	timeLimit            time.Duration // -t; 0: none
	relPaths             bool          // -rp
	pipeline, cc, cd     bool          // -pp, -cc and -cd were given
	stripe               bool
	sbs                  string // -sbs, passed on only with -stripe
	listFile             string // -f
	tempList             bool   // listFile is a temporary file of -rp
	dumpOnly             string // -do: write the pairs to copy to this file, copy nothing
	ascii, binary        bool   // -a and -b were given
	aliasFile            string // -af
	ccN                  int    // -cc's value; 0: not given

	// Restart (see retryArgs): -rst-interval (0: back-off) and
	// -rst-timeout (0: none), in globus-url-copy's meaning.
	rstInterval, rstTimeout time.Duration
	noAllo                  bool // -no-allo: Ferry still sends ALLO (see runGUC)

	subject, srcSubject, dstSubject string
	cred, srcCred, dstCred          string

	urls []string // the source and destination URLs

	modules gucModules // -mn/-mp, -smn/-smp, -dmn/-dmp (gucmodules.go)
}

// Reasons of the refused options.
const (
	whyUDT   = "UDT is not implemented: Ferry's data channels are TCP (use -p for parallel TCP streams)"
	whyXIO   = "Ferry has no XIO driver stacks to choose from; its data channels are TCP, secured as -dcsafe or -dcpriv say"
	whyPipe  = "running commands on the server (the popen driver) is not implemented by Ferry, as a matter of policy"
	whyAuthz = "authorization assertions (SAML callouts) are not implemented by Ferry; the server authorizes through its grid-mapfile"
	whyG2    = "Ferry never uses the GridFTP v2 GETPUT commands, so there is nothing to turn off; the option is refused so that no script relies on it doing something"
	whyNLI   = "periodic NetLogger reports come from the servers' NetLogger XIO driver, which neither Ferry's server nor GCT's has; -nlb reports the bottleneck once, at the end of the copy, from what Ferry measures"
)

// Reasons of refused options that globus-url-copy's -help does not list.
const (
	whyPlugin    = "loading a client extension (a shared object) is globus-url-copy's own mechanism; Ferry has none"
	whyMulticast = "multicast copies need the server's bouncer driver, which Ferry's server does not have"
)

// gucOptions is every option of globus-url-copy, in the order of its help.
var gucOptions = []gucOption{
	{names: []string{"help", "usage"}, apply: func(c *gucConfig, _ string) error { c.help = true; return nil }},
	{names: []string{"version"}, apply: func(c *gucConfig, _ string) error { c.version = true; return nil }},
	{names: []string{"versions"}, apply: func(c *gucConfig, _ string) error { c.versions = true; return nil }},
	{names: []string{"c", "continue-on-error"}, apply: func(c *gucConfig, _ string) error { c.continueOnError = true; return nil }},
	// -a changes only http:// and https:// copies in globus-url-copy
	// (GASS text mode); Ferry has none, so nothing changes, as for -b.
	// Both together are refused (gucConfig.check).
	{names: []string{"a", "ascii"}, apply: func(c *gucConfig, _ string) error { c.ascii = true; return nil }},
	{names: []string{"b", "binary"}, apply: func(c *gucConfig, _ string) error { c.binary = true; return nil }},
	{names: []string{"f", "filename"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.listFile = v; return nil }},
	{names: []string{"cd", "create-dest"}, apply: func(c *gucConfig, _ string) error { c.cd = true; return cpSwitch("cd")(c, "") }},
	{names: []string{"r", "recurse"}, apply: cpSwitch("r")},
	{names: []string{"fast", "fast-data-channels"}, apply: cpSwitch("fast")},
	{names: []string{"t", "transfer-time"}, arg: gucSeconds, apply: func(c *gucConfig, v string) error {
		d, err := parseSeconds(v)
		c.timeLimit = d
		return err
	}},
	{names: []string{"q", "quiet"}, apply: func(c *gucConfig, _ string) error { c.quiet = true; return nil }},
	{names: []string{"v", "verbose"}, apply: func(c *gucConfig, _ string) error { c.verbose = true; return nil }},
	{names: []string{"vb", "verbose-perf"}, apply: func(c *gucConfig, _ string) error { c.perf = true; return nil }},
	{names: []string{"dbg", "debugftp"}, apply: func(c *gucConfig, _ string) error { c.debug = true; return nil }},
	{names: []string{"rst", "restart"}, apply: cpSwitch("rst")},
	{names: []string{"rst-retries", "restart-retries"}, arg: gucInt, apply: func(c *gucConfig, v string) error {
		if v == "0" { // globus-url-copy: no limit
			v = strconv.Itoa(math.MaxInt32)
		}
		return cpValue("rst-retries")(c, v)
	}},
	{names: []string{"rst-interval", "restart-interval"}, arg: gucSeconds, apply: func(c *gucConfig, v string) error {
		c.rstInterval, _ = parseSeconds(v)
		return nil
	}},
	{names: []string{"rst-timeout", "restart-timeout"}, arg: gucSeconds, apply: func(c *gucConfig, v string) error {
		c.rstTimeout, _ = parseSeconds(v)
		return nil
	}},
	{names: []string{"stall-timeout", "st"}, arg: gucSeconds, apply: cpValue("stall-timeout")},
	{names: []string{"df", "dumpfile"}, arg: gucText, apply: cpValue("df")},
	{names: []string{"do", "dump-only"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.dumpOnly = v; return nil }},
	{names: []string{"rp", "relative-paths"}, apply: func(c *gucConfig, _ string) error { c.relPaths = true; return nil }},
	{names: []string{"s", "subject"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.subject = v; return nil }},
	{names: []string{"ss", "source-subject"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.srcSubject = v; return nil }},
	{names: []string{"ds", "dest-subject"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.dstSubject = v; return nil }},
	{names: []string{"tcp-bs", "tcp-buffer-size"}, arg: gucSize, apply: cpValue("tcp-bs")},
	{names: []string{"bs", "block-size"}, arg: gucSize, apply: cpValue("bs")},
	{names: []string{"p", "parallel"}, arg: gucInt, apply: cpValue("p")},
	{names: []string{"notpt", "no-third-party-transfers"}, apply: cpSwitch("notpt")},
	{names: []string{"nodcau", "no-data-channel-authentication"}, apply: cpSwitch("nodcau")},
	{names: []string{"dcsafe", "data-channel-safe"}, apply: cpSwitch("dcsafe")},
	{names: []string{"dcpriv", "data-channel-private"}, apply: cpSwitch("dcpriv")},
	{names: []string{"off", "partial-offset"}, arg: gucInt, apply: cpValue("off")},
	{names: []string{"len", "partial-length"}, arg: gucInt, apply: cpValue("len")},
	{names: []string{"list", "list-url"}, arg: gucText, apply: cpValue("list")},
	{names: []string{"stripe", "striped"}, apply: func(c *gucConfig, _ string) error { c.stripe = true; return cpSwitch("stripe")(c, "") }},
	{names: []string{"striped-block-size", "sbs"}, arg: gucSize, apply: func(c *gucConfig, v string) error { c.sbs = v; return nil }},
	{names: []string{"ipv6", "IPv6"}, apply: noEffect}, // Ferry dials IPv6 whenever a host resolves to it
	{names: []string{"udt", "u"}, refuse: whyUDT},
	{names: []string{"no-g2", "nogridftp2"}, refuse: whyG2},
	{names: []string{"dp", "delayed-pasv"}, apply: noEffect}, // Ferry's third-party copies order PASV and PORT themselves
	// Processing modules: gucmodules.go.
	{names: []string{"mn", "module-name"}, arg: gucText, apply: gucModule(true, true, false)},
	{names: []string{"mp", "module-parameters"}, arg: gucText, apply: gucModule(true, true, true)},
	{names: []string{"smn", "src-module-name"}, arg: gucText, apply: gucModule(true, false, false)},
	{names: []string{"smp", "src-module-parameters"}, arg: gucText, apply: gucModule(true, false, true)},
	{names: []string{"dmn", "dst-module-name"}, arg: gucText, apply: gucModule(false, true, false)},
	{names: []string{"dmp", "dst-module-parameters"}, arg: gucText, apply: gucModule(false, true, true)},
	{names: []string{"aa", "authz-assert"}, arg: gucText, refuse: whyAuthz},
	{names: []string{"saa", "src-authz-assert"}, arg: gucText, refuse: whyAuthz},
	{names: []string{"daa", "dst-authz-assert"}, arg: gucText, refuse: whyAuthz},
	{names: []string{"cache-aa", "cache-authz-assert"}, refuse: whyAuthz},
	{names: []string{"cache-saa", "cache-src-authz-assert"}, refuse: whyAuthz},
	{names: []string{"cache-daa", "cache-dst-authz-assert"}, refuse: whyAuthz},
	{names: []string{"pp", "pipeline"}, apply: func(c *gucConfig, _ string) error { c.pipeline = true; return nil }},
	{names: []string{"cc", "concurrency"}, arg: gucInt, apply: func(c *gucConfig, v string) error {
		c.cc = true
		c.ccN, _ = strconv.Atoi(v)
		return cpValue("cc")(c, v)
	}},
	// -nlb: Ferry's own measurements, not NetLogger's (bottleneck.go).
	{names: []string{"nlb", "nl-bottleneck"}, apply: cpSwitch("nlb")},
	{names: []string{"SP", "src-pipe"}, arg: gucText, refuse: whyPipe},
	{names: []string{"DP", "dst-pipe"}, arg: gucText, refuse: whyPipe},
	{names: []string{"pipe", "P"}, arg: gucText, refuse: whyPipe},
	{names: []string{"dcstack", "data-channel-stack"}, arg: gucText, refuse: whyXIO},
	{names: []string{"fsstack", "file-system-stack"}, arg: gucText, refuse: whyXIO},
	{names: []string{"src-dcstack", "source-data-channel-stack"}, arg: gucText, refuse: whyXIO},
	{names: []string{"src-fsstack", "source-file-system-stack"}, arg: gucText, refuse: whyXIO},
	{names: []string{"dst-dcstack", "dest-data-channel-stack"}, arg: gucText, refuse: whyXIO},
	{names: []string{"dst-fsstack", "dest-file-system-stack"}, arg: gucText, refuse: whyXIO},
	{names: []string{"cred"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.cred = v; return nil }},
	{names: []string{"sc", "src-cred"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.srcCred = v; return nil }},
	{names: []string{"dc", "dst-cred"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.dstCred = v; return nil }},
	{names: []string{"data-cred"}, arg: gucText, apply: cpValue("data-cred")},
	{names: []string{"af", "alias-file"}, arg: gucText, apply: func(c *gucConfig, v string) error { c.aliasFile = v; return nil }},
	{names: []string{"sync"}, apply: cpSwitch("sync")},
	{names: []string{"sync-level"}, arg: gucInt, apply: cpValue("sync-level")},
	{names: []string{"checksum-alg", "algo"}, arg: gucText, apply: cpValue("checksum-alg")},
	{names: []string{"verify-checksum", "checksum"}, apply: cpSwitch("verify-checksum")},

	// The options below are accepted by globus-url-copy's parser but not
	// listed by its -help (gucUnlisted); scripts may still use them.
	// -g2 and -allo turn on what is on by default there; -cp and
	// -preserve set a flag that globus-url-copy 10.12 never reads.
	{names: []string{"g2", "gridftp2"}, apply: noEffect},
	{names: []string{"allo", "allocate"}, apply: noEffect},
	{names: []string{"no-allo", "no-allocate"}, apply: func(c *gucConfig, _ string) error { c.noAllo = true; return nil }},
	{names: []string{"cp", "copy-perms"}, apply: noEffect},
	{names: []string{"preserve"}, apply: noEffect},
	{names: []string{"ppq", "pipelineq"}, arg: gucInt, apply: func(c *gucConfig, _ string) error { c.pipeline = true; return nil }},
	{names: []string{"nli", "nl-interval"}, arg: gucInt, refuse: whyNLI},
	{names: []string{"CP", "plugin"}, arg: gucText, refuse: whyPlugin},
	{names: []string{"X", "extentions"}, arg: gucText, refuse: whyPlugin},
	{names: []string{"MC", "multicast"}, arg: gucText, refuse: whyMulticast},
}

// gucUnlisted are the spellings globus-url-copy accepts that its -help
// does not list (read from its argument table).
var gucUnlisted = []string{
	"filename", "fast-data-channels", "transfer-time", "list-url", "striped", "IPv6", "u", "P",
	"restart-retries", "restart-interval", "restart-timeout", "algo", "checksum",
	"g2", "gridftp2", "allo", "allocate", "no-allo", "no-allocate", "cp", "copy-perms", "preserve",
	"ppq", "pipelineq", "nli", "nl-interval", "CP", "plugin", "X", "extentions", "MC", "multicast",
}

// gucLookup maps each spelling to its option.
var gucLookup = func() map[string]*gucOption {
	m := map[string]*gucOption{}
	for i := range gucOptions {
		for _, n := range gucOptions[i].names {
			if m[n] != nil {
				panic("guc: duplicate option -" + n)
			}
			m[n] = &gucOptions[i]
		}
	}
	return m
}()

// cpSwitch maps an option onto the ferry cp switch name.
func cpSwitch(name string) func(*gucConfig, string) error {
	return func(c *gucConfig, _ string) error {
		c.cp = append(c.cp, "-"+name)
		return nil
	}
}

// cpValue maps an option onto the ferry cp flag name with its value.
func cpValue(name string) func(*gucConfig, string) error {
	return func(c *gucConfig, v string) error {
		c.cp = append(c.cp, "-"+name, v)
		return nil
	}
}

// noEffect accepts an option that changes nothing in Ferry.
func noEffect(*gucConfig, string) error { return nil }

// gucError is a bad globus-url-copy command line: argument n (1-based)
// and what is wrong with it.
type gucError struct {
	n   int
	arg string
	msg string
}

func (e *gucError) Error() string {
	return fmt.Sprintf("Error, argument #%d (%s) : %s", e.n, e.arg, e.msg)
}

// gucRefusal is an option the drop-in refuses, and why.
type gucRefusal struct{ opt, why string }

func (e *gucRefusal) Error() string { return e.opt + " is not supported by Ferry: " + e.why }

// parseGUC parses a globus-url-copy command line (without the program
// name). Options start with a single "-"; everything else is a URL.
func parseGUC(args []string) (*gucConfig, error) {
	c := &gucConfig{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			c.urls = append(c.urls, a)
			continue
		}
		o := gucLookup[a[1:]]
		if o == nil {
			return nil, &gucError{i + 1, a, "unknown option"}
		}
		var v string
		if o.arg != gucSwitch {
			if i+1 >= len(args) {
				return nil, &gucError{i + 1, a, "not enough arguments"}
			}
			i++
			v = args[i]
			if err := checkGUCArg(o.arg, v); err != nil {
				return nil, &gucError{i + 1, v, err.Error()}
			}
		}
		if o.refuse != "" {
			return nil, &gucRefusal{a, o.refuse}
		}
		if err := o.apply(c, v); err != nil {
			return nil, &gucError{i + 1, v, err.Error()}
		}
	}
	return c, nil
}

// checkGUCArg checks an option's argument against its kind.
func checkGUCArg(kind gucArg, v string) error {
	switch kind {
	case gucInt:
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return errors.New("argument is not a positive integer")
		}
	case gucSize:
		if _, err := parseSize(v); err != nil {
			return errors.New("argument is not a size (bytes, or a number with K, M or G)")
		}
	case gucSeconds:
		if d, err := parseSeconds(v); err != nil || d < 0 {
			return errors.New("argument is not a number of seconds")
		}
	}
	return nil
}

// cpArgs returns the ferry cp arguments of c, with globus-url-copy's
// defaults where they differ from ferry cp's: no automatic tuning, no
// pipelining and one file at a time unless asked, no transfer history
// unless $FERRY_HISTORY names one, and data connections taken from any
// host (a striped server's movers connect from theirs even without
// -stripe; globus-url-copy does not check where they come from).
func (c *gucConfig) cpArgs(getenv func(string) string) ([]string, error) {
	args := []string{"-auto=false", "-data-any-host"}
	if getenv("FERRY_HISTORY") == "" {
		args = append(args, "-history", hist.OffDSN)
	}
	if !c.pipeline {
		args = append(args, "-pp=false")
	}
	if !c.cc {
		args = append(args, "-cc", "1")
	}
	args = append(args, c.cp...)
	args = append(args, c.retryArgs()...)
	if c.stripe && c.sbs != "" {
		args = append(args, "-sbs", c.sbs)
	}
	if c.quiet || !c.verbose && !c.perf {
		// Nothing on success (a job's summary included), as
		// globus-url-copy.
		args = append(args, "-q")
	}
	if c.perf {
		args = append(args, "-vb")
	}
	// A per-side option matters only for a side that authenticates;
	// with a list file the sides of each pair are not known here.
	sides := sidesUnknown
	if len(c.urls) == 2 && c.listFile == "" {
		sides = sidesOf(secureURL(c.urls[0]), secureURL(c.urls[1]))
	}
	subject, err := oneOf("subject", c.subject, c.srcSubject, c.dstSubject, sides)
	if err != nil {
		return nil, err
	}
	if subject != "" {
		args = append(args, "-ss", subject)
	}
	cred, err := oneOf("credential", c.cred, c.srcCred, c.dstCred, sides)
	if err != nil {
		return nil, err
	}
	if cred != "" {
		args = append(args, "-cert", cred)
	}
	if c.listFile != "" {
		args = append(args, "-f", c.listFile)
	}
	args = append(args, c.moduleArgs()...)
	return append(args, c.urls...), nil
}

// retryArgs are the ferry cp flags of globus-url-copy's restart timing.
// Its restart plugin waits -rst-interval seconds before each retry, the
// same every time; -rst-interval 0 (the default) starts at one second and
// doubles the wait after each retry, without bound. -rst-timeout is a
// deadline counted from the start of the run: a failure after it is not
// retried, but no attempt is cut short (ferry cp's -rst-timeout would
// be).
func (c *gucConfig) retryArgs() []string {
	args := []string{"-rst-interval", "1", "-rst-max-interval", "0"}
	if c.rstInterval > 0 {
		v := c.rstInterval.String()
		args = []string{"-rst-interval", v, "-rst-max-interval", v}
	}
	if c.rstTimeout > 0 {
		args = append(args, "-rst-deadline", c.rstTimeout.String())
	}
	return args
}

// secureURL reports whether a URL's server authenticates itself
// (gsiftp://, ftps://).
func secureURL(u string) bool {
	scheme, _, _ := strings.Cut(u, "://")
	return strings.EqualFold(scheme, "gsiftp") || strings.EqualFold(scheme, "ftps")
}

// Which sides of a copy authenticate (gsiftp://, ftps://).
type secureSides int

const (
	sidesUnknown secureSides = iota // a list file: any pair may have either
	sidesNone
	sidesSrc
	sidesDst
	sidesBoth
)

func sidesOf(src, dst bool) secureSides {
	switch {
	case src && dst:
		return sidesBoth
	case src:
		return sidesSrc
	case dst:
		return sidesDst
	}
	return sidesNone
}

// oneOf is the one value of an option Ferry's client uses for every
// session of the run, from the value for both sides (all) and the
// per-side ones (each side's wins over all for that side). A side's
// credential or subject must never reach the other side's server (a
// credential shown, and delegated, to the wrong server is given away):
// when both sides (or, with a list file, any pair's) would authenticate
// with different values, it is refused.
func oneOf(what, all, src, dst string, sides secureSides) (string, error) {
	s, d := all, all
	if src != "" {
		s = src
	}
	if dst != "" {
		d = dst
	}
	switch sides {
	case sidesNone:
		return all, nil
	case sidesSrc:
		return s, nil
	case sidesDst:
		return d, nil
	}
	if s != d {
		return "", fmt.Errorf("a %s for one side only would reach the other side's server too (Ferry's client has one per run); give the same for both, or use -cred", what)
	}
	return s, nil
}

// relativeURL rewrites the path of an ftp:// or gsiftp:// URL for -rp:
// it is relative to the login directory (Ferry's /~/), unless it starts
// with %2F, which makes it absolute.
func relativeURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	switch strings.ToLower(scheme) {
	case "ftp", "gsiftp", "ftps":
	default:
		return u
	}
	if !ok {
		return u
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return u
	}
	host, p := rest[:slash], rest[slash+1:]
	if len(p) >= 3 && strings.EqualFold(p[:3], "%2F") {
		return scheme + "://" + host + "/" + p[3:]
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		return u
	}
	return scheme + "://" + host + "/~/" + p
}

// gucUsage is the short usage line printed with a bad command line.
const gucUsage = "usage: globus-url-copy [options] SOURCE-URL DEST-URL\n" +
	"       globus-url-copy [options] -f LIST-FILE\n"

// gucHelp is what -help and -usage print: Ferry's own summary of the
// options (their meaning is globus-url-copy's).
const gucHelp = gucUsage + `
This is Ferry running as globus-url-copy: it takes globus-url-copy's
options, with their meaning and defaults, and copies with Ferry's engine.
See docs/migrating-from-globus-url-copy.md; "ferry cp -h" lists Ferry's own
options. Each option below has its short and long spelling.

Copying
  -r | -recurse                 copy directories (URLs ending in /) with their contents
  -cd | -create-dest            create missing destination directories
  -f FILE                       read "SOURCE DEST" pairs from FILE, one a line
  -df | -dumpfile FILE          write the pairs that failed to FILE; an existing FILE is the input
  -do | -dump-only FILE         write the pairs a copy would make to FILE, copy nothing
  -sync, -sync-level N          copy only what differs (0 missing, 1 size, 2 older, 3 checksum)
  -off | -partial-offset N      start at byte N, written at the same offset
  -len | -partial-length N      copy N bytes at most
  -list URL                     list a directory
  -rp | -relative-paths         URL paths are relative to the login directory (%2F: absolute)
  -c | -continue-on-error       go on after a failed file (without it: stop at the first)
  -a | -ascii, -b | -binary     accepted (-a converts only http:// copies in globus-url-copy)
  -af | -alias-file FILE        hosts for @source and @destination, one per connection (-cc)
  -t SECONDS                    stop the transfer after SECONDS

Performance
  -p | -parallel N              N data connections (MODE E)
  -tcp-bs | -tcp-buffer-size SIZE   TCP buffer size of the data connections (K, M, G)
  -bs | -block-size SIZE        block size
  -fast                         MODE E, data connections kept between files
  -pp | -pipeline               pipeline many small files
  -cc | -concurrency N          copy N files at once
  -stripe, -sbs | -striped-block-size SIZE   striped transfers and their layout
  -notpt | -no-third-party-transfers   route server-to-server bytes through this client
  -ipv6, -dp | -delayed-pasv    accepted; nothing to change in Ferry

Restart
  -rst | -restart               retry failed transfers, resuming them
  -rst-retries N                at most N retries (0: no limit; default 5)
  -rst-interval SECONDS         wait between retries, the same each time (0: from 1s, doubled each time; default 0)
  -rst-timeout SECONDS          retry no failure after SECONDS from the start (0: never; default 0)
  -stall-timeout | -st SECONDS  end an attempt that moved nothing for SECONDS (0: never; default 600)
  A duration with a unit (90s, 2m) is accepted wherever SECONDS is.

Checks
  -verify-checksum              compare the checksums of source and destination
  -checksum-alg NAME            the checksum algorithm (default MD5)

Security (gsiftp://)
  -s | -subject DN, -ss | -source-subject DN, -ds | -dest-subject DN   expected server subjects
  -cred FILE, -sc | -src-cred FILE, -dc | -dst-cred FILE               credential (proxy) to use
  -data-cred FILE|auto          data channel credential, sent to the servers (DCSC); auto: a
                                generated self-signed one (for servers that do not trust each other)
  -nodcau | -no-data-channel-authentication   no data channel authentication
  -dcsafe | -data-channel-safe  integrity-protected data channels
  -dcpriv | -data-channel-private   encrypted data channels

Output
  -q | -quiet                   print nothing when all goes well
  -v | -verbose                 print the URLs copied
  -vb | -verbose-perf           print the URLs and the progress
  -dbg | -debugftp              print the control channel exchange on stderr
  -nlb | -nl-bottleneck         after the copy, print which leg limited it
                                (source read, network, destination write),
                                from the sending end's TCP accounting
  -help | -usage, -version, -versions

Processing modules: -mn | -module-name, -mp | -module-parameters,
-smn | -src-module-name, -smp | -src-module-parameters,
-dmn | -dst-module-name, -dmp | -dst-module-parameters (ERET/ESTO).

Refused, with the reason: -udt,
-no-g2 | -nogridftp2, the assertion options
(-aa, -saa, -daa, -cache-aa, -cache-saa, -cache-daa), the pipe options
(-SP | -src-pipe, -DP | -dst-pipe, -pipe) and the driver stack options
(-dcstack, -fsstack, -src-dcstack, -src-fsstack, -dst-dcstack, -dst-fsstack
and their long spellings).

Also accepted, as globus-url-copy's parser accepts them: -filename,
-fast-data-channels, -transfer-time, -list-url, -striped, -IPv6,
-restart-retries, -restart-interval, -restart-timeout, -checksum, -algo,
-ppq | -pipelineq N, and, with no effect (as there, but for -no-allo):
-g2 | -gridftp2, -allo | -allocate, -no-allo | -no-allocate,
-cp | -copy-perms, -preserve. Refused: -u, -P, -nli | -nl-interval,
-CP | -plugin, -X | -extentions, -MC | -multicast.
`

// isGUCName reports whether the program was invoked as globus-url-copy.
func isGUCName(argv0 string) bool { return filepath.Base(argv0) == gucName }

// runGUC runs the drop-in with args (without the program name) and
// returns the exit status: 0 on success, 1 otherwise (globus-url-copy's
// status for bad options and failed copies alike; -help and -version
// also end with 1, as there).
func runGUC(ctx context.Context, e *env, args []string) int {
	c, err := parseGUC(args)
	var refused *gucRefusal
	if errors.As(err, &refused) {
		fmt.Fprintf(e.stderr, "\nerror: %s\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "\n%s\n\n%s\nRun globus-url-copy -help for the options.\n", err, gucUsage)
		return 1
	}
	switch {
	case c.help:
		fmt.Fprint(e.stderr, gucHelp)
		return 1
	case c.version:
		fmt.Fprintf(e.stderr, "%s: %s (ferry %s)\n", gucName, gucVersion, version.Version)
		return 1
	case c.versions:
		fmt.Fprintf(e.stderr, "%s: %s (ferry %s)\n", gucName, gucVersion, version.Version)
		fmt.Fprintf(e.stderr, "ferry: %s (%s, %s/%s)\n", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 1
	}
	if c.ascii && c.binary {
		gucArgsError(e.stderr, "option -ascii and -binary are mutually exclusive")
		return 1
	}
	if c.noAllo {
		// Not silent: globus-url-copy would leave ALLO out.
		fmt.Fprintln(e.stderr, "globus-url-copy: -no-allo has no effect in Ferry: it sends ALLO before each upload of known size, as globus-url-copy does by default")
	}
	if !(len(c.urls) == 2 || len(c.urls) == 0 && (c.listFile != "" || c.hasList())) {
		fmt.Fprintf(e.stderr, "\nerror: a source and a destination URL are required (or -f FILE)\n\n%s\nRun globus-url-copy -help for the options.\n", gucUsage)
		return 1
	}
	if len(c.urls) == 2 && strings.HasSuffix(c.urls[0], "/") && !slices.Contains(c.cp, "-r") {
		// globus-url-copy copies the files of a source directory
		// without -r (its subdirectories are left out): so do Ferry's
		// wildcards.
		c.urls[0] += "*"
	}
	if err := c.rewriteURLs(e); err != nil {
		fmt.Fprintf(e.stderr, "\nerror: %s\n", reason(err))
		return 1
	}
	defer c.removeTemp()
	cpArgs, err := c.cpArgs(os.Getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "\nerror: %s\n", err)
		return 1
	}
	if c.timeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeLimit)
		defer cancel()
	}
	// Wrapped, standard error is no terminal: no live display, as in
	// globus-url-copy.
	// Without -c globus-url-copy stops at the first failure: a source
	// that cannot be listed or found stops it before any copy, and the
	// first failed file ends the copies.
	ce := &env{stdin: e.stdin, stdout: e.stdout, stderr: plainWriter{e.stderr, e.stdout}, gucOutput: true, stopAtFailure: !c.continueOnError}
	if c.debug {
		h := newGUCDebugHandler(e.stderr)
		h.urls = c.serverURLs(e)
		ce.ctlLog = slog.New(h)
	}
	// -v and -vb print on standard output, as globus-url-copy: the
	// names of each file as it starts; with -vb its progress lines and
	// a newline after it.
	verbose := (c.verbose || c.perf) && !c.quiet && !c.hasList() && c.dumpOnly == ""
	jctx := ctx
	switch {
	case c.isJob() && !c.hasList() && c.dumpOnly == "":
		// The lines per file come from gucFiles; Ferry's own (its
		// total progress, its summary) are left out.
		cpArgs = slices.DeleteFunc(cpArgs, func(a string) bool { return a == "-vb" })
		if !slices.Contains(cpArgs, "-q") {
			cpArgs = append([]string{"-q"}, cpArgs...) // before the URLs
		}
		files := &gucFiles{perf: c.perf, running: map[runKey]*progressPrinter{}}
		if verbose {
			files.w = e.stdout
		}
		if !c.continueOnError {
			var cancel context.CancelCauseFunc
			jctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
			files.stop = func() { cancel(errStoppedAtFailure) }
		}
		ce.jobFiles = files
	case verbose:
		printGUCVerbose(e.stdout, c.urls[0], c.urls[1])
		if c.perf {
			defer fmt.Fprintln(e.stdout) // after the progress lines
		}
	}
	switch {
	case c.dumpOnly != "":
		err = c.dumpOnlyRun(ctx, ce, cpArgs)
	case c.hasList():
		err = gucList(ctx, ce, cpArgs)
	default:
		err = runCopy(jctx, ce, cpArgs, false)
	}
	switch {
	case err == nil:
		return 0
	case c.timeLimit > 0 && ctx.Err() == context.DeadlineExceeded:
		// -t: the time is up; globus-url-copy ends the copy and succeeds.
		fmt.Fprintln(e.stderr, "Cancelling copy...")
		return 0
	}
	var ee exitError
	if !errors.As(err, &ee) { // a job has printed its failures already
		fmt.Fprintf(e.stderr, "\nerror: %s\n", gucReason(err))
	}
	return 1
}

// gucReason renders a failure as globus-url-copy does: a server's
// refusal ends with a line of its own holding the reply, code first.
func gucReason(err error) string {
	s := reason(err)
	var re *client.ReplyError
	if !errors.As(err, &re) {
		return s
	}
	d := describe(re)
	if i := strings.LastIndex(s, d); i >= 0 {
		s = strings.TrimSuffix(strings.TrimSpace(s[:i]), ":") + s[i+len(d):]
	}
	if s != "" {
		s += ": "
	}
	return s + "the server responded with an error\n" + d + "\n"
}

// gucList runs -list with globus-url-copy's layout: a space after each
// file's name, and a blank line at the end.
func gucList(ctx context.Context, e *env, cpArgs []string) error {
	var out bytes.Buffer
	le := *e
	le.stdout = &out
	err := runCopy(ctx, &le, cpArgs, false)
	for i, l := range strings.SplitAfter(out.String(), "\n") {
		if i > 0 && strings.HasPrefix(l, "    ") && !strings.HasSuffix(l, "/\n") {
			l = strings.TrimSuffix(l, "\n") + " \n"
		}
		io.WriteString(e.stdout, l)
	}
	if out.Len() == 0 {
		// As globus-url-copy: the URL even when it cannot be listed.
		if i := slices.Index(cpArgs, "-list"); i >= 0 && i+1 < len(cpArgs) {
			fmt.Fprintln(e.stdout, cpArgs[i+1])
		}
	}
	fmt.Fprintln(e.stdout)
	return err
}

// isJob reports whether c copies many files (or may): a list file, -r,
// a directory or a wildcard as the source.
func (c *gucConfig) isJob() bool {
	return c.listFile != "" || len(c.urls) != 2 || strings.HasSuffix(c.urls[0], "/") ||
		strings.ContainsAny(c.urls[0], "*?[") || slices.Contains(c.cp, "-r")
}

// hasList reports whether c lists a directory (-list) instead of copying.
func (c *gucConfig) hasList() bool {
	for i, a := range c.cp {
		if a == "-list" && i+1 < len(c.cp) {
			return true
		}
	}
	return false
}

// printGUCVerbose prints what -v and -vb print before a copy, in
// globus-url-copy's shape: the source and destination directories, then
// the names.
func printGUCVerbose(w io.Writer, src, dst string) {
	sd, sn := splitURLName(src)
	dd, dn := splitURLName(dst)
	fmt.Fprintf(w, "Source: %s\nDest:   %s\n", sd, dd)
	switch {
	case sn == "" || dn == "" || sn == dn:
		fmt.Fprintf(w, "  %s\n", sn)
	default:
		fmt.Fprintf(w, "  %s  ->  %s\n", sn, dn)
	}
}

// splitURLName splits a URL after its last slash.
func splitURLName(u string) (dir, name string) {
	i := strings.LastIndexByte(u, '/')
	return u[:i+1], u[i+1:]
}

// rewriteURLs applies -rp and then -af to the URLs of the command line
// and of the -f list, which it rewrites to a temporary file, in that
// order as globus-url-copy (which makes the paths relative as it reads
// the pairs, and applies the aliases as it hands each pair to a
// connection).
func (c *gucConfig) rewriteURLs(e *env) error {
	var al *gucAliases
	if c.aliasFile != "" {
		al = loadAliasFile(e.stderr, c.aliasFile)
	}
	if !c.relPaths && al == nil {
		return nil
	}
	rewrite := func(i int, p job.URLPair) job.URLPair {
		if c.relPaths {
			p.Src, p.Dst = relativeURL(p.Src), relativeURL(p.Dst)
		}
		if al != nil {
			p = al.apply(p, c.connection(i))
		}
		return p
	}
	if len(c.urls) == 2 {
		p := rewrite(0, job.URLPair{Src: c.urls[0], Dst: c.urls[1]})
		c.urls[0], c.urls[1] = p.Src, p.Dst
	}
	if c.listFile == "" {
		return nil
	}
	pairs, err := readListFile(e, c.listFile)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "ferry-guc-list-*")
	if err != nil {
		return err
	}
	for i, p := range pairs {
		p = rewrite(i, p)
		fmt.Fprintf(f, "\"%s\" \"%s\"\n", p.Src, p.Dst)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	c.listFile = f.Name()
	c.tempList = true
	return nil
}

// connection is the number (from 0) of the connection that copies the
// pair numbered i of a list: globus-url-copy hands each pair to its next
// free connection (of -cc); Ferry's workers take the pairs in turn, so
// pair i goes to connection i mod -cc.
func (c *gucConfig) connection(i int) int {
	return i % max(c.ccN, 1)
}

// gucAliases is an alias file (-af): the hosts that stand for the
// source's and the destination's.
type gucAliases struct {
	src, dst []string // hosts, as host[:port]
}

// loadAliasFile reads an alias file in globus-url-copy's format: a line
// "@NAME" starts an alias, each following line's first word is one of
// its hosts (host[:port]); blank lines and lines starting with # are
// skipped. Only @source and @destination mean something. A host before
// any alias, an empty or repeated alias name is reported on w with its
// line, as globus-url-copy does, and so is a file that cannot be read
// (globus-url-copy says nothing then); either way the copy goes on with
// the URLs' own hosts (nil).
func loadAliasFile(w io.Writer, name string) *gucAliases {
	b, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintf(w, "Problem reading alias file %s: %v\n", name, errors.Unwrap(err))
		return nil
	}
	al, line := parseAliases(string(b))
	if line > 0 {
		fmt.Fprintf(w, "Problem parsing alias file %s: line %d\n", name, line)
		return nil
	}
	return al
}

// parseAliases parses the text of an alias file; line is the number of
// the first bad line, 0 when there is none.
func parseAliases(text string) (al *gucAliases, line int) {
	hosts := map[string][]string{}
	cur := ""
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimLeft(l, " \t\r\v\f")
		if l == "" || l[0] == '#' {
			continue
		}
		f := strings.Fields(l)
		if name, ok := strings.CutPrefix(f[0], "@"); ok {
			if name == "" && len(f) > 1 {
				name = f[1] // "@ source": the word after the blanks
			}
			if _, dup := hosts[name]; dup || name == "" {
				return nil, i + 1
			}
			hosts[name], cur = []string{}, name
			continue
		}
		if cur == "" {
			return nil, i + 1
		}
		hosts[cur] = append(hosts[cur], f[0])
	}
	return &gucAliases{src: hosts["source"], dst: hosts["destination"]}, 0
}

// apply gives the pair the hosts of connection n: the source's and the
// destination's n-th (modulo their number), for the URLs of FTP schemes.
func (a *gucAliases) apply(p job.URLPair, n int) job.URLPair {
	if len(a.src) > 0 {
		p.Src = replaceHost(p.Src, a.src[n%len(a.src)])
	}
	if len(a.dst) > 0 {
		p.Dst = replaceHost(p.Dst, a.dst[n%len(a.dst)])
	}
	return p
}

// replaceHost replaces the part of an ftp://, gsiftp:// (any "ftp://")
// URL between the scheme and the path with host, as globus-url-copy's
// aliases do: a user or password there goes too. Other URLs, and one
// without a path, stay as they are.
func replaceHost(u, host string) string {
	i := strings.Index(u, "ftp://")
	if i < 0 {
		return u
	}
	rest := u[i+len("ftp://"):]
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return u
	}
	return u[:i+len("ftp://")] + host + rest[j:]
}

// gucArgsError prints a bad command line as globus-url-copy's argument
// check does.
func gucArgsError(w io.Writer, msg string) {
	fmt.Fprintf(w, "\nERROR: %s\n\nSyntax: %s\n\nUse -help to display full usage\n", msg, gucOneLineUsage)
}

// gucOneLineUsage is globus-url-copy's short syntax, printed with an
// argument error.
const gucOneLineUsage = `globus-url-copy [-help] [-vb] [-dbg] [-r] [-rst] [-s <subject>]
                        [-p <parallelism>] [-tcp-bs <size>] [-bs <size>]
                        -f <filename> | <sourceURL> <destURL>
`

// removeTemp removes the list file rewriteURLs wrote.
func (c *gucConfig) removeTemp() {
	if c.tempList {
		os.Remove(c.listFile)
	}
}

// gucDebugHandler prints the client's control channel records (-dbg) on
// w, in globus-url-copy's shape: a "debug:" line naming the server by
// its URL, then the command sent or the reply received as on the wire
// (lines ended by CRLF, a reply's continuation lines included), then an
// empty line.
type gucDebugHandler struct {
	mu    *sync.Mutex // guards writes to w; shared by the handlers of WithAttrs; never nil
	w     io.Writer
	urls  map[string]string // a server's address to the URL that names it; read-only
	attrs []slog.Attr
}

func (h *gucDebugHandler) Enabled(context.Context, slog.Level) bool { return true }

// newGUCDebugHandler returns the -dbg handler writing to w.
func newGUCDebugHandler(w io.Writer) *gucDebugHandler {
	return &gucDebugHandler{mu: new(sync.Mutex), w: w}
}

func (h *gucDebugHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &gucDebugHandler{mu: h.mu, w: h.w, urls: h.urls, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], as...)}
}

func (h *gucDebugHandler) WithGroup(string) slog.Handler { return h }

func (h *gucDebugHandler) Handle(_ context.Context, r slog.Record) error {
	vals := map[string]string{}
	var rest []string
	add := func(a slog.Attr) bool {
		vals[a.Key] = a.Value.String()
		rest = append(rest, a.Key+"="+a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	server := vals["server"]
	if u := h.urls[server]; u != "" {
		server = u
	}
	var b strings.Builder
	switch r.Message {
	case "send":
		fmt.Fprintf(&b, "debug: sending command to %s:\n%s\r\n\n", server, vals["cmd"])
	case "reply":
		code, _ := strconv.Atoi(vals["code"])
		reply := wire.Reply{Code: code, Lines: strings.Split(vals["text"], "\n")}
		fmt.Fprintf(&b, "debug: response from %s:\n%s\n", server, reply.AppendWire(nil))
	default:
		fmt.Fprintf(&b, "debug: %s %s\n", r.Message, strings.Join(rest, " "))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// serverURLs maps the address (host:port) of each server that the URLs
// of the command line or of the -f list name to the first such URL
// (without its password), by which -dbg names the server, as
// globus-url-copy names it by the URL of the transfer.
func (c *gucConfig) serverURLs(e *env) map[string]string {
	m := map[string]string{}
	add := func(u string) {
		l, err := parseLocation(u)
		if err != nil || l.kind != locRemote || m[l.addr] != "" {
			return
		}
		if pu, err := url.Parse(u); err == nil {
			u = pu.Redacted()
		}
		m[l.addr] = u
	}
	for _, u := range c.urls {
		add(u)
	}
	if i := slices.Index(c.cp, "-list"); i >= 0 && i+1 < len(c.cp) {
		add(c.cp[i+1])
	}
	if c.listFile != "" && c.listFile != "-" {
		pairs, _ := readListFile(e, c.listFile)
		for _, p := range pairs {
			add(p.Src)
			add(p.Dst)
		}
	}
	return m
}

// plainWriter hides what a writer is (a terminal) from terminal(). out,
// when not nil, is standard output, where globus-url-copy prints its
// progress lines (newGUCProgressPrinter).
type plainWriter struct {
	io.Writer
	out io.Writer
}

// newGUCProgressPrinter reports progress (-vb) in globus-url-copy's
// lines: bytes so far, the average and the current rate in MB/s (MiB),
// each line ended by "\r" so that a terminal overwrites it. Given the
// drop-in's standard error (a plainWriter), it prints on standard output,
// as globus-url-copy does.
func newGUCProgressPrinter(w io.Writer) *progressPrinter {
	if pw, ok := w.(plainWriter); ok && pw.out != nil {
		w = pw.out
	}
	now := time.Now()
	return &progressPrinter{w: w, now: time.Now, start: now, lastT: now, size: -1, guc: true}
}

// dumpOnlyRun runs -do: ferry cp -dry-run -json plans the copy, and the
// pairs it would copy are written to the file (or standard output for
// "-") as globus-url-copy writes them: each URL in double quotes, and
// for a file found in a directory or by a wildcard (not named by the
// user) "0,-1" and its facts, "size=N;modify=UNIX-TIME;mode=0644;".
// globus-url-copy also writes a commented line per directory of -r;
// Ferry does not (the -f reader skips them anyway).
func (c *gucConfig) dumpOnlyRun(ctx context.Context, e *env, cpArgs []string) error {
	named := map[string]bool{}
	if len(c.urls) == 2 {
		named[listURL(c.urls[0])] = true
	}
	if c.listFile != "" {
		pairs, err := readListFile(e, c.listFile)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			named[listURL(p.Src)] = true
		}
	}
	var plan bytes.Buffer
	pe := *e
	pe.stdout = &plan
	// -cd: a destination directory that does not exist yet is no
	// reason not to write the pairs, as in globus-url-copy.
	if err := runCopy(ctx, &pe, append([]string{"-dry-run", "-json", "-cd"}, cpArgs...), false); err != nil {
		return err
	}
	var out bytes.Buffer
	dec := json.NewDecoder(&plan)
	for {
		var rec struct {
			Type, Action, Src, Dst string
			Bytes                  *int64
			Modify                 *int64
			Mode                   string
		}
		if err := dec.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("-dump-only: reading the plan: %w", err)
		}
		if rec.Type != "plan" || rec.Action != "copy" {
			continue
		}
		src, dst := listURL(rec.Src), listURL(rec.Dst)
		fmt.Fprintf(&out, "\"%s\" \"%s\"", src, dst)
		if !named[src] {
			var facts string
			if rec.Bytes != nil {
				facts += fmt.Sprintf("size=%d;", *rec.Bytes)
			}
			if rec.Modify != nil {
				facts += fmt.Sprintf("modify=%d;", *rec.Modify)
			}
			if rec.Mode != "" {
				facts += "mode=" + rec.Mode + ";"
			}
			if facts != "" {
				out.WriteString(" 0,-1 " + facts)
			}
		}
		out.WriteByte('\n')
	}
	if c.dumpOnly == "-" {
		_, err := e.stdout.Write(out.Bytes())
		return err
	}
	return os.WriteFile(c.dumpOnly, out.Bytes(), 0o644)
}

// listURL makes a plan's location a URL for a list file: a local path
// becomes a file:// URL.
func listURL(s string) string {
	if strings.HasPrefix(s, "/") {
		s = "file://" + s
	}
	return s
}

// gucFiles follows the files of a job for the drop-in (env.jobFiles):
// with -v and -vb it prints globus-url-copy's lines for each file on w
// (Source, Dest and the name as it starts; with -vb its progress lines,
// at most one a second, and a newline after it), and without -c the
// first file that fails stops the job (stop).
type gucFiles struct {
	w    io.Writer // nil: no lines
	perf bool
	stop func() // nil with -c

	mu      sync.Mutex
	running map[runKey]*progressPrinter // guarded by mu; the files of -vb under way
}

func (g *gucFiles) FileStarted(p job.Pair, _ int64) {
	if g.w == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	printGUCVerbose(g.w, listURL(p.Src.String()), listURL(p.Dst.String()))
	if g.perf {
		g.running[pairKey(p)] = newGUCProgressPrinter(g.w)
	}
}

func (g *gucFiles) FileProgress(p job.Pair, bytes int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pp := g.running[pairKey(p)]
	if pp != nil && pp.now().Sub(pp.lastT) >= time.Second {
		pp.update(client.Progress{Bytes: bytes})
	}
}

func (g *gucFiles) FileDone(p job.Pair, _ int64, err error) {
	if err != nil && g.stop != nil {
		g.stop()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if pp := g.running[pairKey(p)]; pp != nil {
		pp.done()
		fmt.Fprintln(g.w)
		delete(g.running, pairKey(p))
	}
}
