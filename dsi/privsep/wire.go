//go:build unix

package privsep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// version is the protocol version, the first byte of every packet.
const version = 1

// Bounds of the protocol. A packet larger than maxPacket is a protocol
// error; so is a string longer than maxString.
const (
	headerLen   = 8
	maxPacket   = 64 << 10
	maxString   = 4096
	maxText     = 1024    // error texts are cut to this length by the sender
	maxEntries  = 1 << 21 // entries of one ReadDir reply, over all its packets
	maxInFlight = 16      // requests the helper works on at once
)

// Ops.
const (
	opHello byte = iota + 1
	opStat
	opReadDir
	opOpen
	opCreate
	opMkdir
	opRemove
	opRmdir
	opRename
	opChmod
	opChtimes
	opSub     // open a directory as a root of its own; the reply is its number
	opRelease // forget a root from opSub
	opLast    = opRelease
)

// baseRoot is the root number of the directory the helper serves; opSub
// numbers the others from 1.
const baseRoot = 0

// Header flags.
const (
	flagMore  = 1 << 0 // a ReadDir reply continues in the next packet
	flagError = 1 << 1 // the body is an error code and text
)

// header is the fixed start of every packet.
type header struct {
	op    byte
	flags byte
	id    uint32
}

// errMalformed is the cause of every decoding failure.
var errMalformed = errors.New("privsep: malformed message")

// appendHeader starts a packet.
func appendHeader(b []byte, h header) []byte {
	b = append(b, version, h.op, h.flags, 0)
	return binary.BigEndian.AppendUint32(b, h.id)
}

// parseHeader splits a packet into its header and body. It checks the
// length, the version, the op and the reserved byte.
func parseHeader(p []byte) (header, []byte, error) {
	if len(p) < headerLen || len(p) > maxPacket {
		return header{}, nil, fmt.Errorf("%w: packet of %d bytes", errMalformed, len(p))
	}
	if p[0] != version {
		return header{}, nil, fmt.Errorf("%w: protocol version %d, want %d", errMalformed, p[0], version)
	}
	h := header{op: p[1], flags: p[2], id: binary.BigEndian.Uint32(p[4:8])}
	if h.op == 0 || h.op > opLast || p[3] != 0 || h.flags&^(flagMore|flagError) != 0 {
		return header{}, nil, fmt.Errorf("%w: bad header % x", errMalformed, p[:headerLen])
	}
	return h, p[headerLen:], nil
}

// Encoding helpers. Strings longer than maxString are the caller's bug and
// are refused by the decoder on the other side.

func appendU8(b []byte, v byte) []byte    { return append(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func appendI64(b []byte, v int64) []byte  { return binary.BigEndian.AppendUint64(b, uint64(v)) }

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// appendTime encodes t as a zero flag, seconds and nanoseconds, so that the
// zero time survives (it means "leave unchanged" to Chtimes).
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = append(b, 1)
	b = appendI64(b, t.Unix())
	return appendU32(b, uint32(t.Nanosecond()))
}

// decoder reads a body; the first failure sticks and later reads return
// zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", errMalformed, what)
	}
	d.b = nil
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil || len(d.b) < n {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8(what string) byte {
	if v := d.take(1, what); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u16(what string) uint16 {
	if v := d.take(2, what); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if v := d.take(4, what); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) i64(what string) int64 {
	if v := d.take(8, what); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (d *decoder) str(what string) string {
	n := int(d.u16(what))
	if n > maxString {
		d.fail(what)
		return ""
	}
	return string(d.take(n, what))
}

// name decodes a DSI name and insists that it is clean and absolute, with
// no NUL byte: the helper never interprets anything else.
func (d *decoder) name(what string) string {
	s := d.str(what)
	if d.err == nil && !validName(s) {
		d.fail(what)
	}
	return s
}

func validName(s string) bool {
	return strings.HasPrefix(s, "/") && path.Clean(s) == s && !strings.ContainsRune(s, 0)
}

func (d *decoder) time(what string) time.Time {
	switch d.u8(what) {
	case 0:
		return time.Time{}
	case 1:
		sec := d.i64(what)
		nsec := d.u32(what)
		if nsec >= 1e9 {
			d.fail(what)
			return time.Time{}
		}
		return time.Unix(sec, int64(nsec))
	}
	d.fail(what)
	return time.Time{}
}

// end fails unless the whole body was read, and returns the first error.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}

// appendFileInfo encodes one entry.
func appendFileInfo(b []byte, fi dsi.FileInfo) []byte {
	b = appendString(b, clip(fi.Name, maxString))
	b = appendI64(b, fi.Size)
	b = appendU32(b, uint32(fi.Mode))
	b = appendTime(b, fi.ModTime)
	b = appendString(b, clip(fi.Owner, maxString))
	b = appendString(b, clip(fi.Group, maxString))
	b = appendI64(b, int64(fi.UID))
	b = appendI64(b, int64(fi.GID))
	b = appendString(b, clip(fi.Unique, maxString))
	return appendString(b, clip(fi.Link, maxString))
}

// maxFileInfo bounds the encoded size of one entry.
const maxFileInfo = 6*(2+maxString) + 8 + 4 + 13 + 8 + 8

// One entry always fits in a ReadDir packet (this fails to compile if not).
var _ [maxPacket - headerLen - 4 - maxFileInfo]struct{}

func (d *decoder) fileInfo() dsi.FileInfo {
	fi := dsi.FileInfo{
		Name:    d.str("name"),
		Size:    d.i64("size"),
		Mode:    fs.FileMode(d.u32("mode")),
		ModTime: d.time("mtime"),
		Owner:   d.str("owner"),
		Group:   d.str("group"),
		UID:     int(d.i64("uid")),
		GID:     int(d.i64("gid")),
		Unique:  d.str("unique"),
		Link:    d.str("link"),
	}
	if fi.Name == "" || strings.ContainsRune(fi.Name, 0) || (fi.Name != "/" && strings.Contains(fi.Name, "/")) {
		d.fail("entry name")
	}
	return fi
}

// clip cuts s to at most n bytes.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Error codes on the wire: the DSI sentinels.
var errorCodes = []error{
	1:  dsi.ErrNotExist,
	2:  dsi.ErrExist,
	3:  dsi.ErrPermission,
	4:  dsi.ErrIsDir,
	5:  dsi.ErrNotDir,
	6:  dsi.ErrNotEmpty,
	7:  dsi.ErrNoSpace,
	8:  dsi.ErrInvalid,
	9:  dsi.ErrReadOnly,
	10: dsi.ErrNotSupported,
}

// errorCode returns the wire code of err's sentinel, or 0. The codes are
// tried from the last: the DSI's own sentinels are more specific than the
// io/fs ones (an ENOTEMPTY errno also matches fs.ErrExist).
func errorCode(err error) byte {
	for code := len(errorCodes) - 1; code > 0; code-- {
		if errors.Is(err, errorCodes[code]) {
			return byte(code)
		}
	}
	return 0
}

// appendError encodes err as a reply body.
func appendError(b []byte, err error) []byte {
	b = appendU8(b, errorCode(err))
	return appendString(b, clip(err.Error(), maxText))
}

// decodeError decodes an error reply body for op on name.
func decodeError(body []byte, op, name string) error {
	d := decoder{b: body}
	code := d.u8("error code")
	text := d.str("error text")
	if err := d.end(); err != nil {
		return err
	}
	e := &Error{Op: op, Path: name, Text: text}
	if int(code) < len(errorCodes) {
		e.Kind = errorCodes[code]
	}
	return e
}

// Error is a failure the helper reported. It wraps the DSI sentinel (Kind)
// so that errors.Is matches it.
type Error struct {
	Op   string // the operation: "stat", "open", ...
	Path string // the DSI name
	Kind error  // a dsi sentinel, or nil when none applies
	Text string // the helper's error text
}

// Error returns "privsep: " and the helper's text.
func (e *Error) Error() string { return "privsep: " + e.Text }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Kind }
