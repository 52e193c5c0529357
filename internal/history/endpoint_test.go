package history

import (
	"net/url"
	"testing"
)

func TestEndpointOf(t *testing.T) {
	tests := []struct {
		url  string
		want Endpoint
	}{
		{"gsiftp://DTN1.Example.ORG/data", Endpoint{"gsiftp", "dtn1.example.org", 2811, "example.org"}},
		{"gsiftp://dtn1.example.org:2812/", Endpoint{"gsiftp", "dtn1.example.org", 2812, "example.org"}},
		{"ftp://ftp.cs.ox.ac.uk/pub", Endpoint{"ftp", "ftp.cs.ox.ac.uk", 21, "ox.ac.uk"}},
		{"ftps://a.b.example.co.uk:990/", Endpoint{"ftps", "a.b.example.co.uk", 990, "example.co.uk"}},
		{"GSIFTP://host.example.org./x", Endpoint{"gsiftp", "host.example.org", 2811, "example.org"}},
		// Names without a public suffix are their own domain.
		{"gsiftp://gridftp/x", Endpoint{"gsiftp", "gridftp", 2811, "gridftp"}},
		{"gsiftp://dtn.cluster.local/x", Endpoint{"gsiftp", "dtn.cluster.local", 2811, "cluster.local"}},
		{"ftp://com/x", Endpoint{"ftp", "com", 21, "com"}},
		// Addresses group by network.
		{"ftp://192.0.2.77:2121/", Endpoint{"ftp", "192.0.2.77", 2121, "192.0.2.0/24"}},
		{"gsiftp://[2001:DB8:1:2::7]:2811/", Endpoint{"gsiftp", "2001:db8:1:2::7", 2811, "2001:db8:1::/48"}},
		{"gsiftp://[::ffff:10.1.2.3]/", Endpoint{"gsiftp", "::ffff:10.1.2.3", 2811, "10.1.2.0/24"}},
		// Loopback.
		{"ftp://127.0.0.1:2121/", Endpoint{"ftp", "127.0.0.1", 2121, "localhost"}},
		{"ftp://127.3.4.5/", Endpoint{"ftp", "127.3.4.5", 21, "localhost"}},
		{"gsiftp://[::1]:2811/", Endpoint{"gsiftp", "::1", 2811, "localhost"}},
		{"gsiftp://LocalHost/", Endpoint{"gsiftp", "localhost", 2811, "localhost"}},
		{"gsiftp://dev.localhost/", Endpoint{"gsiftp", "dev.localhost", 2811, "localhost"}},
		// Local files.
		{"file:///data/x", Endpoint{Scheme: "file"}},
		{"file://localhost/data/x", Endpoint{Scheme: "file"}},
		{"/data/x", Endpoint{Scheme: "file"}},
		// A port that is not a number is the scheme's default.
		{"gsiftp://h.example.org:/x", Endpoint{"gsiftp", "h.example.org", 2811, "example.org"}},
		{"http://www.example.org/", Endpoint{"http", "www.example.org", 0, "example.org"}},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := EndpointOf(u); got != tt.want {
			t.Errorf("EndpointOf(%s) = %+v, want %+v", tt.url, got, tt.want)
		}
	}
}

func TestNewEndpoint(t *testing.T) {
	tests := []struct {
		scheme, host string
		port         int
		want         Endpoint
	}{
		{"gsiftp", "[2001:db8::1]", 2811, Endpoint{"gsiftp", "2001:db8::1", 2811, "2001:db8::/48"}},
		{"gsiftp", "fe80::1%eth0", 2811, Endpoint{"gsiftp", "fe80::1%eth0", 2811, "fe80::/48"}},
		{"FTP", "Files.Example.NET", 21, Endpoint{"ftp", "files.example.net", 21, "example.net"}},
		{"file", "ignored", 7, Endpoint{Scheme: "file"}},
		{"", "", 0, Endpoint{Scheme: "file"}},
		{"gsiftp", "", 2811, Endpoint{"gsiftp", "", 2811, ""}},
	}
	for _, tt := range tests {
		if got := NewEndpoint(tt.scheme, tt.host, tt.port); got != tt.want {
			t.Errorf("NewEndpoint(%q, %q, %d) = %+v, want %+v", tt.scheme, tt.host, tt.port, got, tt.want)
		}
	}
}
