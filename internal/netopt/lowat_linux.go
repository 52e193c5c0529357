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
