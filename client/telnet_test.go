package client_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNameWithIAC: a name holding the byte 0xFF (Telnet's IAC, doubled
// on the control connection) reaches the server whole: the directory
// made has exactly that name.
func TestNameWithIAC(t *testing.T) {
	f := startFerry(t)
	c := login(t, f.addr, nil)
	name := "a\xffb\xff\xffc"
	if err := c.Mkdir(testCtx(t), "/"+name); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(f.dir, name)); err != nil || !fi.IsDir() {
		ents, _ := os.ReadDir(f.dir)
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Fatalf("directory %q not made (%v); the server has %q", name, err, got)
	}
}
