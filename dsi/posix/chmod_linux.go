package posix

import (
	"io/fs"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// chmod is Chmod of the entry r: it opens it with O_PATH (no permission
// on the file needed), checks its hard links on that descriptor and
// changes the mode of the file it is open on, through /proc/self/fd.
// Without /proc the mode is changed by name after the check.
func (fsys *FS) chmod(name, r string, mode fs.FileMode) error {
	f, err := fsys.root.OpenFile(r, unix.O_PATH, 0)
	if err != nil {
		return mapErr("chmod", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return mapErr("chmod", name, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// An O_PATH open does not follow a link at the end of the name
		// (os.Root opens it with O_NOFOLLOW): change the mode by name,
		// which follows it inside the root, after a look at its target.
		if fi, err = fsys.root.Stat(r); err != nil {
			return mapErr("chmod", name, err)
		}
		if err := refuseLinked("chmod", name, fi); err != nil {
			return err
		}
		return mapErr("chmod", name, fsys.root.Chmod(r, mode))
	}
	if err := refuseLinked("chmod", name, fi); err != nil {
		return err
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return mapErr("chmod", name, err)
	}
	done := false
	cerr := sc.Control(func(fd uintptr) {
		err = syscall.Chmod("/proc/self/fd/"+strconv.Itoa(int(fd)), uint32(mode))
		done = err != syscall.ENOENT
	})
	switch {
	case cerr != nil:
		return mapErr("chmod", name, cerr)
	case done:
		return mapErr("chmod", name, err)
	}
	return mapErr("chmod", name, fsys.root.Chmod(r, mode))
}
