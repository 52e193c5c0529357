package pi_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// pipelined sends lines in one write, as a pipelining client does.
func (c *ctl) pipelined(lines ...string) { c.send(strings.Join(lines, "\r\n")) }

// receiveOn reads one MODE E file from conns (and from l, when not nil,
// until the file is complete) and returns it with the connections to
// reuse.
func receiveOn(t *testing.T, conns []net.Conn, l net.Listener) ([]byte, []net.Conn) {
	t.Helper()
	dst := &memDst{}
	rcv := eblock.NewReceiver(dst, eblock.ReceiveConfig{Limit: -1})
	for _, c := range conns {
		rcv.Add(c)
	}
	if l != nil {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				if !rcv.Add(c) {
					c.Close()
				}
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rcv.Wait(ctx); err != nil {
		t.Fatalf("receive: %v", err)
	}
	return dst.b, rcv.Reusable()
}

// Downloads pipelined over cached MODE E connections: each file's blocks
// follow the previous file's EOF on the same connections, a refused RETR
// in between sends nothing, and a NOOP queued behind a transfer is
// answered after its 226.
func TestPipelinedRetrieve(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	c.expect("OPTS RETR Parallelism=2,2,2;", 200)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hp, _ := wire.FormatPORT(l.Addr().(*net.TCPAddr).AddrPort())
	c.expect("PORT "+hp, 200)
	c.pipelined("RETR a.txt", "NOOP", "RETR missing", "RETR dir/b.txt", "RETR empty", "RETR a.txt")

	if r := c.read(); r.Code != 150 {
		t.Fatalf("first RETR: %v", r)
	}
	got, conns := receiveOn(t, nil, l)
	l.Close()
	if string(got) != "hello\nworld\n" || len(conns) != 2 {
		t.Fatalf("first file %q over %d reusable connections", got, len(conns))
	}
	final := c.readUntilFinal()
	if r := final[len(final)-1]; r.Code != 226 {
		t.Fatalf("first RETR: %v", r)
	}
	if r := c.read(); r.Code != 200 {
		t.Fatalf("NOOP behind a transfer: %v", r)
	}
	if r := c.read(); r.Code != 550 {
		t.Fatalf("RETR missing: %v", r)
	}
	for _, want := range []string{"bee", "", "hello\nworld\n"} {
		if r := c.read(); r.Code != 125 {
			t.Fatalf("pipelined RETR: %v, want 125 (reuse)", r)
		}
		got, conns = receiveOn(t, conns, nil)
		if string(got) != want {
			t.Errorf("got %q, want %q", got, want)
		}
		final := c.readUntilFinal()
		if r := final[len(final)-1]; r.Code != 226 {
			t.Fatalf("pipelined RETR: %v", r)
		}
	}
	if len(conns) != 2 {
		t.Errorf("%d connections left to reuse, want 2", len(conns))
	}
}

// Uploads pipelined over cached MODE E connections, the client sending a
// file's blocks after its 150/125: a STOR refused in between reads nothing,
// and the next file's blocks land in the next file.
func TestPipelinedStore(t *testing.T) {
	st := seed(t)
	c := dial(t, serve(t, config(st)))
	c.login()
	c.expect("MODE E", 200)
	conn := c.dataConn()
	files := map[string][]byte{"u1": randomBytes(70000), "u2": randomBytes(16384), "u3": nil}
	c.pipelined("ALLO 70000", "STOR u1", "STAT", "STOR /nope/u", "STOR u2", "STOR u3")
	if r := c.read(); r.Code != 200 {
		t.Fatalf("ALLO: %v", r)
	}
	send := func(data []byte) {
		t.Helper()
		var ranges []xfer.Range
		if len(data) > 0 {
			ranges = []xfer.Range{{Start: 0, End: int64(len(data))}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := eblock.Send(ctx, []net.Conn{conn}, bytes.NewReader(data), ranges, eblock.SendConfig{BlockSize: 32768}); err != nil {
			t.Fatalf("send: %v", err)
		}
		final := c.readUntilFinal()
		if r := final[len(final)-1]; r.Code != 226 {
			t.Fatalf("STOR: %v", r)
		}
	}
	if r := c.read(); r.Code != 150 {
		t.Fatalf("STOR u1: %v", r)
	}
	send(files["u1"])
	if r := c.read(); r.Class() != 2 {
		t.Fatalf("STAT queued behind a transfer: %v", r)
	}
	if r := c.read(); r.Code != 550 {
		t.Fatalf("STOR into a missing directory: %v", r)
	}
	for _, name := range []string{"u2", "u3"} {
		if r := c.read(); r.Code != 125 {
			t.Fatalf("STOR %s: %v, want 125 (reuse)", name, r)
		}
		send(files[name])
	}
	for name, want := range files {
		r, err := st.Open(context.Background(), "/"+name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(io.NewSectionReader(r, 0, 1<<20))
		r.Close()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes stored, want %d", name, len(got), len(want))
		}
	}
}

// STOR-DRAIN: the client sends every file's blocks right behind its
// command, without waiting for 150/125. Uploads the server refuses before
// reading (missing directory, a directory, bad ESTO arguments, a
// read-only account) have their blocks drained, the rest land intact.
func TestPipelinedStoreDrain(t *testing.T) {
	st := seed(t)
	addr := serve(t, config(st))
	files := map[string][]byte{"u1": randomBytes(70000), "u2": randomBytes(300000), "u3": nil}
	type upload struct {
		cmd  string
		data []byte
		code []int // the replies, preliminary ones included
	}
	run := func(user string, ups []upload) {
		c := dial(t, addr)
		c.expect("USER "+user, 331)
		c.expect("PASS x", 230)
		c.expect("MODE E", 200)
		c.expect("OPTS PIPE STOR-DRAIN=ON", 200)
		// Two connections, accepted only by the first upload (or drain).
		conns := []net.Conn{c.dataConn()}
		d, err := net.Dial("tcp", conns[0].RemoteAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		conns = append(conns, d)
		var lines []string
		for _, u := range ups {
			lines = append(lines, u.cmd)
		}
		c.pipelined(append(lines, "NOOP")...)
		sent := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, u := range ups {
				if u.data == nil && strings.HasPrefix(u.cmd, "ALLO") {
					continue
				}
				var ranges []xfer.Range
				if len(u.data) > 0 {
					ranges = []xfer.Range{{Start: 0, End: int64(len(u.data))}}
				}
				if _, err := eblock.Send(ctx, conns, bytes.NewReader(u.data), ranges, eblock.SendConfig{BlockSize: 32768}); err != nil {
					sent <- err
					return
				}
			}
			sent <- nil
		}()
		for _, u := range ups {
			for _, want := range u.code {
				r := c.read()
				for r.Code >= 111 && r.Code <= 113 { // markers
					r = c.read()
				}
				if r.Code != want {
					t.Fatalf("%s %s: got %v, want %d", user, u.cmd, r, want)
				}
			}
		}
		if r := c.read(); r.Code != 200 {
			t.Fatalf("NOOP after the uploads: %v", r)
		}
		if err := <-sent; err != nil {
			t.Fatalf("sending: %v", err)
		}
	}
	junk := randomBytes(50000)
	run("anonymous", []upload{
		{cmd: "STOR /nope/first", data: junk, code: []int{550}},
		{cmd: "ALLO 70000", code: []int{200}},
		{cmd: "STOR u1", data: files["u1"], code: []int{125, 226}}, // the drain accepted the connections
		{cmd: "STOR /dir", data: junk[:100], code: []int{550}},
		{cmd: "ESTO A x y", data: nil, code: []int{501}},
		{cmd: "STOR u2", data: files["u2"], code: []int{125, 226}},
		{cmd: "APPE /nope/u", data: junk, code: []int{550}},
		{cmd: "STOR u3", data: files["u3"], code: []int{125, 226}},
		{cmd: "ESTO A 5 /nope/e", data: junk, code: []int{550}},
	})
	for name, want := range files {
		r, err := st.Open(context.Background(), "/"+name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(io.NewSectionReader(r, 0, 1<<20))
		r.Close()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes stored, want %d", name, len(got), len(want))
		}
	}
	// A read-only account: every upload refused, every one drained.
	run("reader", []upload{
		{cmd: "STOR r1", data: junk, code: []int{550}},
		{cmd: "STOR r2", data: nil, code: []int{550}},
		{cmd: "STOR r3", data: junk[:7], code: []int{550}},
	})
	if _, err := st.Stat(context.Background(), "/r1"); err == nil {
		t.Error("a read-only account stored a file")
	}
}
