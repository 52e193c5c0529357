package posix

import (
	"errors"
	"io/fs"
	"os"

	"github.com/ferrygrid/ferry/dsi"
)

// errHardLinked is the cause when a write in place or a chmod is refused
// because the regular file has other names.
var errHardLinked = errors.New("the file has other hard links (names), which the change would reach too; refused")

// refuseLinked returns the error of op on name when fi, the stat of an
// open descriptor, is a regular file with more than one hard link: a
// write in place (APPE, ESTO, REST) or a chmod through this name would
// change the file under its other names too, one of which may be outside
// the served tree or belong to someone else.
func refuseLinked(op, name string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() && linkCount(fi) > 1 {
		return &Error{Op: op, Path: name, Kind: dsi.ErrPermission, Err: errHardLinked}
	}
	return nil
}

// finishCreate ends Create on f, opened for writing without O_TRUNC:
// it refuses a file with several hard links, truncates when asked (after
// the check, so that a refused file keeps its bytes) and returns the
// Writer. On error f is closed.
func (fsys *FS) finishCreate(f *os.File, name string, opts dsi.CreateOptions) (*Writer, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, mapErr("create", name, err)
	}
	if err := refuseLinked("create", name, fi); err != nil {
		f.Close()
		return nil, err
	}
	if opts.Truncate {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, mapErr("create", name, err)
		}
	}
	return fsys.writer(f, name, opts), nil
}
