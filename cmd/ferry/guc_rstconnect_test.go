package main

import (
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestGUCRestartRetriesFirstConnection: with -rst, a server that drops
// every connection before its greeting is dialled 1 + -rst-retries times,
// as GCT's restart plugin does; without -rst once.
func TestGUCRestartRetriesFirstConnection(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	dst := "file://" + filepath.Join(t.TempDir(), "x")
	src := "ftp://" + ln.Addr().String() + "/x"
	for _, tc := range []struct {
		args []string
		want int32
	}{
		{[]string{"-rst", "-rst-retries", "2", "-rst-interval", "10ms"}, 3},
		{nil, 1},
	} {
		accepted.Store(0)
		code, _, stderr := runGUCOut(t, append(tc.args, src, dst)...)
		if code != 1 || accepted.Load() != tc.want {
			t.Errorf("%q: exit %d, %d connections, want %d; stderr %q", tc.args, code, accepted.Load(), tc.want, stderr)
		}
	}
	ln.Close()
	<-done
}
