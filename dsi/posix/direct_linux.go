package posix

import (
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// directSupported: Linux has O_DIRECT.
const directSupported = true

// errNoDirect is the cause when a file system reports no direct IO.
var errNoDirect = errors.New("the file system does not do direct IO")

// openDirect opens a second descriptor of the regular file f, open for
// writing, with O_DIRECT, and returns it with the alignment its direct
// writes need. It reopens the file f is open on (/proc/self/fd), never
// a name, and checks that it got the same file.
func openDirect(f *os.File) (*os.File, int64, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var (
		fd    = -1
		align = minAlign
		st    unix.Stat_t
		oerr  error
	)
	cerr := sc.Control(func(ffd uintptr) {
		var stx unix.Statx_t
		if err := unix.Statx(int(ffd), "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &stx); err == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
			if stx.Dio_offset_align == 0 || stx.Dio_mem_align == 0 {
				oerr = errNoDirect
				return
			}
			align = max(align, int64(stx.Dio_offset_align), int64(stx.Dio_mem_align))
		}
		if oerr = unix.Fstat(int(ffd), &st); oerr != nil {
			return
		}
		for {
			fd, oerr = unix.Open("/proc/self/fd/"+strconv.Itoa(int(ffd)), unix.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
			if oerr != unix.EINTR {
				break
			}
		}
	})
	if cerr != nil {
		return nil, 0, cerr
	}
	if oerr != nil {
		return nil, 0, oerr
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino || st2.Mode&syscall.S_IFMT != syscall.S_IFREG {
		unix.Close(fd)
		return nil, 0, errNoDirect
	}
	return os.NewFile(uintptr(fd), f.Name()), align, nil
}
