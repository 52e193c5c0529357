package server_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/server"
)

func start(t *testing.T, cfg server.Config) (*server.Server, string, <-chan error) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return srv, l.Addr().String(), errc
}

type client struct {
	t  *testing.T
	c  net.Conn
	rr *wire.ReplyReader
}

func dial(t *testing.T, addr string) *client {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return &client{t: t, c: c, rr: wire.NewReplyReader(c)}
}

func (c *client) read() wire.Reply {
	c.t.Helper()
	r, err := c.rr.ReadReply()
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

func (c *client) expect(line string, code int) {
	c.t.Helper()
	c.c.Write([]byte(line + "\r\n"))
	if r := c.read(); r.Code != code {
		c.t.Fatalf("%s: %v, want %d", line, r, code)
	}
}

func TestShutdown(t *testing.T) {
	srv, addr, errc := start(t, server.Config{Storage: memory.New(), Anonymous: true})
	c := dial(t, addr)
	if r := c.read(); r.Code != 220 {
		t.Fatal(r)
	}
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if r := c.read(); r.Code != 421 {
		t.Fatalf("idle session at shutdown: %v", r)
	}
	if err := <-errc; !errors.Is(err, server.ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("still accepting after Shutdown")
	}
}

func TestMaxSessions(t *testing.T) {
	srv, addr, _ := start(t, server.Config{Storage: memory.New(), Anonymous: true, MaxSessions: 1})
	c1 := dial(t, addr)
	if r := c1.read(); r.Code != 220 {
		t.Fatal(r)
	}
	c1.expect("USER anonymous", 331)
	c1.expect("PASS x", 230)
	c2 := dial(t, addr)
	if r := c2.read(); r.Code != 421 {
		t.Fatalf("second session: %v", r)
	}
	c1.expect("QUIT", 221)
	// Once the first session is gone, a new one is welcome.
	deadline := time.Now().Add(30 * time.Second)
	for srv.Sessions() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	c3 := dial(t, addr)
	if r := c3.read(); r.Code != 220 {
		t.Fatalf("third session: %v", r)
	}
}

func TestHomeAndLogins(t *testing.T) {
	st := memory.New()
	ctx := context.Background()
	st.Mkdir(ctx, "/home", 0o755)
	st.Mkdir(ctx, "/home/alice", 0o755)
	w, _ := st.Create(ctx, "/home/alice/mine", dsi.CreateOptions{Truncate: true})
	w.Close()
	w, _ = st.Create(ctx, "/top", dsi.CreateOptions{Truncate: true})
	w.Close()
	_, addr, _ := start(t, server.Config{
		Storage: st,
		Authenticate: func(ctx context.Context, user, pass string) (*server.Account, error) {
			if user == "alice" && pass == "pw" {
				return &server.Account{Name: "alice", Home: "/home/alice", Writable: true}, nil
			}
			return nil, server.ErrLoginDenied
		},
	})
	c := dial(t, addr)
	c.read()
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 530) // anonymous not enabled
	c.expect("USER alice", 331)
	c.expect("PASS bad", 530)
	c.expect("USER alice", 331)
	c.expect("PASS pw", 230)
	c.expect("SIZE /mine", 213)
	c.expect("SIZE /top", 550)
	c.expect("SIZE ../../top", 550)
	c.expect("MKD /new", 257)
	if _, err := st.Stat(ctx, "/home/alice/new"); err != nil {
		t.Fatalf("MKD did not land in the home: %v", err)
	}
}

// TestStripedRefusesUserStorage: movers open files with their own
// identity, so a striped server cannot promise per-user storage.
func TestStripedRefusesUserStorage(t *testing.T) {
	_, err := server.New(server.Config{
		Storage: memory.New(), Anonymous: true,
		Movers: []string{"127.0.0.2:1"}, MoverSecret: []byte("0123456789abcdef"),
		UserStorage: func(context.Context, string) (dsi.Storage, error) { return memory.New(), nil },
	})
	if err == nil || !strings.Contains(err.Error(), "Movers") || !strings.Contains(err.Error(), "UserStorage") {
		t.Fatalf("New with Movers and UserStorage: %v", err)
	}
}
