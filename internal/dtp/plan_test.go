package dtp

import (
	"testing"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// The data nodes of a striped sender together send every byte once, and
// every receiving stripe gets exactly one EOF whose count is the number
// of connections all nodes open to it.
func TestPlanSendStriped(t *testing.T) {
	whole := []xfer.Range{{Start: 0, End: 10<<20 + 3}}
	for _, tc := range []struct{ senders, receivers, par int }{
		{1, 1, 1}, {1, 3, 2}, {2, 1, 2}, {3, 1, 1}, {2, 3, 2}, {3, 2, 4}, {4, 4, 1},
	} {
		for _, layout := range []xfer.Layout{xfer.LayoutBlocked, xfer.LayoutPartitioned} {
			var got xfer.RangeSet
			var total int64
			conns := make([]int, tc.receivers)
			eofs := make([]int, tc.receivers)
			eofCount := make([]int, tc.receivers)
			for idx := range tc.senders {
				req := &xfer.Request{Parallelism: tc.par, StripeLayout: layout, StripeBlockSize: 1 << 20, Senders: tc.senders, SenderIndex: idx}
				for _, p := range planSend(whole, tc.receivers, req) {
					for _, r := range p.ranges {
						got.Add(r)
						total += r.Len()
					}
					conns[p.remote] += tc.par
					if !p.noEOF {
						eofs[p.remote]++
						eofCount[p.remote] = p.eofCount
						if p.eofCount == 0 {
							eofCount[p.remote] = tc.par
						}
					}
				}
			}
			if total != whole[0].End || got.String() != "0-10485763" {
				t.Errorf("%+v layout %v: sent %d bytes, ranges %s", tc, layout, total, got)
			}
			for r := range tc.receivers {
				if eofs[r] != 1 || eofCount[r] != conns[r] {
					t.Errorf("%+v layout %v: receiver %d gets %d EOFs counting %d of %d connections", tc, layout, r, eofs[r], eofCount[r], conns[r])
				}
			}
		}
	}
}
