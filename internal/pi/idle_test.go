package pi_test

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/wire"
)

// TestIdleTimeout: a session that sends nothing for IdleTimeout gets 421
// and is closed, exactly then (fake time).
func TestIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config(seed(t))
		cfg.IdleTimeout = 5 * time.Minute
		srv, cli := net.Pipe()
		defer cli.Close()
		done := make(chan error, 1)
		go func() { done <- pi.Serve(context.Background(), srv, cfg) }()
		rr := wire.NewReplyReader(cli)
		if r, err := rr.ReadReply(); err != nil || r.Code != 220 {
			t.Fatalf("banner: %v %v", r, err)
		}
		for _, cmd := range []struct {
			line string
			code int
		}{{"USER anonymous", 331}, {"PASS x", 230}, {"NOOP", 200}} {
			cli.Write([]byte(cmd.line + "\r\n"))
			if r, err := rr.ReadReply(); err != nil || r.Code != cmd.code {
				t.Fatalf("%s: %v %v", cmd.line, r, err)
			}
		}
		start := time.Now()
		r, err := rr.ReadReply()
		if err != nil || r.Code != 421 {
			t.Fatalf("after idling: %v %v", r, err)
		}
		if idle := time.Since(start); idle != 5*time.Minute {
			t.Fatalf("closed after %v, want 5m", idle)
		}
		<-done
	})
}

// TestLoginTimeout: a session that does not log in is closed with 421 at
// LoginTimeout after it connected, however busy it keeps with NOOPs.
func TestLoginTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config(seed(t))
		cfg.LoginTimeout = time.Minute
		srv, cli := net.Pipe()
		defer cli.Close()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- pi.Serve(context.Background(), srv, cfg) }()
		rr := wire.NewReplyReader(cli)
		if r, err := rr.ReadReply(); err != nil || r.Code != 220 {
			t.Fatalf("banner: %v %v", r, err)
		}
		for range 5 {
			time.Sleep(10 * time.Second)
			cli.Write([]byte("NOOP\r\n"))
			if r, err := rr.ReadReply(); err != nil || r.Code != 200 {
				t.Fatalf("NOOP: %v %v", r, err)
			}
		}
		r, err := rr.ReadReply()
		if err != nil || r.Code != 421 {
			t.Fatalf("without a login: %v %v", r, err)
		}
		if el := time.Since(start); el != time.Minute {
			t.Fatalf("closed after %v, want 1m", el)
		}
		<-done
	})
}

// TestShutdownEndsIdleSession: cancelling Serve's context ends an idle
// session with 421.
func TestShutdownEndsIdleSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := net.Pipe()
		defer cli.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- pi.Serve(ctx, srv, config(seed(t))) }()
		rr := wire.NewReplyReader(cli)
		if r, _ := rr.ReadReply(); r.Code != 220 {
			t.Fatal(r)
		}
		cancel()
		if r, err := rr.ReadReply(); err != nil || r.Code != 421 {
			t.Fatalf("on shutdown: %v %v", r, err)
		}
		<-done
	})
}
