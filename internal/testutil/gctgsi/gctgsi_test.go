package gctgsi_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// TestStart checks that the server starts, offers GSI and is gone after
// Kill.
func TestStart(t *testing.T) {
	pki := gsipki.New(t, "")
	s := gctgsi.Start(t, pki, &gctgsi.Options{MaxTLS12: true})
	nc, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(nc)
	greeting, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(greeting, "220 ") {
		t.Fatalf("greeting %q, %v", greeting, err)
	}
	if _, err := nc.Write([]byte("AUTH GSSAPI\r\n")); err != nil {
		t.Fatal(err)
	}
	if reply, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(reply, "334 ") {
		t.Fatalf("AUTH GSSAPI: %q, %v", reply, err)
	}
	nc.Close()
	s.Kill()
	if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		c.Close()
		t.Error("the server still listens after Kill")
	}
}
