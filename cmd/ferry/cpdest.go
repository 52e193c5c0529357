package main

// The destination of a single ferry cp, made ready before the copy: an
// existing remote directory receives the source under its own name, and
// -cd creates the directories above the destination.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
)

// baseOf is the name a copy of l takes in a destination directory, or
// "" when l has none (standard input, a root).
func baseOf(l location) string {
	var base string
	switch l.kind {
	case locLocal:
		base = filepath.Base(l.path)
	case locRemote:
		base = path.Base(l.path)
	}
	switch base {
	case ".", "/", "..":
		return ""
	}
	return base
}

// prepare readies the destination of a single copy: an existing
// directory on a server receives SRC under its own name, as with cp(1)
// and cp -r (a local one was seen to by resolveDestination); with
// createDirs (-cd) the missing directories above DST are created, with
// MKD on a server, as globus-url-copy -cd does. A copy between two
// servers logs in to both at once here.
func (c *copier) prepare(ctx context.Context, src location, dst *location, createDirs bool) error {
	switch dst.kind {
	case locLocal:
		if createDirs {
			return os.MkdirAll(filepath.Dir(dst.path), 0o777)
		}
		return nil
	case locRemote:
	default:
		return nil
	}
	ds := c.session(*dst)
	if src.kind == locRemote {
		ds = c.tptDest(src, *dst)
		dialTogether(ctx, c.session(src), ds)
	}
	if _, err := ds.Conn(ctx); err != nil {
		return err
	}
	fsys := job.Remote{Conn: ds.Conn}
	if base := baseOf(src); base != "" && !strings.HasSuffix(dst.path, "/") {
		if in, err := fsys.Stat(ctx, dst.path); err == nil && in.Type == job.TypeDir {
			dst.path = strings.TrimSuffix(dst.path, "/") + "/" + base
			dst.display = strings.TrimSuffix(dst.display, "/") + "/" + base
			return nil
		}
	}
	if createDirs {
		dir := path.Dir(dst.path)
		if err := job.MkdirAll(ctx, fsys, dir); err != nil {
			return &opError{what: fmt.Sprintf("-cd: create %s on %s", dir, dst.addr), err: err}
		}
	}
	return nil
}

// dirSource explains the failure of a copy from a server: when the
// server refused it because src is a directory, the error says so.
func (c *copier) dirSource(ctx context.Context, src location, err error) error {
	var re *client.ReplyError
	if err == nil || ctx.Err() != nil || !errors.As(err, &re) {
		return err
	}
	s := c.session(src)
	defer c.release(ctx, s)
	if in, serr := (job.Remote{Conn: s.Conn}).Stat(ctx, src.path); serr == nil && in.Type == job.TypeDir {
		return fmt.Errorf("%s is a directory (use -r)", src)
	}
	return err
}
