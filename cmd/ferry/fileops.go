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
		summary: "remove a file (or with -d an empty directory) on a server",
		usage:   "[-d] URL",
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
			return &opError{what: loc.String(), err: err}
		}
		return nil
	}
	if err := mkdirAll(ctx, c, p); err != nil {
		return &opError{what: loc.String(), err: err}
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

func runRm(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["rm"], e)
	dir := fs.Bool("d", false, "remove an empty directory (RMD) instead of a file")
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
	if *dir {
		err = c.Rmdir(ctx, strings.TrimSuffix(loc.path, "/"))
	} else {
		err = c.Delete(ctx, loc.path)
	}
	if err != nil {
		return &opError{what: loc.String(), err: err}
	}
	return nil
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
		return &opError{what: fmt.Sprintf("rename %s to %s", from, to), err: err}
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
