package transfer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
)

// prepare readies the destination of a single copy: an existing
// directory on a server receives SRC under its own name, as with cp(1)
// and cp -r (a local one was seen to by resolveDestination); with
// createDirs (-cd) the missing directories above DST are created, with
// MKD on a server, as globus-url-copy -cd does. A copy between two
// servers logs in to both at once here.
func (c *copier) prepare(ctx context.Context, src Location, dst *Location, createDirs bool) error {
	switch dst.Kind {
	case Local:
		if createDirs {
			return fsOf(*dst).MkdirAll(filepath.Dir(dst.Path), 0o777)
		}
		return nil
	case Remote:
	default:
		return nil
	}
	ds := c.session(*dst)
	if src.Kind == Remote {
		ds = c.tptDest(src, *dst)
		dialTogether(ctx, c.session(src), ds)
	}
	if _, err := ds.Connect(ctx); err != nil {
		return err
	}
	fsys := job.Remote{Conn: ds.Conn}
	// With a destination module (tar unpacks into the directory DST),
	// DST is used as it is.
	if base := baseOf(src); base != "" && !strings.HasSuffix(dst.Path, "/") && c.o.DstModule == "" {
		if in, err := fsys.Stat(ctx, dst.Path); err == nil && in.Type == job.TypeDir {
			dst.Path = strings.TrimSuffix(dst.Path, "/") + "/" + base
			dst.Display = strings.TrimSuffix(dst.Display, "/") + "/" + base
			return nil
		}
	}
	if createDirs {
		dir := path.Dir(dst.Path)
		if err := job.MkdirAll(ctx, fsys, dir); err != nil {
			return &OpError{What: fmt.Sprintf("-cd: create %s on %s", dir, dst.Addr), Err: err}
		}
	}
	return nil
}

// dirSource explains the failure of a copy from a server: when the
// server refused it because src is a directory, the error says so.
func (c *copier) dirSource(ctx context.Context, src Location, err error) error {
	var re *client.ReplyError
	if err == nil || ctx.Err() != nil || !errors.As(err, &re) || c.o.SrcModule != "" {
		// A source module (tar) may read a directory: its refusal says why.
		return err
	}
	s := c.session(src)
	defer c.release(ctx, s)
	if in, serr := (job.Remote{Conn: s.Conn}).Stat(ctx, src.Path); serr == nil && in.Type == job.TypeDir {
		return fmt.Errorf("%s is a directory (use -r)", src)
	}
	return err
}
