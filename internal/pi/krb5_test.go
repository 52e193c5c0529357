package pi

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// TestKerberosReplyWrapFailureEndsSession: a reply the security context
// cannot wrap closes the control connection (the client sees it end)
// instead of being dropped while the session goes on without replies.
func TestKerberosReplyWrapFailureEndsSession(t *testing.T) {
	srv, cli := net.Pipe()
	defer cli.Close()
	rw := replyWriter{conn: srv}
	rw.setWrap(func([]byte) ([]byte, error) { return nil, errors.New("bad key") })
	if err := rw.write(wire.Reply{Code: 230, Lines: []string{"ok"}}, false); !errors.Is(err, errReplyWrap) {
		t.Fatalf("write: %v, want errReplyWrap", err)
	}
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := cli.Read(make([]byte, 64)); !errors.Is(err, io.EOF) {
		t.Fatalf("client read %d bytes, %v: want the connection closed", n, err)
	}
	if err := rw.write(wire.Reply{Code: 200, Lines: []string{"ok"}}, false); !errors.Is(err, errReplyWrap) {
		t.Fatalf("second write: %v, want the sticky errReplyWrap", err)
	}
}
