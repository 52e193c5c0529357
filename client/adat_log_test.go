package client_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
)

// TestADATNotLogged: the client's debug log shows neither the ADAT token
// it sends (a Kerberos AP-REQ with its ticket, a GSI handshake message)
// nor the one the server answers with, as it hides PASS.
func TestADATNotLogged(t *testing.T) {
	const sent, answered = "Q0xJRU5UVElDS0VU", "U0VSVkVSVE9LRU4="
	cli, srv := net.Pipe()
	defer srv.Close()
	go func() {
		io.WriteString(srv, "220 ready\r\n")
		r := bufio.NewReader(srv)
		if _, err := r.ReadString('\n'); err != nil {
			return
		}
		io.WriteString(srv, "335 ADAT="+answered+"\r\n")
		r.ReadString('\n')
	}()
	var log syncbuf.Buffer
	c, err := client.NewConn(testCtx(t), cli, &client.Config{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Do(testCtx(t), "ADAT %s", sent)
	if err != nil || r.Code != 335 {
		t.Fatalf("ADAT: %v %v", r, err)
	}
	out := log.String()
	if !strings.Contains(out, "ADAT ****") {
		t.Errorf("the log does not show the ADAT command:\n%s", out)
	}
	for _, tok := range []string{sent, answered} {
		if strings.Contains(out, tok) {
			t.Errorf("the debug log holds the token %s:\n%s", tok, out)
		}
	}
}
