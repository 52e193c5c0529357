package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/server"
)

// TestShutdownAfterGraceSaysWhy: a transfer still running when the grace
// period ends is aborted with a reply that says why (426), and the session
// is closed with 421, never by a silent close.
func TestShutdownAfterGraceSaysWhy(t *testing.T) {
	srv, addr, _ := start(t, server.Config{Storage: memory.New(), Anonymous: true, AnonymousWrite: true})
	c, data := storeStream(t, addr, nil, "/slow", []byte("some bytes, then nothing"))
	defer data.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown returned nil with a transfer still running")
	}
	r := c.read()
	if r.Code != 426 || !strings.Contains(strings.Join(r.Lines, " "), "shutting down") {
		t.Fatalf("running transfer at the end of the grace period: %v; want 426 saying the server is shutting down", r)
	}
	if r := c.read(); r.Code != 421 {
		t.Fatalf("then: %v; want 421", r)
	}
}
