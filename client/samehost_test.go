package client_test

import (
	"net"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/server"
)

// TestSameHost: a server reached over loopback is on this host.
func TestSameHost(t *testing.T) {
	addr := ftpserver.Start(t, server.Config{Storage: memory.New(), Anonymous: true})
	_, port, _ := net.SplitHostPort(addr)
	for _, h := range []string{"127.0.0.1"} {
		c, err := client.Dial(t.Context(), net.JoinHostPort(h, port), nil)
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if !c.SameHost() {
			t.Errorf("a server at %s is not on this host?", h)
		}
		c.Close()
	}
}
