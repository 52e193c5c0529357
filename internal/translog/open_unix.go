//go:build unix

package translog

import (
	"fmt"
	"os"
	"syscall"
)

// openFile opens path for appending without following a symbolic link at
// its last element and without blocking (a FIFO, a device), and refuses
// anything but a regular file with one link owned by the effective user
// or root; the descriptor is made blocking again once checked.
func openFile(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o640)
	if err != nil {
		return nil, &os.PathError{Op: "translog: open", Path: path, Err: err}
	}
	if err := checkFile(fd); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("translog: %s refused: %w", path, err)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "translog: open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
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
