package client_test

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// TestDataAddrPolicy: Config.DataAddrPolicy sees each data address
// before the dial, and its error fails the transfer without one.
func TestDataAddrPolicy(t *testing.T) {
	f := startFerry(t)
	if err := os.WriteFile(filepath.Join(f.dir, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("not there")
	var asked []netip.AddrPort
	refuse := true
	cfg := &client.Config{DataAddrPolicy: func(ap netip.AddrPort) error {
		asked = append(asked, ap)
		if refuse {
			return refused
		}
		return nil
	}}
	ctx := t.Context()
	c, err := client.Dial(ctx, f.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ctx, "anonymous", "x@"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx, "/"); !errors.Is(err, refused) {
		t.Errorf("list: %v, want the policy's error", err)
	}
	if len(asked) == 0 || asked[0].Addr() != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("the policy was asked about %v", asked)
	}
	// Allowed, the same connection works.
	refuse = false
	if _, err := c.List(ctx, "/"); err != nil {
		t.Errorf("list allowed: %v", err)
	}
}
