package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/progress"
)

func init() {
	register(&command{
		name:    "ls",
		summary: "list a directory (or describe a file) on a server",
		usage:   "[flags] URL",
		help:    lsHelp,
		run:     runLs,
	})
}

const lsHelp = `
The last element of URL may hold the wildcards * ? and [...] (quote them
from the shell): the matching entries are listed, directories as
themselves. As in a shell, a name starting with "." matches only a
pattern starting with "."; without a pattern such names are left out
unless -a.
`

func runLs(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["ls"], e)
	long := fs.Bool("l", false, "long form: type, size, modification time (UTC), name")
	all := fs.Bool("a", false, "also list names starting with '.'")
	active := fs.Bool("active", false, "active data connections: the client listens (EPRT/PORT)")
	var g gsiFlags
	g.register(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.check(); err != nil {
		return err
	}
	c, loc, err := connectOne(ctx, wildcardArgs(fs.Args()), clientOptions{active: *active, gsi: &g})
	if err != nil {
		return err
	}
	defer hangUp(ctx, c)
	p := loc.path
	if hasGlob(path.Base(p)) {
		entries, err := globEntries(ctx, c, loc)
		if err != nil {
			return err
		}
		for _, en := range entries {
			en.Name = path.Base(en.Name)
			printEntry(e.stdout, en, *long)
		}
		return nil
	}
	st, err := c.Stat(ctx, p)
	if err != nil {
		return &opError{What: loc.String(), Err: err}
	}
	entries := []client.Entry{st}
	if isDirType(st.Type) {
		if entries, err = c.List(ctx, p); err != nil {
			return &opError{What: loc.String(), Err: err}
		}
		if !*all {
			entries = slices.DeleteFunc(entries, func(e client.Entry) bool { return strings.HasPrefix(e.Name, ".") })
		}
		slices.SortFunc(entries, func(a, b client.Entry) int { return strings.Compare(a.Name, b.Name) })
	} else {
		entries[0].Name = path.Base(p)
	}
	for _, en := range entries {
		printEntry(e.stdout, en, *long)
	}
	return nil
}

// wildcardArgs lets the URLs of args hold the wildcard "?" (see
// wildcardURL).
func wildcardArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = wildcardURL(a)
	}
	return out
}

// globEntries returns the entries matching loc, whose path's last
// element holds wildcards; their names are paths as loc's directory
// gives them. A pattern that matches nothing is an error.
func globEntries(ctx context.Context, c *client.Conn, loc location) ([]client.Entry, error) {
	dir, base := path.Split(loc.path)
	if hasGlob(dir) {
		return nil, usagef("%s: wildcards only in the last element", loc)
	}
	entries, err := matchEntries(ctx, c, dir, base)
	if err != nil {
		return nil, &opError{What: loc.String(), Err: err}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no match", loc)
	}
	for i := range entries {
		entries[i].Name = dir + entries[i].Name
	}
	return entries, nil
}

// matchEntries lists the directory dir and returns the entries whose
// names match pattern (path.Match), sorted by name. As in a shell, a name
// starting with "." matches only a pattern starting with ".".
func matchEntries(ctx context.Context, c *client.Conn, dir, pattern string) ([]client.Entry, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("bad pattern %q: %v", pattern, err)
	}
	entries, err := c.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := entries[:0]
	for _, en := range entries {
		if ok, _ := path.Match(pattern, en.Name); ok && (!strings.HasPrefix(en.Name, ".") || strings.HasPrefix(pattern, ".")) {
			out = append(out, en)
		}
	}
	slices.SortFunc(out, func(a, b client.Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// connectOne connects to the server named by a command's single URL argument.
func connectOne(ctx context.Context, args []string, o clientOptions) (*client.Conn, location, error) {
	loc, err := remoteArg(args, 1)
	if err != nil {
		return nil, location{}, err
	}
	c, err := connect(ctx, loc[0], o)
	if err != nil {
		return nil, location{}, err
	}
	return c, loc[0], nil
}

// remoteArg parses exactly n arguments as ftp:// or gsiftp:// URLs.
func remoteArg(args []string, n int) ([]location, error) {
	if len(args) != n {
		if n == 1 {
			return nil, usagef("want one URL")
		}
		return nil, usagef("want %d arguments", n)
	}
	out := make([]location, n)
	for i, a := range args {
		l, err := parseLocation(a)
		if err != nil {
			return nil, usagef("%v", err)
		}
		if l.kind != locRemote {
			return nil, usagef("%s is not an ftp:// or gsiftp:// URL", a)
		}
		out[i] = l
	}
	return out, nil
}

func isDirType(t string) bool { return t == "dir" || t == "cdir" || t == "pdir" }

// printEntry prints one entry: its name (directories with a trailing "/"),
// or in long form "TYPE SIZE YYYY-MM-DD HH:MM:SS NAME [-> TARGET]".
func printEntry(w io.Writer, en client.Entry, long bool) {
	name := en.Name
	if isDirType(en.Type) {
		name += "/"
	}
	if !long {
		fmt.Fprintln(w, progress.Printable(name))
		return
	}
	typ := en.Type
	switch {
	case isDirType(typ):
		typ = "dir"
	case typ == "slink" || en.Slink != "":
		typ = "link"
	case typ == "":
		typ = "-"
	}
	size := "-"
	if en.Size >= 0 {
		size = strconv.FormatInt(en.Size, 10)
	}
	mtime := "-                  "
	if !en.Modify.IsZero() {
		mtime = en.Modify.UTC().Format("2006-01-02 15:04:05")
	}
	if en.Slink != "" {
		name += " -> " + en.Slink
	}
	fmt.Fprintf(w, "%-4s %12s %s %s\n", progress.Printable(typ), size, mtime, progress.Printable(name))
}
