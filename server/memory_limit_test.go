package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
	"github.com/ferrygrid/ferry/server"
)

// hugeOffset is the offset of the "one command kills a -storage memory
// server" finding: 100 GB, far more than the test machine's memory.
const hugeOffset = 100_000_000_000

// TestMemoryStorageHugeOffset: an anonymous client of a server on the
// memory back-end (ferry serve -storage memory) writes one byte at a 100 GB
// offset in every way the protocol allows. Each upload must be refused
// with 452 instead of growing a file to 100 GB (which ended the process
// with "fatal error: runtime: out of memory"), and the session must go on.
func TestMemoryStorageHugeOffset(t *testing.T) {
	st := memory.New()
	_, addr, _ := start(t, server.Config{Storage: st, Anonymous: true, AnonymousWrite: true})
	c := dial(t, addr)
	if r := c.read(); r.Code != 220 {
		t.Fatal(r)
	}
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	c.expect("TYPE I", 200)

	one := []byte{'x'}
	for _, tc := range []struct {
		name string
		pre  []string // commands before the upload, each expecting 2xx or 3xx
		cmd  string
		send func(d net.Conn) error
	}{
		{"ESTO stream", nil, "ESTO A 100000000000 /x", rawSend(one)},
		{"REST+STOR stream", []string{"REST 100000000000"}, "STOR /y", rawSend(one)},
		{"ESTO MODE E", []string{"MODE E"}, "ESTO A 100000000000 /z", blockSend(0)},
		{"MODE E block offset", []string{"MODE E"}, "STOR /w", blockSend(hugeOffset)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.pre {
				c.c.Write([]byte(p + "\r\n"))
				if r := c.read(); r.Class() != 2 && r.Class() != 3 {
					t.Fatalf("%s: %v", p, r)
				}
			}
			final := c.pasvStore(tc.cmd, tc.send)
			if final.Code != 452 {
				t.Errorf("%s: final reply %v, want 452", tc.cmd, final)
			}
			// The server is alive and the session serves the next command.
			c.expect("NOOP", 200)
			c.expect("MODE S", 200)
		})
	}

	// ALLO announces the size: the upload is refused before any data.
	c.expect("ALLO 100000000000", 200)
	if final := c.pasvStore("STOR /v", rawSend(one)); final.Code != 452 {
		t.Errorf("ALLO 1e11 + STOR: %v, want 452", final)
	}

	// Ordinary uploads still work.
	if final := c.pasvStore("STOR /ok", rawSend([]byte("hello"))); final.Code != 226 {
		t.Fatalf("STOR after the refusals: %v", final)
	}
	c.expect("SIZE /ok", 213)
	ctx := context.Background()
	for _, p := range []string{"/x", "/y", "/z", "/w"} {
		if fi, err := st.Stat(ctx, p); err == nil && fi.Size > 1 {
			t.Errorf("%s holds %d bytes", p, fi.Size)
		}
	}
}

// pasvStore runs an upload command over a passive data connection: it
// sends cmd, connects, lets send write the data (when the server accepts
// the transfer) and returns the final reply.
func (c *client) pasvStore(cmd string, send func(net.Conn) error) wire.Reply {
	c.t.Helper()
	c.c.Write([]byte("PASV\r\n"))
	r := c.read()
	if r.Code != 227 {
		c.t.Fatalf("PASV: %v", r)
	}
	ap, err := wire.ParsePASVReply(r.Text())
	if err != nil {
		c.t.Fatal(err)
	}
	c.c.Write([]byte(cmd + "\r\n"))
	d, err := net.Dial("tcp", ap.String())
	if err != nil {
		c.t.Fatal(err)
	}
	defer d.Close()
	d.SetDeadline(time.Now().Add(30 * time.Second))
	r = c.read()
	if r.Class() != 1 {
		return r
	}
	if err := send(d); err != nil {
		c.t.Logf("%s: sending data: %v", cmd, err)
	}
	for r.Class() == 1 {
		r = c.read()
	}
	return r
}

// rawSend writes data in stream mode and closes the connection (EOF).
func rawSend(data []byte) func(net.Conn) error {
	return func(d net.Conn) error {
		_, err := d.Write(data)
		d.Close()
		return err
	}
}

// blockSend sends one MODE E block holding one byte at file offset off,
// then EOD and EOF.
func blockSend(off int64) func(net.Conn) error {
	return func(d net.Conn) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := eblock.Send(ctx, []net.Conn{d}, byteAt(off), []xfer.Range{{Start: off, End: off + 1}}, eblock.SendConfig{})
		return err
	}
}

// byteAt is a source holding a single 'x' at its offset and nothing else.
type byteAt int64

func (b byteAt) ReadAt(p []byte, off int64) (int, error) {
	for i := range p {
		p[i] = 0
		if off+int64(i) == int64(b) {
			p[i] = 'x'
		}
	}
	return len(p), nil
}
