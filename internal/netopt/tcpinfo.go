package netopt

import "time"

// TCPStats is what the kernel reports of one TCP connection (Linux
// TCP_INFO, SO_SNDBUF and SO_RCVBUF), in the units Ferry uses. The
// counters run from the connection's start. A field the running kernel
// does not have is zero.
type TCPStats struct {
	RTT    time.Duration // smoothed round-trip time (tcpi_rtt)
	MinRTT time.Duration // lowest round-trip time seen (tcpi_min_rtt); 0 before a sample
	// RcvRTT is the receiver's estimate of the round trip (tcpi_rcv_rtt),
	// queueing on the path included; 0 before data arrived. Unlike RTT
	// it follows a connection that only receives.
	RcvRTT      time.Duration
	Retransmits int64 // segments retransmitted (tcpi_total_retrans)
	SegsOut     int64 // segments sent (tcpi_segs_out)
	SegsIn      int64 // segments received (tcpi_segs_in)
	ReorderSeen int64 // reordering events seen (tcpi_reord_seen)
	// RcvOOO is how many segments arrived out of order (tcpi_rcv_ooopack,
	// Linux 5.4 and later): on a receiver, none means none was lost.
	RcvOOO       int64
	Cwnd         int     // congestion window in segments (tcpi_snd_cwnd)
	MSS          int     // sending maximum segment size (tcpi_snd_mss)
	DeliveryRate float64 // recent delivery rate in bytes per second (tcpi_delivery_rate)
	SndBuf       int     // SO_SNDBUF in bytes
	RcvBuf       int     // SO_RCVBUF in bytes

	// The sender's chrono statistics (Linux 4.10 and later; zero on a
	// connection that only receives): Busy is the time the connection
	// had data to send (tcpi_busy_time), which includes the time that
	// sending waited for the receiver's window (RwndLimited,
	// tcpi_rwnd_limited) or for room in the send buffer (SndbufLimited,
	// tcpi_sndbuf_limited). The kernel counts in jiffies (a few ms).
	Busy          time.Duration
	RwndLimited   time.Duration
	SndbufLimited time.Duration
}
