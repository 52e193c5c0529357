package netopt

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Moved reports the bytes the kernel has seen acknowledged by the peer plus
// the bytes received on c, from TCP_INFO. It counts what zero-copy paths
// (sendfile, splice) move without telling anyone. ok is false when c is not
// a TCP socket or the kernel gives no counters.
func Moved(c net.Conn) (n uint64, ok bool) {
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return 0, false
	}
	return info.Bytes_acked + info.Bytes_received, true
}
