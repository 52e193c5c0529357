package job

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/internal/checksum"
)

// Type is the kind of a directory entry.
type Type int

// The entry types. A followed symbolic link has the type of its target
// and Info.Link set; TypeLink is a link that was not (or could not be)
// followed, such as a dangling one.
const (
	TypeFile Type = iota
	TypeDir
	TypeLink
	TypeOther // devices, FIFOs, sockets
)

func (t Type) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeLink:
		return "link"
	}
	return "other"
}

// Info describes a file system entry.
type Info struct {
	Name    string // base name
	Type    Type
	Size    int64       // bytes, -1 if unknown
	ModTime time.Time   // zero if unknown
	Mode    fs.FileMode // permission bits; 0 if unknown
	// Link is the target of a symbolic link, "" for other entries.
	Link string
	// id identifies a local directory (device and inode) for loop
	// detection when links are followed; "" if unknown.
	id string
}

// ErrNotSupported is returned by FS methods an endpoint cannot do.
var ErrNotSupported = errors.New("not supported")

// FS is one endpoint's name space as the planner and the runner need it:
// the local file system, or one server account. Paths are in the
// endpoint's own syntax (local paths, or server paths with "/").
type FS interface {
	// Stat describes p, following a symbolic link (Link is then set). A
	// missing p is an error matching fs.ErrNotExist.
	Stat(ctx context.Context, p string) (Info, error)
	// ReadDir lists the directory p, without "." and "..", entries
	// described as Stat would.
	ReadDir(ctx context.Context, p string) ([]Info, error)
	// Mkdir creates the directory p; an existing one matches fs.ErrExist.
	Mkdir(ctx context.Context, p string) error
	// Remove removes the file or empty directory p.
	Remove(ctx context.Context, p string, dir bool) error
	// SetModTime sets p's modification time.
	SetModTime(ctx context.Context, p string, t time.Time) error
	// Chmod sets p's permission bits.
	Chmod(ctx context.Context, p string, mode fs.FileMode) error
	// Symlink creates the symbolic link p pointing to target.
	Symlink(ctx context.Context, target, p string) error
	// Checksum returns the lower-case hex checksum of the whole file p.
	Checksum(ctx context.Context, alg, p string) (string, error)
	// Join joins a directory and a name.
	Join(dir, name string) string
	// Remote reports whether the FS is a server: its names cannot hold
	// line breaks (the control channel is line based).
	Remote() bool
}

// Local is the local file system.
type Local struct{}

var _ FS = Local{}

func (Local) Stat(ctx context.Context, p string) (Info, error) {
	return localInfo(p, filepath.Base(p))
}

// localInfo describes the local entry p named name.
func localInfo(p, name string) (Info, error) {
	lfi, err := os.Lstat(p)
	if err != nil {
		return Info{}, err
	}
	if lfi.Mode()&fs.ModeSymlink == 0 {
		return infoOf(name, lfi), nil
	}
	target, _ := os.Readlink(p)
	fi, err := os.Stat(p)
	if err != nil {
		in := infoOf(name, lfi)
		in.Type, in.Link = TypeLink, target
		return in, nil
	}
	in := infoOf(name, fi)
	in.Link = target
	return in, nil
}

func infoOf(name string, fi fs.FileInfo) Info {
	in := Info{Name: name, Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode().Perm()}
	switch {
	case fi.Mode().IsRegular():
		in.Type = TypeFile
	case fi.IsDir():
		in.Type = TypeDir
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			in.id = fmt.Sprintf("%x-%x", st.Dev, st.Ino)
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		in.Type = TypeLink
	default:
		in.Type = TypeOther
	}
	return in
}

func (l Local) ReadDir(ctx context.Context, p string) ([]Info, error) {
	des, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(des))
	for _, d := range des {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		in, err := localInfo(filepath.Join(p, d.Name()), d.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the directory was read
		}
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func (Local) Mkdir(ctx context.Context, p string) error { return os.Mkdir(p, 0o777) }

func (Local) Remove(ctx context.Context, p string, dir bool) error { return os.Remove(p) }

func (Local) SetModTime(ctx context.Context, p string, t time.Time) error {
	return os.Chtimes(p, time.Time{}, t)
}

func (Local) Chmod(ctx context.Context, p string, mode fs.FileMode) error { return os.Chmod(p, mode) }

func (Local) Symlink(ctx context.Context, target, p string) error { return os.Symlink(target, p) }

func (Local) Checksum(ctx context.Context, alg, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	return checksum.Compute(ctx, f, fi.Size(), 0, -1, alg)
}

func (Local) Join(dir, name string) string { return filepath.Join(dir, name) }

func (Local) Remote() bool { return false }

// hasMeta reports whether s holds wildcard characters (path.Match syntax).
func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[`) }

// baseName is the last element of a path in either syntax, ignoring a
// trailing slash.
func baseName(p string, remote bool) string {
	if remote {
		return path.Base(strings.TrimSuffix(p, "/"))
	}
	return filepath.Base(p)
}

// MkdirAll creates the directory p on fsys and the missing directories
// above it, as os.MkdirAll does: an existing directory is no error, an
// existing file in the way is. It looks at p first, so an existing p
// costs one Stat; each missing level costs a Stat and a Mkdir.
func MkdirAll(ctx context.Context, fsys FS, p string) error {
	if p == "" || p == "/" || p == "." {
		return nil
	}
	in, err := fsys.Stat(ctx, p)
	switch {
	case err == nil && in.Type == TypeDir:
		return nil
	case err == nil:
		return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
	case !errors.Is(err, fs.ErrNotExist) && !isReply(err):
		// Not a refusal (which some servers give for a missing
		// path, as GCT's 500): the connection failed.
		return err
	}
	if parent := parentOf(fsys, p); parent != "" && parent != p {
		if err := MkdirAll(ctx, fsys, parent); err != nil {
			return err
		}
	}
	if err := fsys.Mkdir(ctx, p); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
