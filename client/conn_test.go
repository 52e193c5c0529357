package client

import (
	"net/netip"
	"testing"
)

func TestPASVHost(t *testing.T) {
	for _, tc := range []struct{ announced, peer, want string }{
		{"0.0.0.0", "192.0.2.7", "192.0.2.7"},
		{"10.1.2.3", "192.0.2.7", "192.0.2.7"},        // internal address behind NAT
		{"127.0.0.1", "192.0.2.7", "192.0.2.7"},       // loopback from a public server
		{"10.1.2.3", "10.9.9.9", "10.1.2.3"},          // both internal: trust the server
		{"198.51.100.1", "192.0.2.7", "198.51.100.1"}, // a public data node
		{"127.0.0.1", "127.0.0.1", "127.0.0.1"},
	} {
		got := pasvHost(netip.MustParseAddr(tc.announced), netip.MustParseAddr(tc.peer))
		if got.String() != tc.want {
			t.Errorf("pasvHost(%s, %s) = %v, want %s", tc.announced, tc.peer, got, tc.want)
		}
	}
}

func TestParsePWD(t *testing.T) {
	for _, tc := range []struct {
		r    Reply
		want string
		ok   bool
	}{
		{Reply{Code: 257, Lines: []string{`"/home/x" is current directory.`}}, "/home/x", true},
		{Reply{Code: 257, Lines: []string{`"/a ""quoted"" dir" is current directory.`}}, `/a "quoted" dir`, true},
		{Reply{Code: 257, Lines: []string{`"/" `}}, "/", true},
		{Reply{Code: 257, Lines: []string{`no quotes`}}, "", false},
		{Reply{Code: 257, Lines: []string{`"`}}, "", false},
		{Reply{Code: 250, Lines: []string{`"/x"`}}, "", false},
	} {
		got, err := parsePWD(tc.r)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parsePWD(%v) = %q, %v", tc.r, got, err)
		}
	}
}

func TestVerb(t *testing.T) {
	for in, want := range map[string]string{
		"RETR /x":                  "RETR",
		"NOOP":                     "NOOP",
		"SITE CHMOD 0644 /x":       "SITE CHMOD",
		"SITE CLIENTINFO appname=": "SITE CLIENTINFO",
	} {
		if got := verb(in); got != want {
			t.Errorf("verb(%q) = %q, want %q", in, got, want)
		}
	}
}
