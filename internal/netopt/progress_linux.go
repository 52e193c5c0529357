package netopt

import "net"

// Moved reports the bytes the kernel has seen acknowledged by the peer plus
// the bytes received on c, from TCP_INFO. It counts what zero-copy paths
// (sendfile, splice) move without telling anyone. ok is false when c is not
// a TCP socket or the kernel gives no counters.
func Moved(c net.Conn) (n uint64, ok bool) {
	ok = control(c, func(fd int) bool {
		info, err := tcpInfo(fd)
		if err != nil {
			return false
		}
		n = info.Bytes_acked + info.Bytes_received
		return true
	})
	return n, ok
}
