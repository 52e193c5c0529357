package pi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"syscall"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// TestFSErrorCodes: each storage error gets its reply, also when its
// cause (an errno) matches more than one sentinel.
func TestFSErrorCodes(t *testing.T) {
	s := &session{log: slog.New(slog.DiscardHandler), cwd: "/"}
	for _, c := range []struct {
		err  error
		code int
		text string
	}{
		{&posix.Error{Op: "rmdir", Path: "/d", Kind: dsi.ErrNotEmpty, Err: syscall.ENOTEMPTY}, 550, "/d: Directory not empty."},
		{&posix.Error{Op: "mkdir", Path: "/d", Kind: dsi.ErrExist, Err: syscall.EEXIST}, 553, "/d: File exists."},
		{fmt.Errorf("rmdir: %w", dsi.ErrNotEmpty), 550, "/d: Directory not empty."},
		{&posix.Error{Op: "open", Path: "/d", Kind: dsi.ErrNotExist, Err: syscall.ENOENT}, 550, "/d: No such file or directory."},
		{&posix.Error{Op: "write", Path: "/d", Kind: dsi.ErrNoSpace, Err: syscall.ENOSPC}, 452, "/d: Insufficient storage space."},
	} {
		r := fsError(s, c.err, "/d")
		if r.Code != c.code || r.Lines[0] != c.text {
			t.Errorf("%v: %d %q, want %d %q", c.err, r.Code, r.Lines[0], c.code, c.text)
		}
	}
}

func TestWithoutAddress(t *testing.T) {
	for in, want := range map[string]string{
		"stripe 0 10.0.0.2:2812 up since 2026-11-27T08:18:34Z":                                               "stripe 0 up since 2026-11-27T08:18:34Z",
		"stripe 1 10.0.0.3:2812 down (mover 10.0.0.3:2812 closed the connection) since 2026-11-27T08:18:36Z": "stripe 1 down since 2026-11-27T08:18:36Z",
		"something else": "stripe status hidden",
	} {
		if got := withoutAddress(in); got != want {
			t.Errorf("withoutAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDataErrorText(t *testing.T) {
	for in, want := range map[string]string{
		"too many data connections were refused; the last one was refused: a connection from 127.0.0.5:35297: not the client's host 127.0.0.9": "too many data connections were refused; the last one was refused: a connection from (address): not the client's host (address)",
		"no data connection within 1m0s":              "no data connection within 1m0s",
		"peer [2001:db8::1]:2811 is not ours":         "peer (address) is not ours",
		"mover 127.0.0.3:43303 closed the connection": "mover 127.0.0.3:43303 closed the connection",
	} {
		if got := dataErrorText(errors.New(in)); got != want {
			t.Errorf("dataErrorText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRate(t *testing.T) {
	r := NewRate(3, 0.000001) // no refill to speak of
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for i := range 3 {
		if !r.Allow(a) {
			t.Fatalf("event %d of a burst of 3 refused", i+1)
		}
	}
	if r.Allow(a) {
		t.Error("a fourth event allowed")
	}
	if !r.Allow(b) {
		t.Error("another source refused")
	}
	// An IPv6 /64 is one source.
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	for range 3 {
		r.Allow(v6a)
	}
	if r.Allow(v6b) {
		t.Error("another address of the same /64 allowed past the burst")
	}
	var none *Rate
	if !none.Allow(a) {
		t.Error("a nil Rate refused")
	}
}
