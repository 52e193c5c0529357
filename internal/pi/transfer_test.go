package pi_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/wire"
)

// retr downloads name over a fresh passive connection.
func (c *ctl) retr(name string) ([]byte, wire.Reply) {
	c.t.Helper()
	d := c.dataConn()
	c.send("RETR " + name)
	r := c.read()
	if r.Class() != 1 {
		return nil, r
	}
	d.SetReadDeadline(time.Now().Add(30 * time.Second))
	data, err := io.ReadAll(d)
	if err != nil {
		c.t.Fatalf("RETR %s: read data: %v", name, err)
	}
	return data, c.read()
}

// stor uploads data as name with verb (STOR or APPE) over a passive connection.
func (c *ctl) stor(verb, name string, data []byte) wire.Reply {
	c.t.Helper()
	d := c.dataConn()
	c.send(verb + " " + name)
	r := c.read()
	if r.Class() != 1 {
		return r
	}
	d.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := d.Write(data); err != nil {
		c.t.Fatalf("%s %s: write data: %v", verb, name, err)
	}
	d.Close()
	return c.read()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(b)
	return b
}

func TestStoreRetrieveRoundTrip(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	for _, n := range []int{0, 1, 4096, 3<<20 + 17} {
		data := randomBytes(n)
		if r := c.stor("STOR", "/f", data); r.Code != 226 {
			t.Fatalf("STOR %d bytes: %v", n, r)
		}
		got, r := c.retr("/f")
		if r.Code != 226 || !bytes.Equal(got, data) {
			t.Fatalf("RETR %d bytes: %v, %d bytes back, equal %v", n, r, len(got), bytes.Equal(got, data))
		}
	}
}

func TestActiveMode(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c.expect("EPRT "+wire.FormatEPRT(l.Addr().(*net.TCPAddr).AddrPort()), 200)
	c.send("RETR /a.txt")
	if r := c.read(); r.Code != 150 {
		t.Fatalf("RETR: %v", r)
	}
	d, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := io.ReadAll(d)
	if r := c.read(); r.Code != 226 || string(data) != "hello\nworld\n" {
		t.Fatalf("got %v %q", r, data)
	}
	// PORT is single-use: the next transfer needs a new data address.
	c.expect("RETR /a.txt", 425)
}

func TestRestartAndAppend(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("REST 6", 350)
	got, r := c.retr("/a.txt")
	if r.Code != 226 || string(got) != "world\n" {
		t.Fatalf("REST 6 + RETR: %v %q", r, got)
	}
	// STOR after REST writes at the offset and keeps the tail.
	c.expect("REST 2", 350)
	if r := c.stor("STOR", "/a.txt", []byte("LL")); r.Code != 226 {
		t.Fatal(r)
	}
	if got, _ := c.retr("/a.txt"); string(got) != "heLLo\nworld\n" {
		t.Fatalf("after REST STOR: %q", got)
	}
	if r := c.stor("APPE", "/a.txt", []byte("more\n")); r.Code != 226 {
		t.Fatal(r)
	}
	if got, _ := c.retr("/a.txt"); string(got) != "heLLo\nworld\nmore\n" {
		t.Fatalf("after APPE: %q", got)
	}
	// Plain STOR truncates.
	if r := c.stor("STOR", "/a.txt", []byte("x")); r.Code != 226 {
		t.Fatal(r)
	}
	if got, _ := c.retr("/a.txt"); string(got) != "x" {
		t.Fatalf("after STOR: %q", got)
	}
}

func TestTypeASCII(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("TYPE A", 200)
	got, r := c.retr("/a.txt")
	if r.Code != 226 || string(got) != "hello\r\nworld\r\n" {
		t.Fatalf("TYPE A RETR: %v %q", r, got)
	}
	if r := c.stor("STOR", "/t.txt", []byte("one\r\ntwo\r\n\r")); r.Code != 226 {
		t.Fatal(r)
	}
	c.expect("TYPE I", 200)
	if got, _ := c.retr("/t.txt"); string(got) != "one\ntwo\n\r" {
		t.Fatalf("TYPE A STOR stored %q", got)
	}
}

func TestListings(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	list := func(cmd string) (string, wire.Reply) {
		d := c.dataConn()
		c.send(cmd)
		r := c.read()
		if r.Class() != 1 {
			return "", r
		}
		data, _ := io.ReadAll(d)
		return string(data), c.read()
	}
	if got, r := list("NLST"); r.Code != 226 || got != "a.txt\r\ndir\r\nempty\r\n" {
		t.Errorf("NLST: %v %q", r, got)
	}
	got, r := list("MLSD /dir")
	want := []string{"Type=cdir;", "Type=pdir;", "Type=file;Modify=20260102030405;Size=3;"}
	for _, w := range want {
		if r.Code != 226 || !strings.Contains(got, w) {
			t.Errorf("MLSD: %v %q lacks %q", r, got, w)
		}
	}
	if !strings.HasSuffix(got, "; b.txt\r\n") {
		t.Errorf("MLSD: %q", got)
	}
	if got, r := list("LIST -la /dir"); r.Code != 226 || !strings.HasPrefix(got, "-rw-r--r--") || !strings.HasSuffix(got, " b.txt\r\n") {
		t.Errorf("LIST: %v %q", r, got)
	}
	if _, r := list("MLSD /missing"); r.Code != 550 {
		t.Errorf("MLSD of a missing directory: %v", r)
	}
}

func TestNoDataAddress(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("RETR /a.txt", 425)
	c.expect("STOR /new", 425)
	c.expect("SIZE /new", 550) // a failed STOR leaves no empty file behind
}

func TestReadOnlyAccount(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.expect("USER reader", 331)
	c.expect("PASS any", 230)
	c.expect("TYPE I", 200)
	c.expect("STOR /x", 550)
	c.expect("MKD /x", 550)
	c.expect("DELE /a.txt", 550)
	c.expect("RNFR /a.txt", 350)
	c.expect("RNTO /b.txt", 550)
	if got, r := c.retr("/a.txt"); r.Code != 226 || string(got) != "hello\nworld\n" {
		t.Fatalf("read-only RETR: %v %q", r, got)
	}
}

func TestAbortDuringTransfer(t *testing.T) {
	st := seed(t)
	big := randomBytes(64 << 20)
	w, _ := st.Create(context.Background(), "/big", dsi.CreateOptions{Truncate: true})
	w.WriteAt(big, 0)
	w.Close()
	c := dial(t, serve(t, config(st)))
	c.login()
	d := c.dataConn() // never read: the server blocks once buffers fill
	c.send("RETR /big")
	if r := c.read(); r.Code != 150 {
		t.Fatal(r)
	}
	c.send("ABOR")
	if r := c.read(); r.Code != 426 {
		t.Fatalf("aborted transfer: %v", r)
	}
	if r := c.read(); r.Code != 226 {
		t.Fatalf("ABOR: %v", r)
	}
	d.Close()
	c.expect("NOOP", 200) // the session goes on
}

func TestBrokenUploadIsReportedIncomplete(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	d := c.dataConn()
	c.send("STOR /partial")
	if r := c.read(); r.Code != 150 {
		t.Fatal(r)
	}
	d.Write(randomBytes(1 << 20))
	// Reset, not a clean close: in stream mode only a clean close means EOF.
	d.(*net.TCPConn).SetLinger(0)
	d.Close()
	r := c.read()
	if r.Code != 426 || !strings.Contains(r.Text(), "incomplete") {
		t.Fatalf("broken STOR: %v", r)
	}
}

func TestForeignDataConnectionIgnored(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	r := c.expect("EPSV", 229)
	ap, _ := wire.ParseEPSVReply(r.Text())
	target := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port()).String()
	// A stray connection from another address arrives first.
	stray, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	d, err := net.Dial("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c.send("RETR /a.txt")
	if r := c.read(); r.Code != 150 {
		t.Fatal(r)
	}
	data, _ := io.ReadAll(d)
	if r := c.read(); r.Code != 226 || string(data) != "hello\nworld\n" {
		t.Fatalf("got %v %q", r, data)
	}
	stray.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _ := stray.Read(make([]byte, 1)); n != 0 {
		t.Fatal("the stray connection received data")
	}
}

func TestLongLineAndEmptyLine(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.expect(strings.Repeat("A", 100<<10), 500)
	c.expect("", 500)
	c.expect("NOOP", 200)
}

// panicky is storage whose Stat panics, to check that a panic stays in its session.
type panicky struct{ dsi.Storage }

func (p panicky) Stat(ctx context.Context, name string) (dsi.FileInfo, error) {
	if name == "/panic" {
		panic("secret internal detail")
	}
	return p.Storage.Stat(ctx, name)
}

func TestPanicEndsOnlyItsSession(t *testing.T) {
	addr := serve(t, config(panicky{seed(t)}))
	c1 := dial(t, addr)
	c1.login()
	c2 := dial(t, addr)
	c2.login()
	r := c1.do("SIZE /panic")
	if r.Code != 421 || strings.Contains(r.Text(), "secret") {
		t.Fatalf("panic reply: %v", r)
	}
	c2.expect("SIZE /a.txt", 213)
}

// stallConfig is config with a short data stall timeout.
func stallConfig(st dsi.Storage) *pi.Config {
	cfg := config(st)
	cfg.NewDTP = func(c net.Conn) pi.DTP {
		return dtp.New(dtp.Config{
			ControlLocal:   c.LocalAddr().(*net.TCPAddr).AddrPort(),
			ControlPeer:    c.RemoteAddr().(*net.TCPAddr).AddrPort(),
			ConnectTimeout: 10 * time.Second,
			StallTimeout:   300 * time.Millisecond,
		})
	}
	return cfg
}

func TestStalledPeersFail(t *testing.T) {
	st := seed(t)
	w, _ := st.Create(context.Background(), "/big", dsi.CreateOptions{Truncate: true})
	w.WriteAt(randomBytes(64<<20), 0)
	w.Close()
	for _, mode := range []string{"S", "E"} {
		t.Run("upload stops sending, MODE "+mode, func(t *testing.T) {
			c := dial(t, serve(t, stallConfig(st)))
			c.login()
			c.expect("MODE "+mode, 200)
			d := c.dataConn()
			c.send("STOR /stalled")
			if r := c.read(); r.Code != 150 {
				t.Fatal(r)
			}
			if mode == "S" {
				d.Write([]byte("some bytes, then silence"))
			}
			rs := c.readUntilFinal()
			if r := rs[len(rs)-1]; r.Code != 426 || !strings.Contains(r.Text(), "no data moved") {
				t.Fatalf("stalled upload: %v", r)
			}
		})
	}
	t.Run("download never read, MODE S", func(t *testing.T) {
		c := dial(t, serve(t, stallConfig(st)))
		c.login()
		c.dataConn() // connected, never read: the server's sends block
		c.send("RETR /big")
		if r := c.read(); r.Code != 150 {
			t.Fatal(r)
		}
		if r := c.read(); r.Code != 426 || !strings.Contains(r.Text(), "no data moved") {
			t.Fatalf("stalled download: %v", r)
		}
	})
}

func TestStreamRetrieveMarkers(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("OPTS RETR markers=3600;", 200)
	d := c.dataConn()
	c.send("RETR /a.txt")
	var codes []int
	for r := c.read(); ; r = c.read() {
		codes = append(codes, r.Code)
		if r.Code == 112 && !strings.Contains(r.Text(), "Stripe Bytes Transferred:") {
			t.Fatalf("perf marker %q", r.Text())
		}
		if r.Class() != 1 {
			break
		}
	}
	io.ReadAll(d)
	// 150, a start marker, a final marker (with every byte), 226.
	if len(codes) != 4 || codes[0] != 150 || codes[1] != 112 || codes[2] != 112 || codes[3] != 226 {
		t.Fatalf("replies %v", codes)
	}
}
