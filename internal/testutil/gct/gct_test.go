package gct

import (
	"bufio"
	"net"
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
