package main

// ferry shell: an interactive client (cd, ls, get, put, mget, mput, ...)
// with line editing, history and tab completion of commands and of remote
// and local paths. Without a terminal it runs the commands of its standard
// input, for scripts.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/lineterm"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/transfer"
)

func init() {
	register(&command{
		name:    "shell",
		summary: "interactive client: cd, ls, get, put, mget, mput, ... with tab completion",
		usage:   "[flags] [URL]",
		run:     runShell,
	})
}

// shellHistoryMax bounds the lines kept in memory and in the history file.
const shellHistoryMax = 1000

// shellCmd is one command of the shell.
type shellCmd struct {
	name     string
	args     string // synopsis
	help     string
	complete [2]compKind // what the first and the later arguments are
	run      func(s *shell, ctx context.Context, args []string, rest string) error
}

// compKind says what an argument completes to.
type compKind int

const (
	compNone compKind = iota
	compRemote
	compRemoteDir
	compLocal
	compLocalDir
	compCommand
)

var shellCmds []*shellCmd

func init() {
	shellCmds = []*shellCmd{
		{"cd", "[DIR]", "change the remote directory (no DIR: the login directory)", [2]compKind{compRemoteDir, compNone}, (*shell).cmdCd},
		{"pwd", "", "print the remote directory", [2]compKind{}, (*shell).cmdPwd},
		{"ls", "[-l] [-a] [PATH|PATTERN]", "list a remote directory; -l long form, -a also dot files", [2]compKind{compRemote, compRemote}, (*shell).cmdLs},
		{"get", "[-r] [-cd] [-cc N] REMOTE [LOCAL]", "download files: -r trees, wildcards, -cd makes parents, -cc N at once", [2]compKind{compRemote, compLocal}, (*shell).cmdGet},
		{"put", "[-r] [-cd] [-cc N] LOCAL [REMOTE]", "upload files: -r trees, wildcards, -cd makes parents, -cc N at once", [2]compKind{compLocal, compRemote}, (*shell).cmdPut},
		{"mget", "[-r] [-cc N] PATTERN...", "download the remote files matching the patterns here", [2]compKind{compRemote, compRemote}, (*shell).cmdMget},
		{"mput", "[-r] [-cc N] PATTERN...", "upload the local files matching the patterns there", [2]compKind{compLocal, compLocal}, (*shell).cmdMput},
		{"mkdir", "[-p] DIR...", "create remote directories (-p with parents)", [2]compKind{compRemoteDir, compRemoteDir}, (*shell).cmdMkdir},
		{"rmdir", "DIR...", "remove empty remote directories", [2]compKind{compRemoteDir, compRemoteDir}, (*shell).cmdRmdir},
		{"rm", "FILE|PATTERN...", "remove remote files", [2]compKind{compRemote, compRemote}, (*shell).cmdRm},
		{"mv", "FROM TO", "rename a remote file or directory", [2]compKind{compRemote, compRemote}, (*shell).cmdMv},
		{"cksum", "[-a ALG] FILE...", "print the server's checksum of remote files (default MD5)", [2]compKind{compRemote, compRemote}, (*shell).cmdCksum},
		{"lcd", "[DIR]", "change the local directory (no DIR: home)", [2]compKind{compLocalDir, compNone}, (*shell).cmdLcd},
		{"lpwd", "", "print the local directory", [2]compKind{}, (*shell).cmdLpwd},
		{"lls", "[-l] [-a] [PATH]", "list a local directory", [2]compKind{compLocal, compLocal}, (*shell).cmdLls},
		{"quote", "COMMAND", "send a raw command and print the reply", [2]compKind{}, (*shell).cmdQuote},
		{"open", "URL", "connect to a server (closes the current connection)", [2]compKind{}, (*shell).cmdOpen},
		{"close", "", "disconnect", [2]compKind{}, (*shell).cmdClose},
		{"help", "[COMMAND]", "list the commands, or describe one", [2]compKind{compCommand, compNone}, (*shell).cmdHelp},
		{"quit", "", "leave (also exit, bye, Ctrl-D)", [2]compKind{}, nil},
	}
}

func shellHelpText() string {
	var b strings.Builder
	w := 0
	for _, c := range shellCmds {
		w = max(w, len(c.args))
	}
	for _, c := range shellCmds {
		fmt.Fprintf(&b, "  %-6s %-*s %s\n", c.name, w, c.args, c.help)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func findShellCmd(name string) *shellCmd {
	switch name {
	case "exit", "bye":
		name = "quit"
	case "dir":
		name = "ls"
	case "delete", "del":
		name = "rm"
	case "rename":
		name = "mv"
	}
	for _, c := range shellCmds {
		if c.name == name {
			return c
		}
	}
	return nil
}

// shell is one ferry shell session.
type shell struct {
	env  *env
	opts clientOptions
	// historyDB is the transfer history database (-history-db).
	historyDB string
	// eng is the copy engine of the shell's transfers (see engine).
	eng *transfer.Engine
	// parallel is the number of data connections per transfer (-p): above
	// 1 the transfers use MODE E.
	parallel int
	verbose  bool // -vb: per-stream progress
	// workers is the number of files many-file commands copy at once
	// (-cc); zero means job.DefaultWorkers.
	workers int
	// interactiveMode is set on a terminal: transfers report their
	// size, time and rate.
	interactiveMode bool

	conn *client.Conn // nil when not connected
	loc  location     // the server of the last open (its path is the start directory)
	lost bool         // the connection broke: reconnect before the next command
	cwd  string       // remote working directory ("" unknown)
	home string       // remote login directory
	lcwd string       // local working directory

	listings map[string]listing // remote directory listings for completion

	// busyCancel cancels the running command when the user types Ctrl-C
	// on a raw terminal.
	busyCancel atomic.Pointer[context.CancelFunc]
}

// listing is a cached remote directory listing.
type listing struct {
	at      time.Time
	entries []client.Entry
}

// listingTTL is how long a listing serves completion before it is read
// again; commands that change the server drop the cache at once.
const listingTTL = 30 * time.Second

func runShell(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["shell"], e)
	parallel := fs.Int("p", 1, "`N` data connections per transfer (above 1: MODE E)")
	verbose := fs.Bool("vb", false, "show the progress of each data connection during transfers")
	workers := fs.Int("cc", 0, fmt.Sprintf("`N` files that get -r, put -r, mget and mput copy at once, each with its own session; 0: %d", job.DefaultWorkers))
	active := fs.Bool("active", false, "active data connections: the client listens (EPRT/PORT)")
	historyFile := fs.String("history", "", "history `FILE` (default ~/.ferry_history; \"none\" keeps no file)")
	historyDB := fs.String("history-db", "", "record every transfer in the transfer history database `DSN`: a file path or postgres://...; \"off\": none (default $FERRY_HISTORY, else ~/.local/share/ferry/history.db); see ferry history")
	stopOnError := fs.Bool("e", false, "script mode: stop at the first failing command")
	var g gsiFlags
	g.register(fs, true)
	flagUsage := fs.Usage
	fs.Usage = func() {
		flagUsage()
		fmt.Fprintf(fs.Output(), "\nWith a terminal the shell edits lines (history in ~/.ferry_history, Tab\n"+
			"completes commands and remote and local names); otherwise it runs the\n"+
			"commands of its standard input and exits with status 1 if any failed.\n\ncommands:\n%s\n", shellHelpText())
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.check(); err != nil {
		return err
	}
	if *parallel < 1 || *parallel > 64 {
		return usagef("-p must be 1 to 64")
	}
	if *workers < 0 || *workers > maxShellWorkers {
		return usagef("-cc must be 0 to %d", maxShellWorkers)
	}
	if fs.NArg() > 1 {
		return usagef("want at most one URL")
	}
	lcwd, err := os.Getwd()
	if err != nil {
		return err
	}
	s := &shell{env: e, opts: clientOptions{active: *active, gsi: &g}, parallel: *parallel,
		verbose: *verbose, workers: *workers, lcwd: lcwd, listings: map[string]listing{}, historyDB: *historyDB}
	defer s.disconnect(ctx)
	defer func() {
		if s.eng != nil {
			closeEngine(s.eng)
		}
	}()
	if fs.NArg() == 1 {
		loc, err := parseLocation(fs.Arg(0))
		if err != nil {
			return usagef("%v", err)
		}
		if loc.kind != locRemote {
			return usagef("%s is not an ftp:// or gsiftp:// URL", fs.Arg(0))
		}
		if err := s.open(ctx, loc); err != nil {
			return err
		}
	}
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(fileFd(f)) {
		return s.interactive(ctx, f, *historyFile)
	}
	return s.script(ctx, e.stdin, *stopOnError)
}

// script runs the commands of r, one a line; the result says whether
// every command succeeded. What a command writes to standard error
// starts with its line number: "line 3: get f: 550 ...".
func (s *shell) script(ctx context.Context, r io.Reader, stopOnError bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	stderr := s.env.stderr
	numbered := &prefixWriter{w: stderr, atStart: true}
	senv := *s.env
	senv.stderr = numbered
	s.env = &senv
	defer func() { s.env.stderr = stderr }()
	failed := 0
	for n := 1; sc.Scan(); n++ {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		numbered.setPrefix(fmt.Sprintf("line %d: ", n))
		quit, err := s.execute(ctx, sc.Text())
		if err != nil {
			failed++
			if stopOnError {
				break
			}
		}
		if quit {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "ferry shell: %s failed\n", plural(failed, "command", "commands"))
		return exitError{code: 1}
	}
	return nil
}

// prefixWriter writes to w with prefix at the start of every line; it is
// safe for concurrent use.
type prefixWriter struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string // guarded by mu
	atStart bool   // guarded by mu: the next byte starts a line
}

func (p *prefixWriter) setPrefix(s string) {
	p.mu.Lock()
	p.prefix = s
	p.mu.Unlock()
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if p.atStart {
			out = append(out, p.prefix...)
		}
		out = append(out, c)
		p.atStart = c == '\n'
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// interactive reads command lines on the terminal in with line editing
// (internal/lineterm) until quit or EOF.
func (s *shell) interactive(ctx context.Context, in *os.File, historyFile string) error {
	fd := fileFd(in)
	restore, err := makeRaw(fd)
	if err != nil {
		// No raw mode: read plain lines from the terminal.
		return s.script(ctx, in, false)
	}
	defer restore()
	s.interactiveMode = true

	keys := lineterm.NewKeyReader(in, s.interrupt)
	defer keys.Stop()
	// The editor draws on the terminal: standard output, or standard
	// error when output goes to a file.
	screen := s.env.stdout
	if tty, _ := terminal(screen); !tty {
		screen = s.env.stderr
	}
	hist := lineterm.NewHistory(shellHistoryMax)
	lt := lineterm.NewLineTerm(keys, screen, hist)
	lt.Size = func() (int, int, error) { return term.GetSize(fd) }
	lt.Complete = func(head string) (int, []string, []string) {
		// What completion prints (a lost connection) goes above the
		// prompt.
		saved := s.env
		e := *saved
		e.stdout, e.stderr = lt.Terminal(), lt.Terminal()
		s.env = &e
		defer func() { s.env = saved }()
		return s.complete(ctx, head)
	}
	defer watchResize(lt.Resize)()
	if historyFile == "" {
		if home, err := os.UserHomeDir(); err == nil {
			historyFile = filepath.Join(home, ".ferry_history")
		}
	}
	if historyFile == "none" {
		historyFile = ""
	}
	if historyFile != "" {
		if err := hist.Load(historyFile); err != nil {
			fmt.Fprintf(s.env.stderr, "history: %v\n", err)
		}
		defer func() {
			if err := hist.Save(historyFile); err != nil {
				fmt.Fprintf(s.env.stderr, "history: %v\n", err)
			}
		}()
	}
	fmt.Fprintln(s.env.stdout, "ferry shell: type 'help' for the commands, Tab completes, Ctrl-D leaves.")
	// Pasted text is taken as typed, without completing at its tabs.
	lt.Terminal().SetBracketedPasteMode(true)
	defer lt.Terminal().SetBracketedPasteMode(false)
	for ctx.Err() == nil {
		line, err := lt.ReadLine(s.prompt())
		switch {
		case errors.Is(err, lineterm.ErrInterrupted):
			continue
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
		keys.Busy.Store(true)
		quit, _ := s.execute(ctx, line)
		keys.Busy.Store(false)
		if quit {
			return nil
		}
	}
	return context.Cause(ctx)
}

// interrupt cancels the running command (Ctrl-C on a raw terminal).
func (s *shell) interrupt() {
	if c := s.busyCancel.Load(); c != nil {
		(*c)()
	}
}

func (s *shell) prompt() string {
	if s.conn == nil && !s.lost {
		return "ferry> "
	}
	return fmt.Sprintf("ferry %s:%s> ", s.loc.hostname, s.cwd)
}

// execute runs one command line. quit says the shell should end; the
// error (already reported) says the command failed.
func (s *shell) execute(ctx context.Context, line string) (quit bool, err error) {
	trimmed := strings.TrimSpace(line)
	if trimmed == "" || strings.HasPrefix(trimmed, "#") {
		return false, nil
	}
	words, err := splitWords(trimmed)
	if err != nil {
		fmt.Fprintf(s.env.stderr, "%v\n", err)
		return false, err
	}
	name := words[0]
	c := findShellCmd(name)
	if c == nil {
		err := fmt.Errorf("unknown command %q; type 'help'", name)
		fmt.Fprintln(s.env.stderr, err)
		return false, err
	}
	if c.name == "quit" {
		return true, nil
	}
	rest := strings.TrimSpace(strings.TrimPrefix(trimmed, name))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.busyCancel.Store(&cancel)
	defer s.busyCancel.Store(nil)
	err = c.run(s, cctx, words[1:], rest)
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			err = errors.New("interrupted")
		}
		fmt.Fprintf(s.env.stderr, "%s: %s\n", c.name, describe(err))
		s.checkConn(ctx, err)
	}
	return false, err
}

// checkConn finds out whether an error broke the connection; the next
// command then reconnects.
func (s *shell) checkConn(ctx context.Context, err error) {
	var re *client.ReplyError
	if s.conn == nil || errors.As(err, &re) {
		return
	}
	if _, perr := s.conn.Do(ctx, "NOOP"); perr != nil {
		s.conn.Close()
		s.conn, s.lost = nil, true
		fmt.Fprintln(s.env.stderr, "connection lost; the next command reconnects")
	}
}

// errNotConnected is the error of remote commands without a connection.
var errNotConnected = errors.New("not connected; use open URL")

// remote returns the connection, reconnecting after a lost one.
func (s *shell) remote(ctx context.Context) (*client.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	if !s.lost {
		return nil, errNotConnected
	}
	cwd := s.cwd
	if err := s.open(ctx, s.loc); err != nil {
		return nil, err
	}
	if cwd != "" && cwd != s.cwd {
		if err := s.conn.Cwd(ctx, cwd); err == nil {
			s.cwd = cwd
		}
	}
	return s.conn, nil
}

// open connects to loc and changes to its directory.
func (s *shell) open(ctx context.Context, loc location) error {
	s.disconnect(ctx)
	c, err := connect(ctx, loc, s.opts)
	if err != nil {
		return err
	}
	s.conn, s.loc, s.lost = c, loc, false
	s.listings = map[string]listing{}
	s.home, _ = c.Pwd(ctx)
	if p := strings.TrimSuffix(loc.path, "/"); p != "" && p != "." && loc.path != "/" {
		if err := c.Cwd(ctx, p); err != nil {
			fmt.Fprintf(s.env.stderr, "cd %s: %s\n", p, describe(err))
		}
	}
	s.cwd, _ = c.Pwd(ctx)
	return nil
}

func (s *shell) disconnect(ctx context.Context) {
	if s.conn != nil {
		hangUp(ctx, s.conn)
	}
	s.conn, s.lost, s.cwd = nil, false, ""
}

// changed drops the cached listings after a command that changed the
// server's files.
func (s *shell) changed() { clear(s.listings) }

// rpath resolves a remote path against the remote working directory.
func (s *shell) rpath(p string) string {
	if p == "" {
		p = "."
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || s.cwd == "" {
		return p
	}
	return path.Join(s.cwd, p)
}

// lpath resolves a local path against the local working directory; "~"
// is the home directory.
func (s *shell) lpath(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if p == "" {
		return s.lcwd
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(s.lcwd, p)
}

// shellOpts are the leading options of a command: single letters, which
// may be grouped ("-la"), and whole words ("-cd"), some with a value
// ("-cc 4"). Each set option maps to its value, "" for a switch.
type shellOpts map[string]string

func (o shellOpts) has(name string) bool {
	_, ok := o[name]
	return ok
}

// parseShellOpts splits the leading options off args. letters lists the
// one-letter switches; words the word options, those ending in "=" taking
// the next argument as their value. "--" ends the options.
func parseShellOpts(args []string, letters string, words ...string) (shellOpts, []string, error) {
	set := shellOpts{}
next:
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		for _, w := range words {
			name, valued := strings.CutSuffix(w, "=")
			if a[1:] != name {
				continue
			}
			if valued {
				if len(args) == 0 {
					return nil, nil, fmt.Errorf("option -%s wants a value", name)
				}
				set[name], args = args[0], args[1:]
			} else {
				set[name] = ""
			}
			continue next
		}
		for i := 1; i < len(a); i++ {
			if strings.IndexByte(letters, a[i]) < 0 {
				return nil, nil, fmt.Errorf("unknown option -%c", a[i])
			}
			set[a[i:i+1]] = ""
		}
	}
	return set, args, nil
}

func (s *shell) cmdCd(ctx context.Context, args []string, _ string) error {
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	if len(args) > 1 {
		return errors.New("want one directory")
	}
	dir := s.home
	if len(args) == 1 {
		dir = s.rpath(args[0])
	}
	if dir == "" {
		dir = "/"
	}
	if err := c.Cwd(ctx, dir); err != nil {
		return err
	}
	s.cwd, err = c.Pwd(ctx)
	return err
}

func (s *shell) cmdPwd(ctx context.Context, _ []string, _ string) error {
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	if s.cwd, err = c.Pwd(ctx); err != nil {
		return err
	}
	fmt.Fprintln(s.env.stdout, s.cwd)
	return nil
}

func (s *shell) cmdLs(ctx context.Context, args []string, _ string) error {
	fl, args, err := parseShellOpts(args, "la")
	if err != nil {
		return err
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		args = []string{""}
	}
	for i, a := range args {
		var entries []client.Entry
		switch {
		case hasGlob(path.Base(a)):
			entries, err = s.remoteGlob(ctx, a, false)
			if err == nil && len(entries) == 0 {
				err = fmt.Errorf("%s: no match", a)
			}
		case a == "":
			entries, err = c.List(ctx, s.rpath(""))
		default:
			var st client.Entry
			p := s.rpath(a)
			if st, err = c.Stat(ctx, p); err == nil {
				if isDirType(st.Type) {
					entries, err = c.List(ctx, p)
				} else {
					st.Name = path.Base(p)
					entries = []client.Entry{st}
				}
			}
		}
		if err != nil {
			return err
		}
		if len(args) > 1 {
			if i > 0 {
				fmt.Fprintln(s.env.stdout)
			}
			fmt.Fprintf(s.env.stdout, "%s:\n", a)
		}
		if !fl.has("a") {
			entries = slices.DeleteFunc(entries, func(e client.Entry) bool { return strings.HasPrefix(e.Name, ".") })
		}
		slices.SortFunc(entries, func(a, b client.Entry) int { return strings.Compare(a.Name, b.Name) })
		for _, en := range entries {
			printEntry(s.env.stdout, en, fl.has("l"))
		}
	}
	return nil
}

// remoteGlob lists the remote entries matching pattern, whose last
// element may hold wildcards (path.Match); the names are paths as the
// pattern gave its directory. onlyFiles drops directories.
func (s *shell) remoteGlob(ctx context.Context, pattern string, onlyFiles bool) ([]client.Entry, error) {
	dir, base := path.Split(pattern)
	if hasGlob(dir) {
		return nil, fmt.Errorf("%s: wildcards only in the last element", pattern)
	}
	entries, err := matchEntries(ctx, s.conn, s.rpath(dir), base)
	if err != nil {
		return nil, err
	}
	var out []client.Entry
	for _, e := range entries {
		if onlyFiles && isDirType(e.Type) {
			continue
		}
		e.Name = dir + e.Name
		out = append(out, e)
	}
	return out, nil
}

func (s *shell) cmdGet(ctx context.Context, args []string, _ string) error {
	o, args, err := parseShellOpts(args, "r", jobOptions...)
	if err != nil {
		return err
	}
	if len(args) < 1 || len(args) > 2 {
		return errors.New("want REMOTE [LOCAL]")
	}
	if replica.IsLFN(args[0]) {
		return s.getLFN(ctx, o, args) // replica_shell.go
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	if o.has("r") || o.has("cd") || hasGlob(args[0]) {
		dst := s.lcwd + string(filepath.Separator)
		if len(args) == 2 {
			dst = s.lpathDir(args[1])
		}
		return s.runJob(ctx, "get", false, o, []string{s.rpathDir(args[0])}, dst)
	}
	src := s.rpath(args[0])
	st, err := c.Stat(ctx, src)
	if err != nil {
		return err
	}
	if isDirType(st.Type) {
		return fmt.Errorf("%s is a directory (use get -r)", args[0])
	}
	base := path.Base(src)
	if wire.CheckEntryName(base) != nil {
		return fmt.Errorf("%s names no file to download here", args[0])
	}
	dst := s.lpath(base)
	if len(args) == 2 {
		dst = s.lpath(args[1])
		if fi, err := os.Stat(dst); err == nil && fi.IsDir() || strings.HasSuffix(args[1], "/") {
			dst = filepath.Join(dst, base)
		}
	}
	_, err = s.getFile(ctx, src, dst, st.Size)
	return err
}

// getFile downloads the remote file src to the local path dst through a
// temporary file in dst's directory, renamed over dst only when complete.
func (s *shell) getFile(ctx context.Context, src, dst string, size int64) (int64, error) {
	dir, base := filepath.Split(dst)
	f, err := os.CreateTemp(dir, "."+base+".ferry-*")
	if err != nil {
		return 0, destError(dst, err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	tp := s.startTransfer(src, size)
	tr := s.track(src, dst, false, size)
	update := func(p client.Progress) {
		tr.Progress(p)
		tp.update(p)
	}
	opts := &client.RetrieveOptions{Parallel: s.parallel, Progress: update, ProgressInterval: progressInterval}
	var n int64
	if s.parallel > 1 {
		n, err = s.conn.RetrieveAt(ctx, src, f, opts)
	} else {
		n, err = s.conn.Retrieve(ctx, src, f, opts)
	}
	tr.Done(ctx, n, err)
	tp.finish(n, err)
	if err != nil {
		return n, err
	}
	if err := f.Close(); err != nil {
		return n, err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return n, err
	}
	done = true
	return n, nil
}

func (s *shell) cmdPut(ctx context.Context, args []string, _ string) error {
	o, args, err := parseShellOpts(args, "r", jobOptions...)
	if err != nil {
		return err
	}
	if len(args) < 1 || len(args) > 2 {
		return errors.New("want LOCAL [REMOTE]")
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	if o.has("r") || o.has("cd") || hasGlob(args[0]) {
		dst := s.rpathDir(".")
		if len(args) == 2 {
			dst = s.rpathDir(args[1])
		}
		return s.runJob(ctx, "put", true, o, []string{s.lpathDir(args[0])}, dst)
	}
	src := s.lpath(args[0])
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory (use put -r)", args[0])
	}
	base := filepath.Base(src)
	dst := s.rpath(base)
	if len(args) == 2 {
		dst = s.rpath(args[1])
		if strings.HasSuffix(args[1], "/") {
			dst = path.Join(dst, base)
		} else if st, err := c.Stat(ctx, dst); err == nil && isDirType(st.Type) {
			dst = path.Join(dst, base)
		}
	}
	defer s.changed()
	_, err = s.putFile(ctx, src, dst)
	return err
}

// putFile uploads the local file src to the remote path dst.
func (s *shell) putFile(ctx context.Context, src, dst string) (int64, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", src)
	}
	tp := s.startTransfer(dst, fi.Size())
	tr := s.track(dst, src, true, fi.Size())
	update := func(p client.Progress) {
		tr.Progress(p)
		tp.update(p)
	}
	opts := &client.StoreOptions{Parallel: s.parallel, Progress: update, ProgressInterval: progressInterval}
	var n int64
	if s.parallel > 1 {
		n, err = s.conn.StoreAt(ctx, dst, f, fi.Size(), opts)
	} else {
		opts.Size = fi.Size()
		n, err = s.conn.Store(ctx, dst, f, opts)
	}
	tp.finish(n, err)
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("%s changed during the upload (%d of %d bytes sent)", src, n, fi.Size())
	}
	tr.Done(ctx, n, err)
	if err != nil {
		return n, fmt.Errorf("%w (%s may be incomplete on the server)", err, dst)
	}
	return n, nil
}

func (s *shell) cmdMget(ctx context.Context, args []string, _ string) error {
	o, args, err := parseShellOpts(args, "r", jobOptions...)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return errors.New("want PATTERN...")
	}
	if _, err := s.remote(ctx); err != nil {
		return err
	}
	srcs := make([]string, len(args))
	for i, a := range args {
		srcs[i] = s.rpathDir(a)
	}
	return s.runJob(ctx, "mget", false, o, srcs, s.lcwd+string(filepath.Separator))
}

func (s *shell) cmdMput(ctx context.Context, args []string, _ string) error {
	o, args, err := parseShellOpts(args, "r", jobOptions...)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return errors.New("want PATTERN...")
	}
	if _, err := s.remote(ctx); err != nil {
		return err
	}
	srcs := make([]string, len(args))
	for i, a := range args {
		srcs[i] = s.lpathDir(a)
	}
	return s.runJob(ctx, "mput", true, o, srcs, s.rpathDir("."))
}

func (s *shell) cmdMkdir(ctx context.Context, args []string, _ string) error {
	fl, args, err := parseShellOpts(args, "p")
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return errors.New("want DIR...")
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	defer s.changed()
	for _, a := range args {
		p := strings.TrimSuffix(s.rpath(a), "/")
		if fl.has("p") {
			err = mkdirAll(ctx, c, p)
		} else {
			err = c.Mkdir(ctx, p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *shell) cmdRmdir(ctx context.Context, args []string, _ string) error {
	if len(args) == 0 {
		return errors.New("want DIR...")
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	defer s.changed()
	for _, a := range args {
		if err := c.Rmdir(ctx, strings.TrimSuffix(s.rpath(a), "/")); err != nil {
			return err
		}
	}
	return nil
}

func (s *shell) cmdRm(ctx context.Context, args []string, _ string) error {
	if len(args) == 0 {
		return errors.New("want FILE...")
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	defer s.changed()
	for _, a := range args {
		targets := []string{a}
		if hasGlob(path.Base(a)) {
			entries, err := s.remoteGlob(ctx, a, true)
			if err != nil {
				return err
			}
			if len(entries) == 0 {
				return fmt.Errorf("%s: no match", a)
			}
			targets = targets[:0]
			for _, e := range entries {
				targets = append(targets, e.Name)
			}
		}
		for _, t := range targets {
			if err := c.Delete(ctx, s.rpath(t)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *shell) cmdMv(ctx context.Context, args []string, _ string) error {
	if len(args) != 2 {
		return errors.New("want FROM TO")
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	defer s.changed()
	return c.Rename(ctx, strings.TrimSuffix(s.rpath(args[0]), "/"), s.rpath(args[1]))
}

func (s *shell) cmdCksum(ctx context.Context, args []string, _ string) error {
	alg := "MD5"
	if len(args) >= 2 && args[0] == "-a" {
		alg, args = strings.ToUpper(args[1]), args[2:]
	}
	if len(args) == 0 || alg == "" || strings.ContainsAny(alg, " \t") {
		return errors.New("want [-a ALG] FILE...")
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	for _, a := range args {
		sum, err := c.Checksum(ctx, alg, s.rpath(a), 0, -1)
		if err != nil {
			return err
		}
		fmt.Fprintf(s.env.stdout, "%s  %s\n", sum, a)
	}
	return nil
}

func (s *shell) cmdLcd(_ context.Context, args []string, _ string) error {
	if len(args) > 1 {
		return errors.New("want one directory")
	}
	dir := "~"
	if len(args) == 1 {
		dir = args[0]
	}
	p := s.lpath(dir)
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", p)
	}
	s.lcwd = p
	fmt.Fprintf(s.env.stdout, "local directory: %s\n", p)
	return nil
}

func (s *shell) cmdLpwd(context.Context, []string, string) error {
	fmt.Fprintln(s.env.stdout, s.lcwd)
	return nil
}

func (s *shell) cmdLls(_ context.Context, args []string, _ string) error {
	fl, args, err := parseShellOpts(args, "la")
	if err != nil {
		return err
	}
	if len(args) > 1 {
		return errors.New("want one path")
	}
	p := s.lcwd
	if len(args) == 1 {
		p = s.lpath(args[0])
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	var names []string
	if fi.IsDir() {
		des, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, d := range des {
			names = append(names, d.Name())
		}
	} else {
		p, names = filepath.Dir(p), []string{filepath.Base(p)}
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".") && !fl.has("a") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(p, n))
		if err != nil {
			continue
		}
		e := client.Entry{Name: n, Type: "file", Size: fi.Size(), Modify: fi.ModTime()}
		switch {
		case fi.IsDir():
			e.Type = "dir"
		case fi.Mode()&os.ModeSymlink != 0:
			e.Type = "slink"
			e.Slink, _ = os.Readlink(filepath.Join(p, n))
		}
		printEntry(s.env.stdout, e, fl.has("l"))
	}
	return nil
}

// dataVerbs need a data connection, which quote cannot open.
var dataVerbs = []string{"RETR", "STOR", "STOU", "APPE", "LIST", "NLST", "MLSD", "MLSC", "MLSR", "ERET", "ESTO", "PASV", "EPSV", "SPAS", "PORT", "EPRT", "SPOR", "ABOR", "QUIT", "USER", "PASS", "AUTH", "ADAT", "REIN"}

func (s *shell) cmdQuote(ctx context.Context, _ []string, rest string) error {
	if rest == "" {
		return errors.New("want COMMAND")
	}
	if v, _, _ := strings.Cut(rest, " "); slices.Contains(dataVerbs, strings.ToUpper(v)) {
		return fmt.Errorf("%s cannot be sent raw; use the shell's commands", strings.ToUpper(v))
	}
	c, err := s.remote(ctx)
	if err != nil {
		return err
	}
	defer s.changed()
	r, err := c.Do(ctx, "%s", rest)
	if err != nil {
		return err
	}
	for i, l := range r.Lines {
		sep := "-"
		if i == len(r.Lines)-1 {
			sep = " "
		}
		fmt.Fprintf(s.env.stdout, "%03d%s%s\n", r.Code, sep, l)
	}
	if r.Class() >= 4 {
		return fmt.Errorf("%03d reply", r.Code)
	}
	return nil
}

func (s *shell) cmdOpen(ctx context.Context, args []string, _ string) error {
	if len(args) != 1 {
		return errors.New("want URL")
	}
	loc, err := parseLocation(args[0])
	if err != nil {
		return err
	}
	if loc.kind != locRemote {
		return fmt.Errorf("%s is not an ftp:// or gsiftp:// URL", args[0])
	}
	return s.open(ctx, loc)
}

func (s *shell) cmdClose(ctx context.Context, _ []string, _ string) error {
	if s.conn == nil && !s.lost {
		return errNotConnected
	}
	s.disconnect(ctx)
	return nil
}

func (s *shell) cmdHelp(_ context.Context, args []string, _ string) error {
	if len(args) == 0 {
		fmt.Fprintln(s.env.stdout, shellHelpText())
		fmt.Fprintln(s.env.stdout, "Names with spaces: quote them ('a b', \"a b\") or escape (a\\ b). Ctrl-C stops a transfer.")
		return nil
	}
	for _, a := range args {
		c := findShellCmd(a)
		if c == nil {
			return fmt.Errorf("unknown command %q", a)
		}
		fmt.Fprintf(s.env.stdout, "%s %s\n    %s\n", c.name, c.args, c.help)
	}
	return nil
}

// progressInterval is how often transfers report progress to the display.
const progressInterval = 250 * time.Millisecond

// transferProgress shows one transfer of the shell: a live display on a
// terminal, a report a second with -vb off a terminal, and after an
// interactive transfer a line with its size, time and rate.
type transferProgress struct {
	s     *shell
	name  string
	start time.Time
	live  *progress.Display
	lines *progressPrinter
}

func (s *shell) startTransfer(name string, size int64) *transferProgress {
	tp := &transferProgress{s: s, name: name, start: time.Now()}
	if tty, width := terminal(s.env.stderr); tty {
		tp.live = progress.New(progress.Options{Out: s.env.stderr, Live: true, Width: width, Streams: s.verbose, Clear: true})
		tp.live.FileStarted(path.Base(name), size)
		tp.live.Start()
	} else if s.verbose {
		tp.lines = newProgressPrinter(s.env.stderr)
	}
	return tp
}

// update is the transfer's client progress callback.
func (tp *transferProgress) update(p client.Progress) {
	switch {
	case tp.live != nil:
		tp.live.FileProgress(path.Base(tp.name), p.Bytes)
		tp.live.FileStreams(path.Base(tp.name), slices.Clone(p.Streams))
	case tp.lines != nil:
		tp.lines.update(p)
	}
}

// finish ends the display of a transfer that moved n bytes.
func (tp *transferProgress) finish(n int64, err error) {
	if tp.live != nil {
		tp.live.FileDone(path.Base(tp.name), n, err)
		tp.live.Close()
	}
	if tp.lines != nil {
		tp.lines.done()
	}
	if err == nil && tp.s.interactiveMode {
		d := time.Since(tp.start)
		fmt.Fprintf(tp.s.env.stdout, "%s: %d bytes in %s (%s/s)\n", tp.name, n,
			d.Round(time.Millisecond), progress.Bytes(float64(n)/max(d.Seconds(), 1e-3)))
	}
}

// fileFd returns f's descriptor without File.Fd's side effect of putting
// it into blocking mode (which would stop read deadlines from working).
func fileFd(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(d uintptr) { fd = int(d) })
	}
	return fd
}
