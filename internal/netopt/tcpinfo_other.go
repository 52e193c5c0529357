//go:build !linux

package netopt

import "net"

// ReadTCPStats is not available on this system: ok is always false.
func ReadTCPStats(c net.Conn) (s TCPStats, ok bool) { return TCPStats{}, false }
