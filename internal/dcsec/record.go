package dcsec

import (
	"errors"
	"io"
	"net"
)

// recordHeaderLen is the size of a TLS record header: type, version, length.
const recordHeaderLen = 5

// recordReader reads a stream of TLS records without ever reading past the
// end of the record it is in: each Read returns bytes of one record's
// header or of one record's body, never more. crypto/tls reads a record by
// asking for its header and then for its body, so over a recordReader it
// consumes exactly the records it processes and nothing after them.
type recordReader struct {
	r    io.Reader
	hdr  [recordHeaderLen]byte
	nhdr int // bytes of the current header read so far
	body int // bytes of the current record's body still to read
}

var errBadRead = errors.New("dcsec: underlying reader returned an invalid count")

// Read implements io.Reader.
func (r *recordReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.body > 0 {
		n, err := r.r.Read(p[:min(len(p), r.body)])
		if n < 0 || n > min(len(p), r.body) {
			return 0, errBadRead
		}
		r.body -= n
		return n, err
	}
	want := min(len(p), recordHeaderLen-r.nhdr)
	n, err := r.r.Read(p[:want])
	if n < 0 || n > want {
		return 0, errBadRead
	}
	copy(r.hdr[r.nhdr:], p[:n])
	r.nhdr += n
	if r.nhdr == recordHeaderLen {
		r.nhdr = 0
		r.body = int(r.hdr[3])<<8 | int(r.hdr[4])
	}
	return n, err
}

// recordConn is a net.Conn whose reads stop at TLS record boundaries (see
// recordReader). It exists only during a GSI Level C handshake; afterwards
// the caller uses the original connection, which still holds every byte
// after the last record TLS processed.
type recordConn struct {
	net.Conn
	r recordReader
}

func (c *recordConn) Read(p []byte) (int, error) { return c.r.Read(p) }
