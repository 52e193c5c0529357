// Package eblock implements GridFTP extended block mode (MODE E, GFD.020
// §3.4): one file carried as self-describing blocks over several TCP
// connections, in any order.
//
// Wire format of a block (protocol.md §5.1):
//
//	offset 0  1 byte   descriptor flags (EOF 0x40, EOD 0x08, CLOSE 0x04, ...)
//	offset 1  8 bytes  count  (big-endian): payload bytes that follow
//	offset 9  8 bytes  offset (big-endian): where the payload goes
//
// End of a transfer (§5.2): every connection ends its share with one EOD;
// exactly one connection also carries EOF, whose offset field is the number
// of connections used (the EOD count). The receiver is done when it has seen
// the EOF and that many EODs. An EOF header never carries payload.
//
// Sender (send.go) and Receiver (receive.go) are used by both the server's
// data mover and the client.
package eblock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// HeaderSize is the size of a block header in bytes.
const HeaderSize = 17

// Descriptor flags (GFD.020 §3.4.1).
const (
	DescEOR     byte = 0x80 // end of record; unused
	DescEOF     byte = 0x40 // end of file; offset carries the EOD count
	DescSuspect byte = 0x20 // suspected errors; unused
	DescRestart byte = 0x10 // restart marker block; unused by GridFTP
	DescEOD     byte = 0x08 // end of data on this connection
	DescClose   byte = 0x04 // the sender closes this connection after this header
)

// Header is one block header.
type Header struct {
	Desc   byte
	Count  uint64
	Offset uint64
}

// ErrBadHeader reports a header that no valid sender produces.
var ErrBadHeader = errors.New("eblock: bad block header")

// Put writes h into b[:HeaderSize].
func (h Header) Put(b []byte) {
	_ = b[HeaderSize-1]
	b[0] = h.Desc
	binary.BigEndian.PutUint64(b[1:9], h.Count)
	binary.BigEndian.PutUint64(b[9:17], h.Offset)
}

// ParseHeader decodes and checks a header: count and offset must fit in
// int64 and so must their sum; an EOF header's count is ignored (GCT does
// the same), its offset (the EOD count) must be 1 to 65535.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes", ErrBadHeader, len(b))
	}
	h := Header{
		Desc:   b[0],
		Count:  binary.BigEndian.Uint64(b[1:9]),
		Offset: binary.BigEndian.Uint64(b[9:17]),
	}
	if h.Desc&DescEOF != 0 {
		h.Count = 0
		if h.Offset == 0 || h.Offset > math.MaxUint16 {
			return Header{}, fmt.Errorf("%w: EOF with EOD count %d", ErrBadHeader, h.Offset)
		}
		return h, nil
	}
	if h.Count > math.MaxInt64 || h.Offset > math.MaxInt64 || h.Offset+h.Count > math.MaxInt64 {
		return Header{}, fmt.Errorf("%w: block of %d bytes at offset %d overflows", ErrBadHeader, h.Count, h.Offset)
	}
	if h.Desc&DescClose != 0 && h.Desc&DescEOD == 0 {
		return Header{}, fmt.Errorf("%w: CLOSE without EOD", ErrBadHeader)
	}
	return h, nil
}

// EODCount is the EOD count of an EOF header.
func (h Header) EODCount() int { return int(h.Offset) }

func (h Header) String() string {
	return fmt.Sprintf("desc=%#02x count=%d offset=%d", h.Desc, h.Count, h.Offset)
}
