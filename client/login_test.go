package client_test

import (
	"log/slog"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// TestLoginPipelined: after USER and PASS, Login sends FEAT, SITE
// CLIENTINFO and TYPE I without waiting for each reply, and still reads
// every reply in order (the features, a working binary session), against
// Ferry's server and GCT's.
func TestLoginPipelined(t *testing.T) {
	for _, srv := range []struct {
		name string
		peer func(t *testing.T) peer
	}{{"ferry", ferryPeer}, {"gct", gctPeer}} {
		t.Run(srv.name, func(t *testing.T) {
			p := srv.peer(t)
			fl := &flight{}
			c := login(t, p.addr, &client.Config{Logger: slog.New(fl)})
			cmds, most := fl.take()
			if len(cmds) != 5 || cmds[2] != "FEAT" || cmds[4] != "TYPE I" {
				t.Errorf("login sent %q", cmds)
			}
			// flight counted the greeting as a reply, so the three
			// commands in flight show as two (one at a time: zero).
			if most != 2 {
				t.Errorf("%d commands in flight at most, want 2", most)
			}
			if _, ok := c.Features()["MLST"]; !ok {
				t.Errorf("features %v lack MLST", c.Features())
			}
			if _, err := c.Size(testCtx(t), p.remote("nothing-here")); err == nil {
				t.Error("SIZE of a missing file succeeded")
			}
			if r, err := c.Do(testCtx(t), "NOOP"); err != nil || r.Code != 200 {
				t.Errorf("NOOP after login: %v %v", r, err)
			}
		})
	}
}
