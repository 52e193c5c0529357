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
// conns is called at each check (connections may join). The returned stop
// function waits for the watchdog to end.
func watchStall(ctx context.Context, cancel context.CancelCauseFunc, stall time.Duration, conns func() []net.Conn) (stop func()) {
	if stall <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(max(stall/8, 10*time.Millisecond))
		defer tick.Stop()
		var last uint64
		lastMove := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				var moved uint64
				for _, c := range conns() {
					n, _ := netopt.Moved(dcsec.NetConn(c)) // TLS: the socket's counters
					moved += n
				}
				if moved != last {
					last, lastMove = moved, now
				} else if now.Sub(lastMove) >= stall {
					cancel(&xfer.DataError{Err: fmt.Errorf("no data moved for %v", stall)})
					return
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
