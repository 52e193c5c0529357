package dtp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/netopt"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// watchStall cancels a transfer whose connections move no byte for stall:
// a peer that stops sending or reading gets a clear error, never a hang.
// Progress is read from the kernel's TCP counters, so zero-copy paths count.
// conns is called at each check (connections may join). The checks run on
// a timer, not a goroutine of their own: most transfers of a batch of small
// files end before the first check. After the returned stop function has
// returned, no check runs and cancel is not called.
func watchStall(ctx context.Context, cancel context.CancelCauseFunc, stall time.Duration, conns func() []net.Conn) (stop func()) {
	if stall <= 0 {
		return func() {}
	}
	every := max(stall/8, 10*time.Millisecond)
	var (
		mu       sync.Mutex
		stopped  bool // guarded by mu
		last     uint64
		lastMove = time.Now()
		t        *time.Timer
	)
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped || ctx.Err() != nil {
			return
		}
		var moved uint64
		for _, c := range conns() {
			n, _ := netopt.Moved(dcsec.NetConn(c)) // TLS: the socket's counters
			moved += n
		}
		now := time.Now()
		if moved != last {
			last, lastMove = moved, now
		} else if now.Sub(lastMove) >= stall {
			cancel(&xfer.DataError{Err: fmt.Errorf("no data moved for %v", stall)})
			return
		}
		t.Reset(every)
	}
	mu.Lock()
	t = time.AfterFunc(every, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
