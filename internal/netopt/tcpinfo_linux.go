package netopt

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReadTCPStats reads the kernel's view of c. ok is false when c is not a
// socket (a TLS connection must be unwrapped first) or is closed, or the
// kernel refuses TCP_INFO. It makes three system calls: read it when a
// snapshot is due, never per block.
func ReadTCPStats(c net.Conn) (s TCPStats, ok bool) {
	ok = control(c, func(fd int) bool {
		info, err := tcpInfo(fd)
		if err != nil {
			return false
		}
		s = TCPStats{
			RTT:          time.Duration(info.Rtt) * time.Microsecond,
			RcvRTT:       time.Duration(info.Rcv_rtt) * time.Microsecond,
			Retransmits:  int64(info.Total_retrans),
			SegsOut:      int64(info.Segs_out),
			SegsIn:       int64(info.Segs_in),
			ReorderSeen:  int64(info.Reord_seen),
			RcvOOO:       int64(info.Rcv_ooopack),
			Cwnd:         int(info.Snd_cwnd),
			MSS:          int(info.Snd_mss),
			DeliveryRate: float64(info.Delivery_rate),

			Busy:          time.Duration(info.Busy_time) * time.Microsecond,
			RwndLimited:   time.Duration(info.Rwnd_limited) * time.Microsecond,
			SndbufLimited: time.Duration(info.Sndbuf_limited) * time.Microsecond,
		}
		// Without a sample the kernel reports ~0 (its minmax starts there).
		if info.Min_rtt != ^uint32(0) {
			s.MinRTT = time.Duration(info.Min_rtt) * time.Microsecond
		}
		// A failure leaves the buffer size unknown (0), the rest stands.
		s.SndBuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		s.RcvBuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		return true
	})
	return s, ok
}

// ReadRetransmits reads the TCP segments c has retransmitted (TCP_INFO)
// in one system call, where ReadTCPStats makes three; ok as there.
func ReadRetransmits(c net.Conn) (n int64, ok bool) {
	ok = control(c, func(fd int) bool {
		info, err := tcpInfo(fd)
		if err != nil {
			return false
		}
		n = int64(info.Total_retrans)
		return true
	})
	return n, ok
}

// ReadCounters reads, in one system call, the part of TCP_INFO that a
// transfer's accounting takes at its start and end: Retransmits and the
// sender's chrono statistics (Busy, RwndLimited, SndbufLimited); the
// other fields stay zero. ok as ReadTCPStats.
func ReadCounters(c net.Conn) (s TCPStats, ok bool) {
	ok = control(c, func(fd int) bool {
		info, err := tcpInfo(fd)
		if err != nil {
			return false
		}
		s = TCPStats{
			Retransmits:   int64(info.Total_retrans),
			Busy:          time.Duration(info.Busy_time) * time.Microsecond,
			RwndLimited:   time.Duration(info.Rwnd_limited) * time.Microsecond,
			SndbufLimited: time.Duration(info.Sndbuf_limited) * time.Microsecond,
		}
		return true
	})
	return s, ok
}

// control runs f on c's socket and returns what f returns; false when c
// has no socket or it is closed. The runtime keeps the descriptor open
// (and not reused) while f runs, even if c is closed meanwhile.
func control(c net.Conn, f func(fd int) bool) bool {
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var ok bool
	if err := raw.Control(func(fd uintptr) { ok = f(int(fd)) }); err != nil {
		return false
	}
	return ok
}

// tcpInfo reads TCP_INFO of the socket fd. An older kernel fills less of
// the structure; the rest stays zero.
func tcpInfo(fd int) (*unix.TCPInfo, error) {
	return unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
}
