package server_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/gss"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/server"
)

// TestPasswordChecksBounded: many connections guessing passwords at once
// run one hash at a time from their address, and each session is closed
// after its third failure (finding 8 of the security review).
func TestPasswordChecksBounded(t *testing.T) {
	var running, most atomic.Int32
	_, addr, _ := start(t, server.Config{
		Storage: memory.New(),
		Authenticate: func(ctx context.Context, user, pass string) (*server.Account, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond) // a slow hash
			if pass == "right" {
				return &server.Account{Name: user}, nil
			}
			return nil, server.ErrLoginDenied
		},
		LoginFailureDelay: 50 * time.Millisecond,
	})
	const guessers = 8
	var wg sync.WaitGroup
	codes := make([][]int, guessers)
	for i := range guessers {
		wg.Go(func() {
			c := dial(t, addr)
			c.read()
			for range 4 {
				if _, err := c.c.Write([]byte("USER alice\r\n")); err != nil {
					return
				}
				r := c.readOrClosed()
				if r == nil {
					codes[i] = append(codes[i], 0)
					return
				}
				start := time.Now()
				c.c.Write([]byte("PASS wrong\r\n"))
				r = c.readOrClosed()
				if r == nil {
					codes[i] = append(codes[i], 0)
					return
				}
				if r.Code == 530 && time.Since(start) < 50*time.Millisecond {
					t.Errorf("a failed login answered before the failure delay")
				}
				codes[i] = append(codes[i], r.Code)
				if r.Code == 421 {
					if c.readOrClosed() != nil {
						codes[i] = append(codes[i], -1) // still open
					}
					return
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d password checks ran at once for one address; want 1", m)
	}
	for i, cs := range codes {
		// 530, 530, then 421 and the session closed.
		if len(cs) != 3 || cs[0] != 530 || cs[1] != 530 || cs[2] != 421 {
			t.Errorf("guesser %d got %v; want [530 530 421] and the session closed", i, cs)
		}
	}
	// The right password still logs in.
	c := dial(t, addr)
	c.read()
	c.expect("USER alice", 331)
	c.expect("PASS right", 230)
}

// TestSessionsPerSourceDefault: one address cannot take every session of a
// server that was given no limits (finding 11).
func TestSessionsPerSourceDefault(t *testing.T) {
	_, addr, _ := start(t, server.Config{Storage: memory.New(), Anonymous: true})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range server.DefaultMaxSessionsPerSource {
		c := dial(t, addr)
		if r := c.read(); r.Code != 220 {
			t.Fatalf("session %d: %v", i, r)
		}
		conns = append(conns, c.c)
	}
	c := dial(t, addr)
	if r := c.read(); r.Code != 421 {
		t.Fatalf("session %d from one address: %v; want 421", server.DefaultMaxSessionsPerSource+1, r)
	}
	conns[0].Close()
	conns = conns[1:]
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := dial(t, addr)
		r := c.read()
		if r.Code == 220 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a freed session slot was not given back: %v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHandshakeSlots: sessions that start AUTH GSSAPI or AUTH TLS and then
// say nothing cannot keep other hosts from authenticating (finding 11 and
// the review after it): an idle GSI exchange holds no slot, and one host
// holds at most its share of the TLS handshakes.
func TestHandshakeSlots(t *testing.T) {
	pki := gsipki.New(t, "")
	addr := gsiServer(t, pki, nil) // the default limits
	for range server.DefaultMaxHandshakes + 8 {
		c := dial(t, addr)
		c.read()
		c.expect("AUTH GSSAPI", 334)
	}
	from := func(ip string) *client { return dialFrom(t, addr, ip) }
	// AUTH TLS, then no ClientHello, from eight hosts.
	for i := range server.DefaultMaxHandshakes + 8 {
		c := from(fmt.Sprintf("127.0.0.%d", 20+i%8))
		c.expect("AUTH TLS", 234)
	}
	// Another host authenticates both ways.
	other := func() *client { return from("127.0.0.2") }
	if code := adatExchange(t, other(), pki.User.TLSCertificate(), tls.VersionTLS13); code != 235 {
		t.Fatalf("GSI from another host behind idle exchanges: %d", code)
	}
	c := other()
	c.expect("AUTH TLS", 234)
	c.startTLS(nil)
	c.expect("USER pwuser", 331)
	c.expect("PASS right", 230)
}

// TestIdleUnauthenticatedSessions: connections that never log in cannot
// keep a full server from new clients (they are closed to make room, the
// source holding most of them first), and none outlives the login timeout.
func TestIdleUnauthenticatedSessions(t *testing.T) {
	_, addr, _ := start(t, server.Config{Storage: memory.New(), Anonymous: true, MaxSessions: 10, LoginTimeout: 2 * time.Second})
	// Ten idle connections from 127.0.0.2 fill the server.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	for range 10 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond)
	// A real client still gets in, and can log in.
	c := dial(t, addr)
	if r := c.read(); r.Code != 220 {
		t.Fatalf("a new client on a server full of idle connections: %v", r)
	}
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	// An idle connection that never logs in is closed at the login timeout,
	// NOOPs or not.
	lazy := dial(t, addr)
	lazy.read()
	start := time.Now()
	for range 100 {
		lazy.send("NOOP")
		r := lazy.readOrClosed()
		if r == nil || r.Code == 421 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Fatalf("a session that never logged in lived %v", el)
	}
}

// TestEvictionSparesLoginsUnderWay: idle connections from many addresses
// filling a server push out each other, not a client that is logging in.
func TestEvictionSparesLoginsUnderWay(t *testing.T) {
	pki := gsipki.New(t, "")
	addr := gsiServer(t, pki, func(c *server.Config) { c.MaxSessions = 20 })
	victim := dialFrom(t, addr, "127.0.0.9")
	victim.expect("AUTH GSSAPI", 334)
	g := gss.Initiate(&gss.InitiatorConfig{TLS: &tls.Config{
		Certificates: []tls.Certificate{pki.User.TLSCertificate()}, InsecureSkipVerify: true,
		MinVersion: tls.VersionTLS13,
	}})
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var in []byte
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for step := range 10 {
		out, _, err := g.Step(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		victim.send("ADAT " + base64.StdEncoding.EncodeToString(out))
		r := victim.readOrClosed()
		if r == nil {
			t.Fatal("the client that was logging in was closed to make room")
		}
		if r.Code == 235 {
			return
		}
		if r.Code != 335 {
			t.Fatalf("ADAT: %v", r)
		}
		tok, _ := strings.CutPrefix(r.Lines[len(r.Lines)-1], "ADAT=")
		in, _ = base64.StdEncoding.DecodeString(strings.TrimSpace(tok))
		if step == 0 {
			// Between its tokens, idle connections from 60 addresses
			// fill the server (and some send USER, which costs nothing).
			for i := range 60 {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.0.1.%d", 1+i))}, Timeout: 5 * time.Second}
				if c, err := d.Dial("tcp", addr); err == nil {
					idle = append(idle, c)
					if i%2 == 0 {
						c.Write([]byte("USER x\r\n"))
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Fatal("the exchange did not end")
}

// TestAuthRate: one source cannot make the server run handshakes as fast
// as it can ask (each costs a signature); others are not held back.
func TestAuthRate(t *testing.T) {
	pki := gsipki.New(t, "")
	addr := gsiServer(t, pki, nil)
	refused := 0
	for range 100 {
		c := dial(t, addr)
		c.read()
		c.send("AUTH GSSAPI")
		if r := c.read(); r.Code == 431 {
			refused++
		}
		c.c.Close()
	}
	if refused == 0 {
		t.Fatal("100 AUTH at once from one source: none refused")
	}
	dialFrom(t, addr, "127.0.0.2").expect("AUTH GSSAPI", 334)
}

// dialFrom connects to addr from the local address ip (another host of
// the loopback network) and reads the greeting.
func dialFrom(t *testing.T, addr, ip string) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	c := &client{t: t, c: conn, rr: wire.NewReplyReader(conn)}
	c.read()
	return c
}
