//go:build !linux

package posix

import (
	"os"
	"sync"
	"syscall"
)

// sendfile is Linux-only; elsewhere WriteRangeTo always copies.
func (r *Reader) sendfile(sc syscall.Conn, off, n int64) (int64, bool, error) {
	return 0, false, nil
}

// splice is Linux-only; elsewhere ReadRangeFrom and SpliceAt always copy.
func splice(f *os.File, mu *sync.Mutex, sc syscall.Conn, off, n int64) (int64, bool, error) {
	return 0, false, nil
}
