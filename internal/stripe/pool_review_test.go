package stripe

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
)

// TestPoolCloseLogsNoMoverDown: closing the pool (server shutdown) is not
// a mover going down; only a mover that really fails is logged as down.
func TestPoolCloseLogsNoMoverDown(t *testing.T) {
	addr := serveMover(t, &Mover{Storage: memory.New(), Secret: testSecret, Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 2 * time.Second})
	var logs syncbuf.Buffer
	p, err := NewPool(PoolConfig{Movers: []string{addr}, Secret: testSecret,
		Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	waitPoolUp(t, p, 1)
	p.Close()
	if s := logs.String(); strings.Contains(s, "mover down") {
		t.Fatalf("pool close logged a mover down:\n%s", s)
	}
}
