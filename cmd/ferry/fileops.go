package main

// ferry mkdir, rm and mv.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/ferrygrid/ferry/client"
)

func init() {
	register(&command{
		name:    "mkdir",
		summary: "create a directory on a server",
		usage:   "[-p] URL",
		run:     runMkdir,
	})
	register(&command{
		name:    "rm",
		summary: "remove a file (with -d an empty directory, with -r a tree) on a server",
		usage:   "[-d|-r] URL",
		help:    rmHelp,
		run:     runRm,
	})
	register(&command{
		name:    "mv",
		summary: "rename a file or directory on a server",
		usage:   "URL NEWPATH",
		run:     runMv,
	})
}

func runMkdir(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["mkdir"], e)
	parents := fs.Bool("p", false, "create missing parent directories; an existing directory is no error")
	var g gsiFlags
	g.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, loc, err := connectOne(ctx, fs.Args(), clientOptions{gsi: &g})
	if err != nil {
		return err
	}
	defer hangUp(ctx, c)
	p := strings.TrimSuffix(loc.path, "/")
	if !*parents {
		if err := c.Mkdir(ctx, p); err != nil {
			return &opError{What: loc.String(), Err: err}
		}
		return nil
	}
	if err := mkdirAll(ctx, c, p); err != nil {
		return &opError{What: loc.String(), Err: err}
	}
	return nil
}

// mkdirAll creates p and its missing parents, like mkdir -p.
func mkdirAll(ctx context.Context, c *client.Conn, p string) error {
	// The prefixes of p, shortest first: /a, /a/b, /a/b/c.
	var prefixes []string
	for q := p; q != "" && q != "/" && q != "."; q = path.Dir(q) {
		prefixes = append(prefixes, q)
		if !strings.Contains(q, "/") {
			break
		}
	}
	// Find the longest existing prefix, then create the rest.
	i := 0
	for ; i < len(prefixes); i++ {
		st, err := c.Stat(ctx, prefixes[i])
		if err == nil {
			if !isDirType(st.Type) {
				return fmt.Errorf("%s exists and is not a directory", prefixes[i])
			}
			break
		}
		var re *client.ReplyError
		if !errors.As(err, &re) {
			return err
		}
	}
	for i--; i >= 0; i-- {
		if err := c.Mkdir(ctx, prefixes[i]); err != nil {
			// Someone else may have made it meanwhile.
			if st, serr := c.Stat(ctx, prefixes[i]); serr != nil || !isDirType(st.Type) {
				return err
			}
		}
	}
	return nil
}

const rmHelp = `
The last element of URL may hold the wildcards * ? and [...] (quote them
from the shell); every match is removed, and a name starting with "."
matches only a pattern starting with ".". -r removes directories with
everything below them, depth first; it refuses the root "/".
`

func runRm(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["rm"], e)
	dir := fs.Bool("d", false, "remove an empty directory (RMD) instead of a file")
	recursive := fs.Bool("r", false, "remove directories and everything below them")
	var g gsiFlags
	g.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	locs, err := remoteArg(wildcardArgs(fs.Args()), 1)
	if err != nil {
		return err
	}
	loc := locs[0]
	if *recursive && isRoot(loc.path) {
		return usagef(`refusing to remove "/" or the login directory (%s) with -r`, loc)
	}
	c, err := connect(ctx, loc, clientOptions{gsi: &g})
	if err != nil {
		return err
	}
	defer hangUp(ctx, c)
	if !hasGlob(path.Base(loc.path)) {
		return removeOne(ctx, c, loc, loc.path, *dir, *recursive, nil)
	}
	entries, err := globEntries(ctx, c, loc)
	if err != nil {
		return err
	}
	for _, en := range entries {
		if err := removeOne(ctx, c, loc, en.Name, *dir, *recursive, &en); err != nil {
			return err
		}
	}
	return nil
}

// isRoot reports whether the server path p is the root directory, or the
// login directory (".").
func isRoot(p string) bool {
	c := path.Clean(p)
	return c == "/" || c == "."
}

// removeOne removes the server path p of loc: a file with DELE; a
// directory with RMD if dir, or with everything below it if recursive.
// en, when not nil, is what a listing said p is.
func removeOne(ctx context.Context, c *client.Conn, loc location, p string, dir, recursive bool, en *client.Entry) error {
	what := loc.String()
	if p != loc.path {
		what = remoteDisplay(loc, p)
	}
	isDir := dir
	if recursive {
		if en == nil {
			st, err := c.Stat(ctx, p)
			if err != nil {
				return &opError{What: what, Err: err}
			}
			en = &st
		}
		isDir = isDirType(en.Type) && en.Slink == ""
		if isDir {
			if err := removeTree(ctx, c, strings.TrimSuffix(p, "/"), 0); err != nil {
				return &opError{What: what, Err: err}
			}
			return nil
		}
	} else if en != nil && isDirType(en.Type) && !dir {
		return fmt.Errorf("%s is a directory (-d removes an empty one, -r a tree)", what)
	}
	var err error
	if isDir {
		err = c.Rmdir(ctx, strings.TrimSuffix(p, "/"))
	} else {
		err = c.Delete(ctx, p)
	}
	if err != nil {
		return &opError{What: what, Err: err}
	}
	return nil
}

// maxTreeDepth bounds the recursion of rm -r.
const maxTreeDepth = 256

// removeTree removes the directory p and everything below it, depth
// first; symbolic links are removed, not followed.
func removeTree(ctx context.Context, c *client.Conn, p string, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: more than %d levels of directories", p, maxTreeDepth)
	}
	entries, err := c.List(ctx, p)
	if err != nil {
		return err
	}
	for _, en := range entries {
		q := path.Join(p, en.Name)
		if isDirType(en.Type) && en.Slink == "" {
			err = removeTree(ctx, c, q, depth+1)
		} else {
			err = c.Delete(ctx, q)
		}
		if err != nil {
			return fmt.Errorf("%s: %s", q, describe(err))
		}
	}
	return c.Rmdir(ctx, p)
}

// remoteDisplay is loc's URL with its path replaced by p.
func remoteDisplay(loc location, p string) string {
	d := loc.display
	if i := strings.Index(d, "://"); i >= 0 {
		if j := strings.IndexByte(d[i+3:], '/'); j >= 0 {
			d = d[:i+3+j]
		}
	}
	if !strings.HasPrefix(p, "/") {
		p = "/~/" + p
	}
	return d + p
}

func runMv(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["mv"], e)
	var g gsiFlags
	g.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want URL NEWPATH")
	}
	loc, err := remoteArg(fs.Args()[:1], 1)
	if err != nil {
		return err
	}
	from := loc[0]
	to, err := renameTarget(from, fs.Arg(1))
	if err != nil {
		return err
	}
	c, err := connect(ctx, from, clientOptions{gsi: &g})
	if err != nil {
		return err
	}
	defer hangUp(ctx, c)
	if err := c.Rename(ctx, strings.TrimSuffix(from.path, "/"), to); err != nil {
		return &opError{What: fmt.Sprintf("rename %s to %s", from, to), Err: err}
	}
	return nil
}

// renameTarget returns the path that mv renames from to: newPath if it is
// absolute, else newPath relative to from's directory; an ftp:// URL of the
// same server gives its path.
func renameTarget(from location, newPath string) (string, error) {
	if strings.Contains(newPath, "://") {
		l, err := parseLocation(newPath)
		if err != nil {
			return "", usagef("%v", err)
		}
		if l.kind != locRemote || l.addr != from.addr {
			return "", usagef("%s is not on the same server as %s", l, from)
		}
		return l.path, nil
	}
	if newPath == "" || strings.ContainsAny(newPath, "\r\n") {
		return "", usagef("bad NEWPATH %q", newPath)
	}
	if strings.HasPrefix(newPath, "/") {
		return newPath, nil
	}
	return path.Join(path.Dir(strings.TrimSuffix(from.path, "/")), newPath), nil
}
