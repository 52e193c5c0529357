package pi_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestSiteXFERSTATS: SITE XFERSTATS needs a login, answers 550 before
// the session's first transfer, then reports that transfer's bytes and
// its data connection, and never another session's.
func TestSiteXFERSTATS(t *testing.T) {
	srv := serve(t, config(seed(t)))
	c := dial(t, srv)
	c.expect("SITE XFERSTATS", 530)
	c.login()
	if r := c.expect("SITE HELP", 214); !strings.Contains(strings.Join(r.Lines, "\n"), "SITE XFERSTATS") {
		t.Errorf("SITE HELP does not list XFERSTATS: %q", r.Lines)
	}
	c.expect("SITE XFERSTATS", 550)
	c.expect("SITE XFERSTATS now", 501)
	data := bytes.Repeat([]byte("xferstats "), 100_000)
	if r := c.stor("STOR", "/f", data); r.Code != 226 {
		t.Fatalf("STOR: %v", r)
	}
	if got, r := c.retr("/f"); r.Code != 226 || !bytes.Equal(got, data) {
		t.Fatalf("RETR: %v", r)
	}
	r := c.expect("SITE XFERSTATS", 200)
	facts := r.Lines[0]
	if !strings.HasPrefix(facts, "Bytes=1000000;Elapsed=") || !strings.Contains(facts, ";Streams=1;") {
		t.Errorf("facts %q", facts)
	}
	if runtime.GOOS == "linux" && !strings.Contains(facts, ";Measured=1;") {
		t.Errorf("facts %q: the data connection was not measured", facts)
	}
	other := dial(t, srv)
	other.login()
	other.expect("SITE XFERSTATS", 550)
}
