//go:build unix

package privsep

import (
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

func TestFileInfoRoundTrip(t *testing.T) {
	for _, fi := range []dsi.FileInfo{
		{Name: "/", Mode: fs.ModeDir | 0o755, UID: -1, GID: -1},
		{Name: "a.dat", Size: 1 << 40, Mode: 0o644, ModTime: time.Unix(1700000000, 123456789),
			Owner: "alice", Group: "grid", UID: 1000, GID: 100, Unique: "803-1f", Link: "../b"},
		{Name: "x", Mode: fs.ModeSymlink | 0o777, ModTime: time.Unix(-5, 0)},
	} {
		b := appendFileInfo(nil, fi)
		d := decoder{b: b}
		got := d.fileInfo()
		if err := d.end(); err != nil {
			t.Fatalf("%+v: %v", fi, err)
		}
		if !got.ModTime.Equal(fi.ModTime) {
			t.Errorf("ModTime %v; want %v", got.ModTime, fi.ModTime)
		}
		got.ModTime = fi.ModTime
		if got != fi {
			t.Errorf("round trip %+v; want %+v", got, fi)
		}
		// Every strict prefix fails cleanly.
		for i := range b {
			d := decoder{b: b[:i]}
			d.fileInfo()
			if d.end() == nil {
				t.Errorf("prefix of %d bytes decoded", i)
			}
		}
	}
}

func TestErrorCodes(t *testing.T) {
	for _, s := range errorCodes[1:] {
		err := decodeError(appendError(nil, &fs.PathError{Op: "x", Path: "/p", Err: s}), "stat", "/p")
		if !errors.Is(err, s) {
			t.Errorf("%v did not survive the wire: %v", s, err)
		}
	}
	err := decodeError(appendError(nil, errors.New("odd")), "stat", "/p")
	var e *Error
	if !errors.As(err, &e) || e.Kind != nil || e.Text != "odd" || err.Error() != "privsep: odd" {
		t.Errorf("plain error became %#v", err)
	}
}

func TestParseHeader(t *testing.T) {
	good := appendHeader(nil, header{op: opStat, flags: flagMore, id: 42})
	if h, body, err := parseHeader(good); err != nil || h.id != 42 || h.op != opStat || len(body) != 0 {
		t.Fatalf("parseHeader = %+v, %v", h, err)
	}
	for i := range good {
		if _, _, err := parseHeader(good[:i]); err == nil {
			t.Errorf("prefix of %d bytes parsed", i)
		}
	}
	for _, bad := range [][]byte{
		{2, opStat, 0, 0, 0, 0, 0, 1},           // version
		{version, 0, 0, 0, 0, 0, 0, 1},          // op 0
		{version, opLast + 1, 0, 0, 0, 0, 0, 1}, // unknown op
		{version, opStat, 0x80, 0, 0, 0, 0, 1},  // flags
		{version, opStat, 0, 1, 0, 0, 0, 1},     // reserved
		make([]byte, maxPacket+1),
	} {
		if _, _, err := parseHeader(bad); !errors.Is(err, errMalformed) {
			t.Errorf("parseHeader(% x) = %v", bad[:min(8, len(bad))], err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(appendFileInfo(nil, dsi.FileInfo{Name: "a", ModTime: time.Unix(1, 2)}))
	f.Add(appendError(nil, dsi.ErrExist))
	f.Add([]byte{0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decoder{b: b}
		d.fileInfo()
		d.end()
		decodeError(b, "x", "/")
		d = decoder{b: b}
		d.name("n")
		d.time("t")
		d.end()
		parseHeader(b)
	})
}
