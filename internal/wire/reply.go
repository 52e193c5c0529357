package wire

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits that bound what ReplyReader accepts from a peer.
const (
	maxReplyLine  = 64 << 10
	maxReplyLines = 1_000_000
	maxReplyBytes = 16 << 20
)

// ErrReplyTooLong is returned by ReplyReader.ReadReply when a reply has more
// than 1,000,000 lines or 16 MiB of text.
var ErrReplyTooLong = errors.New("wire: reply too long")

// ErrBadReply is returned by ReplyReader.ReadReply when a line starts with
// three digits that are not a reply code between 100 and 599.
var ErrBadReply = errors.New("wire: malformed reply")

// Reply is one FTP reply (RFC 959 §4.2).
type Reply struct {
	// Code is the three-digit reply code, 100..599.
	Code int
	// Lines holds the text of each line without code, separator or
	// terminator. Lines[0] is the first line's text and may be empty; for a
	// multi-line reply the last element is the closing line's text ("End.").
	Lines []string
}

// Text returns the reply's lines joined with "\n".
func (r Reply) Text() string { return strings.Join(r.Lines, "\n") }

// Class returns the first digit of the reply code (1 to 5).
func (r Reply) Class() int { return r.Code / 100 }

// AppendWire appends the CRLF wire form of r to b. A one-line reply is
// "ddd text\r\n"; a multi-line reply is "ddd-first\r\n", each middle line as
// " " + line + "\r\n", and "ddd last\r\n". A reply without lines is
// written as "ddd \r\n".
//
// Reply text often holds what a peer sent (a path, a command argument) or
// a file name, so every line is rendered safe here, the one place all
// replies pass through: a CR or LF becomes a space, so that such text
// cannot inject a reply; any other control character (C0, DEL, and the C1
// range U+0080..U+009F when encoded as UTF-8) is written visibly as \xNN
// (\u00NN for C1), so that a NUL or an escape sequence never reaches the
// peer's screen or log raw; a 0xFF byte is doubled (Telnet's IAC IAC,
// RFC 854), which LineReader reads back as one. Other bytes, UTF-8 names
// (RFC 2640) among them, are written unchanged.
func (r Reply) AppendWire(b []byte) []byte {
	code := fmt.Sprintf("%03d", r.Code)
	lines := r.Lines
	if len(lines) == 0 {
		lines = []string{""}
	}
	for i, l := range lines {
		switch {
		case i == len(lines)-1:
			b = append(b, code...)
			b = append(b, ' ')
		case i == 0:
			b = append(b, code...)
			b = append(b, '-')
		default:
			b = append(b, ' ')
		}
		b = appendSafe(b, l)
		b = append(b, '\r', '\n')
	}
	return b
}

// appendSafe appends s to b rendered safe for a reply line (see
// AppendWire).
func appendSafe(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r', c == '\n':
			b = append(b, ' ')
		case c < 0x20, c == 0x7f:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			// U+0080..U+009F: C1 controls such as CSI (U+009B).
			i++
			b = append(b, '\\', 'u', '0', '0', hex[s[i]>>4], hex[s[i]&0xf])
		case c == telnetIAC:
			b = append(b, telnetIAC, telnetIAC)
		default:
			b = append(b, c)
		}
	}
	return b
}

// ReplyError is an error carrying a negative (or unexpected) reply from the
// peer.
type ReplyError struct {
	Reply Reply
}

// Error returns "ftp: " followed by the code and text; the lines of a
// multi-line reply are joined with "; ".
func (e *ReplyError) Error() string {
	return fmt.Sprintf("ftp: %03d %s", e.Reply.Code, strings.Join(e.Reply.Lines, "; "))
}

// ReplyReader reads replies from a control connection. It is not safe for
// concurrent use.
type ReplyReader struct {
	lr *LineReader
}

// NewReplyReader returns a ReplyReader reading from r, with lines limited to
// 64 KiB.
func NewReplyReader(r io.Reader) *ReplyReader {
	return &ReplyReader{lr: NewLineReader(r, maxReplyLine)}
}

// replyStart reports whether line starts a reply, returning the code, the
// separator (' ', '-', or 0 for a bare code) and the text.
func replyStart(line string) (code int, sep byte, text string, ok bool, err error) {
	if len(line) < 3 || !isDigit(line[0]) || !isDigit(line[1]) || !isDigit(line[2]) {
		return 0, 0, "", false, nil
	}
	if len(line) > 3 && line[3] != ' ' && line[3] != '-' {
		return 0, 0, "", false, nil
	}
	code, _ = strconv.Atoi(line[:3])
	if code < 100 || code > 599 {
		return 0, 0, "", false, fmt.Errorf("%w: code %q", ErrBadReply, line[:3])
	}
	if len(line) == 3 {
		return code, 0, "", true, nil
	}
	return code, line[3], line[4:], true, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// ReadReply reads one reply. It tolerates real servers: lines before a
// valid start line ("ddd ", "ddd-" or exactly "ddd") are skipped, because
// GCT sends broken continuations such as "' unrecognized type.". A
// multi-line reply ends at a line that starts with the same code and a
// space, or is exactly the code. Middle lines are stored with one leading
// space removed, or with a leading "ddd-" of the same code removed.
//
// A reply of more than 1,000,000 lines or 16 MiB (skipped lines included)
// returns ErrReplyTooLong. ReadReply returns io.EOF when the stream ends
// before any line, and io.ErrUnexpectedEOF when it ends inside a reply.
func (rr *ReplyReader) ReadReply() (Reply, error) {
	nlines, nbytes := 0, 0
	read := func() (string, error) {
		line, err := rr.lr.ReadLine()
		if err != nil {
			if err == io.EOF && nlines > 0 {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		nlines++
		nbytes += len(line) + 2
		if nlines > maxReplyLines || nbytes > maxReplyBytes {
			return "", ErrReplyTooLong
		}
		return line, nil
	}
	var (
		code int
		sep  byte
		text string
	)
	for {
		line, err := read()
		if err != nil {
			return Reply{}, err
		}
		var ok bool
		code, sep, text, ok, err = replyStart(line)
		if err != nil {
			return Reply{}, err
		}
		if ok {
			break
		}
	}
	r := Reply{Code: code, Lines: []string{text}}
	if sep != '-' {
		return r, nil
	}
	prefix := line3(code)
	for {
		line, err := read()
		if err != nil {
			return Reply{}, err
		}
		if line == prefix {
			r.Lines = append(r.Lines, "")
			return r, nil
		}
		if strings.HasPrefix(line, prefix+" ") {
			r.Lines = append(r.Lines, line[4:])
			return r, nil
		}
		if rest, ok := strings.CutPrefix(line, prefix+"-"); ok {
			line = rest
		} else {
			line = strings.TrimPrefix(line, " ")
		}
		r.Lines = append(r.Lines, line)
	}
}

// line3 formats a reply code as three digits.
func line3(code int) string { return fmt.Sprintf("%03d", code) }
