package posix

// Fast paths for the hot operations of many small files (issue 17).
//
// An os.Root walks a name one directory at a time: an openat and a close
// per directory on the way, for every operation. On Linux one openat2(2)
// with RESOLVE_BENEATH resolves the whole name below the root's directory
// in the kernel. The fast paths add RESOLVE_NO_SYMLINKS: they handle only
// names without any symbolic link on the way, where the kernel's answer
// and the os.Root's are the same by construction. Any failure (a link on
// the way, a missing entry, a kernel without openat2, a closed FS) falls
// back to the os.Root path, which then gives today's answer, error
// included: the fast paths never decide an error themselves.

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// resolveBeneath: stay below the directory, follow no link at all.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// noOpenat2 is set once the kernel refused openat2 itself (ENOSYS, or
// EPERM from a seccomp filter): the fast paths are skipped from then on.
var noOpenat2 atomic.Bool

// rootDir opens the root's directory for the fast paths; nil when they are
// not available.
func rootDir(r *os.Root) *os.File {
	if noOpenat2.Load() {
		return nil
	}
	d, err := r.Open(".")
	if err != nil {
		return nil
	}
	return d
}

// beneath runs f with the root directory's descriptor; false when there
// is none or it was closed. The descriptor cannot be closed (and reused)
// while f runs.
func (fsys *FS) beneath(f func(dirfd int)) bool {
	if fsys.dir == nil || noOpenat2.Load() {
		return false
	}
	sc, err := fsys.dir.SyscallConn()
	if err != nil {
		return false
	}
	return sc.Control(func(fd uintptr) { f(int(fd)) }) == nil
}

// openat2 opens r, a cleaned name relative to dirfd, without leaving it
// and without following links.
func openat2(dirfd int, r string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, r, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_CLOEXEC),
			Mode:    uint64(perm),
			Resolve: resolveBeneath,
		})
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR:
			continue
		case unix.ENOSYS:
			noOpenat2.Store(true)
		case unix.EPERM:
			// A seccomp filter refusing openat2 says EPERM; so may a
			// real permission problem. Only the probe below tells.
			if !openat2Works() {
				noOpenat2.Store(true)
			}
		}
		return -1, err
	}
}

// openat2Works tells whether openat2 can open "/" at all.
func openat2Works() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// fastName is the os.File name of r, as the os.Root would give it.
func (fsys *FS) fastName(r string) string { return fsys.root.Name() + "/" + r }

// openFast opens the regular file r for reading: it looks at the entry
// through an O_PATH descriptor first, then opens it without blocking
// (O_NONBLOCK: a FIFO swapped in meanwhile would otherwise block the open
// until a writer comes) and checks again, and only then makes the
// descriptor blocking. ok false: use the os.Root path.
func (fsys *FS) openFast(r string) (f *os.File, size int64, ok bool) {
	if r == "." {
		return nil, 0, false
	}
	fd := -1
	fsys.beneath(func(dirfd int) {
		if !regularAt(dirfd, r, 0) {
			return
		}
		betweenCheckAndOpen(r)
		nfd, err := openat2(dirfd, r, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
		if err != nil {
			return
		}
		if n, ok := keepRegular(nfd); ok {
			fd, size = nfd, n
		}
	})
	if fd < 0 {
		return nil, 0, false
	}
	return os.NewFile(uintptr(fd), fsys.fastName(r)), size, true
}

// keepRegular checks that fd, opened with O_NONBLOCK, is a regular file
// and makes it blocking; it returns the file's size. Otherwise it closes
// fd and reports false.
func keepRegular(fd int) (size int64, ok bool) {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || setBlocking(fd) != nil {
		unix.Close(fd)
		return 0, false
	}
	return st.Size, true
}

// setBlocking clears O_NONBLOCK of fd.
func setBlocking(fd int) error {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	return err
}

// regularAt reports whether r below dirfd is a regular file, looked at
// through an O_PATH descriptor (extra flags: O_NOFOLLOW).
func regularAt(dirfd int, r string, extra int) bool {
	pfd, err := openat2(dirfd, r, unix.O_PATH|extra, 0)
	if err != nil {
		return false
	}
	var st syscall.Stat_t
	err = syscall.Fstat(pfd, &st)
	unix.Close(pfd)
	return err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG
}

// createFast opens r for writing as Create does (flag holds O_WRONLY,
// O_CREATE and the caller's O_TRUNC and O_NOFOLLOW): when r exists it
// must be a regular file, as the os.Root path checks. ok false: use the
// os.Root path.
func (fsys *FS) createFast(r string, flag int, perm fs.FileMode) (f *os.File, ok bool) {
	if r == "." {
		return nil, false
	}
	fd := -1
	fsys.beneath(func(dirfd int) {
		// The entry may exist: then it must be a regular file (a FIFO
		// would block the open). A missing one is created below; a
		// missing directory on the way fails there too, and falls back.
		pfd, err := openat2(dirfd, r, unix.O_PATH|flag&unix.O_NOFOLLOW, 0)
		switch {
		case err == nil:
			var st syscall.Stat_t
			err = syscall.Fstat(pfd, &st)
			unix.Close(pfd)
			if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
				return
			}
		case err != unix.ENOENT:
			return
		}
		// Not blocking until it is known to be a regular file: an
		// entry swapped for a FIFO since the look above would block.
		betweenCheckAndOpen(r)
		nfd, err := openat2(dirfd, r, flag|unix.O_NONBLOCK, uint32(perm.Perm()))
		if err != nil {
			return
		}
		if _, ok := keepRegular(nfd); ok {
			fd = nfd
		}
	})
	if fd < 0 {
		return nil, false
	}
	return os.NewFile(uintptr(fd), fsys.fastName(r)), true
}

// renameFast renames from to to when both are in the same directory and
// to is not a directory (the os.Root path has rules of its own for
// replacing directories). ok false: use the os.Root path; nothing
// changed then.
func (fsys *FS) renameFast(from, to string) (ok bool) {
	dir, fromBase := splitRel(from)
	toDir, toBase := splitRel(to)
	if dir != toDir || fromBase == "." || toBase == "." || fromBase == ".." || toBase == ".." {
		return false
	}
	fsys.beneath(func(dirfd int) {
		pfd := dirfd
		if dir != "." {
			var err error
			if pfd, err = openat2(dirfd, dir, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
				return
			}
			defer unix.Close(pfd)
		}
		var st unix.Stat_t
		switch err := unix.Fstatat(pfd, toBase, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
			return
		case err != nil && err != unix.ENOENT:
			return
		}
		ok = unix.Renameat(pfd, fromBase, pfd, toBase) == nil
	})
	return ok
}

// splitRel splits a cleaned relative name into its directory ("." for
// none) and last element.
func splitRel(r string) (dir, base string) {
	i := strings.LastIndexByte(r, '/')
	if i < 0 {
		return ".", r
	}
	return r[:i], path.Base(r)
}

// lstatFast describes r (not following a link at its end) through an
// O_PATH descriptor. A name of one element is left to the os.Root, whose
// single fstatat is as cheap. A missing entry (ENOENT) or a file on the
// way (ENOTDIR) is an answer: the kernel met it before any link, where the
// os.Root meets it too. ok false: use the os.Root path.
func (fsys *FS) lstatFast(r string) (fi fs.FileInfo, err error, ok bool) {
	if !strings.Contains(r, "/") {
		return nil, nil, false
	}
	fsys.beneath(func(dirfd int) {
		fd, e := openat2(dirfd, r, unix.O_PATH|unix.O_NOFOLLOW, 0)
		switch e {
		case nil:
		case unix.ENOENT, unix.ENOTDIR:
			err, ok = &fs.PathError{Op: "lstatat", Path: r, Err: e}, true
			return
		default:
			return
		}
		var st unix.Stat_t
		e = unix.Fstat(fd, &st)
		unix.Close(fd)
		if e == nil {
			fi, ok = newStatInfo(path.Base(r), &st), true
		}
	})
	return fi, err, ok
}

// lstatIn describes the entry name (one element, from a listing of d)
// of the open directory d, with one fstatat: the entry cannot lead out of
// d, since a link at the end is not followed. ok false: use the os.Root.
func lstatIn(d *os.File, name string) (fi fs.FileInfo, err error, ok bool) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return nil, nil, false
	}
	sc, e := d.SyscallConn()
	if e != nil {
		return nil, nil, false
	}
	e = sc.Control(func(fd uintptr) {
		var st unix.Stat_t
		for {
			e := unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			switch e {
			case unix.EINTR:
				continue
			case nil:
				fi = newStatInfo(name, &st)
			default:
				err = &fs.PathError{Op: "lstatat", Path: name, Err: e}
			}
			ok = true
			return
		}
	})
	if e != nil {
		return nil, nil, false
	}
	return fi, err, ok
}

// statInfo is an fs.FileInfo made from stat data, as os makes its own;
// Sys is a *unix.Stat_t (fillOwner reads it).
type statInfo struct {
	name string
	mode fs.FileMode
	st   unix.Stat_t
}

func newStatInfo(name string, st *unix.Stat_t) *statInfo {
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return &statInfo{name: name, mode: mode, st: *st}
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) Mode() fs.FileMode  { return s.mode }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.mode.IsDir() }
func (s *statInfo) Sys() any           { return &s.st }
