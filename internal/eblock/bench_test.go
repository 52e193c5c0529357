package eblock

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// sink is a dsi.Writer that keeps nothing: the benchmarks measure the
// protocol's cost, not the copy into a file.
type sink struct{}

func (sink) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (sink) Close() error                           { return nil }

// benchTransfers moves one size-byte file per iteration over the same
// cached loopback connections, as a batch of files does.
func benchTransfers(b *testing.B, size, conns, bs int) {
	s, r := pairs(b, conns)
	src := bytes.NewReader(random(size, 9))
	ranges := []xfer.Range{{Start: 0, End: int64(size)}}
	ctx := context.Background()
	errc := make(chan error, 1)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		rcv := NewReceiver(sink{}, ReceiveConfig{Limit: -1})
		for _, c := range r {
			rcv.Add(c)
		}
		go func() {
			_, err := Send(ctx, s, src, ranges, SendConfig{BlockSize: bs})
			errc <- err
		}()
		if _, err := rcv.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far: on a busy
// machine a steadier measure than the wall time per operation.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSmallFile is the small-files case: one 16 KiB block per file.
func BenchmarkSmallFile(b *testing.B) {
	b.Run("p1", func(b *testing.B) { benchTransfers(b, 16<<10, 1, 0) })
	b.Run("p4", func(b *testing.B) { benchTransfers(b, 16<<10, 4, 0) })
}

// BenchmarkLargeFile moves 64 MiB in 1 MiB blocks through the copy paths.
func BenchmarkLargeFile(b *testing.B) {
	b.Run("p1", func(b *testing.B) { benchTransfers(b, 64<<20, 1, 0) })
	b.Run("p4", func(b *testing.B) { benchTransfers(b, 64<<20, 4, 0) })
}
