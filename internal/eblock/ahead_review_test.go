package eblock

import (
	"bytes"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// TestBackToBackTransfersSplitAnywhere: many transfers follow each other
// on one cached connection, every one of them already sent before its
// receiver starts, and the bytes arrive in reads of any size. Whatever
// way each transfer ends (GCT's separate EOF and EOD headers, Ferry's
// EOF|EOD, EOD on the last block itself), a receiver takes exactly its own
// transfer's bytes and the next receiver finds its first header intact.
func TestBackToBackTransfersSplitAnywhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const transfers = 200
	var stream bytes.Buffer
	want := make([][]byte, transfers)
	put := func(h Header, p []byte) {
		var b [HeaderSize]byte
		h.Put(b[:])
		stream.Write(b[:])
		stream.Write(p)
	}
	for i := range want {
		size := rng.IntN(3 * 1024)
		if i%7 == 0 {
			size = rng.IntN(2*smallBlock) + smallBlock/2 // around the small-block limit
		}
		want[i] = random(size, byte(i))
		bs := 1 + rng.IntN(max(size, 1))
		style := i % 3
		if size == 0 {
			style = 0
		}
		if style == 2 { // nothing may follow the EOD: the EOF goes first
			put(Header{Desc: DescEOF, Offset: 1}, nil)
		}
		for off := 0; off < size; off += bs {
			n := min(bs, size-off)
			h := Header{Count: uint64(n), Offset: uint64(off)}
			if style == 2 && off+n == size {
				h.Desc = DescEOD // the last block carries the EOD
			}
			put(h, want[i][off:off+n])
		}
		switch style {
		case 0: // GCT: EOF, then EOD
			put(Header{Desc: DescEOF, Offset: 1}, nil)
			put(Header{Desc: DescEOD}, nil)
		case 1:
			put(Header{Desc: DescEOF | DescEOD, Offset: 1}, nil)
		}
	}
	s, r := net.Pipe() // each read returns at most what one write put
	t.Cleanup(func() { s.Close(); r.Close() })
	go func() {
		b := stream.Bytes()
		for len(b) > 0 {
			n := min(len(b), 1+rng.IntN(40))
			if rng.IntN(4) == 0 {
				n = min(len(b), 1+rng.IntN(3*smallBlock))
			}
			if _, err := s.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
	}()
	for i, w := range want {
		dst := &memFile{}
		rcv := NewReceiver(dst, ReceiveConfig{Limit: -1})
		if !rcv.Add(r) {
			t.Fatalf("transfer %d: receiver refused the connection", i)
		}
		n, err := rcv.Wait(ctx(t))
		if err != nil {
			t.Fatalf("transfer %d (%d bytes): %v", i, len(w), err)
		}
		if n != int64(len(w)) || !bytes.Equal(dst.b, w) {
			t.Fatalf("transfer %d: got %d bytes, want %d", i, n, len(w))
		}
		if len(rcv.Reusable()) != 1 {
			t.Fatalf("transfer %d: connection not reusable", i)
		}
	}
}

// TestSendAfterExpiredWriteDeadline: Send's cancel sets a past write
// deadline, and a cancel that races a successful end does so after Send
// returned, on connections then cached for the next transfer. That
// transfer still goes through.
func TestSendAfterExpiredWriteDeadline(t *testing.T) {
	s, r := pairs(t, 1)
	s[0].SetWriteDeadline(time.Unix(1, 0)) // what the late cancel leaves
	data := random(5000, 3)
	dst := &memFile{}
	rcv := NewReceiver(dst, ReceiveConfig{Limit: -1})
	rcv.Add(r[0])
	if _, err := Send(ctx(t), s, bytes.NewReader(data), []xfer.Range{{Start: 0, End: int64(len(data))}}, SendConfig{}); err != nil {
		t.Fatalf("Send on a cached connection: %v", err)
	}
	if _, err := rcv.Wait(ctx(t)); err != nil || !bytes.Equal(dst.b, data) {
		t.Fatalf("received %d bytes: %v", len(dst.b), err)
	}
}
