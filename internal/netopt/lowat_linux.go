package netopt

import (
	"net"

	"golang.org/x/sys/unix"
)

// SetNotSentLowat bounds the bytes c's socket holds not yet sent
// (TCP_NOTSENT_LOWAT): a write blocks once that many wait. Several
// connections fed from one queue then take data as fast as each sends
// it, and a stream held back by loss keeps little of the transfer. It
// reports false when c has no TCP socket of its own (a TLS-wrapped
// connection) or the kernel refused.
func SetNotSentLowat(c net.Conn, n int) bool {
	return control(c, func(fd int) bool {
		return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n) == nil
	})
}

// SetRcvLowat sets how many bytes c's socket must hold before a waiting
// reader is woken (SO_RCVLOWAT; the kernel caps it at half the receive
// buffer, and wakes the reader anyway when the receive window is nearly
// full or the stream ends). Only for a stream read to its end: a reader
// waiting for fewer bytes than the mark that will ever come waits for
// good. It reports false when c has no socket of its own or the kernel
// refused.
func SetRcvLowat(c net.Conn, n int) bool {
	return control(c, func(fd int) bool {
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, n) == nil
	})
}
