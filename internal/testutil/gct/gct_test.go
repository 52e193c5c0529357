package gct

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartGreets(t *testing.T) {
	addr := Start(t, Dir(t))
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "220 ") {
		t.Fatalf("greeting %q, want 220", line)
	}
}

func greet(t *testing.T, addr string) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "220 ") {
		t.Fatalf("greeting %q, %v; want 220", line, err)
	}
}

func TestLaunchKillRelaunchSamePort(t *testing.T) {
	dir := Dir(t)
	port := FreePort(t)
	s := Launch(t, dir, port)
	if want := "127.0.0.1:" + strconv.Itoa(port); s.Addr != want {
		t.Fatalf("address %s, want %s", s.Addr, want)
	}
	greet(t, s.Addr)
	s.Kill()
	if nc, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		nc.Close()
		t.Fatal("killed server still accepts connections")
	}
	s2 := Launch(t, dir, port)
	greet(t, s2.Addr)
	s.Kill() // a second Kill does nothing
}
