package xfer

import "net/netip"

// Source is the unit that per-source limits count by: the address for
// IPv4, its /64 for IPv6 (a host usually has a whole /64). The server's
// session and login limits and the data channels' handshake limits all
// use it.
func Source(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if a.Is4() || !a.IsValid() {
		return netip.PrefixFrom(a, a.BitLen())
	}
	p, _ := a.Prefix(64)
	return p
}
