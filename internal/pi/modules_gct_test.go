package pi_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"

	"github.com/ferrygrid/ferry/internal/wire"
)

// TestFEATListsModules: FEAT names the modules the server allows, sorted,
// on a "DPM" line (known ones only, each once), and has no such line when
// it allows none.
func TestFEATListsModules(t *testing.T) {
	for _, tc := range []struct {
		allowed []string
		want    string // "": no DPM line
	}{
		{nil, ""},
		{[]string{"zstd", "gzip", "TAR", "gzip"}, "gzip,tar,zstd"},
		{[]string{"no-such-module"}, ""},
	} {
		c := moduleServer(t, tc.allowed...)
		feats := wire.ParseFeatures(c.expect("FEAT", 211))
		got, found := feats["DPM"]
		if found != (tc.want != "") || got != tc.want {
			t.Errorf("allowed %q: DPM line %q (present %v), want %q", tc.allowed, got, found, tc.want)
		}
		if _, found := feats["ERET"]; !found {
			t.Errorf("allowed %q: FEAT lost its ERET line: %v", tc.allowed, feats)
		}
	}
}

// TestModuleESTOIgnoresALLO: GCT's globus-url-copy -smn gzip -dmn gzip
// between two servers sends the destination ALLO with the source file's
// SIZE, then ESTO with the compressed data, which is longer or shorter;
// the ESTO stores it all the same (the module checks the data's end).
func TestModuleESTOIgnoresALLO(t *testing.T) {
	c := moduleServer(t, "gzip")
	want := []byte("hello module world\n")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(want)
	zw.Close()
	c.expect(fmt.Sprintf("ALLO %d", len(want)), 200)
	if r := c.stor("ESTO", `gzip="" /from-gct`, buf.Bytes()); r.Code != 226 {
		t.Fatalf("ESTO after an ALLO of the source's size: %v", r)
	}
	if got, _ := c.retr("/from-gct"); !bytes.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	// A cut stream is still refused, by the module.
	c.expect(fmt.Sprintf("ALLO %d", buf.Len()), 200)
	if r := c.stor("ESTO", `gzip="" /cut`, buf.Bytes()[:buf.Len()-6]); r.Code != 553 {
		t.Errorf("ESTO of a cut gzip stream: %v, want 553", r)
	}
	if _, r := c.retr("/cut"); r.Class() == 2 {
		t.Errorf("a refused ESTO left /cut")
	}
}
