package dtp

import (
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// TestMarkersTimers: a start marker at once, one per interval while the
// transfer runs, a final one at stop, and none after it; a transfer
// shorter than the interval gets the start and final markers only.
func TestMarkersTimers(t *testing.T) {
	for _, tc := range []struct {
		run  time.Duration
		want int
	}{
		{run: time.Second, want: 2},      // start, final
		{run: 12 * time.Second, want: 4}, // start, at 5 s and 10 s, final
	} {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var got []int64
			var n int64
			d := &Local{}
			stop := d.markers(&xfer.Request{PerfInterval: 5 * time.Second}, func(ev xfer.Event) {
				if ev.Kind != xfer.EventProgress {
					t.Errorf("event %v", ev.Kind)
				}
				mu.Lock()
				got = append(got, ev.Bytes)
				mu.Unlock()
			}, func() int64 { mu.Lock(); defer mu.Unlock(); n++; return n }, nil)
			time.Sleep(tc.run)
			stop()
			mu.Lock()
			count := len(got)
			mu.Unlock()
			if count != tc.want {
				t.Errorf("run %v: %d markers %v, want %d", tc.run, count, got, tc.want)
			}
			time.Sleep(time.Minute) // no marker after stop
			mu.Lock()
			defer mu.Unlock()
			if len(got) != count {
				t.Errorf("run %v: markers after stop: %v", tc.run, got)
			}
		})
	}
}

// TestMarkersNone: no interval, no marker and nothing started.
func TestMarkersNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &Local{}
		stop := d.markers(&xfer.Request{}, func(ev xfer.Event) { t.Errorf("marker %v", ev) }, func() int64 { return 0 }, nil)
		time.Sleep(time.Hour)
		stop()
	})
}

// TestReady: only a MODE E transfer on connections already there (or a
// receive with a listener waiting) is ready; anything that would wait
// for the peer to connect, or is in stream mode, is not.
func TestReady(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	modeE := &xfer.Request{Mode: xfer.ModeEBlock}
	for _, tc := range []struct {
		name          string
		cache         [][]net.Conn
		dir           direction
		ln            *net.TCPListener
		req           *xfer.Request
		send, receive bool
	}{
		{name: "nothing", req: modeE},
		{name: "sent before", cache: [][]net.Conn{{a}}, dir: dirSend, req: modeE, send: true},
		{name: "received before", cache: [][]net.Conn{{a}}, dir: dirReceive, req: modeE, receive: true},
		{name: "listener", ln: ln, req: modeE, receive: true},
		{name: "striped sender", cache: [][]net.Conn{{a}}, dir: dirSend, req: &xfer.Request{Mode: xfer.ModeEBlock, Senders: 2}},
		{name: "stream", cache: [][]net.Conn{{a}}, dir: dirSend, req: &xfer.Request{Mode: xfer.ModeStream}},
		{name: "stream listener", ln: ln, req: &xfer.Request{Mode: xfer.ModeStream}},
	} {
		d := &Local{cache: tc.cache, cacheDir: tc.dir, ln: tc.ln}
		if got := d.Ready(tc.req, true); got != tc.send {
			t.Errorf("%s: Ready(send) = %v", tc.name, got)
		}
		if got := d.Ready(tc.req, false); got != tc.receive {
			t.Errorf("%s: Ready(receive) = %v", tc.name, got)
		}
	}
}
