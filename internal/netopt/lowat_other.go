//go:build !linux

package netopt

import "net"

// SetNotSentLowat is not available on this system.
func SetNotSentLowat(c net.Conn, n int) bool { return false }

// SetRcvLowat is not available on this system.
func SetRcvLowat(c net.Conn, n int) bool { return false }
