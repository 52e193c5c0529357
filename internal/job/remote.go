package job

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/wire"
)

// ConnFunc returns a logged-in connection to a server, dialing again when
// the last one broke (client.Session.Conn does).
type ConnFunc func(ctx context.Context) (*client.Conn, error)

// Remote is one server account's name space, reached over the control
// connection Conn returns: MLST/MLSD (LIST without them), MKD, DELE, RMD,
// MFMT, SITE CHMOD, SITE SYMLINKFROM/SYMLINKTO and CKSM.
type Remote struct {
	Conn ConnFunc
}

var _ FS = Remote{}

// kindError is a server's error that also matches a sentinel of io/fs
// (fs.ErrNotExist, fs.ErrExist) for errors.Is.
type kindError struct {
	err  error
	kind error
}

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Unwrap() error        { return e.err }
func (e *kindError) Is(target error) bool { return target == e.kind }

// notExist turns a 550 reply into an error that matches fs.ErrNotExist.
func notExist(err error) error {
	var re *client.ReplyError
	if errors.As(err, &re) && re.Reply.Code == 550 {
		return &kindError{err: err, kind: fs.ErrNotExist}
	}
	return err
}

func remoteInfo(e client.Entry, name string) Info {
	in := Info{Name: name, Size: e.Size, ModTime: e.Modify, Link: e.Slink}
	if e.Mode >= 0 {
		in.Mode = fs.FileMode(e.Mode).Perm()
	}
	switch strings.ToLower(e.Type) {
	case "file":
		in.Type = TypeFile
	case "dir", "cdir", "pdir":
		in.Type = TypeDir
	case "slink":
		in.Type = TypeLink
	case "":
		in.Type = TypeFile
	default:
		if strings.Contains(strings.ToLower(e.Type), "slink") {
			in.Type = TypeLink
		} else {
			in.Type = TypeOther
		}
	}
	return in
}

func (r Remote) Stat(ctx context.Context, p string) (Info, error) {
	c, err := r.Conn(ctx)
	if err != nil {
		return Info{}, err
	}
	e, err := c.Stat(ctx, p)
	if err != nil {
		return Info{}, notExist(err)
	}
	return remoteInfo(e, path.Base(strings.TrimSuffix(p, "/"))), nil
}

func (r Remote) ReadDir(ctx context.Context, p string) ([]Info, error) {
	c, err := r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	es, err := c.List(ctx, p)
	if err != nil {
		return nil, notExist(err)
	}
	out := make([]Info, 0, len(es))
	for _, e := range es {
		// client.List refuses these already; a name that is no single
		// element must never reach a path join.
		if err := wire.CheckEntryName(e.Name); err != nil {
			return nil, fmt.Errorf("listing %s: %w", p, err)
		}
		out = append(out, remoteInfo(e, e.Name))
	}
	return out, nil
}

func (r Remote) Mkdir(ctx context.Context, p string) error {
	c, err := r.Conn(ctx)
	if err != nil {
		return err
	}
	err = c.Mkdir(ctx, p)
	var re *client.ReplyError
	if errors.As(err, &re) && (re.Reply.Code == 553 || re.Reply.Code == 521) {
		// GCT: 553 PATH_EXISTS; RFC 959 servers: 521.
		return &kindError{err: err, kind: fs.ErrExist}
	}
	if err != nil {
		// Other servers answer 550 for an existing directory too.
		if in, serr := r.Stat(ctx, p); serr == nil && in.Type == TypeDir {
			return &kindError{err: err, kind: fs.ErrExist}
		}
	}
	return err
}

func (r Remote) Remove(ctx context.Context, p string, dir bool) error {
	c, err := r.Conn(ctx)
	if err != nil {
		return err
	}
	if dir {
		return c.Rmdir(ctx, p)
	}
	return c.Delete(ctx, p)
}

func (r Remote) SetModTime(ctx context.Context, p string, t time.Time) error {
	c, err := r.Conn(ctx)
	if err != nil {
		return err
	}
	return c.SetModTime(ctx, p, t)
}

func (r Remote) Chmod(ctx context.Context, p string, mode fs.FileMode) error {
	c, err := r.Conn(ctx)
	if err != nil {
		return err
	}
	return c.Chmod(ctx, p, mode)
}

// Symlink uses GCT's SITE SYMLINKFROM target, SITE SYMLINKTO p. GCT
// resolves the target from the working directory and refuses one that
// does not exist, so the session changes into the link's directory
// first (and back): a relative target then means what it means in the
// link.
func (r Remote) Symlink(ctx context.Context, target, p string) error {
	c, err := r.Conn(ctx)
	if err != nil {
		return err
	}
	if strings.ContainsAny(target, "\r\n") {
		return fmt.Errorf("link target %q contains a line break", target)
	}
	if dir := path.Dir(p); strings.HasPrefix(p, "/") && !strings.HasPrefix(target, "/") {
		if wd, err := c.Pwd(ctx); err == nil {
			if err := c.Cwd(ctx, dir); err == nil {
				defer func() {
					// Left in dir, the session would resolve later
					// relative paths wrongly: closed, the next use
					// logs in afresh.
					if err := c.Cwd(ctx, wd); err != nil {
						c.Close()
					}
				}()
			}
		}
	}
	rep, err := c.Do(ctx, "SITE SYMLINKFROM %s", target)
	if err != nil {
		return err
	}
	if rep.Code != 350 {
		if rep.Code == 502 || rep.Code == 504 || strings.Contains(strings.ToLower(rep.Text()), "unknown") {
			return fmt.Errorf("the server cannot create symbolic links (SITE SYMLINKFROM: %w): %w", &client.ReplyError{Reply: rep}, ErrNotSupported)
		}
		return fmt.Errorf("SITE SYMLINKFROM %s: %w", target, &client.ReplyError{Reply: rep})
	}
	rep, err = c.Do(ctx, "SITE SYMLINKTO %s", p)
	if err != nil {
		return err
	}
	if rep.Class() != 2 {
		return fmt.Errorf("SITE SYMLINKTO: %w", &client.ReplyError{Reply: rep})
	}
	return nil
}

func (r Remote) Checksum(ctx context.Context, alg, p string) (string, error) {
	c, err := r.Conn(ctx)
	if err != nil {
		return "", err
	}
	return c.Checksum(ctx, alg, p, 0, -1)
}

func (Remote) Join(dir, name string) string {
	if dir == "" || dir == "." || dir == "./" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

func (Remote) Remote() bool { return true }

// isReply reports whether err is a server's reply.
func isReply(err error) bool {
	var re *client.ReplyError
	return errors.As(err, &re)
}
