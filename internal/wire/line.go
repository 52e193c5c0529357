package wire

import (
	"bufio"
	"errors"
	"io"
)

// ErrLineTooLong is returned by LineReader.ReadLine for a line longer than
// the reader's limit. The rest of that line has been discarded and the reader
// can be used for the next line.
var ErrLineTooLong = errors.New("wire: line too long")

// Telnet command bytes (RFC 854) that may appear on an FTP control channel.
const (
	telnetIAC  = 255
	telnetDONT = 254
	telnetWILL = 251
)

// LineReader reads control-channel lines, removing terminators and Telnet
// IAC sequences. A LineReader is not safe for concurrent use.
type LineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewLineReader returns a LineReader reading from r whose lines may hold at
// most max bytes, not counting the terminator. A max below 1 means 1.
func NewLineReader(r io.Reader, max int) *LineReader {
	if max < 1 {
		max = 1
	}
	return NewLineReaderSize(r, max, 4096)
}

// NewLineReaderSize is NewLineReader with a read buffer of size bytes
// (at least 16): a small one keeps idle readers cheap, at the cost of more
// reads for long bursts of lines.
func NewLineReaderSize(r io.Reader, max, size int) *LineReader {
	if max < 1 {
		max = 1
	}
	return &LineReader{r: bufio.NewReaderSize(r, size), max: max}
}

// ReadLine returns the next line without its terminator. A line ends at CRLF
// or at a bare LF; a CR right before the LF is dropped. Telnet sequences are
// removed: IAC IAC becomes one 0xFF byte, IAC WILL/WONT/DO/DONT and its
// option byte are dropped, and IAC followed by any other byte (IP, DM, …)
// is dropped.
//
// A line longer than the limit is discarded up to its terminator without
// being buffered, and ErrLineTooLong is returned. ReadLine returns io.EOF
// when the stream ends cleanly between lines and io.ErrUnexpectedEOF when
// it ends inside a line.
func (r *LineReader) ReadLine() (string, error) {
	r.buf = r.buf[:0]
	consumed := false
	tooLong := false
	pendingCR := false
	put := func(c byte) {
		if len(r.buf) >= r.max {
			tooLong = true
			return
		}
		r.buf = append(r.buf, c)
	}
	next := func() (byte, error) {
		c, err := r.r.ReadByte()
		if err == io.EOF {
			if consumed {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, io.EOF
		}
		if err == nil {
			consumed = true
		}
		return c, err
	}
	for {
		c, err := next()
		if err != nil {
			return "", err
		}
		if c == telnetIAC {
			cmd, err := next()
			if err != nil {
				return "", eofInside(err)
			}
			switch {
			case cmd == telnetIAC:
				// An escaped 0xFF data byte; handled below.
			case cmd >= telnetWILL && cmd <= telnetDONT:
				if _, err := next(); err != nil {
					return "", eofInside(err)
				}
				continue
			default:
				continue
			}
		}
		if c == '\n' {
			if tooLong {
				return "", ErrLineTooLong
			}
			return string(r.buf), nil
		}
		if pendingCR {
			put('\r')
			pendingCR = false
		}
		if c == '\r' {
			pendingCR = true
			continue
		}
		put(c)
	}
}

// eofInside turns io.EOF into io.ErrUnexpectedEOF: the stream ended inside
// a Telnet sequence, so it ended inside a line.
func eofInside(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
