package dtp

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ferrygrid/ferry/internal/xfer"
)

func TestSendRanges(t *testing.T) {
	restart := func(s string) xfer.RangeSet {
		rs, err := xfer.ParseRangeList(s)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	tests := []struct {
		name        string
		off, length int64
		rest        xfer.RangeSet
		size        int64
		want        []xfer.Range
	}{
		{"whole", 0, -1, xfer.RangeSet{}, 100, []xfer.Range{{Start: 0, End: 100}}},
		{"empty file", 0, -1, xfer.RangeSet{}, 0, nil},
		{"offset", 10, -1, xfer.RangeSet{}, 100, []xfer.Range{{Start: 10, End: 100}}},
		{"offset past end", 200, -1, xfer.RangeSet{}, 100, nil},
		{"window", 10, 20, xfer.RangeSet{}, 100, []xfer.Range{{Start: 10, End: 30}}},
		{"window clipped", 90, 20, xfer.RangeSet{}, 100, []xfer.Range{{Start: 90, End: 100}}},
		{"length overflow", 10, 1<<63 - 1, xfer.RangeSet{}, 100, []xfer.Range{{Start: 10, End: 100}}},
		{"restart gaps", 0, -1, restart("0-50,60-70"), 100, []xfer.Range{{Start: 50, End: 60}, {Start: 70, End: 100}}},
		{"restart all", 0, -1, restart("0-100"), 100, nil},
		{"restart inside a window", 1000, 5000, restart("0-1000"), 10000, []xfer.Range{{Start: 2000, End: 6000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sendRanges(&xfer.Request{Offset: tt.off, Length: tt.length, Restart: tt.rest}, tt.size)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

type bufAt struct{ b []byte }

func (w *bufAt) WriteAt(p []byte, off int64) (int, error) {
	if need := int(off) + len(p); need > len(w.b) {
		w.b = append(w.b, make([]byte, need-len(w.b))...)
	}
	return copy(w.b[off:], p), nil
}

func TestASCII(t *testing.T) {
	for _, in := range []string{"", "a\nb\n", "a\r\nb", "\n\n", "x\r", "line" + strings.Repeat("z", bufSize) + "\nend\n"} {
		var wire bytes.Buffer
		n, err := sendASCII(&wire, strings.NewReader(in), xfer.Range{Start: 0, End: int64(len(in))})
		if err != nil || n != int64(len(in)) {
			t.Fatalf("sendASCII(%.20q): %d, %v", in, n, err)
		}
		if strings.Contains(strings.ReplaceAll(wire.String(), "\r\n", ""), "\n") {
			t.Fatalf("sendASCII(%.20q) left a bare LF", in)
		}
		// Back through the receiver, one byte at a time to cross every boundary.
		var disk bufAt
		if _, err := receiveASCII(iotest.OneByteReader(&wire), &disk, 0); err != nil {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(in, "\r\n", "\n")
		if string(disk.b) != want {
			t.Fatalf("round trip of %.20q gave %.20q", in, disk.b)
		}
	}
}
