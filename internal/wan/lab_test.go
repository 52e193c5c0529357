package wan

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLab: two hosts on a switch reach each other through their rate
// limits, and Close (or a dead creator) leaves no namespace behind.
func TestLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (network namespaces)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A namespace left by a process that no longer exists is removed.
	stale := fmt.Sprintf("ferrylabtest-%d-1-h0", deadPID(t))
	if err := addNetns(ctx, stale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if namespaceExists(stale) {
			delNetns(stale)
		}
	})
	lab, err := StartLab(ctx, LabConfig{Hosts: 2, Rate: 100e6, Name: "ferrylabtest"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	if namespaceExists(stale) {
		t.Error("the stale namespace of a dead process is still there")
	}
	// Host 1 listens and receives a few MB from host 0.
	var ln net.Listener
	if err := lab.Do(1, func() (err error) {
		ln, err = net.Listen("tcp", lab.Addr(1).String()+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	const size = 4 << 20
	var c net.Conn
	if err := lab.Do(0, func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case n := <-got:
		if n != size {
			t.Errorf("host 1 received %d bytes, want %d", n, size)
		}
	case <-ctx.Done():
		t.Fatal("no transfer within 60s")
	}
	// 4 MiB at 100 Mbit/s takes at least 0.3 s: the limit is there (a
	// lower bound only; the machine may be slow, never fast).
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("4 MiB crossed a 100 Mbit/s link in %v", d)
	}
	// The host namespaces see nothing of the machine's interfaces.
	// (Standard output only: ip may add "Peer netns reference is invalid"
	// on standard error while other namespaces come and go.)
	out, err := lab.Command(ctx, 0, "ip", "-o", "link").Output()
	if err != nil || strings.Count(string(out), "\n") != 2 {
		t.Errorf("host 0's links: %v\n%s", err, out)
	}
	names := lab.Namespaces()
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range names {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
			t.Errorf("namespace %s still exists after Close", ns)
		}
	}
}

// deadPID is a process id no process has now.
func deadPID(t *testing.T) int {
	for pid := 4000000; pid > 3000000; pid -= 7919 {
		if !processAlive(pid) {
			return pid
		}
	}
	t.Fatal("no free pid")
	return 0
}
