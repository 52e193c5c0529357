package dtp

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

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

// TestDataPeerAllowed is the data channel's authorization rule as a table:
// data connections to or from a host other than the control peer, and
// connections to its privileged ports, need a data channel that
// authenticates its peer (GSI DCAU), or AllowForeignPeers.
func TestDataPeerAllowed(t *testing.T) {
	check := func([]*x509.Certificate) error { return errors.New("nobody") }
	gsiA := &dcsec.Config{Style: dcsec.GSI, Level: dcsec.Clear, VerifyPeer: check}
	ftps := &dcsec.Config{Style: dcsec.FTPS, Level: dcsec.Private, Server: true} // TLS without peer authentication
	peer := netip.MustParseAddrPort("127.0.0.1:2000")
	mapped := netip.MustParseAddrPort("[::ffff:127.0.0.1]:2000")
	for _, tc := range []struct {
		name    string
		cfg     Config
		addr    string
		sec     *dcsec.Config
		dialing bool
		ok      bool
	}{
		{"client host", Config{ControlPeer: peer}, "127.0.0.1:5000", nil, true, true},
		{"client host, mapped", Config{ControlPeer: mapped}, "127.0.0.1:5000", nil, true, true},
		{"client host from a privileged port", Config{ControlPeer: peer}, "127.0.0.1:20", nil, false, true},
		{"client host, privileged port", Config{ControlPeer: peer}, "127.0.0.1:25", nil, true, false},
		{"client host, port 1023", Config{ControlPeer: peer}, "127.0.0.1:1023", nil, true, false},
		{"client host, port 1024", Config{ControlPeer: peer}, "127.0.0.1:1024", nil, true, true},
		{"foreign host, plain", Config{ControlPeer: peer}, "127.0.0.2:5000", nil, true, false},
		{"foreign host, plain, accepted", Config{ControlPeer: peer}, "127.0.0.2:5000", nil, false, false},
		{"foreign host, TLS unauthenticated", Config{ControlPeer: peer}, "127.0.0.2:5000", ftps, false, false},
		{"foreign host, DCAU A", Config{ControlPeer: peer}, "127.0.0.2:5000", gsiA, true, true},
		{"foreign host, DCAU A, accepted", Config{ControlPeer: peer}, "127.0.0.2:5000", gsiA, false, true},
		{"foreign privileged port, DCAU A", Config{ControlPeer: peer}, "127.0.0.2:25", gsiA, true, true},
		{"foreign host, allowed", Config{ControlPeer: peer, AllowForeignPeers: true}, "127.0.0.2:25", nil, true, true},
		{"no control peer", Config{}, "127.0.0.1:5000", nil, true, false},
	} {
		d := New(tc.cfg)
		err := d.dataPeerAllowed(netip.MustParseAddrPort(tc.addr), tc.sec, tc.dialing)
		d.Close()
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrDataPeerRefused) {
			t.Errorf("%s: %v, want allowed %v", tc.name, err, tc.ok)
		}
	}
}

// TestForeignPeerRefusedOnAccept: on a plain data channel a connection from
// another host is closed and ignored; the client's own connection, coming
// after it, carries the transfer.
func TestForeignPeerRefusedOnAccept(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := New(Config{
		ListenIP:       netip.MustParseAddr("127.0.0.1"),
		ControlPeer:    netip.MustParseAddrPort("127.0.0.1:2000"),
		ConnectTimeout: 10 * time.Second,
	})
	defer d.Close()
	ap, err := d.Passive(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	go foreign.Write([]byte("not the file"))
	time.Sleep(50 * time.Millisecond)
	own, err := net.Dial("tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		own.Write([]byte("the file"))
		own.Close()
	}()
	w := &memWriter{}
	if _, err := d.Receive(ctx, &xfer.Request{Mode: xfer.ModeStream, Type: xfer.TypeImage, Length: -1, Size: -1}, w, func(xfer.Event) {}); err != nil {
		t.Fatal(err)
	}
	if string(w.b) != "the file" {
		t.Fatalf("received %q", w.b)
	}
	foreign.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := foreign.Read(make([]byte, 1)); n != 0 || err == nil || os.IsTimeout(err) {
		t.Fatalf("the foreign connection was not closed: %d, %v", n, err)
	}
}
