package wan

import (
	"fmt"
	"io"
	"time"
)

// Fidelity is how closely the link has followed its Config: the numbers a
// benchmark reports beside its results to show the emulation was sound.
type Fidelity struct {
	IdleRTT      time.Duration // minimum of 7 ICMP echo round trips at Start, before any traffic
	Packets      [2]uint64     // segments forwarded, by Dir (ToClient, ToServer)
	LossDrops    [2]uint64     // segments dropped on purpose, by Dir
	QueueDrops   uint64        // packets lost because the forwarder did not keep up (its ring, or the TUN's queue)
	LossMeasured [2]float64    // LossDrops / (Packets + LossDrops) in the lossy directions, else 0

	// Release time minus due time over all forwarded segments: p50, p99
	// (to the microsecond) and the maximum.
	DelayErrP50, DelayErrP99, DelayErrMax time.Duration

	CPU  time.Duration // CPU time of the forwarder's threads, kernel work in their syscalls included
	Wall time.Duration // since the link became ready

	Bytes       [2]uint64 // IP bytes forwarded, by Dir, as the segments on a wire would count them
	WriteErrors uint64    // segments the receiving TUN refused
	RealTime    bool      // every forwarder thread runs at SCHED_FIFO priority

	// Compensation is what Config.Calibrate took off each direction's
	// delay; IdleRTT was measured after it.
	Compensation time.Duration
}

// Throughput is the average rate forwarded in direction d over Wall, in
// bit/s of IP bytes.
func (f Fidelity) Throughput(d Dir) float64 {
	if f.Wall <= 0 {
		return 0
	}
	return float64(f.Bytes[d]) * 8 / f.Wall.Seconds()
}

// WriteReport writes f as a short human-readable report against the
// settings in cfg.
func WriteReport(w io.Writer, cfg Config, f Fidelity) error {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	rate := "unlimited"
	if cfg.Rate > 0 {
		rate = fmt.Sprintf("%.0f Mbit/s", float64(cfg.Rate)/1e6)
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("idle RTT      %s (setting %s, %+.3f ms", ms(f.IdleRTT), ms(2*cfg.Delay), float64(f.IdleRTT-2*cfg.Delay)/1e6)
	if cfg.Calibrate {
		p("; calibrated: %s less delay each way", us(f.Compensation))
	}
	p(")\n")
	for _, d := range []Dir{ToClient, ToServer} {
		setting := 0.0
		if cfg.lossy(d) {
			setting = cfg.Loss
		}
		p("%-13s %d segments, %.1f MB, %.1f Mbit/s average; loss %.3f %% (%d dropped, setting %.3f %%)\n",
			d.String(), f.Packets[d], float64(f.Bytes[d])/1e6, f.Throughput(d)/1e6,
			100*f.LossMeasured[d], f.LossDrops[d], 100*setting)
	}
	p("delay error   p50 %s, p99 %s, max %s\n", us(f.DelayErrP50), us(f.DelayErrP99), ms(f.DelayErrMax))
	cpu := 0.0
	if f.Wall > 0 {
		cpu = 100 * f.CPU.Seconds() / f.Wall.Seconds()
	}
	p("forwarder     %d queue drops, %d write errors; CPU %.2f s over %.2f s (%.0f %% of a core); real-time %v; rate limit %s\n",
		f.QueueDrops, f.WriteErrors, f.CPU.Seconds(), f.Wall.Seconds(), cpu, f.RealTime, rate)
	return nil
}
