//go:build !linux

package posix

import "syscall"

// sendfile is Linux-only; elsewhere WriteRangeTo always copies.
func (r *Reader) sendfile(sc syscall.Conn, off, n int64) (int64, bool, error) {
	return 0, false, nil
}

// splice is Linux-only; elsewhere ReadRangeFrom always copies.
func (w *Writer) splice(sc syscall.Conn, off, n int64) (int64, bool, error) {
	return 0, false, nil
}
