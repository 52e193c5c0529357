package history

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/postgres"
)

func TestPostgres(t *testing.T) {
	srv := postgres.Launch(t)
	runStoreTests(t, func(t *testing.T) string { return srv.NewDatabase(t) })

	// A server that answers and refuses is not "unreachable".
	t.Run("NoDatabase", func(t *testing.T) {
		s, err := Open(t.Context(), srv.DSN("nonesuch"), nil)
		if err == nil {
			s.Close()
			t.Fatal("Open of a missing database succeeded")
		}
		t.Log(err)
		if msg := err.Error(); !strings.HasPrefix(msg, "history: PostgreSQL at "+srv.Addr+": ") || !strings.Contains(msg, "nonesuch") {
			t.Errorf("error %q", msg)
		}
	})
}

// TestPostgresUnreachable opens servers that cannot be reached: nothing
// listens on the port, or something accepts and never answers. Open
// fails within ConnectTimeout naming host:port; OpenOrOff warns and
// returns Off.
func TestPostgresUnreachable(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer silent.Close()
	wg.Go(func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	})

	tests := []struct {
		name string
		addr string
	}{
		{"closed port", closedAddr},
		{"silent server", silent.Addr().String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			start := time.Now()
			s := OpenOrOff(t.Context(), "postgres://ferry@"+tt.addr+"/ferry", slog.New(slog.NewTextHandler(&log, nil)))
			took := time.Since(start)
			if _, ok := s.(Off); !ok {
				s.Close()
				t.Fatalf("OpenOrOff = %T, want Off", s)
			}
			if took > ConnectTimeout+2*time.Second {
				t.Errorf("took %v", took)
			}
			if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "cannot reach PostgreSQL at "+tt.addr) || strings.Contains(l, `\n`) {
				t.Errorf("warning %q does not name %s on one line", l, tt.addr)
			}
			t.Logf("%v: %s", took, log.String())
		})
	}
}
