package bench

import (
	"math"
	"time"
)

// The constants of the throughput bounds of a WAN cell.
const (
	// mtu and mss are the packet size on the emulated link and the TCP
	// payload of a full packet (20 bytes IP, 20 TCP, 12 of timestamps);
	// framing is what Ethernet adds to a packet (header, FCS, preamble,
	// gap), which the link's rate counts.
	mtu     = 1500
	mss     = 1448
	framing = 38

	// mathisC is the constant of the Mathis et al. bound
	// MSS/RTT × C/√p, sqrt(3/2) for periodic loss with delayed ACKs off.
	mathisC = 1.22

	// explicitWindowFactor is this kernel's send window per byte asked
	// for with SO_RCVBUF (-tcp-bs): the kernel doubles the request and
	// leaves about a third for overhead (measured: /work/shared/wan.md).
	explicitWindowFactor = 1.32
	// autotuneWindowFactor is the send window per byte of tcp_rmem's
	// maximum when the buffer is autotuned (measured likewise).
	autotuneWindowFactor = 0.66

	// minRcvBuf is the smallest SO_RCVBUF Linux keeps (SOCK_MIN_RCVBUF
	// halved: the kernel doubles requests); smaller requests get this.
	minRcvBuf = 1152

	// idleOverhead is what the emulator adds to the configured round trip
	// when idle (two TUN crossings each way); used when no measured idle
	// RTT is at hand.
	idleOverhead = 340 * time.Microsecond
)

// The limits a cell can hit, in the Limit field of Theory.
const (
	LimitLink   = "link"   // the link's rate
	LimitWindow = "window" // the TCP windows: p × W / RTT
	LimitLoss   = "loss"   // the Mathis bound: p × MSS/RTT × C/√loss
)

// TheoryInput is what the bounds of one cell depend on.
type TheoryInput struct {
	P    int           // TCP connections
	RTT  time.Duration // round-trip time the connections see
	Loss float64       // packet loss in percent, on the data direction
	Rate int64         // link rate in bit/s, as Ethernet counts it

	// Buffer is the SO_RCVBUF asked for (-tcp-bs) after the harness's
	// clamp, 0 when autotuned; BufferMax is net.core.rmem_max, which
	// caps it in the kernel.
	Buffer, BufferMax int64
	// RmemMax is the receiver's tcp_rmem maximum, the autotuning limit.
	RmemMax int64
}

// Theory is the throughput a cell's parameters allow, in Mbit/s (10^6).
type Theory struct {
	// Link is the goodput of a saturated link: Rate × MSS/(MTU+framing).
	Link float64
	// Window is p × W / RTT with W this kernel's send window:
	// explicitWindowFactor × the effective SO_RCVBUF, or
	// autotuneWindowFactor × tcp_rmem max when autotuned.
	Window float64
	// Textbook is p × B / RTT with B the buffer asked for, or tcp_rmem max
	// when autotuned: the bound the papers' formulas give.
	Textbook float64
	// Mathis is p × MSS/RTT × C/√loss; +Inf without loss.
	Mathis float64
	// Bound is the least of Link, Window and Mathis, and Limit names it.
	Bound float64
	Limit string
}

// EffectiveBuffer returns the SO_RCVBUF the kernel grants a request of
// b bytes under a maximum of max (0: no maximum).
func EffectiveBuffer(b, max int64) int64 {
	if max > 0 && b > max {
		b = max
	}
	return b
}

// Bounds computes the theoretical limits of in.
func Bounds(in TheoryInput) Theory {
	p := float64(max(in.P, 1))
	rtt := in.RTT.Seconds()
	if rtt <= 0 {
		rtt = idleOverhead.Seconds()
	}
	t := Theory{Link: float64(in.Rate) * mss / (mtu + framing) / 1e6, Mathis: math.Inf(1)}
	var w, textbook float64
	if in.Buffer > 0 {
		b := float64(max(EffectiveBuffer(in.Buffer, in.BufferMax), minRcvBuf))
		w, textbook = explicitWindowFactor*b, b
	} else {
		w, textbook = autotuneWindowFactor*float64(in.RmemMax), float64(in.RmemMax)
	}
	t.Window = p * w * 8 / rtt / 1e6
	t.Textbook = p * textbook * 8 / rtt / 1e6
	if in.Loss > 0 {
		t.Mathis = p * mss * 8 / rtt * mathisC / math.Sqrt(in.Loss/100) / 1e6
	}
	t.Bound, t.Limit = t.Link, LimitLink
	if t.Window < t.Bound {
		t.Bound, t.Limit = t.Window, LimitWindow
	}
	if t.Mathis < t.Bound {
		t.Bound, t.Limit = t.Mathis, LimitLoss
	}
	return t
}
