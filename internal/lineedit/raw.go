//go:build linux

package lineedit

import (
	"golang.org/x/sys/unix"
)

// MakeRaw puts the terminal fd into the mode an Editor needs: no echo, no
// line buffering, no signals from Ctrl-C/Ctrl-Z/Ctrl-\ (they arrive as
// bytes), no flow control, CR not turned into LF. Unlike term.MakeRaw it
// keeps output processing, so that programs may keep printing "\n" while
// the terminal is raw. restore puts the old mode back.
func MakeRaw(fd int) (restore func() error, err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Iflag &^= unix.ICRNL | unix.INLCR | unix.IGNCR | unix.IXON | unix.ISTRIP | unix.BRKINT
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, err
	}
	return func() error { return unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
