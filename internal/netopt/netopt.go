// Package netopt sets socket options on data connections before they
// connect or listen, when they still shape the TCP handshake (window
// scaling is fixed by the buffer size at SYN time).
package netopt

import (
	"syscall"
)

// BufferControl returns a Control function for net.Dialer and
// net.ListenConfig that sets SO_SNDBUF and SO_RCVBUF to size bytes. A size
// of 0 or less returns nil: the kernel's automatic tuning stays in charge.
func BufferControl(size int) func(network, address string, c syscall.RawConn) error {
	if size <= 0 {
		return nil
	}
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, size); serr != nil {
				return
			}
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, size)
		})
		if err != nil {
			return err
		}
		return serr
	}
}
