package server_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	ftpclient "github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/server"
)

// gsiSession logs in to a GSI server at addr with a proxy of the PKI's user.
func gsiSession(t *testing.T, pki *gsipki.PKI, addr string) *ftpclient.Conn {
	t.Helper()
	return gsiSessionAs(t, pki, addr, "")
}

// gsiSessionAs is gsiSession logging in as user ("" maps the certificate).
func gsiSessionAs(t *testing.T, pki *gsipki.PKI, addr, user string) *ftpclient.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cred, err := ftpclient.LoadCredential(pki.Proxy(t, gsi.ProxyOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := ftpclient.LoadTrustStore(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ftpclient.Dial(ctx, addr, &ftpclient.Config{GSI: &ftpclient.GSIConfig{Credential: cred, Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(ctx, user, "x"); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBounceThroughDCAU: a data address allowed only because the data
// channel is authenticated (a foreign host, a privileged port) must not
// survive DCAU N, which would send the file in clear to it (finding 3).
func TestBounceThroughDCAU(t *testing.T) {
	pki := gsipki.New(t, "")
	st := memory.New()
	w, err := st.Create(context.Background(), "/secret", dsiCreate())
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt([]byte("the victim's data"), 0)
	w.Close()
	addr := gsiServer(t, pki, func(c *server.Config) { c.Storage = st })

	// The bounce target: a listener on another loopback address.
	target, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	got := make(chan string, 1)
	go func() {
		c, err := target.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		got <- string(buf[:n])
	}()
	port := target.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c := gsiSession(t, pki, addr)
	for _, cmd := range []struct {
		line string
		code int
	}{
		{"TYPE I", 200},
		{"PORT 127,0,0,2," + itoa(port>>8) + "," + itoa(port&255), 200}, // allowed: DCAU A
		{"DCAU N", 503}, // would keep the foreign address for a clear channel
	} {
		r, err := c.Do(ctx, "%s", cmd.line)
		if err != nil {
			t.Fatalf("%s: %v", cmd.line, err)
		}
		if r.Code != cmd.code {
			t.Fatalf("%s: %v, want %d", cmd.line, r, cmd.code)
		}
	}
	// After DCAU N first, the same foreign address is refused outright.
	c2 := gsiSession(t, pki, addr)
	for _, cmd := range []struct {
		line string
		code int
	}{
		{"DCAU N", 200},
		{"PORT 127,0,0,2," + itoa(port>>8) + "," + itoa(port&255), 501},
		{"EPRT |1|127.0.0.2|" + itoa(port) + "|", 501},
		{"SPOR 127,0,0,2," + itoa(port>>8) + "," + itoa(port&255), 501},
	} {
		r, err := c2.Do(ctx, "%s", cmd.line)
		if err != nil {
			t.Fatalf("%s: %v", cmd.line, err)
		}
		if r.Code != cmd.code {
			t.Fatalf("%s: %v, want %d", cmd.line, r, cmd.code)
		}
	}
	select {
	case data := <-got:
		t.Fatalf("the bounce target received %q", data)
	case <-time.After(200 * time.Millisecond):
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func dsiCreate() dsi.CreateOptions { return dsi.CreateOptions{Truncate: true, Size: -1} }

// TestAnonymousGSINoForeignData: an anonymous login on a GSI channel is not
// the certificate's owner, so its data channel authentication does not
// open foreign data addresses (the review's port-scan oracle), and data
// errors do not show socket addresses.
func TestAnonymousGSINoForeignData(t *testing.T) {
	pki := gsipki.New(t, "")
	addr := gsiServer(t, pki, func(c *server.Config) { c.Anonymous = true })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := gsiSessionAs(t, pki, addr, "anonymous")
	for _, line := range []string{"PORT 127,0,0,2,0,22", "EPRT |1|127.0.0.2|2222|"} {
		r, err := c.Do(ctx, "%s", line)
		if err != nil || r.Code != 501 {
			t.Errorf("%s as anonymous over GSI: %v %v; want 501", line, r, err)
		}
	}
	// A refused connection to the client's own address: the reply says
	// so without the server's socket addresses.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if r, err := c.Do(ctx, "EPRT |1|127.0.0.1|%d|", port); err != nil || r.Code != 200 {
		t.Fatalf("EPRT to the client: %v %v", r, err)
	}
	r, err := c.Do(ctx, "LIST /")
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 425 || strings.Contains(r.Text(), "127.0.0.1:") || strings.Contains(r.Text(), "->") {
		t.Errorf("LIST to a closed port: %v; want 425 without socket addresses", r)
	}
}
