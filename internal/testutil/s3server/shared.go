package s3server

import (
	"os"
	"sync"
	"testing"
)

// Shared is one server for a whole test binary, started by the first
// test that asks for it; a TestMain stops it with StopShared after
// m.Run. Tests keep apart by key prefix (or by their own bucket).
var shared struct {
	once sync.Once
	s    *Server
	stop func()
	dir  string
	err  error
}

// StartShared returns the test binary's shared server, starting it on
// first use.
func StartShared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() {
		bin, err := Binary()
		if err != nil {
			shared.err = err
			return
		}
		shared.dir, err = os.MkdirTemp("", "ferry-s3server-")
		if err != nil {
			shared.err = err
			return
		}
		shared.s, shared.stop, shared.err = Launch(bin, shared.dir, "ferry")
	})
	if shared.err != nil {
		t.Fatalf("s3server: %v", shared.err)
	}
	return shared.s
}

// StopShared stops the shared server, if one was started, and removes
// its data.
func StopShared() {
	if shared.stop != nil {
		shared.stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}
