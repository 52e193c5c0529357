package pi_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/wire"
)

// fixedTime is the modification time of the seeded test files.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// seed builds the storage the tests serve: /a.txt, /dir/b.txt, /empty.
func seed(t testing.TB) dsi.Storage {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	put := func(name, content string) {
		w, err := st.Create(ctx, name, dsi.CreateOptions{Truncate: true, Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt([]byte(content), 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := st.Chtimes(ctx, name, fixedTime); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Mkdir(ctx, "/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	put("/a.txt", "hello\nworld\n")
	put("/dir/b.txt", "bee")
	put("/empty", "")
	if err := st.Chtimes(ctx, "/dir", fixedTime); err != nil {
		t.Fatal(err)
	}
	return st
}

// config is a PI configuration over st with three accounts: anonymous and
// alice (password "secret") may write, reader may only read.
func config(st dsi.Storage) *pi.Config {
	return &pi.Config{
		Banner:  "ferry test server ready.",
		Version: "Ferry test",
		Login: func(ctx context.Context, req pi.LoginRequest) (*pi.Account, error) {
			user, pass := req.User, req.Password
			switch {
			case user == "anonymous", user == "alice" && pass == "secret":
				return &pi.Account{Name: user, Storage: st, Writable: true}, nil
			case user == "reader":
				return &pi.Account{Name: user, Storage: dsi.ReadOnly(st)}, nil
			}
			return nil, pi.ErrLoginDenied
		},
		NewDTP: func(c net.Conn) pi.DTP {
			cfg := dtp.Config{ConnectTimeout: 10 * time.Second}
			if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
				cfg.ControlLocal = a.AddrPort()
			}
			if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
				cfg.ControlPeer = a.AddrPort()
			}
			return dtp.New(cfg)
		},
		IdleTimeout: time.Minute,
	}
}

// serve runs PI sessions for cfg on a loopback listener until the test ends.
func serve(t testing.TB, cfg *pi.Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { pi.Serve(ctx, c, cfg) })
		}
	})
	t.Cleanup(func() {
		cancel()
		l.Close()
		wg.Wait()
	})
	return l.Addr().String()
}

// ctl is a raw control-channel client for tests.
type ctl struct {
	t    testing.TB
	conn net.Conn
	rr   *wire.ReplyReader
}

func dial(t testing.TB, addr string) *ctl {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cc := &ctl{t: t, conn: c, rr: wire.NewReplyReader(c)}
	if r := cc.read(); r.Code != 220 {
		t.Fatalf("banner: %v", r)
	}
	return cc
}

func (c *ctl) send(line string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.conn.Write([]byte(line + "\r\n")); err != nil {
		c.t.Fatalf("send %q: %v", line, err)
	}
}

func (c *ctl) read() wire.Reply {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	r, err := c.rr.ReadReply()
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return r
}

// do sends line and returns its reply.
func (c *ctl) do(line string) wire.Reply {
	c.t.Helper()
	c.send(line)
	return c.read()
}

// expect sends line and fails unless the reply has code.
func (c *ctl) expect(line string, code int) wire.Reply {
	c.t.Helper()
	r := c.do(line)
	if r.Code != code {
		c.t.Fatalf("%s: got %d %q, want %d", line, r.Code, r.Text(), code)
	}
	return r
}

func (c *ctl) login() {
	c.t.Helper()
	c.expect("USER anonymous", 331)
	c.expect("PASS x@y", 230)
	c.expect("TYPE I", 200)
}

// dataConn opens a passive data connection (EPSV) for the next command.
func (c *ctl) dataConn() net.Conn {
	c.t.Helper()
	r := c.expect("EPSV", 229)
	ap, err := wire.ParseEPSVReply(r.Text())
	if err != nil {
		c.t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(c.conn.RemoteAddr().String())
	d, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(ap.Port()))))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { d.Close() })
	return d
}
