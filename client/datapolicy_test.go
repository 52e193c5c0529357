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

// TestDataAddrPolicyThirdParty: a third-party copy asks the destination
// connection's DataAddrPolicy about the address of its PASV reply before
// the source gets it in PORT; a refusal fails the copy and the source
// never sees the address (no FTP bounce through a policed client).
func TestDataAddrPolicyThirdParty(t *testing.T) {
	src, dst := startFerry(t).peer(), startFerry(t).peer()
	if err := os.WriteFile(filepath.Join(src.dir, "s"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	denied := errors.New("denied by policy")
	var srcAsked, dstAsked []netip.AddrPort
	ctx := t.Context()
	sc, err := client.Dial(ctx, src.addr, &client.Config{DataAddrPolicy: func(ap netip.AddrPort) error {
		srcAsked = append(srcAsked, ap)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	dc, err := client.Dial(ctx, dst.addr, &client.Config{DataAddrPolicy: func(ap netip.AddrPort) error {
		dstAsked = append(dstAsked, ap)
		return denied
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	if err := sc.Login(ctx, "anonymous", "x@"); err != nil {
		t.Fatal(err)
	}
	if err := dc.Login(ctx, "anonymous", "x@"); err != nil {
		t.Fatal(err)
	}
	_, err = client.ThirdParty(ctx, sc, src.remote("s"), dc, dst.remote("d"), &client.ThirdPartyOptions{})
	if !errors.Is(err, denied) {
		t.Fatalf("ThirdParty = %v, want the policy's refusal", err)
	}
	if len(dstAsked) != 1 || len(srcAsked) != 0 {
		t.Errorf("policy asked: destination %v, source %v; want the destination's one PASV address only", dstAsked, srcAsked)
	}
	if _, err := os.Stat(filepath.Join(dst.dir, "d")); err == nil {
		t.Errorf("destination file written despite the refusal")
	}
}
