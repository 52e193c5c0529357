package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// errAddrDenied refuses an endpoint address the network policy denies.
var errAddrDenied = errors.New("address not allowed")

// checkAddr applies the network policy to an address the app is about
// to connect to, for a control or a data connection: DenyNet refuses,
// then AllowNet allows; by default loopback, link-local, multicast and
// unspecified addresses and this host's own addresses (hostAddrs, any
// port) are refused, and so is the app's own listen address (Self)
// always, on any of this host's addresses when Self is a wildcard.
// Users must not make this host connect to its own services.
func (a *App) checkAddr(ap netip.AddrPort) error {
	ip := ap.Addr().Unmap().WithZone("")
	own := ip.IsLoopback() || ip.IsUnspecified() || slices.Contains(a.hostAddrs, ip)
	for _, s := range a.cfg.Self {
		sa := s.Addr().Unmap()
		if s.Port() == ap.Port() && (sa == ip || sa.IsUnspecified() && own) {
			return fmt.Errorf("%v is this web application: %w", ap, errAddrDenied)
		}
	}
	for _, p := range a.cfg.DenyNet {
		if p.Contains(ip) {
			return fmt.Errorf("%v is in a denied network (%v): %w", ip, p, errAddrDenied)
		}
	}
	for _, p := range a.cfg.AllowNet {
		if p.Contains(ip) {
			return nil
		}
	}
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsUnspecified() || !ip.IsValid() {
		return fmt.Errorf("%v is a loopback, link-local or unspecified address (ferry web -allow-net allows it): %w", ip, errAddrDenied)
	}
	if slices.Contains(a.hostAddrs, ip) {
		return fmt.Errorf("%v is an address of this host (ferry web -allow-net allows it): %w", ip, errAddrDenied)
	}
	return nil
}

// interfaceAddrs are the addresses of this host's network interfaces,
// unmapped and without zone.
func interfaceAddrs() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, ifa := range ifas {
		var ip net.IP
		switch v := ifa.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap().WithZone(""))
		}
	}
	return out, nil
}

// dialControl resolves the host of addr ("host:port") once and dials the
// first of its addresses the network policy allows; it returns the
// connection and the address it reached. An address the policy denies
// is never connected to.
func (a *App) dialControl(ctx context.Context, addr string) (net.Conn, netip.Addr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, netip.Addr{}, err
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("bad port %q", port)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ips, err = net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil {
			return nil, netip.Addr{}, fmt.Errorf("resolve %s: %w", host, err)
		}
	}
	var first error
	for _, ip := range ips {
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(pn))
		if err := a.checkAddr(ap); err != nil {
			first = cmp.Or(first, err)
			continue
		}
		d := net.Dialer{Timeout: 20 * time.Second}
		nc, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return nc, ap.Addr(), nil
		}
		first = cmp.Or(first, err)
	}
	if first == nil {
		first = fmt.Errorf("%s has no address", host)
	}
	return nil, netip.Addr{}, first
}

// maxErrorText bounds the error text the API returns: errors may quote
// what a server said.
const maxErrorText = 300

// sanitize makes an error text safe to show: control and other
// non-printing characters become spaces, and it is cut to maxErrorText
// bytes.
func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
