//go:build !linux

package netopt

import "net"

// ReadTCPStats is not available on this system: ok is always false.
func ReadTCPStats(c net.Conn) (s TCPStats, ok bool) { return TCPStats{}, false }

// ReadRetransmits is not available on this system: ok is always false.
func ReadRetransmits(c net.Conn) (n int64, ok bool) { return 0, false }

// ReadCounters is not available on this system: ok is always false.
func ReadCounters(c net.Conn) (s TCPStats, ok bool) { return TCPStats{}, false }
