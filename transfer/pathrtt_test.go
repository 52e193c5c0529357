package transfer

import (
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
)

// TestPathRTT: a receiver's smoothed RTT stays near the handshake's, so
// the round trip the data saw is the larger of it and the receiver's
// estimate; a sender's is its smoothed RTT.
func TestPathRTT(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		conns []client.ConnStats
		want  time.Duration
	}{
		{nil, 0},
		{[]client.ConnStats{{}}, 0},
		{[]client.ConnStats{{RTT: 20 * ms, RcvRTT: 90 * ms}, {RTT: 20 * ms, RcvRTT: 110 * ms}}, 100 * ms}, // receivers
		{[]client.ConnStats{{RTT: 70 * ms}, {RTT: 90 * ms}}, 80 * ms},                                     // senders
		{[]client.ConnStats{{RTT: 60 * ms, RcvRTT: 61 * ms}, {}}, 61 * ms},                                // one unread
	} {
		if got := pathRTT(tc.conns); got != tc.want {
			t.Errorf("pathRTT(%+v) = %v, want %v", tc.conns, got, tc.want)
		}
	}
}
