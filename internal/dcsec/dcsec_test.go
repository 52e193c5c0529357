package dcsec

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec/dcsectest"
	"github.com/ferrygrid/ferry/internal/gsi"
)

// fixture is a PKI shared by the tests: Alice's own proxy (the client's
// credential), a limited proxy of it (what a server got by delegation),
// Bob's proxy (somebody else) and a host certificate (FTPS).
type fixture struct {
	pki                  *dcsectest.PKI
	alice, aliceDelegate *gsi.Credential
	bob, host            *gsi.Credential
	aliceDN              string
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixDir != "" {
		os.RemoveAll(fixDir)
	}
	os.Exit(code)
}

func getFixture(t testing.TB) *fixture {
	t.Helper()
	fixOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dcsec-pki-")
		if err != nil {
			t.Fatal(err)
		}
		fixDir = dir
		p, err := dcsectest.NewIn(dir)
		if err != nil {
			t.Fatal(err)
		}
		aliceEEC := p.User(t, "Alice Example")
		alice := p.Proxy(t, aliceEEC, false)
		fix = &fixture{
			pki:           p,
			alice:         alice,
			aliceDelegate: p.Proxy(t, alice, true),
			bob:           p.Proxy(t, p.User(t, "Bob Example"), false),
			host:          p.User(t, "data.example.org"),
			aliceDN:       aliceEEC.Identity(),
		}
	})
	if fix == nil {
		t.Fatal("no PKI")
	}
	return fix
}

func certOf(c *gsi.Credential) *tls.Certificate {
	tc := c.TLSCertificate()
	return &tc
}

// gsiCfg is a DCAU A configuration presenting cred.
func (f *fixture) gsiCfg(level Level, cred *gsi.Credential) *Config {
	return &Config{
		Style: GSI, Level: level, Certificate: certOf(cred),
		VerifyPeer:       SelfAuthorization(f.pki.Trust, f.aliceDN),
		HandshakeTimeout: 10 * time.Second,
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (connector, listener net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	l, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); l.Close() })
	return c, l
}

type result struct {
	c   net.Conn
	err error
}

// secureBoth runs Secure on both ends at once.
func secureBoth(t *testing.T, ccfg, lcfg *Config) (c, l result) {
	t.Helper()
	cc, lc := tcpPair(t)
	ctx := context.Background()
	done := make(chan result)
	go func() {
		r, err := Secure(ctx, lc, false, lcfg)
		done <- result{r, err}
	}()
	c.c, c.err = Secure(ctx, cc, true, ccfg)
	l = <-done
	return c, l
}

func randomData(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// transfer sends data from one end to the other and checks it arrives
// byte-exact.
func transfer(t *testing.T, from, to net.Conn, style Style, data []byte) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := from.Write(data)
		if err == nil {
			err = CloseWrite(from, style)
		}
		errc <- err
	}()
	to.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(to)
	if werr := <-errc; werr != nil {
		t.Fatalf("send: %v", werr)
	}
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("received %d bytes, sent %d; equal prefix %d", len(got), len(data), commonPrefix(got, data))
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestRoundTrip(t *testing.T) {
	f := getFixture(t)
	data := randomData(t, 5<<20)
	type tc struct {
		name       string
		ccfg, lcfg *Config
		wantTLS    bool
	}
	var cases []tc
	for _, level := range []Level{Clear, Safe, Private} {
		for _, maxV := range []uint16{0, tls.VersionTLS12} {
			c, l := f.gsiCfg(level, f.alice), f.gsiCfg(level, f.aliceDelegate)
			c.MaxVersion, l.MaxVersion = maxV, maxV
			cases = append(cases, tc{fmt.Sprintf("GSI-%v-max%x", level, maxV), c, l, level != Clear})
		}
	}
	for _, level := range []Level{Clear, Private} {
		for _, serverConnects := range []bool{false, true} {
			srv := &Config{Style: FTPS, Level: level, Server: true, Certificate: certOf(f.host)}
			cli := &Config{Style: FTPS, Level: level, VerifyPeer: func(chain []*x509.Certificate) error {
				if len(chain) == 0 || !gsi.MatchHost(chain[0], "data.example.org") {
					return errors.New("not the server's certificate")
				}
				return nil
			}}
			c, l := cli, srv
			if serverConnects {
				c, l = srv, cli
			}
			cases = append(cases, tc{fmt.Sprintf("FTPS-%v-serverConnects=%v", level, serverConnects), c, l, level != Clear})
		}
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c, l := secureBoth(t, tt.ccfg, tt.lcfg)
			if c.err != nil || l.err != nil {
				t.Fatalf("connector: %v; listener: %v", c.err, l.err)
			}
			for _, r := range []result{c, l} {
				_, isTLS := r.c.(*tls.Conn)
				if isTLS != tt.wantTLS {
					t.Fatalf("got %T, want TLS %v", r.c, tt.wantTLS)
				}
				if !isTLS {
					if _, ok := r.c.(*net.TCPConn); !ok {
						t.Fatalf("clear connection is %T, not the original *net.TCPConn", r.c)
					}
				}
			}
			if tt.ccfg.Style == FTPS {
				// Who is the TLS server follows the FTP roles.
				if tc, ok := c.c.(*tls.Conn); ok {
					cs := tc.ConnectionState()
					if tt.ccfg.Server == (len(cs.PeerCertificates) > 0 && gsi.MatchHost(cs.PeerCertificates[0], "data.example.org")) {
						t.Fatalf("FTPS roles wrong: connector server=%v sees peer certificates %d", tt.ccfg.Server, len(cs.PeerCertificates))
					}
				}
			}
			transfer(t, c.c, l.c, tt.ccfg.Style, data)
			// And the other way (a fresh pair: stream mode closes).
			c, l = secureBoth(t, tt.ccfg, tt.lcfg)
			if c.err != nil || l.err != nil {
				t.Fatalf("connector: %v; listener: %v", c.err, l.err)
			}
			transfer(t, l.c, c.c, tt.ccfg.Style, data)
		})
	}
}

// captureConn passes writes through, except while capturing, when they
// are kept (so a test can coalesce a TLS record with data in one write).
type captureConn struct {
	net.Conn
	mu      sync.Mutex
	capture bool
	held    bytes.Buffer
}

func (c *captureConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.capture {
		return c.held.Write(p)
	}
	return c.Conn.Write(p)
}

func (c *captureConn) take() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.capture = false
	b := bytes.Clone(c.held.Bytes())
	c.held.Reset()
	return b
}

func (c *captureConn) hold() {
	c.mu.Lock()
	c.capture = true
	c.mu.Unlock()
}

// TestGSIClearSameSegment: a peer (written by hand here) that puts its
// flag record and the first data bytes into one write loses no byte.
func TestGSIClearSameSegment(t *testing.T) {
	f := getFixture(t)
	data := randomData(t, 5<<20)
	for _, maxV := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		t.Run(fmt.Sprintf("connector-sends-max%x", maxV), func(t *testing.T) {
			cc, lc := tcpPair(t)
			lcfg := f.gsiCfg(Clear, f.aliceDelegate)
			done := make(chan result, 1)
			go func() {
				r, err := Secure(context.Background(), lc, false, lcfg)
				done <- result{r, err}
			}()
			cap := &captureConn{Conn: cc}
			tc := tls.Client(cap, &tls.Config{InsecureSkipVerify: true, MaxVersion: maxV, Certificates: []tls.Certificate{*certOf(f.alice)}})
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			if maxV == tls.VersionTLS13 {
				var b [8]byte
				if n, err := tc.Read(b[:]); n != 1 || b[0] != 0 || err != nil {
					t.Fatalf("listener's flag: %q, %v", b[:n], err)
				}
			}
			cap.hold()
			tc.Write([]byte{'0'})
			rec := cap.take()
			if len(rec) < 6 || rec[0] != 23 {
				t.Fatalf("flag record % x", rec)
			}
			// Flag record and all the data in one write.
			go func() {
				cc.Write(append(rec, data...))
				cc.(*net.TCPConn).CloseWrite()
			}()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			got, err := io.ReadAll(r.c)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes (prefix %d equal), %v", len(got), commonPrefix(got, data), err)
			}
		})
		t.Run(fmt.Sprintf("listener-sends-max%x", maxV), func(t *testing.T) {
			cc, lc := tcpPair(t)
			ccfg := f.gsiCfg(Clear, f.alice)
			done := make(chan result, 1)
			go func() {
				r, err := Secure(context.Background(), cc, true, ccfg)
				done <- result{r, err}
			}()
			cap := &captureConn{Conn: lc}
			tc := tls.Server(cap, &tls.Config{MaxVersion: maxV, Certificates: []tls.Certificate{*certOf(f.aliceDelegate)},
				ClientAuth: tls.RequireAnyClientCert, SessionTicketsDisabled: true})
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			var first []byte
			if tc.ConnectionState().Version == tls.VersionTLS13 {
				cap.hold()
				tc.Write([]byte{0})
				first = cap.take()
			}
			// An impatient acceptor: flag and data at once, before the '0'.
			if _, err := lc.Write(append(first, data[:1<<20]...)); err != nil {
				t.Fatal(err)
			}
			var b [8]byte
			if n, err := tc.Read(b[:]); n != 1 || b[0] != '0' || err != nil {
				t.Fatalf("connector's flag: %q, %v", b[:n], err)
			}
			go func() {
				lc.Write(data[1<<20:])
				lc.(*net.TCPConn).CloseWrite()
			}()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			got, err := io.ReadAll(r.c)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes (prefix %d equal), %v", len(got), commonPrefix(got, data), err)
			}
		})
	}
}

func TestWrongIdentity(t *testing.T) {
	f := getFixture(t)
	for _, level := range []Level{Clear, Private} {
		// Bob connects to a listener that expects Alice.
		c, l := secureBoth(t, f.gsiCfg(level, f.bob), f.gsiCfg(level, f.aliceDelegate))
		if c.err == nil && level != Clear {
			// In TLS 1.3 the client is done before the server has judged
			// its certificate; the rejection comes with the first read.
			c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("rejected connector could read: %v", err)
			} else {
				c.err, c.c = err, nil
			}
		}
		if c.err == nil || l.err == nil {
			t.Fatalf("%v: Bob was accepted: connector %v, listener %v", level, c.err, l.err)
		}
		if !errors.Is(l.err, ErrUnauthorized) || !strings.Contains(l.err.Error(), `peer identity "/C=US/O=Ferry Test/CN=Bob Example" is not ours ("/C=US/O=Ferry Test/CN=Alice Example")`) {
			t.Errorf("listener error: %v", l.err)
		}
		if c.c != nil || l.c != nil {
			t.Errorf("a connection came back from a failed handshake")
		}
		// Alice connects to a listener that presents Bob's credential.
		c, l = secureBoth(t, f.gsiCfg(level, f.alice), f.gsiCfg(level, f.bob))
		if !errors.Is(c.err, ErrUnauthorized) || !strings.Contains(c.err.Error(), "Bob Example") {
			t.Errorf("connector error: %v", c.err)
		}
		if l.err == nil {
			t.Errorf("listener did not notice the rejection")
		}
	}
	// DCAU S: a given subject.
	ccfg := f.gsiCfg(Private, f.alice)
	ccfg.VerifyPeer = SubjectAuthorization(f.pki.Trust, "/C=US/O=Ferry Test/CN=Bob Example")
	lcfg := f.gsiCfg(Private, f.bob) // still wants Alice: the connector is Alice
	c, l := secureBoth(t, ccfg, lcfg)
	if c.err != nil || l.err != nil {
		t.Fatalf("DCAU S: %v / %v", c.err, l.err)
	}
	ccfg.VerifyPeer = SubjectAuthorization(f.pki.Trust, "/C=US/O=Ferry Test/CN=Carol")
	c, _ = secureBoth(t, ccfg, lcfg)
	if !errors.Is(c.err, ErrUnauthorized) || !strings.Contains(c.err.Error(), "expected subject") {
		t.Fatalf("DCAU S with a wrong subject: %v", c.err)
	}
}

func TestAuthorizationFunctions(t *testing.T) {
	f := getFixture(t)
	self := SelfAuthorization(f.pki.Trust, f.aliceDN)
	for _, tt := range []struct {
		name  string
		chain []*x509.Certificate
		ok    bool
	}{
		{"proxy", f.alice.Chain, true},
		{"limited proxy of proxy", f.aliceDelegate.Chain, true},
		{"leaf only", f.alice.Chain[:1], false},
		{"other user", f.bob.Chain, false},
		{"none", nil, false},
	} {
		if err := self(tt.chain); (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if err := SelfAuthorization(nil, f.aliceDN)(f.alice.Chain); err == nil {
		t.Error("no trust store accepted a peer")
	}
	if err := SubjectAuthorization(f.pki.Trust, "/c=us/o=ferry test/cn=alice   example")(f.alice.Chain); err != nil {
		t.Errorf("DN comparison is not canonical: %v", err)
	}
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"/C=US/CN=A B", "/C=US/CN=A B", true},
		{"/C=US/CN=A B", "/c=us/cn=a  b", true},
		{"/C=US/CN=A B", "/C=US/CN=AB", false},
		{"/C=US/CN=A", "/C=US/CN=A/CN=1", false},
	} {
		if SameDN(tt.a, tt.b) != tt.same {
			t.Errorf("SameDN(%q, %q) != %v", tt.a, tt.b, tt.same)
		}
	}
}

func TestNotTLSPeer(t *testing.T) {
	f := getFixture(t)
	for _, level := range []Level{Clear, Private} {
		for _, connector := range []bool{true, false} {
			name := fmt.Sprintf("%v-connector=%v", level, connector)
			cfg := f.gsiCfg(level, f.alice)
			cfg.HandshakeTimeout = 300 * time.Millisecond

			// A silent peer: the handshake times out.
			a, b := tcpPair(t)
			start := time.Now()
			c, err := Secure(context.Background(), a, connector, cfg)
			if c != nil || !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "not done within 300ms") {
				t.Errorf("%s silent peer: %v, %v", name, c, err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("%s: timed out after %v", name, d)
			}
			b.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadAll(b); err != nil {
				t.Errorf("%s: connection not closed after failure: %v", name, err)
			}

			// A peer speaking clear text, data already sent.
			a, b = tcpPair(t)
			go func() {
				b.Write([]byte(strings.Repeat("clear file data\r\n", 1000)))
			}()
			c, err = Secure(context.Background(), a, connector, cfg)
			if c != nil || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s clear peer: %v, %v", name, c, err)
			}
		}
	}
	// Cancellation interrupts a handshake.
	a, _ := tcpPair(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("ABOR")
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	if _, err := Secure(ctx, a, true, f.gsiCfg(Private, f.alice)); !errors.Is(err, cause) {
		t.Errorf("cancelled handshake: %v", err)
	}
}

// TestPrivateNeverClear: with PROT P every failure gives an error, never a
// connection that carries clear data.
func TestPrivateNeverClear(t *testing.T) {
	f := getFixture(t)
	// The peer thinks there is no security (DCAU N) and sends file data.
	cc, lc := tcpPair(t)
	go cc.Write([]byte("secret file data"))
	conn, err := Secure(context.Background(), lc, false, f.gsiCfg(Private, f.aliceDelegate))
	if conn != nil || err == nil {
		t.Fatalf("PROT P listener against a plain peer: %v, %v", conn, err)
	}
	cc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(cc); len(b) != 0 && !bytes.HasPrefix(b, []byte{21}) || err != nil { // at most a TLS alert, then EOF
		t.Fatalf("listener sent %q, %v", b, err)
	}
	// FTPS PROT P against a peer that connects in clear.
	srv := &Config{Style: FTPS, Level: Private, Server: true, Certificate: certOf(f.host), HandshakeTimeout: time.Second}
	c, l := secureBoth(t, &Config{Style: FTPS, Level: Clear}, srv)
	if l.c != nil || l.err == nil || c.err != nil {
		t.Fatalf("FTPS PROT P server against a clear client: %v, %v / %v", l.c, l.err, c.err)
	}
	// Invalid configurations fail too.
	a, _ := tcpPair(t)
	if conn, err := Secure(context.Background(), a, false, &Config{Style: GSI, Level: Private}); conn != nil || err == nil {
		t.Fatalf("listener without a certificate: %v, %v", conn, err)
	}
	a, _ = tcpPair(t)
	if conn, err := Secure(context.Background(), a, false, &Config{Style: FTPS, Level: Safe, Server: true, Certificate: certOf(f.host)}); conn != nil || err == nil {
		t.Fatalf("FTPS PROT S: %v, %v", conn, err)
	}
	a, _ = tcpPair(t)
	if conn, err := Secure(context.Background(), a, true, &Config{Style: GSI, Level: 'E'}); conn != nil || err == nil {
		t.Fatalf("PROT E: %v, %v", conn, err)
	}
}

func TestNoSecurity(t *testing.T) {
	a, _ := tcpPair(t)
	if c, err := Secure(context.Background(), a, true, nil); c != a || err != nil {
		t.Fatalf("nil config: %v, %v", c, err)
	}
	if c, err := Secure(context.Background(), a, true, &Config{Style: FTPS, Level: Clear}); c != a || err != nil {
		t.Fatalf("FTPS PROT C: %v, %v", c, err)
	}
}

func TestDelegationRefused(t *testing.T) {
	f := getFixture(t)
	cc, lc := tcpPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := Secure(context.Background(), lc, false, f.gsiCfg(Clear, f.aliceDelegate))
		done <- err
	}()
	tc := tls.Client(cc, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{*certOf(f.alice)}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	tc.Read(b[:])
	tc.Write([]byte{'D'})
	if err := <-done; !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "delegate") {
		t.Fatalf("delegation flag: %v", err)
	}
}

func TestSNI(t *testing.T) {
	f := getFixture(t)
	for _, tt := range []struct{ name, want string }{
		{"", ""},
		{"Lab User", ""},
		{"127.0.0.1", ""},
		{"::1", ""},
		{"data.example.org", "data.example.org"},
		{"data.example.org.", "data.example.org"},
		{"-bad.example", ""},
		{"under_score.example", ""},
	} {
		if got := sniName(tt.name); got != tt.want {
			t.Errorf("sniName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	// On the wire: a user's CN never becomes the SNI.
	cc, lc := tcpPair(t)
	sni := make(chan string, 1)
	go func() {
		tc := tls.Server(lc, &tls.Config{
			Certificates: []tls.Certificate{*certOf(f.aliceDelegate)},
			GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
				sni <- h.ServerName
				return nil, nil
			},
		})
		tc.Handshake()
		tc.Close()
	}()
	cfg := f.gsiCfg(Private, f.alice)
	cfg.ServerName = "Alice Example"
	Secure(context.Background(), cc, true, cfg)
	if got := <-sni; got != "" {
		t.Fatalf("SNI %q sent", got)
	}
}
