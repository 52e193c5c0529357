package wire

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// errHostPort is the base of every host-port parse error.
var errHostPort = errors.New("wire: bad host-port")

// ParsePORT parses a PORT argument (RFC 959 §4.1.2) "h1,h2,h3,h4,p1,p2".
// Spaces around the numbers are tolerated; each number must be 0..255.
func ParsePORT(arg string) (netip.AddrPort, error) {
	if strings.Count(arg, ",") != 5 {
		return netip.AddrPort{}, fmt.Errorf("%w: PORT %q", errHostPort, arg)
	}
	var n [6]byte
	for i := range n {
		field, rest, _ := strings.Cut(arg, ",")
		arg = rest
		v, ok := parseByte(strings.Trim(field, " "))
		if !ok {
			return netip.AddrPort{}, fmt.Errorf("%w: PORT number %q", errHostPort, field)
		}
		n[i] = v
	}
	addr := netip.AddrFrom4([4]byte{n[0], n[1], n[2], n[3]})
	return netip.AddrPortFrom(addr, uint16(n[4])<<8|uint16(n[5])), nil
}

// parseByte parses 1 to 3 decimal digits with a value of at most 255.
func parseByte(s string) (byte, bool) {
	if len(s) == 0 || len(s) > 3 {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	if v > 255 {
		return 0, false
	}
	return byte(v), true
}

// FormatPORT formats ap as a PORT argument "h1,h2,h3,h4,p1,p2". Only IPv4
// addresses (including IPv4-mapped IPv6 ones) can be written this way.
func FormatPORT(ap netip.AddrPort) (string, error) {
	a := ap.Addr().Unmap()
	if !a.Is4() {
		return "", fmt.Errorf("%w: PORT cannot carry %v", errHostPort, ap.Addr())
	}
	b := a.As4()
	p := ap.Port()
	return fmt.Sprintf("%d,%d,%d,%d,%d,%d", b[0], b[1], b[2], b[3], p>>8, p&0xff), nil
}

// ParseEPRT parses an EPRT argument (RFC 2428 §2) "<d>af<d>ip<d>port<d>",
// where <d> is any character from 33 to 126. The address family 1 requires
// an IPv4 address and 2 an IPv6 address without zone. Surrounding spaces are
// trimmed.
func ParseEPRT(arg string) (netip.AddrPort, error) {
	return parseExtended(strings.Trim(arg, " "), false)
}

// parseExtended parses "<d>af<d>ip<d>port<d>". With epsv, af and ip may both
// be empty, which yields an AddrPort with the zero Addr.
func parseExtended(s string, epsv bool) (netip.AddrPort, error) {
	bad := func(what string) (netip.AddrPort, error) {
		return netip.AddrPort{}, fmt.Errorf("%w: %s in %q", errHostPort, what, s)
	}
	if len(s) < 4 || s[0] < 33 || s[0] > 126 {
		return bad("delimiter")
	}
	d := s[:1]
	parts := strings.SplitN(s[1:], d, 5)
	if len(parts) != 4 || parts[3] != "" {
		return bad("field count")
	}
	af, host, port := parts[0], parts[1], parts[2]
	p, ok := parsePort(port)
	if !ok {
		return bad("port")
	}
	if epsv && af == "" && host == "" {
		return netip.AddrPortFrom(netip.Addr{}, p), nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return bad("address")
	}
	switch af {
	case "1":
		if !a.Is4() {
			return bad("address family")
		}
	case "2":
		if !a.Is6() || a.Zone() != "" {
			return bad("address family")
		}
	case "":
		if !epsv || a.Zone() != "" {
			return bad("address family")
		}
	default:
		return bad("address family")
	}
	return netip.AddrPortFrom(a, p), nil
}

// parsePort parses 1 to 5 decimal digits with a value of at most 65535.
func parsePort(s string) (uint16, bool) {
	if len(s) == 0 || len(s) > 5 {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	if v > 65535 {
		return 0, false
	}
	return uint16(v), true
}

// FormatEPRT formats ap as an EPRT argument: "|1|127.0.0.1|2811|" or
// "|2|::1|2811|". IPv4-mapped addresses are written as IPv4 and zones are
// dropped. The zero Addr gives the EPSV form "|||port|".
func FormatEPRT(ap netip.AddrPort) string {
	a := ap.Addr().Unmap().WithZone("")
	p := strconv.Itoa(int(ap.Port()))
	switch {
	case a.Is4():
		return "|1|" + a.String() + "|" + p + "|"
	case a.Is6():
		return "|2|" + a.String() + "|" + p + "|"
	}
	return "|||" + p + "|"
}

// ParsePASVReply finds the first "h,h,h,h,p,p" group in the text of a 227
// (or delayed 127) reply, parenthesised or not, as in GCT's
// "Entering Passive Mode (127,0,0,1,204,21)".
func ParsePASVReply(text string) (netip.AddrPort, error) {
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) || (i > 0 && isDigit(text[i-1])) {
			continue
		}
		if ap, ok := scanPORT(text[i:]); ok {
			return ap, nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%w: no address in PASV reply %q", errHostPort, text)
}

// scanPORT parses six comma-separated numbers at the start of s, with
// optional spaces around the commas, ignoring whatever follows.
func scanPORT(s string) (netip.AddrPort, bool) {
	var n [6]byte
	for k := range n {
		if k > 0 {
			s = strings.TrimLeft(s, " ")
			if s == "" || s[0] != ',' {
				return netip.AddrPort{}, false
			}
			s = strings.TrimLeft(s[1:], " ")
		}
		j := 0
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		v, ok := parseByte(s[:j])
		if !ok {
			return netip.AddrPort{}, false
		}
		n[k] = v
		s = s[j:]
	}
	addr := netip.AddrFrom4([4]byte{n[0], n[1], n[2], n[3]})
	return netip.AddrPortFrom(addr, uint16(n[4])<<8|uint16(n[5])), true
}

// ParseEPSVReply parses the text of a 229 (or delayed 129) reply. GCT's
// "Entering Extended Passive Mode (|||56331|)" yields an AddrPort whose Addr
// is the zero (invalid) Addr and whose port is 56331: the caller connects to
// the control connection's peer. The form "(|1|ip|port|)" yields the full
// address.
func ParseEPSVReply(text string) (netip.AddrPort, error) {
	rest := text
	for {
		i := strings.IndexByte(rest, '(')
		if i < 0 {
			return netip.AddrPort{}, fmt.Errorf("%w: no address in EPSV reply %q", errHostPort, text)
		}
		rest = rest[i+1:]
		j := strings.IndexByte(rest, ')')
		if j < 0 {
			return netip.AddrPort{}, fmt.Errorf("%w: no address in EPSV reply %q", errHostPort, text)
		}
		if ap, err := parseExtended(rest[:j], true); err == nil {
			return ap, nil
		}
	}
}

// ParseHostPort parses one host-port in either PORT form
// ("127,0,0,1,169,91") or EPRT form ("|1|127.0.0.1|37469|"), with
// surrounding spaces trimmed. GCT uses both in SPAS reply lines and SPOR
// arguments (GFD.020).
func ParseHostPort(s string) (netip.AddrPort, error) {
	s = strings.Trim(s, " ")
	if s != "" && isDigit(s[0]) {
		return ParsePORT(s)
	}
	return ParseEPRT(s)
}

// ParseHostPorts parses a list of host-ports separated by runs of spaces, as
// in a SPOR argument. An empty list is an error.
func ParseHostPorts(arg string) ([]netip.AddrPort, error) {
	fields := SplitArgs(arg, 0)
	if len(fields) == 0 {
		return nil, fmt.Errorf("%w: empty host-port list", errHostPort)
	}
	out := make([]netip.AddrPort, 0, len(fields))
	for _, f := range fields {
		ap, err := ParseHostPort(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ap)
	}
	return out, nil
}
