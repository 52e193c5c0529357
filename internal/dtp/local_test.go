package dtp

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// The port ranges lie above Linux's ephemeral ports (32768-60999), on an
// address of their own, so that no other test's sockets can hold them.
func TestPassivePortRange(t *testing.T) {
	ctx := context.Background()
	ip := netip.MustParseAddr("127.0.0.93")
	lo, hi := uint16(61000), uint16(61009)
	d := New(Config{ListenIP: ip, PortLow: lo, PortHigh: hi})
	defer d.Close()
	for range 20 {
		ap, err := d.Passive(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if ap.Port() < lo || ap.Port() > hi {
			t.Fatalf("passive port %d outside %d-%d", ap.Port(), lo, hi)
		}
	}
	// With every port of a one-port range taken, Passive fails clearly.
	other := New(Config{ListenIP: ip, PortLow: 61020, PortHigh: 61020})
	defer other.Close()
	if _, err := other.Passive(ctx, true); err != nil {
		t.Fatal(err)
	}
	third := New(Config{ListenIP: ip, PortLow: 61020, PortHigh: 61020})
	defer third.Close()
	if _, err := third.Passive(ctx, true); err == nil {
		t.Fatal("listened on a port already in use")
	}
}

func TestPassiveNeedsIPv4ForPASV(t *testing.T) {
	d := New(Config{ListenIP: netip.MustParseAddr("::1")})
	defer d.Close()
	if _, err := d.Passive(context.Background(), true); err == nil {
		t.Fatal("PASV on an IPv6 data interface succeeded")
	}
}

func TestNoDataAddress(t *testing.T) {
	d := New(Config{})
	defer d.Close()
	_, err := d.Send(context.Background(), &xfer.Request{Mode: xfer.ModeStream}, nil, func(xfer.Event) {})
	if !errors.Is(err, xfer.ErrNoDataAddress) {
		t.Fatalf("Send without a data address: %v", err)
	}
}

// TestForeignPeersNeedAuthentication: data connections from a host other
// than the control peer are refused unless the data channel authenticates
// its peer (GSI DCAU), as a third-party transfer between servers needs.
func TestForeignPeersNeedAuthentication(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := New(Config{ControlPeer: netip.MustParseAddrPort("127.0.0.1:2000")})
	defer d.Close()
	if d.peerAllowed(s) {
		t.Fatal("a foreign peer was allowed on an unauthenticated channel")
	}
	d.SetSecurity(&dcsec.Config{Style: dcsec.GSI, Level: dcsec.Clear, VerifyPeer: func([]*x509.Certificate) error { return nil }})
	if !d.peerAllowed(s) {
		t.Fatal("a foreign peer was refused on an authenticated channel")
	}
	d.SetSecurity(&dcsec.Config{Style: dcsec.FTPS, Level: dcsec.Private}) // TLS without peer authentication
	if d.peerAllowed(s) {
		t.Fatal("a foreign peer was allowed without peer authentication")
	}
}
