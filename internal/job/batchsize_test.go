package job

import "testing"

// TestBatchSize: batches shrink with the queue, but not below the floor
// while every worker can still get that many; the tail is split evenly
// rather than into batches of one, and nothing is lost or exceeds the
// ceiling.
func TestBatchSize(t *testing.T) {
	for _, c := range []struct{ left, workers, want int }{
		{1000, 4, 64}, // ceiling
		{400, 4, 50},  // half the share
		{100, 4, 16},  // floor
		{40, 4, 10},   // the share when that is below the floor
		{5, 4, 2},
		{1, 4, 1},
		{0, 4, 1},
	} {
		if got := batchSize(c.left, c.workers, 64, 16); got != c.want {
			t.Errorf("batchSize(%d left, %d workers) = %d, want %d", c.left, c.workers, got, c.want)
		}
	}
	// A run of 500 files over 4 workers that take in turn: every batch
	// in bounds, and far fewer batches than files in the tail.
	left, batches, ones := 500, 0, 0
	for left > 0 {
		n := min(batchSize(left, 4, 256, 16), left)
		if n < 1 || n > 256 {
			t.Fatalf("batch of %d with %d left", n, left)
		}
		if n == 1 {
			ones++
		}
		left -= n
		batches++
	}
	if batches > 40 || ones > 4 {
		t.Errorf("500 files in %d batches, %d of one file", batches, ones)
	}
}
