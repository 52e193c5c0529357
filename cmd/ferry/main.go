// Command ferry is the GridFTP server, client and tools of the Ferry project.
//
// Every feature is a subcommand (ferry serve, ferry cp, ...). Each
// subcommand lives in its own file and registers itself in init, so the
// dispatcher below never changes when a subcommand is added.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"

	"syscall"

	"github.com/ferrygrid/ferry/internal/job"
)

// command is one subcommand of the ferry binary.
type command struct {
	name    string
	summary string // one line for "ferry help"
	usage   string // the synopsis after "ferry NAME", e.g. "[flags] SRC DST"
	help    string // more text for "ferry NAME -h", after the flags
	hidden  bool   // internal: not listed by "ferry help"
	// run executes the subcommand with the arguments after its name. It
	// returns errUsage (possibly wrapped) for bad invocations.
	run func(ctx context.Context, env *env, args []string) error
}

// env is what a subcommand may touch of the process: its streams, so that
// tests can run subcommands in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	ctlLog         *slog.Logger // when not nil, the client's control channel records (globus-url-copy -dbg)
	gucOutput      bool         // globus-url-copy's progress lines instead of Ferry's (guc.go)
	// stopAtFailure makes a job whose plan has a failure copy nothing
	// (globus-url-copy without -c, guc.go).
	stopAtFailure bool
	// jobFiles, when not nil, also sees the files of a job as they
	// start, progress and end (globus-url-copy's lines per file, and its
	// stop at the first failure, guc.go).
	jobFiles job.Observer
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("ferry: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks an error as a usage error: exit status 2. usagef makes
// one whose text is only its message.
var errUsage = errors.New("usage error")

// usageError is a usage error with its message; it matches errUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

// exitError carries a specific exit status.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	stopProfile := startProfile()
	var code int
	if isGUCName(filepath.Base(os.Args[0])) {
		code = runGUC(ctx, e, os.Args[1:]) // installed as globus-url-copy (guc.go)
	} else {
		code = runMain(ctx, e, os.Args[1:])
	}
	stopProfile()
	os.Exit(code)
}

// runMain dispatches args and returns the process exit status.
func runMain(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		printHelp(e.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			c, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(e.stderr, "ferry help: unknown command %q; see 'ferry help'\n", args[1])
				return 2
			}
			// A command's flags are defined by its run function: ask it,
			// with the rest (a verb: ferry help cert ca).
			c.run(ctx, &env{stdin: e.stdin, stdout: e.stdout, stderr: e.stdout}, append(slices.Clone(args[2:]), "-h"))
			return 0
		}
		printHelp(e.stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "ferry: unknown command %q; see 'ferry help'\n", name)
		return 2
	}
	err := c.run(ctx, e, args[1:])
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, errUsage):
		fmt.Fprintf(e.stderr, "ferry %s: %s\n", name, reason(err))
		return 2
	default:
		// reason shows a server's reply as "CODE text", without the
		// "ftp: " of its Go error.
		fmt.Fprintf(e.stderr, "ferry %s: %s\n", name, reason(err))
		return 1
	}
}

// newFlagSet returns the flag set a subcommand parses its arguments with;
// its usage text names the subcommand and lists the flags.
func newFlagSet(c *command, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("ferry "+c.name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{stdout: e.stdout, stderr: e.stderr})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ferry %s %s\n\n%s\n", c.name, c.usage, c.summary)
		var n int
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(fs.Output(), "\nflags:\n")
			fs.PrintDefaults()
		}
		fmt.Fprint(fs.Output(), c.help)
	}
	return fs
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, "ferry: a GridFTP server, client and tools\n\nusage: ferry COMMAND [flags] [args]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'ferry help COMMAND' or 'ferry COMMAND -h' for a command's flags.\n")
}

// flagOutput is where a flag set prints: the usage asked for with -h goes
// to standard output (ferry cp -h | less), errors and the usage after
// them to standard error.
type flagOutput struct {
	stdout, stderr io.Writer
	help           bool // the arguments ask for help
}

func (o *flagOutput) Write(p []byte) (int, error) {
	if o.help {
		return o.stdout.Write(p)
	}
	return o.stderr.Write(p)
}

// asksHelp reports whether args (up to "--") hold -h or -help.
func asksHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		switch a {
		case "-h", "-help", "--h", "--help":
			return true
		}
	}
	return false
}

// flagSetHook, when not nil, sees every flag set parseFlags parses (the
// tests walk the flags of every command with it).
var flagSetHook func(*flag.FlagSet)

// parseFlags parses a subcommand's flags. A bad flag exits with status 2
// without another message: the flag set has printed the error and usage.
// -h prints the usage on standard output.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if flagSetHook != nil {
		flagSetHook(fs)
	}
	if o, ok := fs.Output().(*flagOutput); ok {
		o.help = asksHelp(args)
	}
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return exitError{code: 2}
	}
	return err
}

// usagef returns a usage error with a message.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}
