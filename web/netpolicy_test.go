package web

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// countingListener accepts and counts connections on addr until the
// test ends.
func countingListener(t *testing.T, addr string) (net.Listener, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Write([]byte("SSH-2.0-OpenSSH internal SECRET\r\n"))
			c.Close()
		}
	}()
	return l, &n
}

// TestEndpointAddrPolicy: endpoints on loopback, link-local or the
// app's own address, and in -deny-net, are refused with a clear message
// before any connection is made.
func TestEndpointAddrPolicy(t *testing.T) {
	l, accepted := countingListener(t, "127.0.0.1:0")
	self := netip.MustParseAddrPort(l.Addr().String())
	ta := startAppWith(t, func(c *Config) { c.AllowNet = nil })
	c := ta.client(t)
	c.login("alice")
	for _, url := range []string{
		"ftp://" + self.String() + "/",
		"ftp://localhost:" + fmt.Sprint(self.Port()) + "/",
		"ftp://[::ffff:127.0.0.1]:" + fmt.Sprint(self.Port()) + "/",
		"ftp://169.254.169.254:80/",
		"ftp://0.0.0.0:" + fmt.Sprint(self.Port()) + "/",
	} {
		code, msg := c.do("POST", "/api/endpoints", openRequest{URL: url}, nil)
		if code != http.StatusForbidden || !strings.Contains(msg, "-allow-net") {
			t.Errorf("open %s: %d %q, want 403 naming -allow-net", url, code, msg)
		}
	}
	// -deny-net wins over -allow-net; the app's own address is refused.
	ta2 := startAppWith(t, func(c *Config) {
		c.DenyNet = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	c2 := ta2.client(t)
	c2.login("alice")
	if code, msg := c2.do("POST", "/api/endpoints", openRequest{URL: "ftp://" + self.String() + "/"}, nil); code != http.StatusForbidden || !strings.Contains(msg, "denied network") {
		t.Errorf("open a denied network: %d %q", code, msg)
	}
	ta3 := startAppWith(t, func(c *Config) { c.Self = []netip.AddrPort{netip.AddrPortFrom(netip.IPv4Unspecified(), self.Port())} })
	c3 := ta3.client(t)
	c3.login("alice")
	if code, msg := c3.do("POST", "/api/endpoints", openRequest{URL: "ftp://" + self.String() + "/"}, nil); code != http.StatusForbidden || !strings.Contains(msg, "this web application") {
		t.Errorf("open the app's own address: %d %q", code, msg)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections were made", n)
	}
}

// fakeFTP is a server that points PASV at pasv and refuses EPSV.
func fakeFTP(t *testing.T, pasv netip.AddrPort) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	a := pasv.Addr().As4()
	reply227 := fmt.Sprintf("227 Entering Passive Mode (%d,%d,%d,%d,%d,%d)", a[0], a[1], a[2], a[3], pasv.Port()>>8, pasv.Port()&0xff)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				w := func(s string) { fmt.Fprintf(c, "%s\r\n", s) }
				w("220 evil ftp \x1b[31m" + strings.Repeat("x", 600))
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					verb, _, _ := strings.Cut(sc.Text(), " ")
					switch strings.ToUpper(verb) {
					case "USER":
						w("331 ok")
					case "PASS":
						w("230 ok")
					case "PWD":
						w(`257 "/"`)
					case "FEAT":
						w("211 end")
					case "EPSV":
						w("500 no")
					case "PASV":
						w(reply227)
					case "MLSD", "LIST", "NLST", "RETR":
						w("425 no data connection")
					case "QUIT":
						w("221 bye")
						return
					default:
						w("200 ok")
					}
				}
			}()
		}
	}()
	return "ftp://" + l.Addr().String() + "/"
}

// TestPASVElsewhere: a server whose PASV reply points at another host
// (an internal service) does not get the app to connect there, and the
// server's text reaches the user cut short and without control
// characters.
func TestPASVElsewhere(t *testing.T) {
	l, accepted := countingListener(t, "127.0.0.2:0")
	ta := startApp(t)
	c := ta.client(t)
	c.login("alice")
	ep := c.open(fakeFTP(t, netip.MustParseAddrPort(l.Addr().String())))
	code, msg := c.do("GET", "/api/list?ep="+ep.ID+"&path=/", nil, nil)
	if code == http.StatusOK || !strings.Contains(msg, "not its own address") {
		t.Errorf("list through a PASV elsewhere: %d %q", code, msg)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d data connections went elsewhere", n)
	}
	if len(msg) > maxErrorText+4 || strings.ContainsRune(msg, '\x1b') {
		t.Errorf("error text not sanitised: %q", msg)
	}
}

func TestSanitize(t *testing.T) {
	got := sanitize("550 \x1b[31mred\r\nline2\x00" + strings.Repeat("é", 400))
	if strings.ContainsAny(got, "\x1b\r\n\x00") || len(got) > maxErrorText+len("…") || !strings.HasPrefix(got, "550  [31mred  line2 ") {
		t.Errorf("sanitize: %q", got)
	}
}

// TestHostAllowList: a request naming another host (DNS rebinding) is
// refused with 421; IP literals, localhost and Config.Hosts are served.
func TestHostAllowList(t *testing.T) {
	ta := startAppWith(t, func(c *Config) { c.Hosts = []string{"ferry.example.org"} })
	for host, want := range map[string]int{
		"rebind.evil":            http.StatusMisdirectedRequest,
		"rebind.evil:8080":       http.StatusMisdirectedRequest,
		"127.0.0.1:8080":         http.StatusOK,
		"[::1]:8080":             http.StatusOK,
		"localhost:8080":         http.StatusOK,
		"LOCALHOST.":             http.StatusOK,
		"ferry.example.org:443":  http.StatusOK,
		"ferry.example.org.evil": http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest("GET", ta.srv.URL+"/", nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, res.StatusCode, want)
		}
	}
}

// TestCheckAddrHostAddrs: this host's own addresses are refused on every
// port by default, the listen port on all of them with a wildcard listen
// address even when -allow-net covers them; other addresses pass.
func TestCheckAddrHostAddrs(t *testing.T) {
	host := []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("fd00::2")}
	for _, self := range []string{"0.0.0.0:8443", "[::]:8443"} {
		a := &App{cfg: Config{Self: []netip.AddrPort{netip.MustParseAddrPort(self)}}, hostAddrs: host}
		for _, s := range []string{"192.0.2.2:8443", "192.0.2.2:22", "[fd00::2]:8443", "[fd00::2]:21",
			"[::ffff:192.0.2.2]:8443", "[fe80::1]:8443", "127.0.0.1:8443", "[::ffff:127.0.0.1]:22"} {
			if err := a.checkAddr(netip.MustParseAddrPort(s)); !errors.Is(err, errAddrDenied) {
				t.Errorf("Self %s: checkAddr(%s) = %v, want refused", self, s, err)
			}
		}
		if err := a.checkAddr(netip.MustParseAddrPort("192.0.2.3:8443")); err != nil {
			t.Errorf("Self %s: checkAddr(192.0.2.3:8443) = %v, want allowed", self, err)
		}
		a.cfg.AllowNet = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
		if err := a.checkAddr(netip.MustParseAddrPort("192.0.2.2:21")); err != nil {
			t.Errorf("Self %s, -allow-net: checkAddr(192.0.2.2:21) = %v, want allowed", self, err)
		}
		if err := a.checkAddr(netip.MustParseAddrPort("192.0.2.2:8443")); !errors.Is(err, errAddrDenied) {
			t.Errorf("Self %s, -allow-net: checkAddr(192.0.2.2:8443) = %v, want refused (own port)", self, err)
		}
	}
	if addrs, err := interfaceAddrs(); err != nil || len(addrs) == 0 {
		t.Logf("interface addresses: %v, %v", addrs, err)
	}
}

// TestThirdPartyPASVElsewhere: a copy between two FTP servers does not
// relay a PASV reply that points elsewhere to the other server in PORT
// (an FTP bounce through this app): the job fails and nothing connects
// there.
func TestThirdPartyPASVElsewhere(t *testing.T) {
	l, accepted := countingListener(t, "127.0.0.2:0")
	ta := startApp(t)
	f := startFerrySrv(t)
	writeFile(t, filepath.Join(f.dir, "a.bin"), []byte("hello"))
	c := ta.client(t)
	c.login("alice")
	src := c.open(f.url + "/")
	dst := c.open(fakeFTP(t, netip.MustParseAddrPort(l.Addr().String())))
	var j job
	c.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"a.bin"}, Dst: dst.ID, DstDir: "/"}, &j)
	j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled)
	// The app refuses the address itself: the source's own check (a
	// Ferry server takes PORT only to its client's address) is not what
	// stops it.
	if j.State != stateFailed || !strings.Contains(j.Error, "not its own address") {
		t.Errorf("job %s: %q, want failed by the app's policy", j.State, j.Error)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections to the address of the PASV reply", n)
	}
}
