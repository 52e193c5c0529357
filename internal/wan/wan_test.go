package wan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"
)

// needNetns skips a test that needs root and iproute2 when they are
// missing; CI runs as root.
func needNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	for _, cmd := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("needs %s: %v", cmd, err)
		}
	}
}

// dialIn opens a TCP connection from inside the client namespace.
func dialIn(t *testing.T, l *Link, to netip.AddrPort) net.Conn {
	t.Helper()
	var c net.Conn
	err := inNetns(t.Context(), l.Namespace(Client), func() (err error) {
		c, err = net.DialTimeout("tcp", to.String(), 5*time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func listenIn(t *testing.T, l *Link) net.Listener {
	t.Helper()
	var ln net.Listener
	err := inNetns(t.Context(), l.Namespace(Server), func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(l.Addr(Server), 0).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestLink starts a 5 ms, 2 % loss link, checks its idle RTT, downloads a
// few MB of random bytes through it intact, and checks the loss it
// measured and that Close removes the namespaces.
func TestLink(t *testing.T) {
	needNetns(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := Config{Delay: 5 * time.Millisecond, Loss: 0.02, Seed: 1, Rate: 1e9,
		Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 4194304"}}
	l, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{l.Namespace(Client), l.Namespace(Server)}
	t.Cleanup(func() { l.Close() })
	for _, n := range ns {
		if !namespaceExists(n) {
			t.Fatalf("namespace %s missing", n)
		}
	}
	if rtt := l.Fidelity().IdleRTT; rtt < 10*time.Millisecond-1500*time.Microsecond || rtt > 10*time.Millisecond+1500*time.Microsecond {
		t.Errorf("idle RTT %v, want 10ms ± 1.5ms", rtt)
	}

	const size = 8 << 20
	data := make([]byte, size)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(data)
	ln := listenIn(t, l)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(data)
	}()
	c := dialIn(t, l, netip.MustParseAddrPort(ln.Addr().String()))
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	h := sha256.New()
	n, err := io.Copy(h, c)
	if err != nil || n != size {
		t.Fatalf("received %d bytes, %v; want %d", n, err, size)
	}
	if !bytes.Equal(h.Sum(nil), sha256Sum(data)) {
		t.Fatal("data corrupted on the way")
	}

	f, err := l.Close()
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	WriteReport(&report, cfg, f)
	t.Logf("fidelity:\n%s", report.String())
	if f.Packets[ToClient] < size/1500 {
		t.Errorf("forwarded %d segments to the client, want at least %d", f.Packets[ToClient], size/1500)
	}
	if got := f.LossMeasured[ToClient]; got < 0.01 || got > 0.035 {
		t.Errorf("measured loss %.4f, want 0.02 within 0.01..0.035", got)
	}
	if f.LossDrops[ToServer] != 0 {
		t.Errorf("%d drops in the ACK direction, want none", f.LossDrops[ToServer])
	}
	for _, n := range ns {
		if namespaceExists(n) {
			t.Errorf("namespace %s still there after Close", n)
		}
	}
	if f2, err2 := l.Close(); f2 != f || err2 != nil {
		t.Errorf("second Close: %v, %v; want the first report", f2, err2)
	}
}

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// TestLinkContextCancel checks that cancelling Start's context removes the
// link.
func TestLinkContextCancel(t *testing.T) {
	needNetns(t)
	ctx, cancel := context.WithCancel(t.Context())
	l, err := Start(ctx, Config{Delay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range []string{l.Namespace(Client), l.Namespace(Server)} {
		for namespaceExists(n) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if namespaceExists(n) {
			t.Errorf("namespace %s still there after the context ended", n)
		}
	}
}

// TestRemoveStale checks that Start removes namespaces left by a process
// that is gone, and keeps those of a live one.
func TestRemoveStale(t *testing.T) {
	needNetns(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("ferrywantest%d", os.Getpid())
	stale := fmt.Sprintf("%s-%d-1-c", prefix, dead.Process.Pid)
	live := fmt.Sprintf("%s-%d-1-s", prefix, os.Getpid())
	for _, n := range []string{stale, live} {
		if err := addNetns(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if namespaceExists(n) {
				delNetns(n)
			}
		})
	}
	l, err := Start(t.Context(), Config{Name: prefix})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if namespaceExists(stale) {
		t.Errorf("stale namespace %s of dead pid %d not removed", stale, dead.Process.Pid)
	}
	if !namespaceExists(live) {
		t.Errorf("namespace %s of a live process removed", live)
	}
}

// TestStartCancelRace cancels Start's context from a goroutine of its own
// right as Start finishes (a little before, at, or after it returns): the
// context watch that closes the link must not race with Start setting it
// up. The race detector is the judge; any Start that succeeded must leave
// no namespace once closed.
func TestStartCancelRace(t *testing.T) {
	needNetns(t)
	cfg := Config{Delay: time.Millisecond, Name: "ferryracetest"}
	begin := time.Now()
	first, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	first.Close()
	for i := range 4 {
		ctx, cancel := context.WithCancel(t.Context())
		fired := make(chan struct{})
		go func() {
			defer close(fired)
			time.Sleep(took * time.Duration(85+10*i) / 100)
			cancel()
		}()
		l, err := Start(ctx, cfg)
		<-fired
		if err != nil {
			continue // cancelled before the link was up: nothing to check
		}
		l.Close()
		for _, n := range []string{l.Namespace(Client), l.Namespace(Server)} {
			if namespaceExists(n) {
				t.Errorf("namespace %s still there after Close", n)
			}
		}
	}
}

// TestStartLabCancelRace is TestStartCancelRace for a lab.
func TestStartLabCancelRace(t *testing.T) {
	needNetns(t)
	cfg := LabConfig{Hosts: 2, Name: "ferrylabracetest"}
	begin := time.Now()
	first, err := StartLab(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	first.Close()
	for i := range 4 {
		ctx, cancel := context.WithCancel(t.Context())
		fired := make(chan struct{})
		go func() {
			defer close(fired)
			time.Sleep(took * time.Duration(85+10*i) / 100)
			cancel()
		}()
		l, err := StartLab(ctx, cfg)
		<-fired
		if err != nil {
			continue
		}
		l.Close()
		for _, n := range l.Namespaces() {
			if namespaceExists(n) {
				t.Errorf("namespace %s still there after Close", n)
			}
		}
	}
}
