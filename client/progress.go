package client

import (
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// Range is a half-open byte range [Start, End) of a file.
type Range = xfer.Range

// RangeSet is a set of byte ranges, as REST and 111 range markers carry
// them ("0-100,200-300"). The zero value is empty.
type RangeSet = xfer.RangeSet

// ParseRangeList parses a range list in REST form: "n" (0-n) or
// "a-b,c-d,…" with half-open ranges.
func ParseRangeList(s string) (RangeSet, error) { return xfer.ParseRangeList(s) }

// DefaultProgressInterval is the period of progress callbacks when the
// options leave it zero.
const DefaultProgressInterval = time.Second

// Progress is a snapshot of a running transfer.
type Progress struct {
	// Streams holds the bytes moved so far on each data connection of the
	// current attempt, in the order the connections joined: one in stream
	// mode, up to the parallelism in MODE E.
	Streams []int64

	// Bytes is the number of bytes moved so far by the call, over every
	// attempt when a Session retried.
	Bytes int64

	// Attempt counts the retries of a Session: 0 for the first attempt.
	Attempt int

	// Conns holds, in the order of Streams, what the kernel reports of each
	// data connection of the current attempt (Linux TCP_INFO); empty where
	// unknown (another OS, a TLS-wrapped or non-TCP connection whose socket
	// is unreachable, a third-party transfer, whose data connections are
	// the servers'). When some connections are known and others not, it
	// has an entry for every stream and the unknown ones hold only Bytes.
	Conns []ConnStats
}

// ConnStats is the kernel's view of one data connection (Linux TCP_INFO,
// SO_SNDBUF and SO_RCVBUF), read when a Progress is taken, or just before
// the transfer closed the connection. The kernel's counters run from the
// connection's start, which for a MODE E connection kept from the
// previous transfer (Reuse) lies before this one. A field the kernel does
// not have is zero.
type ConnStats struct {
	Bytes        int64         // bytes moved on this connection (same as Streams[i])
	RTT          time.Duration // smoothed RTT (tcpi_rtt)
	MinRTT       time.Duration // tcpi_min_rtt where the kernel has it, else 0
	RcvRTT       time.Duration // the receiver's round-trip estimate, queueing included (tcpi_rcv_rtt), else 0
	Retransmits  int64         // segments this end retransmitted (tcpi_total_retrans)
	SegsOut      int64         // segments sent (tcpi_segs_out)
	SegsIn       int64         // segments received (tcpi_segs_in)
	ReorderSeen  int64         // reordering events this end saw (tcpi_reord_seen) where the kernel has it, else 0
	RcvOOO       int64         // segments received out of order (tcpi_rcv_ooopack) where the kernel has it, else 0
	Cwnd         int           // congestion window, segments (tcpi_snd_cwnd)
	MSS          int           // sending maximum segment size (tcpi_snd_mss)
	DeliveryRate float64       // tcpi_delivery_rate, bytes per second (sender side)

	SndBuf, RcvBuf int // SO_SNDBUF / SO_RCVBUF the socket ended with, bytes

	// The sending side's chrono statistics, from the connection's start
	// (zero where this end only received, or the kernel lacks them):
	// Busy is the time there was data to send (tcpi_busy_time), which
	// includes the time spent waiting for the receiver's window
	// (RwndLimited) or for send-buffer space (SndbufLimited).
	Busy, RwndLimited, SndbufLimited time.Duration
}

// meter calls a function periodically from its own goroutine until
// stopped.
type meter struct {
	done chan struct{}
	wg   sync.WaitGroup
	last func()
}

// startTicker calls f every interval (zero: DefaultProgressInterval) and
// once more from stop, which waits for the goroutine.
func startTicker(interval time.Duration, f func()) *meter {
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	m := &meter{done: make(chan struct{}), last: f}
	m.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.done:
				return
			case <-t.C:
				f()
			}
		}
	})
	return m
}

// startMeter reports snapshot() to fn periodically; a nil fn starts
// nothing.
func startMeter(fn func(Progress), interval time.Duration, snapshot func() Progress) *meter {
	if fn == nil {
		return nil
	}
	return startTicker(interval, func() { fn(snapshot()) })
}

// stop ends the periodic calls and makes the last one. A nil meter is a
// no-op.
func (m *meter) stop() {
	if m == nil {
		return
	}
	close(m.done)
	m.wg.Wait()
	m.last()
}
