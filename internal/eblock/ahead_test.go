package eblock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// A small block is read together with the header behind it. A block that
// itself carries EOD has nothing of its transfer behind it: the next
// transfer on the cached connection must find its first header intact.
func TestSmallBlockWithEODThenNextTransfer(t *testing.T) {
	s, r := pairs(t, 1)
	// Both transfers are on the wire before the first receiver reads.
	raw(s[0], Header{Desc: DescEOF, Offset: 1}, Header{Desc: DescEOD, Count: 5}, []byte("first"),
		Header{Count: 6}, []byte("second"), Header{Desc: DescEOF | DescEOD, Offset: 1})
	for _, want := range []string{"first", "second"} {
		dst := &memFile{}
		rcv := NewReceiver(dst, ReceiveConfig{Limit: -1})
		if !rcv.Add(r[0]) {
			t.Fatal("receiver refused the connection")
		}
		if _, err := rcv.Wait(ctx(t)); err != nil {
			t.Fatalf("%s: %v", want, err)
		}
		if string(dst.b) != want {
			t.Fatalf("got %q, want %q", dst.b, want)
		}
		if len(rcv.Reusable()) != 1 {
			t.Fatalf("%s: connection not reusable", want)
		}
	}
}

// A block counts as soon as its payload is in, even when only part of the
// next header has arrived; the rest of that header is read after it.
func TestSmallBlockCountsBeforeNextHeader(t *testing.T) {
	s, r := net.Pipe() // each Write reaches the reader as written, in order
	t.Cleanup(func() { s.Close(); r.Close() })
	var recv atomic.Int64
	dst := &memFile{}
	rcv := NewReceiver(dst, ReceiveConfig{Limit: -1, Received: &recv})
	rcv.Add(r)
	var hdr, end [HeaderSize]byte
	Header{Count: 4}.Put(hdr[:])
	Header{Desc: DescEOF | DescEOD, Offset: 1}.Put(end[:])
	go s.Write(slices.Concat(hdr[:], []byte("abcd"), end[:5]))
	for i := 0; recv.Load() != 4; i++ {
		if i > 10000 {
			t.Fatal("the block was not counted before its successor's header was complete")
		}
		time.Sleep(time.Millisecond)
	}
	go s.Write(end[5:])
	if _, err := rcv.Wait(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if string(dst.b) != "abcd" {
		t.Fatalf("got %q", dst.b)
	}
}

// A connection that ends right after a small block's payload stores the
// block and fails on the missing header.
func TestSmallBlockThenEOF(t *testing.T) {
	s, r := pairs(t, 1)
	var recv atomic.Int64
	rcv := NewReceiver(&memFile{}, ReceiveConfig{Limit: -1, Received: &recv})
	rcv.Add(r[0])
	raw(s[0], Header{Count: 3}, []byte("abc"))
	s[0].Close()
	_, err := rcv.Wait(ctx(t))
	var de *xfer.DataError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "reading a block header") {
		t.Fatalf("got %v, want a data error reading the header", err)
	}
	if recv.Load() != 3 {
		t.Fatalf("%d bytes counted, want 3", recv.Load())
	}
}

// The sender puts a small file's header, payload and end header in one
// write; the bytes are the same as written one by one.
func TestSendSmallWireBytes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		conns int
		size  int
		bs    int
		close bool
	}{
		{"one block", 1, 16 << 10, 0, false},
		{"one block with CLOSE", 1, 100, 0, true},
		{"blocks over two connections", 2, 10000, 1000, false},
		{"largest small block", 1, smallBlock, 0, false},
		{"just above", 1, smallBlock + 1, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := random(tt.size, 7)
			s, r := pairs(t, tt.conns)
			got := make([][]byte, tt.conns)
			var wg sync.WaitGroup
			for i, c := range r {
				wg.Go(func() {
					var b bytes.Buffer
					io.Copy(&b, c)
					got[i] = b.Bytes()
				})
			}
			_, err := Send(ctx(t), s, bytes.NewReader(data), []xfer.Range{{Start: 0, End: int64(tt.size)}},
				SendConfig{BlockSize: tt.bs, Close: tt.close})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range s {
				c.Close()
			}
			wg.Wait()
			// Parse each connection's bytes: blocks, then exactly one
			// end header, the EOF on the first connection.
			stored := make([]byte, tt.size)
			for i, b := range got {
				for {
					h, err := ParseHeader(b)
					if err != nil {
						t.Fatalf("connection %d: %v", i, err)
					}
					b = b[HeaderSize:]
					if h.Desc&DescEOD != 0 {
						want := DescEOD
						if i == 0 {
							want |= DescEOF
						}
						if tt.close {
							want |= DescClose
						}
						if h.Desc != want || len(b) != 0 {
							t.Fatalf("connection %d: end %v with %d bytes behind", i, h, len(b))
						}
						break
					}
					copy(stored[h.Offset:], b[:h.Count])
					b = b[h.Count:]
				}
			}
			if !bytes.Equal(stored, data) {
				t.Fatal("contents differ")
			}
		})
	}
}
