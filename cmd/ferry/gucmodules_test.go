package main

import (
	"slices"
	"strings"
	"testing"
)

// TestGUCModuleOptions: globus-url-copy's module options become ferry cp's
// -src-module and -dst-module as globus-url-copy applies them (checked
// on the wire against GCT 10.12): -mn/-mp set both sides, -smn/-smp and
// -dmn/-dmp one, the last option given wins, parameters alone do
// nothing, and a side that is a local file gets no module.
func TestGUCModuleOptions(t *testing.T) {
	const srv, loc = "ftp://h/f", "file:///tmp/f"
	for _, tc := range []struct {
		args []string
		want []string // the module flags of the ferry cp arguments
	}{
		{[]string{"-smn", "gzip", "-smp", "9", srv, loc}, []string{"-src-module", "gzip=9"}},
		{[]string{"-src-module-name", "gzip", srv, loc}, []string{"-src-module", "gzip"}},
		{[]string{"-dmn", "tar", "-dst-module-parameters", "x", loc, srv}, []string{"-dst-module", "tar=x"}},
		{[]string{"-mn", "gzip", "-smn", "zstd", srv, srv}, []string{"-src-module", "zstd", "-dst-module", "gzip"}},
		{[]string{"-smn", "zstd", "-mn", "gzip", srv, srv}, []string{"-src-module", "gzip", "-dst-module", "gzip"}},
		{[]string{"-smn", "gzip", "-smp", "3", "-mp", "5", srv, loc}, []string{"-src-module", "gzip=5"}},
		{[]string{"-mn", "gzip", srv, loc}, []string{"-src-module", "gzip"}},
		{[]string{"-mn", "gzip", loc, srv}, []string{"-dst-module", "gzip"}},
		{[]string{"-smp", "3", srv, loc}, nil},
		{[]string{"-smn", "gzip", loc, srv}, nil},
	} {
		c, err := parseGUC(tc.args)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		args, err := c.cpArgs(func(string) string { return "" })
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		var got []string
		for i, a := range args {
			if strings.HasSuffix(a, "-module") && i+1 < len(args) {
				got = append(got, a, args[i+1])
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: ferry cp module flags %q, want %q", tc.args, got, tc.want)
		}
	}
}
