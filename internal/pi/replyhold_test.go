package pi

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// writesConn records each Write; it fails them once fail is set.
type writesConn struct {
	net.Conn
	writes []string
	fail   error
}

func (c *writesConn) Write(b []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, string(b))
	return len(b), nil
}
func (c *writesConn) SetWriteDeadline(time.Time) error { return nil }
func (c *writesConn) Close() error                     { return nil }

// TestReplyWriterHold: held replies go out, in order, in one write with
// the next reply not held, or at flush; nothing held is written early.
func TestReplyWriterHold(t *testing.T) {
	c := &writesConn{}
	w := replyWriter{conn: c}
	r := func(code int, text string) wire.Reply { return wire.Reply{Code: code, Lines: []string{text}} }
	for _, step := range []struct {
		code int
		hold bool
	}{{226, true}, {200, true}, {125, false}, {112, true}, {226, true}} {
		if err := w.write(r(step.code, "x"), step.hold); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"226 x\r\n200 x\r\n125 x\r\n"}; strings.Join(c.writes, "|") != strings.Join(want, "|") {
		t.Fatalf("writes %q, want %q", c.writes, want)
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.flush(); err != nil { // nothing held: no write
		t.Fatal(err)
	}
	if want := []string{"226 x\r\n200 x\r\n125 x\r\n", "112 x\r\n226 x\r\n"}; strings.Join(c.writes, "|") != strings.Join(want, "|") {
		t.Fatalf("writes %q, want %q", c.writes, want)
	}
	// A new connection (AUTH TLS) gets nothing held for the old one.
	w.write(r(234, "x"), true)
	c2 := &writesConn{}
	w.setConn(c2)
	if len(c.writes) != 3 || c.writes[2] != "234 x\r\n" || len(c2.writes) != 0 {
		t.Errorf("after setConn: old %q, new %q", c.writes, c2.writes)
	}
	// Write errors stay sticky, held or not.
	boom := errors.New("boom")
	c2.fail = boom
	w.write(r(200, "x"), true)
	if err := w.flush(); !errors.Is(err, boom) {
		t.Errorf("flush: %v, want %v", err, boom)
	}
	if err := w.write(r(200, "x"), true); !errors.Is(err, boom) {
		t.Errorf("held write after an error: %v", err)
	}
}

// TestHoldableNeverWaitForClient: the commands whose replies may be held
// do not include any that hands the client what it needs to go on (data
// addresses, security exchanges, login, QUIT).
func TestHoldableNeverWaitForClient(t *testing.T) {
	for _, verb := range []string{"PASV", "EPSV", "SPAS", "PORT", "EPRT", "SPOR", "AUTH", "ADAT", "USER", "PASS", "QUIT", "ABOR", "PBSZ", "PROT", "DCAU", "FEAT", "LIST", "NLST", "MLSD", "STAT"} {
		if holdable[verb] {
			t.Errorf("%s is holdable", verb)
		}
	}
	for verb := range holdable {
		if _, known := commandTable[verb]; !known {
			t.Errorf("holdable %s is no command", verb)
		}
	}
}
