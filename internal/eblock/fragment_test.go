package eblock

import (
	"errors"
	"sync"
	"testing"
)

// scatter returns the wire bytes of one-byte blocks at the given offsets,
// followed by EOF and EOD when end is set.
func scatter(offsets []uint64, end bool) []byte {
	b := make([]byte, 0, len(offsets)*(HeaderSize+1)+HeaderSize)
	var h [HeaderSize]byte
	for _, off := range offsets {
		Header{Count: 1, Offset: off}.Put(h[:])
		b = append(append(b, h[:]...), 'x')
	}
	if end {
		Header{Desc: DescEOF | DescEOD, Offset: 1}.Put(h[:])
		b = append(b, h[:]...)
	}
	return b
}

// receiveScattered has a peer send wire on one connection to a receiver
// with cfg, and returns what the receiver's Wait returned.
func receiveScattered(t *testing.T, cfg ReceiveConfig, wire []byte) (int64, error) {
	t.Helper()
	s, r := pairs(t, 1)
	rcv := NewReceiver(&memFile{}, cfg)
	rcv.Add(r[0])
	var wg sync.WaitGroup
	wg.Go(func() { s[0].Write(wire) }) // stops when the receiver closes
	n, err := rcv.Wait(ctx(t))
	r[0].Close()
	wg.Wait()
	return n, err
}

// spaced returns n offsets from start, step apart (step may be negative).
func spaced(start uint64, step int64, n int) []uint64 {
	offs := make([]uint64, n)
	for i := range offs {
		offs[i] = uint64(int64(start) + int64(i)*step)
	}
	return offs
}

// TestScatteredBlocksCapped: blocks that leave more separate ranges than
// MaxRanges fail the transfer as a protocol violation (the "quadratic CPU
// on MODE E uploads" peer, at a small cap); blocks that merge, or fill
// gaps, do not count against it.
func TestScatteredBlocksCapped(t *testing.T) {
	const max = 100
	fill := spaced(2*max, -2, max+1)                                // 101 separate ranges, descending…
	gaps := spaced(2*max-1, -2, max)                                // …and the gaps between the first 100
	merged := append(append([]uint64(nil), fill[:max]...), gaps...) // 100 ranges, then 1
	merged = append(merged, spaced(10*max, 2, max-1)...)            // 100 again
	for _, tt := range []struct {
		name    string
		offsets []uint64
		ok      bool
	}{
		{"descending, one too many", fill, false},
		{"ascending, one too many", spaced(0, 2, max+1), false},
		{"exactly the cap", fill[:max], true},
		{"adjacent blocks merge", spaced(10*max, -1, 10*max), true},
		{"filled gaps free ranges", merged, true},
		{"filled gaps, then one too many", append(merged, 20*max), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := receiveScattered(t, ReceiveConfig{Limit: -1, MaxRanges: max}, scatter(tt.offsets, true))
			switch {
			case tt.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.ok && n != int64(len(tt.offsets)):
				t.Fatalf("stored %d of %d blocks", n, len(tt.offsets))
			case !tt.ok && !errors.Is(err, errFragmented):
				t.Fatalf("got %v, want %v", err, errFragmented)
			case !tt.ok && !errors.Is(err, ErrProtocol):
				t.Fatalf("%v is not an ErrProtocol", err)
			}
		})
	}
}

// TestScatteredBlocksDefaultCap: with the default configuration a peer
// sending DefaultMaxRanges+1 one-byte blocks, none adjacent, is refused
// before the last one, having sent 18 MiB.
func TestScatteredBlocksDefaultCap(t *testing.T) {
	if testing.Short() || raceEnabled {
		// About 1 s, but 45 s under the race detector; TestScatteredBlocksCapped
		// runs the same code with a small cap.
		t.Skip("sends a million blocks")
	}
	n, err := receiveScattered(t, ReceiveConfig{Limit: -1}, scatter(spaced(0, 2, DefaultMaxRanges+1), true))
	if !errors.Is(err, errFragmented) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %d, %v; want %v", n, err, errFragmented)
	}
	t.Logf("%d bytes stored: %v", n, err)
}

// TestRestartGapsWithinDefaultCap: a restart that fills the gaps of a
// REST list of 10,000 ranges (the most ParseRangeList accepts) stays far
// below the cap.
func TestRestartGapsWithinDefaultCap(t *testing.T) {
	const gaps = 10001
	offs := spaced(2*(gaps-1), -2, gaps) // the gaps around and between 1-2,3-4,…
	n, err := receiveScattered(t, ReceiveConfig{Limit: -1}, scatter(offs, true))
	if err != nil || n != gaps {
		t.Fatalf("got %d, %v", n, err)
	}
}
