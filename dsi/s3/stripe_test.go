package s3

import "testing"

// TestReaderStripe: a Reader told its stripe (blocks b with b mod 4 == 1
// of 1 MiB from base) fetches exactly those blocks as its chunks, and
// prefetches the next of them, never another stripe's bytes; with a base
// off the block grid too (a download from an offset).
func TestReaderStripe(t *testing.T) {
	const block = 1 << 20
	for _, base := range []int64{0, 12345, 3*block + 7} {
		size := base + 21*block + 99
		r := &Reader{size: size, chunk: DefaultReadChunk, chunks: map[int64]*chunk{}}
		mine := func(b int64) bool { return b%4 == 1 }
		r.Stripe(base, block, mine)
		var own []int64 // the chunks of the stripe's blocks, in order
		for b := int64(0); base+b*block < size; b++ {
			s, e := base+b*block, min(base+(b+1)*block, size)
			i := r.chunkOf(s)
			if r.chunkOf(e-1) != i || r.chunkStart(i) != s || min(r.chunkStart(i+1), size) != e {
				t.Fatalf("base %d: block %d [%d, %d) is not one chunk: chunk %d is [%d, %d)", base, b, s, e, i, r.chunkStart(i), r.chunkStart(i+1))
			}
			if r.mine(i) != mine(b) {
				t.Fatalf("base %d: chunk %d (block %d): mine %v", base, i, b, r.mine(i))
			}
			if mine(b) {
				own = append(own, i)
			}
		}
		for k, i := range own {
			want := int64(-1)
			if k+1 < len(own) {
				want = own[k+1]
			}
			if got := r.nextChunk(i); got != want {
				t.Errorf("base %d: after chunk %d prefetch %d, want %d", base, i, got, want)
			}
		}
	}
	// A block as large as a chunk changes nothing.
	r := &Reader{size: 100 << 20, chunk: DefaultReadChunk, chunks: map[int64]*chunk{}}
	r.Stripe(0, DefaultReadChunk, func(int64) bool { return false })
	if r.mine != nil || r.nextChunk(0) != 1 {
		t.Error("Stripe with a block of a chunk changed the chunks")
	}
}
