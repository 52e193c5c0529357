package bench

import (
	"math"
	"testing"
	"time"
)

func TestBounds(t *testing.T) {
	link := 1000 * 1448.0 / 1538 // Mbit/s: 941.48
	for _, tc := range []struct {
		name                            string
		in                              TheoryInput
		window, textbook, mathis, bound float64
		limit                           string
	}{{
		// BBC 5.1, p = 1 at 10 ms: 0.66 × 1 MiB per 20 ms (published 286).
		name:   "autotuned 1 MB, 20 ms",
		in:     TheoryInput{P: 1, RTT: 20 * time.Millisecond, Rate: GigabitRate, RmemMax: 1 << 20},
		window: 0.66 * 1048576 * 8 / 0.02 / 1e6, textbook: 1048576 * 8 / 0.02 / 1e6, mathis: math.Inf(1),
		bound: 276.824, limit: LimitWindow,
	}, {
		// BBC 5.3, 256 KB at 10 ms, p = 4 (published 518).
		name:   "explicit 256 KB × 4, 20 ms",
		in:     TheoryInput{P: 4, RTT: 20 * time.Millisecond, Rate: GigabitRate, Buffer: 256 << 10, BufferMax: 4 << 20, RmemMax: 16 << 20},
		window: 553.648, textbook: 419.430, mathis: math.Inf(1), bound: 553.648, limit: LimitWindow,
	}, {
		name:   "8 MB capped by a 4 MB rmem_max",
		in:     TheoryInput{P: 1, RTT: 100 * time.Millisecond, Rate: GigabitRate, Buffer: 8 << 20, BufferMax: 4 << 20},
		window: 1.32 * 4194304 * 8 / 0.1 / 1e6, textbook: 4194304 * 8 / 0.1 / 1e6, mathis: math.Inf(1),
		bound: 442.905, limit: LimitWindow,
	}, {
		// 1448 × 8 / 10 ms × 1.22 / √0.01 = 14.13 Mbit/s.
		name:   "1 % loss, 10 ms",
		in:     TheoryInput{P: 1, RTT: 10 * time.Millisecond, Loss: 1, Rate: GigabitRate, RmemMax: 4 << 20},
		window: 0.66 * 4194304 * 8 / 0.01 / 1e6, textbook: 4194304 * 8 / 0.01 / 1e6, mathis: 14.13248,
		bound: 14.13248, limit: LimitLoss,
	}, {
		name:   "link-bound",
		in:     TheoryInput{P: 8, RTT: 2 * time.Millisecond, Rate: GigabitRate, RmemMax: 4 << 20},
		window: 8 * 0.66 * 4194304 * 8 / 0.002 / 1e6, textbook: 8 * 4194304 * 8 / 0.002 / 1e6, mathis: math.Inf(1),
		bound: link, limit: LimitLink,
	}, {
		// Linux keeps at least SOCK_MIN_RCVBUF: a 1-byte request is 1152.
		name:   "tiny buffer",
		in:     TheoryInput{P: 2, RTT: 80 * time.Millisecond, Rate: 1_600_000, Buffer: 1},
		window: 2 * 1.32 * 1152 * 8 / 0.08 / 1e6, textbook: 2 * 1152 * 8 / 0.08 / 1e6, mathis: math.Inf(1),
		bound: 0.304128, limit: LimitWindow,
	}} {
		got := Bounds(tc.in)
		near := func(what string, got, want float64) {
			if math.IsInf(want, 1) != math.IsInf(got, 1) || (!math.IsInf(want, 1) && math.Abs(got-want) > 1e-3*max(1, want)) {
				t.Errorf("%s: %s = %v, want %v", tc.name, what, got, want)
			}
		}
		near("Link", got.Link, tc.in.linkWant())
		near("Window", got.Window, tc.window)
		near("Textbook", got.Textbook, tc.textbook)
		near("Mathis", got.Mathis, tc.mathis)
		near("Bound", got.Bound, tc.bound)
		if got.Limit != tc.limit {
			t.Errorf("%s: Limit = %q, want %q", tc.name, got.Limit, tc.limit)
		}
	}
}

// linkWant is the link goodput by hand: the payload of the full packets
// the rate carries with Ethernet's 38 bytes of framing each.
func (in TheoryInput) linkWant() float64 { return float64(in.Rate) / 1e6 * 1448 / 1538 }

func TestBoundsWithoutRTT(t *testing.T) {
	// No delay and no measured RTT: the emulator's idle overhead is the
	// round trip, never a division by zero.
	got := Bounds(TheoryInput{P: 1, Loss: 1, Rate: GigabitRate, RmemMax: 4 << 20})
	if want := 1448 * 8 / 0.00034 * 1.22 / 0.1 / 1e6; math.Abs(got.Mathis-want) > 1e-6*want {
		t.Errorf("Mathis = %v, want %v", got.Mathis, want)
	}
	// 416 Mbit/s: BBC Table 5.4 has 403 for one stream at 1 % loss.
	if math.IsInf(got.Window, 0) || math.IsNaN(got.Window) || got.Limit != LimitLoss {
		t.Errorf("%+v: want finite bounds limited by loss", got)
	}
}
