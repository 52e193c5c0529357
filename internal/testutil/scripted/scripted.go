// Package scripted serves test-only control connections whose every reply
// a test writes itself: for what no real server can be made to do, such
// as a hostile listing or a QUIT left unanswered. Where ferry serve or
// GCT can show the behaviour, tests use them instead.
package scripted

import (
	"net"
	"sync"
	"testing"
)

// Serve listens on 127.0.0.1 and runs handle for every connection, each
// in a goroutine of its own, and returns the address. When the test ends
// the listener and every connection are closed and the handlers waited
// for, so a handler ends when its reads fail.
func Serve(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { handle(c) })
		}
	})
	return l.Addr().String()
}
