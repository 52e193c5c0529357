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
