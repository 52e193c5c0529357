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

// WatchStall is the stall watchdog of every transfer, on either side of
// the data channel: it calls stalled once moved has returned the same
// value for stall, so that a peer that stops sending or reading gets a
// clear error, never a hang. moved is any counter that grows while the
// transfer makes progress (ConnsMoved for the kernel's byte counters; a
// client batch counts blocks, replies and files). The checks run every
// stall/8 (at least 10ms) on a timer, not a goroutine of their own: most
// transfers of a batch of small files end before the first check. A
// stall of 0 or less watches nothing. Once ctx is done no check calls
// stalled; after the returned stop function has returned, none runs.
func WatchStall(ctx context.Context, stall time.Duration, moved func() uint64, stalled func()) (stop func()) {
	if stall <= 0 {
		return func() {}
	}
	every := max(stall/8, 10*time.Millisecond)
	var (
		mu       sync.Mutex
		stopped  bool   // guarded by mu
		last     uint64 // counters start at 0; no work before the first check
		lastMove = time.Now()
		t        *time.Timer
	)
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped || ctx.Err() != nil {
			return
		}
		now := time.Now()
		if n := moved(); n != last {
			last, lastMove = n, now
		} else if now.Sub(lastMove) >= stall {
			stalled()
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

// ConnsMoved is a WatchStall counter: the bytes the kernel has moved on
// the connections conns returns at each check (connections may join), so
// zero-copy paths count; TLS connections count their sockets' bytes.
func ConnsMoved(conns func() []net.Conn) func() uint64 {
	return func() uint64 {
		var moved uint64
		for _, c := range conns() {
			n, _ := netopt.Moved(dcsec.NetConn(c))
			moved += n
		}
		return moved
	}
}

// watchConns is WatchStall over conns' kernel counters that cancels a
// transfer with a data-channel error.
func watchConns(ctx context.Context, cancel context.CancelCauseFunc, stall time.Duration, conns func() []net.Conn) (stop func()) {
	return WatchStall(ctx, stall, ConnsMoved(conns), func() {
		cancel(&xfer.DataError{Err: fmt.Errorf("no data moved for %v", stall)})
	})
}
