//go:build unix

package translog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFile opens path for appending without following a symbolic link
// anywhere along it and without blocking (a FIFO, a device), and refuses
// anything but a regular file with one link owned by the effective user
// or root, in a directory owned by the effective user or root that others
// may not write to unless it is sticky (like /tmp); the descriptor is made
// blocking again once checked.
//
// The directories are opened one by one from "/" (or the working
// directory for a relative path) with O_NOFOLLOW, and the file is opened
// relative to its directory, so that a symbolic link put in place of a
// parent directory cannot send the log elsewhere.
func openFile(path string) (*os.File, error) {
	dir, err := openDir(filepath.Dir(filepath.Clean(path)))
	if err != nil {
		return nil, &os.PathError{Op: "translog: open", Path: path, Err: err}
	}
	defer unix.Close(dir)
	if err := checkDir(dir); err != nil {
		return nil, fmt.Errorf("translog: %s refused: %w", path, err)
	}
	fd, err := unix.Openat(dir, filepath.Base(path), unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o640)
	if err != nil {
		return nil, &os.PathError{Op: "translog: open", Path: path, Err: err}
	}
	if err := checkFile(fd); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("translog: %s refused: %w", path, err)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "translog: open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openDir opens the directory dir, following no symbolic link: each
// element is opened relative to the one before with O_NOFOLLOW.
func openDir(dir string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	start := "."
	if filepath.IsAbs(dir) {
		start = "/"
	}
	fd, err := unix.Open(start, flags, 0)
	if err != nil {
		return -1, err
	}
	for _, elem := range strings.Split(dir, "/") {
		if elem == "" || elem == "." {
			continue
		}
		next, err := unix.Openat(fd, elem, flags, 0)
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("%s: not a directory (a symbolic link?): %w", elem, err)
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// errDirNotOurs is a log directory others could swap the log in.
var errDirNotOurs = fmt.Errorf("its directory must be owned by uid %d or root, and not writable by others unless sticky", os.Geteuid())

func checkDir(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	switch {
	case st.Uid != uint32(os.Geteuid()) && st.Uid != 0:
		return fmt.Errorf("%w (owner uid %d)", errDirNotOurs, st.Uid)
	case st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0:
		return fmt.Errorf("%w (mode %#o)", errDirNotOurs, st.Mode&0o7777)
	}
	return nil
}

// errNotOurs is a log path that is not a plain file of ours.
var errNotOurs = fmt.Errorf("not a regular file with one link owned by uid %d or root", os.Geteuid())

func checkFile(fd int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return fmt.Errorf("%w (file type %#o)", errNotOurs, st.Mode&syscall.S_IFMT)
	case st.Nlink != 1:
		return fmt.Errorf("%w (%d links)", errNotOurs, st.Nlink)
	case st.Uid != uint32(os.Geteuid()) && st.Uid != 0:
		return fmt.Errorf("%w (owner uid %d)", errNotOurs, st.Uid)
	}
	return nil
}
