package history

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// defaultPorts are the control ports of the schemes Ferry speaks when a
// URL names none (ftps:// is explicit FTPS on the FTP port).
var defaultPorts = map[string]int{
	"ftp":    21,
	"ftps":   21,
	"gsiftp": 2811,
}

// EndpointOf returns the Endpoint a URL names: its scheme, its host in
// lower case (an IPv6 address without brackets), its port (the scheme's
// default when the URL has none: 21 for ftp and ftps, 2811 for gsiftp)
// and the host's Domain. A file:// URL, or one without a scheme (a local
// path), is the local Endpoint {Scheme: "file"}.
func EndpointOf(u *url.URL) Endpoint {
	scheme := strings.ToLower(u.Scheme)
	if scheme == "" || scheme == "file" {
		return Endpoint{Scheme: "file"}
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 0 || port > 65535 {
		port = defaultPorts[scheme]
	}
	return NewEndpoint(scheme, u.Hostname(), port)
}

// NewEndpoint returns the Endpoint of a host and port reached with
// scheme, filling Domain. Scheme and host are lower-cased; brackets
// around an IPv6 address and a trailing dot of a name are dropped. The
// scheme "file" (or "") gives the local Endpoint, whatever host and
// port say.
func NewEndpoint(scheme, host string, port int) Endpoint {
	scheme = strings.ToLower(scheme)
	if scheme == "" || scheme == "file" {
		return Endpoint{Scheme: "file"}
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	host = strings.TrimSuffix(host, ".")
	return Endpoint{Scheme: scheme, Host: host, Port: port, Domain: domainOf(host)}
}

// domainOf groups host with the other hosts of its site (see
// Endpoint.Domain). A name that has no registrable domain (a single
// label such as "gridftp", or a public suffix itself) is its own domain.
func domainOf(host string) string {
	if host == "" {
		return ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.WithZone("").Unmap()
		switch {
		case a.IsLoopback():
			return "localhost"
		case a.Is4():
			return netip.PrefixFrom(a, 24).Masked().String()
		default:
			return netip.PrefixFrom(a, 48).Masked().String()
		}
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "localhost"
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}
