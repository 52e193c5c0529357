package stripe_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestMoverRestartedAfterSPAS: a mover that restarts between SPAS and the
// transfer has lost its listener. The transfer fails with an error reply
// (never a panic that ends the session), and the session goes on: a new
// SPAS offers both movers again.
func TestMoverRestartedAfterSPAS(t *testing.T) {
	c := startCluster(t, 2)
	c.waitUp(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := c.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, cmd := range []string{"TYPE I", "MODE E"} {
		if r, err := conn.Do(ctx, "%s", cmd); err != nil || r.Code != 200 {
			t.Fatalf("%s: %v %v", cmd, r, err)
		}
	}
	if r, err := conn.Do(ctx, "SPAS"); err != nil || r.Code != 229 || len(r.Lines) != 4 {
		t.Fatalf("SPAS: %v %v", r, err)
	}

	// Mover 0 crashes and comes back at its address: the session's link to
	// it is dead, and so is the listener SPAS announced.
	m0 := c.movers[0]
	m0.kill()
	c.waitUp(t, 1)
	c.movers[0] = startMover(t, m0.addr, m0.m.Storage, secret)
	c.waitUp(t, 2)

	r, err := conn.Do(ctx, "STOR /after-restart")
	for err == nil && r.Code < 200 {
		r, err = conn.ReadReply(ctx)
	}
	if err != nil {
		t.Fatalf("STOR after the mover restarted: %v", err)
	}
	if r.Code < 400 || r.Code == 421 || !strings.Contains(r.Text(), m0.addr) || !strings.Contains(r.Text(), "SPAS again") {
		t.Fatalf("STOR after the mover restarted: %v, want a transfer failure and the session kept", r)
	}
	if r, err := conn.Do(ctx, "SPAS"); err != nil || r.Code != 229 || len(r.Lines) != 4 {
		t.Fatalf("SPAS after the failure: %v %v", r, err)
	}
}
