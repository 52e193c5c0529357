// Package ftpserver starts an in-process Ferry server for a test.
package ftpserver

import (
	"net"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/server"
)

// Start serves cfg on a fresh loopback port until the test ends and
// returns the address. The server is closed, and its goroutine waited
// for, by a cleanup registered here: cleanups the caller registers later
// run before it.
func Start(t testing.TB, cfg server.Config) string {
	t.Helper()
	_, addr := StartServer(t, cfg)
	return addr
}

// StartServer is Start for a test that also needs the server (to Reload
// it, say).
func StartServer(t testing.TB, cfg server.Config) (*server.Server, string) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(l) })
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return srv, l.Addr().String()
}
