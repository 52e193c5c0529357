package stripe

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
)

func testCert(t *testing.T) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mover test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// testProxy is a proxy credential made from a testCert.
func testProxy(t *testing.T) *tls.Certificate {
	t.Helper()
	host := testCert(t)
	leaf, _ := x509.ParseCertificate(host.Certificate[0])
	issuer := &gsi.Credential{Chain: []*x509.Certificate{leaf}, Key: host.PrivateKey.(crypto.Signer)}
	proxy, err := gsi.NewProxy(issuer, gsi.ProxyOptions{Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := proxy.TLSCertificate()
	return &c
}

// TestSecurityToMover: a session's data channel security survives the
// trip to a mover (delegated credential, level, DCAU check), and what
// cannot be passed on is refused with a reason.
func TestSecurityToMover(t *testing.T) {
	cert := testProxy(t)
	cfg := &dcsec.Config{Style: dcsec.GSI, Level: dcsec.Private, Certificate: cert,
		VerifyPeer: func([]*x509.Certificate) error { return nil }, Authz: dcsec.Authorization{Mode: 'S', DN: "/CN=peer"}}
	sec, cred, err := securityOf(cfg)
	if err != nil || cred == nil || sec.Cred == nil {
		t.Fatalf("a proxy: %+v %v %v", sec, cred, err)
	}
	// Through frames and back.
	b, err := AppendFrame(nil, cred)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = AppendFrame(b, &Msg{Type: TypePassive, Sec: sec}); err != nil {
		t.Fatal(err)
	}
	c, n, err := ParseFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ParseFrame(b[n:])
	if err != nil || !m.Sec.equal(sec) || !bytes.Equal(fingerprint(c), m.Sec.Cred) {
		t.Fatalf("round trip: %v", err)
	}
	gotCert, err := parseCredential(c)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Sec.config(nil, gotCert)
	if got.Style != dcsec.GSI || got.Level != dcsec.Private || !got.Server || got.VerifyPeer == nil ||
		got.Authz != cfg.Authz || got.Certificate.Leaf == nil || !got.Certificate.PrivateKey.(interface{ Equal(crypto.PrivateKey) bool }).Equal(cert.PrivateKey) {
		t.Errorf("rebuilt config: %+v", got)
	}
	// Without a trust store every peer is refused.
	if err := got.VerifyPeer([]*x509.Certificate{got.Certificate.Leaf}); err == nil || !strings.Contains(err.Error(), "trust") {
		t.Errorf("verify without a trust store: %v", err)
	}
	if sec, cred, err := securityOf(nil); sec != nil || cred != nil || err != nil {
		t.Errorf("no security: %v %v", sec, err)
	}
	if _, _, err := securityOf(&dcsec.Config{Style: dcsec.GSI, Level: dcsec.Clear}); err == nil {
		t.Error("security without a credential accepted")
	}
	if _, _, err := securityOf(&dcsec.Config{Style: dcsec.GSI, Level: dcsec.Clear, Certificate: cert,
		VerifyPeer: func([]*x509.Certificate) error { return nil }}); err == nil {
		t.Error("a check the movers cannot rebuild accepted")
	}
	for name, bad := range map[string]struct {
		body string
		typ  Type
	}{
		"level":         {`{"sec":{"style":0,"level":88}}`, TypeSend},
		"authz":         {`{"sec":{"style":0,"level":67,"authz":90}}`, TypeSend},
		"style":         {`{"sec":{"style":7,"level":67}}`, TypeSend},
		"credential id": {`{"sec":{"style":0,"level":67,"cred":"AA=="}}`, TypeSend},
		"no key":        {`{"chain":["AA=="]}`, TypeCredential},
		"no chain":      {`{"key":"AA=="}`, TypeCredential},
	} {
		if _, _, err := ParseFrame(frame(t, bad.body, bad.typ)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// recordingMover is a mover that records every message it gets and
// answers passive requests with an address.
func recordingMover(t *testing.T) (addr string, got func() []*Msg) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []*Msg
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				keys, err := moverHandshake(context.Background(), c, testSecret, 5*time.Second)
				if err != nil {
					c.Close()
					return
				}
				l := newLink(c, "frontend", heartbeat{50 * time.Millisecond, 5 * time.Second}, keys)
				defer l.close()
				for {
					m, err := l.recv(t.Context())
					if err != nil {
						return
					}
					mu.Lock()
					msgs = append(msgs, m)
					mu.Unlock()
					if m.Type == TypePassive {
						l.send(&Msg{Type: TypeAddr, Seq: m.Seq, Addr: netip.MustParseAddrPort("127.0.0.1:9")})
					}
				}
			})
		}
	}()
	return ln.Addr().String(), func() []*Msg {
		mu.Lock()
		defer mu.Unlock()
		return append([]*Msg(nil), msgs...)
	}
}

// TestPrivateKeyTravelsOnce: a delegated proxy goes to a mover once per
// link, in a message of its own, not with every request; a host
// credential (not a proxy) never leaves the frontend: the movers use
// their own.
func TestPrivateKeyTravelsOnce(t *testing.T) {
	host, proxy := testCert(t), testProxy(t)
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		keys int // messages carrying a private key
	}{{"proxy", proxy, 1}, {"host", host, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, got := recordingMover(t)
			p, err := NewPool(PoolConfig{Movers: []string{addr}, Secret: testSecret, Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			waitPoolUp(t, p, 1)
			f := p.NewFrontend(SessionConfig{})
			defer f.Close()
			f.SetSecurity(&dcsec.Config{Style: dcsec.GSI, Level: dcsec.Safe, Certificate: tc.cert,
				VerifyPeer: func([]*x509.Certificate) error { return nil }, Authz: dcsec.Authorization{Mode: 'A', DN: "/CN=me"}})
			for range 3 {
				if _, err := f.Passive(t.Context(), true); err != nil {
					t.Fatal(err)
				}
			}
			keys := 0
			for _, m := range got() {
				b, _ := json.Marshal(m)
				if strings.Contains(string(b), `"key":`) {
					keys++
				}
			}
			if keys != tc.keys {
				t.Errorf("%d messages carried the private key, want %d", keys, tc.keys)
			}
		})
	}
}
