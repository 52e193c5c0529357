package pi_test

// A restarted stream upload cut short never replaces the file (found by
// the outside review of 2026-11-27).

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

func (c *ctl) streamStore(cmd string, data []byte) (wire.Reply, []wire.Reply) {
	c.t.Helper()
	r := c.expect("PASV", 227)
	ap, err := wire.ParsePASVReply(r.Text())
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(cmd)
	d, err := net.Dial("tcp", ap.String())
	if err != nil {
		c.t.Fatal(err)
	}
	defer d.Close()
	prelim := c.read()
	if prelim.Class() != 1 {
		return prelim, nil
	}
	d.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.Write(data); err != nil {
		c.t.Fatal(err)
	}
	d.Close()
	return prelim, c.readUntilFinal()
}

func sizeOf(c *ctl, p string) string {
	r := c.do("SIZE " + p)
	return strings.TrimSpace(r.Text())
}

// TestStreamRestartCutShortKeepsFile: a restarted stream-mode STOR
// of an existing file continues the part file of the upload replacing
// it (commit 67d0789). checkStored skips its ALLO check for every
// upload with REST, so when the data connection of the restart ends
// early (a killed third-party source, a dropped connection that closes
// with FIN) the half part file is renamed over the good file: the
// truncated file appears under the final name and the old one is lost.
func TestStreamRestartCutShortKeepsFile(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	old := bytes.Repeat([]byte{'O'}, 100)
	c.expect("ALLO 100", 200)
	if _, rest := c.streamStore("STOR /x", old); rest[len(rest)-1].Code != 226 {
		t.Fatalf("first upload: %v", rest)
	}
	nu := bytes.Repeat([]byte{'N'}, 100)
	// An upload replacing /x is cut short after 10 bytes: refused (426),
	// the part file keeps them, /x is intact. So far so good.
	c.expect("ALLO 100", 200)
	_, rest := c.streamStore("STOR /x", nu[:10])
	if rest[len(rest)-1].Class() == 2 {
		t.Fatalf("a cut-short upload was taken for whole: %v", rest)
	}
	if s := sizeOf(c, "/x"); s != "100" {
		t.Fatalf("SIZE /x after the cut-short upload: %s", s)
	}
	// The restart (REST 10, same ALLO) is cut short too, after 20 bytes.
	c.expect("ALLO 100", 200)
	c.expect("REST 10", 350)
	_, rest = c.streamStore("STOR /x", nu[10:30])
	final := rest[len(rest)-1]
	if s := sizeOf(c, "/x"); final.Class() == 2 || s != "100" {
		t.Errorf("a restarted upload cut short at 30 of the 100 bytes announced: %d %q, and SIZE /x is now %s (the old 100-byte file is gone)", final.Code, final.Text(), s)
	}
}
