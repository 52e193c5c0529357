package main

// ferry replica: the replica catalogue (internal/replica), logical file
// names (lfn:/path) mapped to the URLs of their copies.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/checksum"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/replica"
)

func init() {
	register(&command{
		name:    "replica",
		summary: "the replica catalogue: logical file names (lfn:/path) and the URLs of their copies",
		usage:   "add|rm|ls|show|register|verify [flags] ARGS",
		help:    replicaHelp,
		run:     runReplica,
	})
}

const replicaHelp = `
Verbs:
  add lfn:/PATH URL...        register URL(s) as replicas of lfn:/PATH: each
                              server is asked the file's size (SIZE) and
                              checksum (CKSM); a new name takes the first's,
                              a replica that differs from the name's is refused
  rm lfn:/PATH [URL...]       remove those replicas; without URLs, the name and
                              all its replicas
  ls [lfn:/PREFIX]            list the names at or below PREFIX (all without)
  show lfn:/PATH              the name's size, checksum and every replica with
                              its state and when it was last verified
  register URL lfn:/PREFIX    walk the remote tree URL and register every file
                              below it as a replica of lfn:/PREFIX/RELPATH, with
                              the checksum CKSM gives
  verify [lfn:/PREFIX]        check every replica (at or below PREFIX) against
                              the catalogue: ok, BAD (size or checksum differs),
                              MISSING (the server says there is no such file)
                              or unreachable (left as it was); exit status 1
                              unless all are ok

The catalogue lives in the transfer history's database (-history,
$FERRY_HISTORY, else ~/.local/share/ferry/history.db): a PostgreSQL URL
there shares it between the users of a site. ferry cp, ferry sync and
ferry replicate take lfn:/PATH as a source; see docs/replicas.md.
`

// replicaFlags are the flags of ferry replica's verbs.
type replicaFlags struct {
	history string
	alg     string
}

func runReplica(ctx context.Context, e *env, args []string) error {
	c0 := commands["replica"]
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fs := newFlagSet(c0, e)
		return parseFlags(fs, append([]string{"-h"}, args...))
	}
	verb, args := args[0], args[1:]
	fs := newFlagSet(&command{name: "replica " + verb, usage: c0.usage, summary: c0.summary, help: c0.help}, e)
	var f replicaFlags
	fs.StringVar(&f.history, "history", "", "the `DSN` of the database holding the catalogue (the transfer history's): an SQLite file or postgres://...; \"\": $FERRY_HISTORY, else the default file")
	fs.StringVar(&f.alg, "checksum-alg", "SHA256", "the checksum algorithm `NAME` of new names (add, register): MD5, ADLER32, SHA1, SHA256, SHA512, CRC32C; known names keep theirs. The catalogue's checksum is what tells a replica from a forgery: a 32-bit sum (ADLER32, CRC32C) can be matched by a hostile server")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f.alg = strings.ToUpper(f.alg)
	if _, err := checksum.New(f.alg); err != nil {
		return usagef("-checksum-alg: %v", err)
	}
	args = fs.Args()
	var run func(context.Context, *env, *replica.Catalogue, replicaFlags, []string) error
	switch verb {
	case "add":
		if len(args) < 2 {
			return usagef("want: replica add lfn:/PATH URL...")
		}
		run = replicaAdd
	case "rm":
		if len(args) < 1 {
			return usagef("want: replica rm lfn:/PATH [URL...]")
		}
		run = replicaRm
	case "ls":
		if len(args) > 1 {
			return usagef("want: replica ls [lfn:/PREFIX]")
		}
		run = replicaLs
	case "show":
		if len(args) != 1 {
			return usagef("want: replica show lfn:/PATH")
		}
		run = replicaShow
	case "register":
		if len(args) != 2 {
			return usagef("want: replica register URL lfn:/PREFIX")
		}
		run = replicaRegister
	case "verify":
		if len(args) > 1 {
			return usagef("want: replica verify [lfn:/PREFIX]")
		}
		run = replicaVerify
	default:
		return usagef("unknown verb %q: add, rm, ls, show, register or verify", verb)
	}
	// Malformed names are refused before the database is opened.
	for i, a := range args {
		if replica.IsLFN(a) || i == 0 && verb != "register" || i == 1 && verb == "register" {
			if _, err := replica.ParseLFN(a); err != nil {
				return usagef("%v", err)
			}
		}
	}
	cat, err := openCatalogue(ctx, f.history)
	if err != nil {
		return err
	}
	defer cat.Close()
	return run(ctx, e, cat, f, args)
}

// openCatalogue opens the replica catalogue in the history database the
// -history flag value (or $FERRY_HISTORY) names.
func openCatalogue(ctx context.Context, flagValue string) (*replica.Catalogue, error) {
	return replica.Open(ctx, hist.DSN(flagValue))
}

// mustLFN is the path of a lfn: argument already checked.
func mustLFN(arg string) string {
	p, _ := replica.ParseLFN(arg)
	return p
}

// measurement is what a server says of a replica.
type measurement struct {
	size    int64
	sum     string
	missing bool // the server says there is no such file
}

// errMissing is the error of measuring a file the server does not have.
var errMissing = errors.New("no such file on the server")

// measureReplica asks the server of rawURL for the file's size and its
// alg checksum. A 550 reply to SIZE is errMissing (wrapped).
func measureReplica(ctx context.Context, rawURL, alg string, o clientOptions) (measurement, error) {
	l, err := parseLocation(rawURL)
	if err != nil {
		return measurement{}, err
	}
	if l.kind != locRemote {
		return measurement{}, fmt.Errorf("%s: a replica is a file on a server (ftp://, gsiftp://, ftps://)", rawURL)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := connect(cctx, l, o)
	if err != nil {
		return measurement{}, err
	}
	defer hangUp(cctx, conn)
	size, err := conn.Size(cctx, l.path)
	if err != nil {
		var re *client.ReplyError
		if errors.As(err, &re) && re.Reply.Code == 550 {
			return measurement{missing: true}, fmt.Errorf("%s: %w (%s)", l, errMissing, describe(err))
		}
		return measurement{}, &opError{What: "size of " + l.display, Err: err}
	}
	sum, err := conn.Checksum(cctx, alg, l.path, 0, -1)
	if err != nil {
		return measurement{}, &opError{What: alg + " checksum of " + l.display, Err: err}
	}
	return measurement{size: size, sum: sum}, nil
}

// replicaURL is the URL of a replica as the catalogue keeps it: as
// given, without a password.
func replicaURL(arg string) (string, error) {
	l, err := parseLocation(arg)
	if err != nil {
		return "", err
	}
	if l.kind != locRemote {
		return "", fmt.Errorf("%s: a replica is a file on a server (ftp://, gsiftp://, ftps://)", arg)
	}
	if strings.HasSuffix(l.path, "/") {
		return "", fmt.Errorf("%s: a replica is a file, not a directory", l)
	}
	return l.display, nil
}

// algOf is the checksum algorithm of lfn: the catalogue's when it knows
// the name, else def.
func algOf(ctx context.Context, cat *replica.Catalogue, lfn, def string) string {
	if e, err := cat.Lookup(ctx, lfn); err == nil {
		return e.Alg
	}
	return def
}

// tally reports the replicas a verb (add, register) registers, one
// line each: "LFN URL" on stdout, or why not on stderr, and counts them.
type tally struct {
	e          *env
	verb       string
	ok, failed int
}

// report reports the replica url of lfn, registered unless err; an
// error's line starts with what ("" for nothing).
func (t *tally) report(lfn, url, what string, err error) {
	if err != nil {
		if what != "" {
			what += ": "
		}
		fmt.Fprintf(t.e.stderr, "ferry replica %s: %s%s\n", t.verb, what, reason(err))
		t.failed++
		return
	}
	t.ok++
	fmt.Fprintf(t.e.stdout, "%s %s\n", replica.Format(lfn), url)
}

func replicaAdd(ctx context.Context, e *env, cat *replica.Catalogue, f replicaFlags, args []string) error {
	lfn := mustLFN(args[0])
	t := tally{e: e, verb: "add"}
	for _, arg := range args[1:] {
		t.report(lfn, redactURL(arg), "", addOne(ctx, cat, lfn, arg, f.alg))
	}
	if t.failed > 0 {
		return exitError{code: 1}
	}
	return nil
}

// addOne measures the replica arg and adds it to lfn.
func addOne(ctx context.Context, cat *replica.Catalogue, lfn, arg, defAlg string) error {
	u, err := replicaURL(arg)
	if err != nil {
		return err
	}
	alg := algOf(ctx, cat, lfn, defAlg)
	m, err := measureReplica(ctx, arg, alg, clientOptions{})
	if err != nil {
		return err
	}
	return cat.Add(ctx, lfn, alg, replica.Replica{URL: u, Size: m.size, Sum: m.sum, Verified: time.Now()})
}

func replicaRm(ctx context.Context, e *env, cat *replica.Catalogue, _ replicaFlags, args []string) error {
	lfn := mustLFN(args[0])
	var urls []string
	for _, a := range args[1:] {
		u, err := replicaURL(a)
		if err != nil {
			return usagef("%v", err)
		}
		urls = append(urls, u)
	}
	return cat.Remove(ctx, lfn, urls...)
}

// entriesBelow lists the entries at or below the lfn:/PREFIX of args
// (every entry without one), for ls and verify. A prefix holding none
// is an error, worded by none.
func entriesBelow(ctx context.Context, cat *replica.Catalogue, args []string, none func(lfn string) error) ([]replica.Entry, error) {
	prefix := "/"
	if len(args) == 1 {
		prefix = mustLFN(args[0])
	}
	es, err := cat.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 && prefix != "/" {
		return nil, none(replica.Format(prefix))
	}
	return es, nil
}

func replicaLs(ctx context.Context, e *env, cat *replica.Catalogue, _ replicaFlags, args []string) error {
	es, err := entriesBelow(ctx, cat, args, func(lfn string) error { return fmt.Errorf("no LFN at or below %s", lfn) })
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, en := range es {
		ok := 0
		for _, r := range en.Replicas {
			if r.State == replica.OK {
				ok++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s:%s\t%d replicas, %d ok\n", replica.Format(en.LFN), en.Size, en.Alg, en.Sum, len(en.Replicas), ok)
	}
	return tw.Flush()
}

func replicaShow(ctx context.Context, e *env, cat *replica.Catalogue, _ replicaFlags, args []string) error {
	en, err := cat.Lookup(ctx, mustLFN(args[0]))
	if err != nil {
		return err
	}
	printLFNEntry(e.stdout, en)
	return nil
}

// printLFNEntry prints an entry and its replicas.
func printLFNEntry(w io.Writer, en replica.Entry) {
	fmt.Fprintf(w, "%s\n  size %d, %s %s\n", replica.Format(en.LFN), en.Size, en.Alg, en.Sum)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range en.Replicas {
		v := "never verified"
		if !r.Verified.IsZero() {
			v = "verified " + r.Verified.Local().Format(time.DateTime)
		}
		note := ""
		if r.Note != "" {
			note = "\t(" + r.Note + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", r.State, r.URL, v, note)
	}
	tw.Flush()
}

func replicaRegister(ctx context.Context, e *env, cat *replica.Catalogue, f replicaFlags, args []string) error {
	root, err := parseLocation(args[0])
	if err != nil {
		return usagef("%v", err)
	}
	if root.kind != locRemote {
		return usagef("%s: register walks a tree on a server (ftp://, gsiftp://, ftps://)", args[0])
	}
	prefix := mustLFN(args[1])
	conn, err := connect(ctx, root, clientOptions{})
	if err != nil {
		return err
	}
	defer hangUp(ctx, conn)
	base := strings.TrimSuffix(root.display, "/")
	dir := strings.TrimSuffix(root.path, "/")
	if dir == "" {
		dir = "/"
	}
	t := tally{e: e, verb: "register"}
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := conn.List(ctx, path.Join(dir, rel))
		if err != nil {
			return &opError{What: "list " + base + "/" + rel, Err: err}
		}
		for _, en := range entries {
			name := path.Base(en.Name)
			r := path.Join(rel, name)
			switch en.Type {
			case "dir":
				if err := walk(r); err != nil {
					return err
				}
				continue
			case "file":
			default:
				continue // links and others: not files of their own
			}
			lfn := replica.Join(prefix, r)
			u := base + "/" + escapePath(r)
			alg := algOf(ctx, cat, lfn, f.alg)
			sum, err := conn.Checksum(ctx, alg, path.Join(dir, r), 0, -1)
			if err == nil {
				err = cat.Add(ctx, lfn, alg, replica.Replica{URL: u, Size: en.Size, Sum: sum, Verified: time.Now()})
			}
			t.report(lfn, u, replica.Format(lfn), err)
		}
		return nil
	}
	if err := walk(""); err != nil {
		return err
	}
	if t.failed > 0 {
		return fmt.Errorf("registered %d files; %d failed", t.ok, t.failed)
	}
	return nil
}

// escapePath percent-encodes a relative path for a URL.
func escapePath(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23", " ", "%20").Replace(p)
	}
	return strings.Join(parts, "/")
}

func replicaVerify(ctx context.Context, e *env, cat *replica.Catalogue, _ replicaFlags, args []string) error {
	es, err := entriesBelow(ctx, cat, args, func(lfn string) error { return fmt.Errorf("unknown LFN %s", lfn) })
	if err != nil {
		return err
	}
	problems := 0
	for _, en := range es {
		for _, r := range en.Replicas {
			state, note := verifyReplica(ctx, cat, en, r)
			word := string(state)
			if state != replica.OK {
				problems++
				word = strings.ToUpper(word)
			}
			if note != "" {
				note = ": " + note
			}
			fmt.Fprintf(e.stdout, "%s %s %s%s\n", word, replica.Format(en.LFN), r.URL, note)
		}
	}
	if problems > 0 {
		return exitError{code: 1}
	}
	return nil
}

// verifyReplica measures r and records the outcome: OK, Bad or Missing,
// or "unreachable" (nothing recorded) when the server could not say.
func verifyReplica(ctx context.Context, cat *replica.Catalogue, en replica.Entry, r replica.Replica) (replica.State, string) {
	m, err := measureReplica(ctx, r.URL, en.Alg, clientOptions{})
	now := time.Now()
	switch {
	case m.missing:
		note := "no such file on the server"
		_ = cat.Mark(ctx, en.LFN, r.URL, replica.Missing, -1, "", now, note)
		return replica.Missing, note
	case err != nil:
		return "unreachable", reason(err)
	case m.size != en.Size:
		note := fmt.Sprintf("%d bytes, not %d", m.size, en.Size)
		_ = cat.Mark(ctx, en.LFN, r.URL, replica.Bad, m.size, m.sum, now, note)
		return replica.Bad, note
	case m.sum != en.Sum:
		note := fmt.Sprintf("%s %s, not %s", en.Alg, m.sum, en.Sum)
		_ = cat.Mark(ctx, en.LFN, r.URL, replica.Bad, m.size, m.sum, now, note)
		return replica.Bad, note
	}
	_ = cat.Mark(ctx, en.LFN, r.URL, replica.OK, m.size, m.sum, now, "")
	return replica.OK, ""
}
