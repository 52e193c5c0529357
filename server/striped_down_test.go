package server_test

import (
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/server"
)

// TestStripedAllMoversDownPassive: PASV and EPSV on a striped server whose
// movers are all down say which movers are down, as SPAS and MODE E do.
func TestStripedAllMoversDownPassive(t *testing.T) {
	const mover = "127.0.0.1:1" // nothing listens there
	_, addr, _ := start(t, server.Config{
		Storage: memory.New(), Anonymous: true,
		Movers: []string{mover}, MoverSecret: []byte("0123456789abcdef0123456789abcdef"),
	})
	c := dial(t, addr)
	c.read()
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	for _, cmd := range []string{"PASV", "EPSV"} {
		c.send(cmd)
		r := c.read()
		if text := strings.Join(r.Lines, " "); r.Code != 425 || !strings.Contains(text, mover) {
			t.Errorf("%s with every mover down: %d %s; want 425 naming %s", cmd, r.Code, text, mover)
		}
	}
}
