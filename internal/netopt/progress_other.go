//go:build !linux

package netopt

import "net"

// Moved is not available on this system.
func Moved(c net.Conn) (uint64, bool) { return 0, false }
