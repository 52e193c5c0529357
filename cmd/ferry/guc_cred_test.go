package main

import (
	"strings"
	"testing"
)

// TestGUCCredentialStaysOnItsSide: globus-url-copy's -sc/-dc (and
// -ss/-ds) belong to one side; Ferry's client has one credential for
// every session of a run, so a per-side value that would reach the other
// side's server is refused (found by the outside review: -dc FILE became
// -cert FILE, shown and delegated to the source too). A per-side value
// whose other side does not authenticate is that run's value.
func TestGUCCredentialStaysOnItsSide(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		refused bool
		cert    string
	}{
		{[]string{"-dc", "/tmp/dst.pem", "gsiftp://src.example/a", "gsiftp://dst.example/b"}, true, ""},
		{[]string{"-sc", "/tmp/src.pem", "gsiftp://src.example/a", "gsiftp://dst.example/b"}, true, ""},
		{[]string{"-cred", "/tmp/mine.pem", "-dc", "/tmp/dst.pem", "gsiftp://src.example/a", "gsiftp://dst.example/b"}, true, ""},
		{[]string{"-dc", "/tmp/dst.pem", "-f", "/tmp/list"}, true, ""},
		{[]string{"-sc", "/tmp/x.pem", "-dc", "/tmp/x.pem", "gsiftp://src.example/a", "gsiftp://dst.example/b"}, false, "/tmp/x.pem"},
		{[]string{"-cred", "/tmp/mine.pem", "gsiftp://src.example/a", "gsiftp://dst.example/b"}, false, "/tmp/mine.pem"},
		{[]string{"-dc", "/tmp/dst.pem", "ftp://src.example/a", "gsiftp://dst.example/b"}, false, "/tmp/dst.pem"},
		{[]string{"-dc", "/tmp/dst.pem", "gsiftp://src.example/a", "file:///tmp/b"}, false, ""},
		{[]string{"-ds", "/CN=dst", "gsiftp://src.example/a", "gsiftp://dst.example/b"}, true, ""},
	} {
		c, err := parseGUC(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		cp, err := c.cpArgs(func(string) string { return "" })
		if tc.refused {
			if err == nil || !strings.Contains(err.Error(), "other side") {
				t.Errorf("%q: %q, %v; want refused", tc.args, cp, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: refused: %v", tc.args, err)
			continue
		}
		f, _, err := parseCpJobArgs(t, cp)
		if err != nil {
			t.Fatalf("%q: %v", cp, err)
		}
		if f.gsi.cert != tc.cert {
			t.Errorf("%q: -cert %q, want %q", tc.args, f.gsi.cert, tc.cert)
		}
	}
}
