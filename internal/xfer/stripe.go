package xfer

// Stripe layouts (GFD.020 §4.4): how a transfer sent to several stripes
// deals its ranges among them. One pure function for every sender: the
// server's DTP (SPOR, striped data nodes) and the client's striped
// uploads (SPAS).

// StripeRanges deals ranges (ascending file offsets, as a sender sends
// them) to k stripes (k < 1 counts as 1). With LayoutBlocked, block b of
// blockSize bytes counted from base goes to stripe b mod k, and adjacent
// pieces of one stripe are merged; blockSize <= 0 means
// DefaultStripeBlockSize. With LayoutPartitioned, stripe i gets the i-th
// of k equal contiguous parts of [base, end of the last range). One
// stripe gets ranges itself, unchanged.
func StripeRanges(ranges []Range, k int, base int64, layout Layout, blockSize int64) [][]Range {
	k = max(k, 1)
	parts := make([][]Range, k)
	if k == 1 {
		parts[0] = ranges
		return parts
	}
	if len(ranges) == 0 {
		return parts
	}
	if layout == LayoutPartitioned {
		end := ranges[len(ranges)-1].End
		size := (end - base + int64(k) - 1) / int64(k)
		for s := range k {
			lo, hi := base+int64(s)*size, min(base+int64(s+1)*size, end)
			for _, r := range ranges {
				if a, b := max(r.Start, lo), min(r.End, hi); a < b {
					parts[s] = append(parts[s], Range{Start: a, End: b})
				}
			}
		}
		return parts
	}
	bs := blockSize
	if bs <= 0 {
		bs = DefaultStripeBlockSize
	}
	for _, r := range ranges {
		for off := r.Start; off < r.End; {
			blk := (off - base) / bs
			end := min(base+(blk+1)*bs, r.End)
			s := int(blk % int64(k))
			if n := len(parts[s]); n > 0 && parts[s][n-1].End == off {
				parts[s][n-1].End = end
			} else {
				parts[s] = append(parts[s], Range{Start: off, End: end})
			}
			off = end
		}
	}
	return parts
}
