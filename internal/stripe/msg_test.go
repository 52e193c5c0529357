package stripe

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

func TestFrameRoundTrip(t *testing.T) {
	req := &xfer.Request{Path: "/a b", Mode: xfer.ModeEBlock, Type: xfer.TypeImage, Offset: 5, Length: -1,
		Parallelism: 4, StripeLayout: xfer.LayoutPartitioned, StripeBlockSize: 1 << 16, Size: -1,
		PerfInterval: time.Second, Senders: 3, SenderIndex: 2}
	req.Restart.Add(xfer.Range{Start: 0, End: 10})
	req.Restart.Add(xfer.Range{Start: 20, End: 30})
	msgs := []*Msg{
		{Type: TypeHello, Version: Version, Role: roleFrontend, Nonce: bytes.Repeat([]byte{1}, nonceSize)},
		{Type: TypePing},
		{Type: TypeSession, ControlPeer: netip.MustParseAddrPort("127.0.0.1:5000"), AllowForeign: true, Stall: time.Minute},
		{Type: TypePassive, Seq: 7, IPv4: true, Buffer: 1 << 20},
		{Type: TypeAddr, Seq: 7, Addr: netip.MustParseAddrPort("[::1]:2811")},
		{Type: TypeSend, Seq: 8, Addrs: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:2")}, Job: jobOf(req, "/home/a b"), Data: []byte("listing")},
		{Type: TypeEvent, Seq: 8, Event: &xfer.Event{Kind: xfer.EventRanges, Ranges: []xfer.Range{{Start: 1, End: 2}}}},
		{Type: TypeDone, Seq: 8, N: 12345, Kind: KindStorage, Text: "disk on fire"},
	}
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = AppendFrame(b, m); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range msgs {
		got, n, err := ParseFrame(b)
		if err != nil || n == 0 {
			t.Fatalf("message %d: n=%d err=%v", i, n, err)
		}
		b = b[n:]
		w1, _ := AppendFrame(nil, want)
		g1, _ := AppendFrame(nil, got)
		if !bytes.Equal(w1, g1) {
			t.Errorf("message %d: round trip changed it:\n%s\n%s", i, w1, g1)
		}
	}
	if len(b) != 0 {
		t.Errorf("%d bytes left", len(b))
	}
	// The job survives as the request the mover runs.
	back := msgs[5].Job.request()
	if back.Restart.String() != req.Restart.String() || back.Senders != 3 || back.SenderIndex != 2 || back.Path != "/home/a b" {
		t.Errorf("job round trip: %+v", back)
	}
}

func TestParseFrameRefuses(t *testing.T) {
	good, _ := AppendFrame(nil, &Msg{Type: TypePing})
	if _, n, err := ParseFrame(good[:len(good)-1]); n != 0 || err != nil {
		t.Errorf("partial frame: n=%d err=%v", n, err)
	}
	for name, b := range map[string][]byte{
		"unknown type":   {0, 0, 0, 2, 99, '{', '}'},
		"type zero":      {0, 0, 0, 2, 0, '{', '}'},
		"too long":       {0xff, 0xff, 0xff, 0xff, byte(TypePing)},
		"bad json":       {0, 0, 0, 1, byte(TypePing), '{'},
		"short nonce":    frame(t, `{"v":1,"nonce":"AAAA"}`, TypeHello),
		"bad mode":       frame(t, `{"job":{"path":"/","mode":88,"type":73,"len":-1,"size":-1}}`, TypeSend),
		"sender index":   frame(t, `{"job":{"path":"/","mode":69,"type":73,"len":-1,"size":-1,"senders":2,"index":2}}`, TypeSend),
		"restart range":  frame(t, `{"job":{"path":"/","mode":69,"type":73,"len":-1,"size":-1,"rest":[{"Start":5,"End":1}]}}`, TypeSend),
		"many addresses": frame(t, `{"addrs":[`+strings.Repeat(`"1.2.3.4:5",`, 64)+`"1.2.3.4:5"]}`, TypeSend),
	} {
		if _, _, err := ParseFrame(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func frame(t *testing.T, body string, typ Type) []byte {
	t.Helper()
	b := []byte{0, 0, 0, byte(len(body)), byte(typ)}
	if len(body) > 255 {
		b = []byte{0, 0, byte(len(body) >> 8), byte(len(body)), byte(typ)}
	}
	return append(b, body...)
}

func FuzzParseFrame(f *testing.F) {
	for _, m := range []*Msg{
		{Type: TypeHello, Version: 1, Role: roleMover, Nonce: make([]byte, nonceSize), Proof: make([]byte, 32)},
		{Type: TypeSend, Job: &Job{Path: "/x", Mode: xfer.ModeEBlock, Type: xfer.TypeImage, Length: -1, Size: -1, Restart: []xfer.Range{{Start: 0, End: 9}}}},
		{Type: TypeEvent, Event: &xfer.Event{Kind: xfer.EventProgress, Bytes: 9}},
	} {
		b, _ := AppendFrame(nil, m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := ParseFrame(b)
		if err != nil || n == 0 {
			return
		}
		// What parses encodes again and parses to the same.
		again, err := AppendFrame(nil, m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, n2, err := ParseFrame(again)
		if err != nil || n2 != len(again) {
			t.Fatalf("re-parse: n=%d err=%v", n2, err)
		}
		third, _ := AppendFrame(nil, m2)
		if !bytes.Equal(again, third) {
			t.Fatalf("not stable:\n%s\n%s", again, third)
		}
		if m.Job != nil {
			m.Job.request() // must not panic
		}
	})
}

// handshake runs both sides over a pipe.
func handshake(frontSecret, moverSecret []byte) (frontErr, moverErr error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		_, err := moverHandshake(context.Background(), b, moverSecret, 2*time.Second)
		b.Close()
		done <- err
	}()
	_, frontErr = frontendHandshake(context.Background(), a, frontSecret, 2*time.Second)
	a.Close()
	return frontErr, <-done
}

func TestHandshake(t *testing.T) {
	secret := []byte("0123456789abcdef-shared")
	if f, m := handshake(secret, secret); f != nil || m != nil {
		t.Fatalf("same secret: frontend %v, mover %v", f, m)
	}
	// A wrong secret is refused by both sides: the frontend does not
	// trust the mover's proof, and the mover never sees a valid one.
	f, m := handshake([]byte("wrong-secret-0123456789"), secret)
	if !errors.Is(f, ErrAuth) || !strings.Contains(f.Error(), "shared secret") {
		t.Errorf("frontend with the wrong secret: %v", f)
	}
	if !errors.Is(m, ErrAuth) {
		t.Errorf("mover facing the wrong secret: %v", m)
	}
}

// A frontend that does not prove the secret (it replays the mover's
// proof as its own) gets an explanation and is never welcomed.
func TestHandshakeMoverRefusesReplayedProof(t *testing.T) {
	secret := []byte("0123456789abcdef-shared")
	a, b := net.Pipe()
	defer a.Close()
	done := make(chan error, 1)
	go func() {
		_, err := moverHandshake(context.Background(), b, secret, 2*time.Second)
		b.Close()
		done <- err
	}()
	writeHandshake(a, &Msg{Type: TypeHello, Version: Version, Role: roleFrontend, Nonce: newNonce()})
	hello, err := readHandshake(a)
	if err != nil {
		t.Fatal(err)
	}
	writeHandshake(a, &Msg{Type: TypeAuth, Proof: hello.Proof})
	r, err := readHandshake(a)
	if err != nil || r.Type != TypeError || !strings.Contains(r.Text, "authentication failed") {
		t.Errorf("reply to a replayed proof: %+v, %v", r, err)
	}
	if err := <-done; !errors.Is(err, ErrAuth) {
		t.Errorf("mover: %v", err)
	}
}

func TestHandshakeVersionMismatch(t *testing.T) {
	secret := []byte("0123456789abcdef-shared")
	a, b := net.Pipe()
	defer a.Close()
	done := make(chan error, 1)
	go func() {
		_, err := moverHandshake(context.Background(), b, secret, 2*time.Second)
		b.Close()
		done <- err
	}()
	writeHandshake(a, &Msg{Type: TypeHello, Version: Version + 1, Role: roleFrontend, Nonce: newNonce()})
	r, err := readHandshake(a)
	if err != nil || r.Type != TypeError || !strings.Contains(r.Text, "version mismatch") {
		t.Errorf("reply to a newer frontend: %+v, %v", r, err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "version mismatch") {
		t.Errorf("mover: %v", err)
	}
	// And the other way round: a newer mover is refused by the frontend.
	c, d := net.Pipe()
	defer c.Close()
	go func() {
		readHandshake(d)
		writeHandshake(d, &Msg{Type: TypeHello, Version: Version + 1, Role: roleMover, Nonce: newNonce()})
		d.Close()
	}()
	if _, err := frontendHandshake(context.Background(), c, secret, 2*time.Second); err == nil || !strings.Contains(err.Error(), "version mismatch") {
		t.Errorf("frontend facing a newer mover: %v", err)
	}
}
