// Package posix is Ferry's local file system back-end for the DSI: it stores
// files below one root directory of the host.
//
// Every access goes through an [os.Root], so that no name and no symbolic
// link can reach outside the root: a link whose target lies outside is
// treated as not usable (the error wraps [dsi.ErrPermission]), never
// followed. Links that stay inside the root are followed, as the DSI
// contract asks of Stat. [FS.Sub] (used by [dsi.Sub] for homes) opens an
// [os.Root] of its own for a directory, so that inside a home links are
// confined to the home. A link's target is listed only when it stays inside
// the root: absolute targets, and relative ones climbing out, would tell
// paths of the host. On Linux, Open, Create and Rename of names without
// any link on the way take one openat2(2) confined below the root
// (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS) instead of the os.Root's walk;
// everything else, failures included, goes through the os.Root
// (beneath_linux.go).
//
// Readers implement [dsi.RangeWriterTo] with sendfile(2) and writers
// implement [dsi.RangeReaderFrom] with splice(2) when the other side is a
// socket (Linux), both with explicit file offsets, so concurrent ranges on
// one open file never share a file position. With direct IO ([DirectIO],
// [Options]) large uploads bypass the page cache instead (direct.go).
//
// A regular file with more than one hard link is never written in place
// nor chmodded: its other names may lie outside the root.
package posix

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// Default permissions used when the caller passes 0.
const (
	defaultFilePerm = 0o644
	defaultDirPerm  = 0o755
)

// FS is a [dsi.Storage] over one directory of the local file system. It is
// safe for concurrent use.
type FS struct {
	root *os.Root // immutable; every access goes through it
	// dir is the root's directory for the openat2 fast paths
	// (beneath_linux.go); nil without them. Immutable.
	dir  *os.File
	opts Options // immutable
}

// newFS returns the back-end over r.
func newFS(r *os.Root, opts Options) *FS { return &FS{root: r, dir: rootDir(r), opts: opts} }

// New returns a back-end rooted at the directory root, which must exist,
// with the default Options.
func New(root string) (*FS, error) { return NewWithOptions(root, Options{}) }

// NewWithOptions returns a back-end rooted at the directory root, which
// must exist, tuned by opts.
func NewWithOptions(root string, opts Options) (*FS, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, mapErr("new", root, err)
	}
	if !fi.IsDir() {
		return nil, &Error{Op: "new", Path: root, Kind: dsi.ErrNotDir, Err: syscall.ENOTDIR}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, mapErr("new", root, err)
	}
	return newFS(r, opts), nil
}

// Close releases the root directory. Open readers and writers stay usable.
func (fsys *FS) Close() error {
	if fsys.dir != nil {
		fsys.dir.Close()
	}
	return fsys.root.Close()
}

// Sub returns a back-end rooted at the directory dir of fsys, with an
// [os.Root] of its own, so that no name and no symbolic link reaches
// outside dir ([dsi.Sub] uses it; call that instead). dir and every
// directory on the way to it must be real directories, not symbolic
// links; otherwise Sub fails with [dsi.ErrPermission] (a link),
// [dsi.ErrNotDir] or [dsi.ErrNotExist]. The result shares nothing with
// fsys: closing either leaves the other usable; an unreachable result is
// closed by the garbage collector.
func (fsys *FS) Sub(ctx context.Context, dir string) (dsi.Storage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := fsys.openSub(dir)
	if err != nil {
		return nil, err
	}
	return newFS(r, fsys.opts), nil
}

// openSub opens the directory dir as a new root, one component at a time:
// each is looked at without following links, opened, and checked to be
// the directory that was looked at, so that a component swapped for a
// link meanwhile cannot lead elsewhere.
func (fsys *FS) openSub(dir string) (*os.Root, error) {
	cur, err := fsys.root.OpenRoot(".")
	if err != nil {
		return nil, mapErr("sub", dir, err)
	}
	r := rel(dir)
	if r == "." {
		return cur, nil
	}
	for elem := range strings.SplitSeq(r, "/") {
		next, err := openDir(cur, elem)
		cur.Close()
		if errors.Is(err, errSubLink) {
			return nil, &Error{Op: "sub", Path: dir, Kind: dsi.ErrPermission, Err: err}
		}
		if err != nil {
			return nil, mapErr("sub", dir, err)
		}
		cur = next
	}
	return cur, nil
}

// errSubLink is the cause when a directory on the way to a sub-root is a
// symbolic link or changed while it was being opened.
var errSubLink = errors.New("a symbolic link, or changed while being opened")

// openDir opens the directory elem of parent as a root; elem must not be
// a symbolic link.
func openDir(parent *os.Root, elem string) (*os.Root, error) {
	lfi, err := parent.Lstat(elem)
	switch {
	case err != nil:
		return nil, err
	case lfi.Mode()&fs.ModeSymlink != 0:
		return nil, errSubLink
	case !lfi.IsDir():
		return nil, syscall.ENOTDIR
	}
	next, err := parent.OpenRoot(elem)
	if err != nil {
		return nil, err
	}
	fi, err := next.Stat(".")
	if err == nil && !os.SameFile(lfi, fi) {
		err = errSubLink
	}
	if err != nil {
		next.Close()
		return nil, err
	}
	return next, nil
}

// rel converts a DSI name ("/", "/a/b") to a name relative to the root
// ("." and "a/b"). The name is cleaned again defensively; after cleaning an
// absolute path cannot contain "..", and os.Root confines links anyway.
func rel(name string) string {
	name = path.Clean("/" + name)
	if name == "/" {
		return "."
	}
	return name[1:]
}

// baseName is the FileInfo.Name for a DSI name.
func baseName(name string) string {
	name = path.Clean("/" + name)
	if name == "/" {
		return "/"
	}
	return path.Base(name)
}

// isRoot reports whether name denotes the root directory.
func isRoot(name string) bool { return path.Clean("/"+name) == "/" }

// Stat describes the entry at name, following symbolic links inside the root.
// For a link, Link holds the link text unless it is absolute or climbs
// above the root.
func (fsys *FS) Stat(ctx context.Context, name string) (dsi.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return dsi.FileInfo{}, err
	}
	r := rel(name)
	lfi, err := fsys.lstat(r)
	if err != nil {
		return dsi.FileInfo{}, mapErr("stat", name, err)
	}
	if lfi.Mode()&fs.ModeSymlink == 0 {
		return fileInfo(baseName(name), lfi), nil
	}
	fi, err := fsys.root.Stat(r)
	if err != nil {
		return dsi.FileInfo{}, mapErr("stat", name, err)
	}
	info := fileInfo(baseName(name), fi)
	info.Link = fsys.link(r)
	return info, nil
}

// lstat describes r without following a link at its end.
func (fsys *FS) lstat(r string) (fs.FileInfo, error) {
	if fi, err, ok := fsys.lstatFast(r); ok {
		return fi, err
	}
	return fsys.root.Lstat(r)
}

// link returns the target of the link at r (relative to the root) for
// FileInfo.Link: "" when it is absolute or climbs above the root, since
// such text tells about the host, not the storage.
func (fsys *FS) link(r string) string {
	target, err := fsys.root.Readlink(r)
	if err != nil || target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return ""
	}
	depth := strings.Count(r, "/") // directories between the root and the link
	for elem := range strings.SplitSeq(target, "/") {
		switch elem {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return ""
			}
		default:
			depth++
		}
	}
	return target
}

// ReadDir lists the directory at name sorted by name. Links are described by
// their target; a dangling link, or one leading outside the root, is listed
// with its own information (fs.ModeSymlink set). Link holds the link text
// unless it is absolute or climbs above the root.
func (fsys *FS) ReadDir(ctx context.Context, name string) ([]dsi.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := rel(name)
	d, err := fsys.root.Open(r)
	if err != nil {
		return nil, mapErr("readdir", name, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, mapErr("readdir", name, err)
	}
	slices.Sort(names)
	out := make([]dsi.FileInfo, 0, len(names))
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if n == "." || n == ".." {
			continue
		}
		er := path.Join(r, n)
		lfi, err, ok := lstatIn(d, n)
		if !ok {
			lfi, err = fsys.root.Lstat(er)
		}
		if err != nil {
			// Removed since the directory was read.
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, mapErr("readdir", path.Join(name, n), err)
		}
		if lfi.Mode()&fs.ModeSymlink == 0 {
			out = append(out, fileInfo(n, lfi))
			continue
		}
		info := fileInfo(n, lfi)
		if fi, err := fsys.root.Stat(er); err == nil {
			info = fileInfo(n, fi)
		}
		info.Link = fsys.link(er)
		out = append(out, info)
	}
	return out, nil
}

// Open opens a regular file for reading. A directory gives [dsi.ErrIsDir];
// other non-regular files (devices, FIFOs, sockets) give [dsi.ErrInvalid].
func (fsys *FS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := rel(name)
	if f, size, ok := fsys.openFast(r); ok {
		return &Reader{f: f, name: name, size: size}, nil
	}
	// Refuse non-regular files before opening: opening a FIFO would block.
	fi, err := fsys.root.Stat(r)
	if err != nil {
		return nil, mapErr("open", name, err)
	}
	if err := checkRegular("open", name, fi); err != nil {
		return nil, err
	}
	// Opened without blocking: a FIFO swapped in since the Stat above
	// would block the open until a writer came.
	betweenCheckAndOpen(r)
	f, err := fsys.root.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, mapErr("open", name, err)
	}
	// Check again on the open file: the entry may have changed meanwhile.
	fi, err = f.Stat()
	if err == nil {
		err = checkRegular("open", name, fi)
	} else {
		err = mapErr("open", name, err)
	}
	if err == nil {
		err = mapErr("open", name, blocking(f))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Reader{f: f, name: name, size: fi.Size()}, nil
}

func checkRegular(op, name string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return &Error{Op: op, Path: name, Kind: dsi.ErrIsDir, Err: syscall.EISDIR}
	case !fi.Mode().IsRegular():
		return &Error{Op: op, Path: name, Kind: dsi.ErrInvalid, Err: errors.New("not a regular file")}
	}
	return nil
}

// Create opens name for writing at offsets, creating it with opts.Perm
// (0 means 0644, subject to the process umask) and emptying it when
// opts.Truncate is set. An existing regular file with more than one
// hard link is refused ([dsi.ErrPermission]), untouched: writing it would
// change it under its other names too.
func (fsys *FS) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := rel(name)
	if r == "." {
		return nil, &Error{Op: "create", Path: name, Kind: dsi.ErrIsDir, Err: syscall.EISDIR}
	}
	perm := opts.Perm.Perm()
	if perm == 0 {
		perm = defaultFilePerm
	}
	// No O_TRUNC: finishCreate truncates once it has checked the file's
	// hard links.
	flag := os.O_WRONLY | os.O_CREATE
	if opts.NoFollow {
		flag |= syscall.O_NOFOLLOW // a link planted after the check
	}
	if f, ok := fsys.createFast(r, flag, perm); ok {
		return fsys.finishCreate(f, name, opts)
	}
	// Like Open, refuse to open a FIFO or device, which could block or
	// write somewhere unexpected.
	stat := fsys.root.Stat
	if opts.NoFollow {
		stat = fsys.root.Lstat
	}
	if fi, err := stat(r); err == nil {
		if opts.NoFollow && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &Error{Op: "create", Path: name, Kind: dsi.ErrInvalid, Err: syscall.ELOOP}
		}
		if err := checkRegular("create", name, fi); err != nil {
			return nil, err
		}
	}
	// As in Open: not blocking until it is known to be a regular file.
	betweenCheckAndOpen(r)
	f, err := fsys.root.OpenFile(r, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, mapErr("create", name, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkRegular("create", name, fi)
	} else {
		err = mapErr("create", name, err)
	}
	if err == nil {
		err = mapErr("create", name, blocking(f))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return fsys.finishCreate(f, name, opts)
}

// writer returns the Writer of f, opened by Create.
func (fsys *FS) writer(f *os.File, name string, opts dsi.CreateOptions) *Writer {
	return &Writer{f: f, name: name, dio: newDirect(fsys.opts.DirectIO, opts.Size)}
}

// betweenCheckAndOpen runs between the look at an entry's type and its
// open; a test swaps the entry there. Nil outside tests.
var betweenCheckAndOpen = func(string) {}

// blocking clears O_NONBLOCK of the regular file f, opened with it.
func blocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

// Mkdir makes one directory with perm (0 means 0755, subject to the umask).
func (fsys *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	perm = perm.Perm()
	if perm == 0 {
		perm = defaultDirPerm
	}
	r := rel(name)
	if r == "." {
		return &Error{Op: "mkdir", Path: name, Kind: dsi.ErrExist, Err: syscall.EEXIST}
	}
	return mapErr("mkdir", name, fsys.root.Mkdir(r, perm))
}

// Remove deletes a file or symbolic link (never its target). A directory
// gives [dsi.ErrIsDir].
func (fsys *FS) Remove(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := rel(name)
	// os.Root.Remove removes files and empty directories alike, so look
	// first. An entry swapped for an empty directory between the two calls
	// would still be removed; the window is accepted.
	fi, err := fsys.lstat(r)
	if err != nil {
		return mapErr("remove", name, err)
	}
	if fi.IsDir() {
		return &Error{Op: "remove", Path: name, Kind: dsi.ErrIsDir, Err: syscall.EISDIR}
	}
	return mapErr("remove", name, fsys.root.Remove(r))
}

// Rmdir deletes an empty directory. A file gives [dsi.ErrNotDir], a
// non-empty directory [dsi.ErrNotEmpty]; the root cannot be removed.
func (fsys *FS) Rmdir(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := rel(name)
	if r == "." {
		return &Error{Op: "rmdir", Path: name, Kind: dsi.ErrPermission, Err: syscall.EBUSY}
	}
	fi, err := fsys.lstat(r)
	if err != nil {
		return mapErr("rmdir", name, err)
	}
	if !fi.IsDir() {
		return &Error{Op: "rmdir", Path: name, Kind: dsi.ErrNotDir, Err: syscall.ENOTDIR}
	}
	return mapErr("rmdir", name, fsys.root.Remove(r))
}

// Rename moves from to to, replacing a file (or an empty directory, when
// from is a directory) at to. The root can be neither moved nor replaced.
func (fsys *FS) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if isRoot(from) || isRoot(to) {
		return &Error{Op: "rename", Path: from, Kind: dsi.ErrPermission, Err: syscall.EBUSY}
	}
	if fsys.renameFast(rel(from), rel(to)) {
		return nil
	}
	return mapErr("rename", from, fsys.root.Rename(rel(from), rel(to)))
}

// Chmod sets the permission bits of name (following links inside the
// root). A regular file with more than one hard link is refused
// ([dsi.ErrPermission]): the change would reach its other names too. The
// link count is checked on an open descriptor, and the mode set through
// it, so that the name cannot be swapped in between (Linux; elsewhere by
// name).
func (fsys *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fsys.chmod(name, rel(name), mode.Perm())
}

// Chtimes sets the modification time of name, leaving the access time.
func (fsys *FS) Chtimes(ctx context.Context, name string, mtime time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mapErr("chtimes", name, fsys.root.Chtimes(rel(name), time.Time{}, mtime))
}

// fileInfo converts an os FileInfo to the DSI form.
func fileInfo(name string, fi fs.FileInfo) dsi.FileInfo {
	info := dsi.FileInfo{
		Name:    name,
		Size:    fi.Size(),
		Mode:    fi.Mode(),
		ModTime: fi.ModTime(),
		UID:     -1,
		GID:     -1,
	}
	fillOwner(&info, fi)
	return info
}

// Error is the error type returned by the back-end. It wraps both the DSI
// sentinel (Kind) and the underlying cause (Err), so that errors.Is matches
// either.
type Error struct {
	Op   string // operation: "open", "stat", "write", ...
	Path string // the DSI name, or the root given to New
	Kind error  // a dsi sentinel, or nil when none applies
	Err  error  // the underlying cause
}

// Error returns "posix: op path: cause".
func (e *Error) Error() string {
	return "posix: " + e.Op + " " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the sentinel and the cause.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// mapErr wraps err, from an operation op on name, with the matching DSI
// sentinel. It returns nil for a nil err.
func mapErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	cause := err
	switch {
	case errors.As(err, &pe):
		cause = pe.Err
	case errors.As(err, &le):
		cause = le.Err
	case errors.As(err, &se):
		cause = se.Err
	}
	var kind error
	var errno syscall.Errno
	switch {
	case errors.As(cause, &errno):
		kind = errnoKind(errno)
	case errors.Is(cause, fs.ErrClosed):
		kind = dsi.ErrInvalid
	case pe != nil || le != nil:
		// os.Root reports a name or link leaving the root with an
		// unexported, errno-less error; everything else it reports is
		// an errno. Treat it as forbidden.
		kind = dsi.ErrPermission
	}
	return &Error{Op: op, Path: name, Kind: kind, Err: cause}
}

// errnoKind maps an errno to a DSI sentinel, or nil.
func errnoKind(errno syscall.Errno) error {
	switch errno {
	case syscall.ENOENT:
		return dsi.ErrNotExist
	case syscall.EEXIST:
		return dsi.ErrExist
	case syscall.EACCES, syscall.EPERM:
		return dsi.ErrPermission
	case syscall.ENOTEMPTY:
		return dsi.ErrNotEmpty
	case syscall.ENOTDIR:
		return dsi.ErrNotDir
	case syscall.EISDIR:
		return dsi.ErrIsDir
	case syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG:
		return dsi.ErrNoSpace
	case syscall.ENAMETOOLONG, syscall.EINVAL, syscall.ELOOP:
		return dsi.ErrInvalid
	case syscall.EROFS:
		return dsi.ErrReadOnly
	case syscall.EXDEV, syscall.EOPNOTSUPP, syscall.ENOSYS:
		return dsi.ErrNotSupported
	}
	return nil
}

// Interface guards.
var (
	_ dsi.Storage   = (*FS)(nil)
	_ dsi.Chmoder   = (*FS)(nil)
	_ dsi.Chtimeser = (*FS)(nil)
	_ dsi.Subber    = (*FS)(nil)
)
