package pi_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// memDst collects a MODE E download.
type memDst struct {
	mu sync.Mutex
	b  []byte
}

func (m *memDst) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if need := int(off) + len(p); need > len(m.b) {
		m.b = append(m.b, make([]byte, need-len(m.b))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memDst) Close() error { return nil }

// modeEStore uploads data with n connections after PASV; it returns the
// replies after the preliminary one (markers included, 226 last).
func (c *ctl) modeEStore(cmd string, data []byte, n int, ranges []xfer.Range) (prelim wire.Reply, rest []wire.Reply) {
	c.t.Helper()
	r := c.expect("PASV", 227)
	ap, err := wire.ParsePASVReply(r.Text())
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(cmd)
	conns := make([]net.Conn, n)
	for i := range conns {
		d, err := net.Dial("tcp", ap.String())
		if err != nil {
			c.t.Fatal(err)
		}
		defer d.Close()
		conns[i] = d
	}
	prelim = c.read()
	if prelim.Class() != 1 {
		return prelim, nil
	}
	if ranges == nil {
		ranges = []xfer.Range{{Start: 0, End: int64(len(data))}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := eblock.Send(ctx, conns, bytes.NewReader(data), ranges, eblock.SendConfig{BlockSize: 65536}); err != nil {
		c.t.Fatalf("send: %v", err)
	}
	return prelim, c.readUntilFinal()
}

func (c *ctl) readUntilFinal() []wire.Reply {
	c.t.Helper()
	var rs []wire.Reply
	for range 10000 {
		r := c.read()
		rs = append(rs, r)
		if r.Class() != 1 {
			return rs
		}
	}
	c.t.Fatal("no final reply")
	return nil
}

// modeERetrieve downloads with the client listening (PORT), as GCT requires.
func (c *ctl) modeERetrieve(cmd string, parallel int) ([]byte, wire.Reply) {
	c.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	defer l.Close()
	c.expect("OPTS RETR Parallelism="+strconv.Itoa(parallel)+","+strconv.Itoa(parallel)+","+strconv.Itoa(parallel)+";", 200)
	hp, _ := wire.FormatPORT(l.Addr().(*net.TCPAddr).AddrPort())
	c.expect("PORT "+hp, 200)
	dst := &memDst{}
	rcv := eblock.NewReceiver(dst, eblock.ReceiveConfig{Limit: -1})
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			if !rcv.Add(conn) {
				conn.Close()
			}
		}
	}()
	c.send(cmd)
	prelim := c.read()
	if prelim.Class() != 1 {
		return nil, prelim
	}
	final := c.readUntilFinal()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rcv.Wait(ctx); err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	for _, conn := range rcv.All() {
		conn.Close()
	}
	return dst.b, final[len(final)-1]
}

func TestModeERoundTrip(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	c.expect("TREV PERF 3600", 200)
	// Only the final range marker, however long a loaded machine takes
	// (the default interval is 5 s).
	c.expect("TREV RESTART 3600", 200)
	for _, n := range []int{0, 1, 5<<20 + 3} {
		data := randomBytes(n)
		c.send("ALLO " + strconv.Itoa(n))
		c.read()
		prelim, rest := c.modeEStore("STOR /e", data, 4, nil)
		if prelim.Code != 150 || rest[len(rest)-1].Code != 226 {
			t.Fatalf("STOR %d: %v %v", n, prelim, rest)
		}
		// Start and final 112 markers, and a final 111 with everything.
		var perf, ranges int
		for _, r := range rest {
			switch r.Code {
			case 112:
				perf++
			case 111:
				ranges++
				if n > 0 && r.Text() != "Range Marker 0-"+strconv.Itoa(n) {
					t.Errorf("range marker %q", r.Text())
				}
			}
		}
		if perf < 2 || n > 0 && ranges != 1 {
			t.Errorf("STOR %d: %d perf markers, %d range markers", n, perf, ranges)
		}
		for _, p := range []int{1, 4} {
			got, r := c.modeERetrieve("RETR /e", p)
			if r.Code != 226 || !bytes.Equal(got, data) {
				t.Fatalf("RETR %d bytes p=%d: %v, got %d bytes", n, p, r, len(got))
			}
		}
	}
}

func TestModeEPartialAndRestart(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	data := randomBytes(100000)
	c.modeEStore("STOR /e", data, 2, nil)
	got, r := c.modeERetrieve("ERET P 1000 5000 /e", 2)
	if r.Code != 226 || !bytes.Equal(got, data[1000:6000]) {
		t.Fatalf("ERET: %v, %d bytes", r, len(got))
	}
	c.expect("REST 0-50000,60000-70000", 350)
	got, r = c.modeERetrieve("RETR /e", 3)
	if r.Code != 226 || len(got) != 100000 || !bytes.Equal(got[50000:60000], data[50000:60000]) ||
		!bytes.Equal(got[70000:], data[70000:]) || !bytes.Equal(got[:50000], make([]byte, 50000)) {
		t.Fatalf("REST ranges: %v, %d bytes", r, len(got))
	}
	// ESTO A writes the incoming bytes at the offset and keeps the rest.
	if _, rest := c.modeEStore("ESTO A 10 /e", []byte("XYZ"), 1, nil); rest[len(rest)-1].Code != 226 {
		t.Fatal(rest)
	}
	got, _ = c.modeERetrieve("RETR /e", 1)
	want := append(append(append([]byte{}, data[:10]...), "XYZ"...), data[13:]...)
	if !bytes.Equal(got, want) {
		t.Fatal("ESTO A did not land at its offset")
	}
}

func TestModeEDirectionRules(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	c.expect("PASV", 227)
	c.expect("RETR /a.txt", 425) // the sender must connect: PORT first
	c.expect("PORT 127,0,0,1,200,1", 200)
	c.expect("STOR /x", 425) // the receiver must listen: PASV first
}

func TestModeECacheReuse(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	r := c.expect("PASV", 227)
	ap, _ := wire.ParsePASVReply(r.Text())
	conns := make([]net.Conn, 2)
	for i := range conns {
		conns[i], _ = net.Dial("tcp", ap.String())
		defer conns[i].Close()
	}
	ctx := context.Background()
	for i, want := range []int{150, 125, 125} {
		c.send("STOR /cached")
		if r := c.read(); r.Code != want {
			t.Fatalf("transfer %d: %v, want %d", i, r, want)
		}
		if _, err := eblock.Send(ctx, conns, bytes.NewReader([]byte("abc")), []xfer.Range{{Start: 0, End: 3}}, eblock.SendConfig{}); err != nil {
			t.Fatal(err)
		}
		if rs := c.readUntilFinal(); rs[len(rs)-1].Code != 226 {
			t.Fatal(rs)
		}
	}
}

func TestModeEBadBlocks(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	c.expect("ALLO 10", 200)
	data := randomBytes(100)
	_, rest := c.modeEStoreRaw("STOR /bad", func(d net.Conn) {
		var h [eblock.HeaderSize]byte
		eblock.Header{Count: 100, Offset: 0}.Put(h[:])
		d.Write(h[:])
		d.Write(data)
	})
	// A connection whose first block is impossible never takes part (it
	// may be a stray, docs/bench/chaos.md): no connection arrived, and
	// the reply says why the last one was dropped.
	final := rest[len(rest)-1]
	if final.Class() != 4 || !strings.Contains(final.Text(), "past the announced size") {
		t.Fatalf("block past ALLO: %v", final)
	}
	c.expect("NOOP", 200)
}

// modeEStoreRaw runs cmd with one data connection driven by write.
func (c *ctl) modeEStoreRaw(cmd string, write func(net.Conn)) (wire.Reply, []wire.Reply) {
	c.t.Helper()
	r := c.expect("PASV", 227)
	ap, _ := wire.ParsePASVReply(r.Text())
	c.send(cmd)
	d, err := net.Dial("tcp", ap.String())
	if err != nil {
		c.t.Fatal(err)
	}
	defer d.Close()
	prelim := c.read()
	write(d)
	return prelim, c.readUntilFinal()
}

// TestSPORStripes: a single-node sender deals a file to two receiving
// stripes (SPOR); each stripe is a MODE E transfer of its own with its own
// EOF, and together they hold the file.
func TestSPORStripes(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	data := randomBytes(3<<20 + 12345)
	c.modeEStore("STOR /striped", data, 2, nil)
	r := c.expect("SPAS", 229)
	if len(r.Lines) != 3 || !strings.HasPrefix(r.Lines[0], "Entering Striped Passive Mode") {
		t.Fatalf("SPAS: %q", r.Lines)
	}
	for _, layout := range []string{"StripeLayout=Blocked;BlockSize=65536;", "StripeLayout=Partitioned;"} {
		c.expect("OPTS RETR "+layout+"Parallelism=2,2,2;", 200)
		dst := &memDst{}
		var hps []string
		var rcvs []*eblock.Receiver
		for range 2 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			hp, _ := wire.FormatPORT(l.Addr().(*net.TCPAddr).AddrPort())
			hps = append(hps, hp)
			rcv := eblock.NewReceiver(dst, eblock.ReceiveConfig{Limit: -1})
			rcvs = append(rcvs, rcv)
			go func() {
				for {
					conn, err := l.Accept()
					if err != nil {
						return
					}
					if !rcv.Add(conn) {
						conn.Close()
					}
				}
			}()
		}
		c.expect("SPOR "+strings.Join(hps, " "), 200)
		c.send("RETR /striped")
		if r := c.read(); r.Class() != 1 {
			t.Fatal(r)
		}
		if rs := c.readUntilFinal(); rs[len(rs)-1].Code != 226 {
			t.Fatal(rs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var per []int64
		for _, rcv := range rcvs {
			n, err := rcv.Wait(ctx)
			if err != nil {
				t.Fatalf("%s: stripe: %v", layout, err)
			}
			per = append(per, n)
			for _, conn := range rcv.All() {
				conn.Close()
			}
		}
		cancel()
		if !bytes.Equal(dst.b, data) || per[0] == 0 || per[1] == 0 {
			t.Fatalf("%s: %d bytes back (per stripe %v)", layout, len(dst.b), per)
		}
	}
}
