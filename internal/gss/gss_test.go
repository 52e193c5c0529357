package gss

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"math/big"
	"testing"
	"time"
)

func selfSigned(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func configs(t testing.TB, version uint16) (*tls.Config, *tls.Config) {
	srv := &tls.Config{
		Certificates: []tls.Certificate{selfSigned(t, "host")},
		ClientAuth:   tls.RequireAnyClientCert,
		MinVersion:   tls.VersionTLS12,
		MaxVersion:   version,
	}
	cli := &tls.Config{
		Certificates:       []tls.Certificate{selfSigned(t, "user")},
		InsecureSkipVerify: true, // the test checks the protocol, not trust
		MaxVersion:         version,
	}
	return srv, cli
}

// establish steps both sides to completion and returns the number of
// tokens the initiator sent (ADAT commands).
func establish(t *testing.T, a, i *Context) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, done, err := i.Step(ctx, nil)
	if err != nil || done {
		t.Fatalf("first initiator step: %v %v", done, err)
	}
	sent := 0
	for range 20 {
		sent++
		reply, aDone, err := a.Step(ctx, tok)
		if err != nil {
			t.Fatalf("acceptor step %d: %v", sent, err)
		}
		if aDone {
			if len(reply) != 0 {
				t.Fatalf("acceptor finished with a token of %d bytes", len(reply))
			}
			return sent
		}
		var iDone bool
		tok, iDone, err = i.Step(ctx, reply)
		if err != nil {
			t.Fatalf("initiator step %d: %v", sent, err)
		}
		if iDone && len(tok) == 0 {
			t.Fatal("initiator finished with nothing for the acceptor")
		}
	}
	t.Fatal("no end to the exchange")
	return 0
}

func der(b []byte) []byte {
	out, _ := asn1.Marshal(struct{ B []byte }{b})
	return out
}

func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  uint16
		delegate bool
		tokens   int // ADAT commands, as seen from GCT (gsi.md §3)
	}{
		{"TLS1.3 delegation", tls.VersionTLS13, true, 4},
		{"TLS1.3 no delegation", tls.VersionTLS13, false, 3},
		{"TLS1.2 delegation", tls.VersionTLS12, true, 4},
		{"TLS1.2 no delegation", tls.VersionTLS12, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := configs(t, tc.version)
			wantReq, wantCert := der(bytes.Repeat([]byte("r"), 20000)), der([]byte("proxy cert"))
			var gotCert []byte
			a := Accept(&AcceptorConfig{TLS: srv, Delegate: func(peer []*x509.Certificate) ([]byte, func([]byte) error, error) {
				if len(peer) != 1 || peer[0].Subject.CommonName != "user" {
					return nil, nil, errors.New("wrong peer")
				}
				return wantReq, func(c []byte) error { gotCert = c; return nil }, nil
			}})
			defer a.Close()
			icfg := &InitiatorConfig{TLS: cli}
			if tc.delegate {
				icfg.Sign = func(req []byte) ([]byte, error) {
					if !bytes.Equal(req, wantReq) {
						return nil, errors.New("request garbled")
					}
					return wantCert, nil
				}
			}
			i := Initiate(icfg)
			defer i.Close()
			if n := establish(t, a, i); n != tc.tokens {
				t.Errorf("%d ADAT tokens, want %d", n, tc.tokens)
			}
			if tc.delegate != a.Delegated() || tc.delegate != i.Delegated() {
				t.Errorf("delegated: acceptor %v initiator %v", a.Delegated(), i.Delegated())
			}
			if tc.delegate && !bytes.Equal(gotCert, wantCert) {
				t.Errorf("delegated certificate garbled")
			}
			if v := a.ConnectionState().Version; v != tc.version {
				t.Errorf("TLS version %x", v)
			}
			// Wrapped commands and replies, one record each.
			for _, msg := range []string{"TYPE I\r\n", "RETR /a file\r\n", string(bytes.Repeat([]byte("x"), 40000))} {
				tok, err := i.Wrap([]byte(msg))
				if err != nil {
					t.Fatal(err)
				}
				got, err := a.Unwrap(tok)
				if err != nil || string(got) != msg {
					t.Fatalf("unwrap %.10q: %q %v", msg, got, err)
				}
				tok, err = a.Wrap([]byte("200 " + msg))
				if err != nil {
					t.Fatal(err)
				}
				if got, err := i.Unwrap(tok); err != nil || string(got) != "200 "+msg {
					t.Fatalf("reply unwrap: %v", err)
				}
			}
		})
	}
}

func TestBadTokens(t *testing.T) {
	ctx := context.Background()
	srv, cli := configs(t, tls.VersionTLS13)
	t.Run("garbage first token", func(t *testing.T) {
		a := Accept(&AcceptorConfig{TLS: srv})
		defer a.Close()
		if _, done, err := a.Step(ctx, []byte("GET / HTTP/1.0\r\n\r\n")); err == nil || !done {
			t.Fatalf("garbage accepted: %v %v", done, err)
		}
		if _, _, err := a.Step(ctx, []byte{1}); err == nil {
			t.Fatal("a step after failure succeeded")
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		a := Accept(&AcceptorConfig{TLS: srv})
		defer a.Close()
		noCert := cli.Clone()
		noCert.Certificates = nil
		i := Initiate(&InitiatorConfig{TLS: noCert})
		defer i.Close()
		tok, _, _ := i.Step(ctx, nil)
		var err error
		for range 10 {
			var done bool
			tok, done, err = a.Step(ctx, tok)
			if err != nil || done {
				break
			}
			if tok, _, err = i.Step(ctx, tok); err != nil {
				break
			}
		}
		if err == nil {
			t.Fatal("handshake without a client certificate succeeded")
		}
	})
	t.Run("truncated and wrong wrapped tokens", func(t *testing.T) {
		a := Accept(&AcceptorConfig{TLS: srv})
		defer a.Close()
		i := Initiate(&InitiatorConfig{TLS: cli})
		defer i.Close()
		establish(t, a, i)
		tok, _ := i.Wrap([]byte("NOOP\r\n"))
		if _, err := a.Unwrap(tok[:len(tok)-3]); err == nil {
			t.Fatal("truncated token unwrapped")
		}
	})
	t.Run("truncated handshake token", func(t *testing.T) {
		a := Accept(&AcceptorConfig{TLS: srv})
		defer a.Close()
		i := Initiate(&InitiatorConfig{TLS: cli})
		defer i.Close()
		tok, _, _ := i.Step(ctx, nil)
		if _, done, err := a.Step(ctx, tok[:len(tok)/2]); err == nil || !done {
			t.Fatalf("half a ClientHello: %v %v", done, err)
		}
	})
	t.Run("unwrap before establishment", func(t *testing.T) {
		a := Accept(&AcceptorConfig{TLS: srv})
		defer a.Close()
		if _, err := a.Unwrap([]byte("x")); err == nil {
			t.Fatal("unwrap before establishment")
		}
	})
}

func TestDERLength(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want int
		ok   bool
	}{
		{nil, 0, false},
		{[]byte{0x30}, 0, false},
		{[]byte{0x30, 0x05}, 7, true},
		{[]byte{0x30, 0x82, 0x01}, 0, false},
		{[]byte{0x30, 0x82, 0x01, 0x00}, 260, true},
		{[]byte{0x04, 0x01}, maxDER + 1, true},
		{[]byte{0x30, 0x80}, maxDER + 1, true},
	} {
		got, ok := derLen(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("derLen(% x) = %d %v", tc.in, got, ok)
		}
	}
}

func FuzzAcceptorFirstToken(f *testing.F) {
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5})
	srv, _ := configs(f, tls.VersionTLS13)
	f.Fuzz(func(t *testing.T, tok []byte) {
		a := Accept(&AcceptorConfig{TLS: srv})
		defer a.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Step(ctx, tok) // must return, error or not, and never panic
	})
}
