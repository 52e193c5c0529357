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
		run:     runLs,
	})
}

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
	c, loc, err := connectOne(ctx, fs.Args(), clientOptions{active: *active, gsi: &g})
	if err != nil {
		return err
	}
	defer hangUp(ctx, c)
	p := loc.path
	st, err := c.Stat(ctx, p)
	if err != nil {
		return &opError{what: loc.String(), err: err}
	}
	entries := []client.Entry{st}
	if isDirType(st.Type) {
		if entries, err = c.List(ctx, p); err != nil {
			return &opError{what: loc.String(), err: err}
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

// remoteArg parses exactly n arguments as ftp:// or gsiftp:// URLs.
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
