package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// newTestStream returns a replyStream reading what the returned server
// end writes.
func newTestStream(t *testing.T) (*replyStream, net.Conn) {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	return newReplyStream(client, wire.NewReplyReader(client), slog.New(slog.DiscardHandler)), server
}

// serve writes script to the server end in a goroutine.
func serve(t *testing.T, server net.Conn, script string) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.WriteString(server, script) })
	t.Cleanup(func() { server.Close(); wg.Wait() })
}

// TestReplyStreamDispatch: replies reach the tickets in command order,
// whatever order their readers wait in; preliminaries go to the transfer
// command's reader, and what is due to an abandoned ticket is dropped.
func TestReplyStreamDispatch(t *testing.T) {
	tests := []struct {
		name      string
		cmds      []string // one ticket each
		abandon   []int    // tickets given up before any reply
		script    string
		want      map[int]string // ticket → "prelims/final" codes
		wantOrder bool           // the readers start in reverse order
	}{
		{
			name:   "in order",
			cmds:   []string{"MODE E", "SITE RETRBUFSIZE 1", "PASV"},
			script: "200 mode\r\n500 no\r\n227 (1,2,3,4,5,6)\r\n",
			want:   map[int]string{0: "/200", 1: "/500", 2: "/227"},
		},
		{
			name:      "readers wait in reverse order",
			cmds:      []string{"MODE E", "TYPE I", "PASV"},
			script:    "200 mode\r\n200 type\r\n227 (1,2,3,4,5,6)\r\n",
			want:      map[int]string{0: "/200", 1: "/200", 2: "/227"},
			wantOrder: true,
		},
		{
			name:   "preliminaries and markers stay with the transfer",
			cmds:   []string{"RETR f", "NOOP"},
			script: "150 open\r\n112-Perf Marker\r\n Stripe Bytes Transferred: 4\r\n112 End.\r\n111 Range Marker 0-4\r\n226 done\r\n200 ok\r\n",
			want:   map[int]string{0: "150,112,111/226", 1: "/200"},
		},
		{
			name:   "multi-line final reply",
			cmds:   []string{"FEAT", "TYPE I"},
			script: "211-Features:\r\n MDTM\r\n SIZE\r\n211 End\r\n200 type\r\n",
			want:   map[int]string{0: "/211", 1: "/200"},
		},
		{
			name:    "abandoned ticket's replies dropped",
			cmds:    []string{"STOR f", "ABOR"},
			abandon: []int{0},
			script:  "150 open\r\n426 aborted\r\n226 abort ok\r\n",
			want:    map[int]string{1: "/226"},
		},
		{
			name:    "abandoned in the middle",
			cmds:    []string{"MODE E", "ALLO 5", "STOR f"},
			abandon: []int{1},
			script:  "200 mode\r\n202 no ALLO\r\n150 open\r\n226 done\r\n",
			want:    map[int]string{0: "/200", 2: "150/226"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, server := newTestStream(t)
			ts := make([]ticket, len(tt.cmds))
			for i, c := range tt.cmds {
				ts[i] = s.enqueue(c)
			}
			for _, i := range tt.abandon {
				s.abandon(ts[i])
			}
			serve(t, server, tt.script)
			ctx := t.Context()
			var mu sync.Mutex
			got := map[int]string{}
			var wg sync.WaitGroup
			order := make([]int, len(ts))
			for i := range order {
				order[i] = i
			}
			if tt.wantOrder {
				slices.Reverse(order)
			}
			for _, i := range order {
				if _, ok := tt.want[i]; !ok {
					continue
				}
				if tt.wantOrder {
					// Later tickets queue up first.
					time.Sleep(5 * time.Millisecond)
				}
				wg.Go(func() {
					var pre []string
					r, err := s.final(ctx, ts[i], func(r Reply) { pre = append(pre, fmt.Sprint(r.Code)) })
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						got[i] = err.Error()
						return
					}
					got[i] = fmt.Sprintf("%s/%d", strings.Join(pre, ","), r.Code)
				})
			}
			wg.Wait()
			for i, w := range tt.want {
				if got[i] != w {
					t.Errorf("%s: got %q, want %q", tt.cmds[i], got[i], w)
				}
			}
		})
	}
}

// TestReplyStreamNextAfterFinal: reading for an answered ticket reads
// what comes next (ReadReply after Do, an unsolicited 421).
func TestReplyStreamNextAfterFinal(t *testing.T) {
	s, server := newTestStream(t)
	serve(t, server, "200 ok\r\n421 closing\r\n")
	tk := s.enqueue("NOOP")
	var codes []int
	for range 2 {
		r, err := s.next(t.Context(), tk)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, r.Code)
	}
	if !slices.Equal(codes, []int{200, 421}) {
		t.Errorf("codes %v, want [200 421]", codes)
	}
}

// TestReplyStreamDiscard: the drain after ABOR takes whatever comes, the
// replies of every ticket, up to its count.
func TestReplyStreamDiscard(t *testing.T) {
	s, server := newTestStream(t)
	serve(t, server, "150 open\r\n426 aborted\r\n226 abort ok\r\n421 bye\r\n221 closing\r\n500 more\r\n")
	stor := s.enqueue("STOR f")
	if r, err := s.next(t.Context(), stor); err != nil || r.Code != 150 {
		t.Fatalf("STOR: %v %v", r.Code, err)
	}
	s.enqueue("ABOR")
	s.discard(4)
	r, err := s.next(t.Context(), s.last())
	if err != nil || r.Code != 500 {
		t.Errorf("after discard(4): %v %v, want the fifth reply, 500", r.Code, err)
	}
}

// TestReplyStreamCancel: a waiter whose context ends gives up with the
// cause and its ticket is abandoned; a reader blocked in the read is
// interrupted; the connection stays usable for the others.
func TestReplyStreamCancel(t *testing.T) {
	t.Run("waiting for the turn", func(t *testing.T) {
		s, server := newTestStream(t)
		a, b, c := s.enqueue("SITE A"), s.enqueue("SITE B"), s.enqueue("SITE C")
		cause := errors.New("gave up")
		ctx, cancel := context.WithCancelCause(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := s.next(ctx, b)
			errc <- err
		}()
		time.Sleep(10 * time.Millisecond)
		cancel(cause)
		err := <-errc
		var be *brokenError
		if !errors.As(err, &be) || !errors.Is(err, cause) {
			t.Fatalf("B: %v, want a *brokenError with the cause", err)
		}
		serve(t, server, "200 a\r\n200 b\r\n202 c\r\n")
		if r, err := s.next(t.Context(), a); err != nil || r.Code != 200 {
			t.Errorf("A: %v %v", r.Code, err)
		}
		if r, err := s.next(t.Context(), c); err != nil || r.Code != 202 {
			t.Errorf("C: %v %v, want 202 (B's 200 dropped)", r.Code, err)
		}
	})
	t.Run("reading", func(t *testing.T) {
		s, _ := newTestStream(t)
		a := s.enqueue("STAT")
		ctx, cancel := context.WithTimeoutCause(t.Context(), 20*time.Millisecond, errors.New("stalled"))
		defer cancel()
		_, err := s.next(ctx, a)
		if err == nil || err.Error() != "client: STAT: stalled" {
			t.Fatalf("err %v, want client: STAT: stalled", err)
		}
	})
}

// TestReplyStreamClose: closing wakes every waiter with one error type.
func TestReplyStreamClose(t *testing.T) {
	s, server := newTestStream(t)
	ts := []ticket{s.enqueue("RETR f"), s.enqueue("NOOP"), s.enqueue("NOOP")}
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, tk := range ts {
		wg.Go(func() { _, errs[i] = s.next(t.Context(), tk) })
	}
	time.Sleep(10 * time.Millisecond)
	s.close(ErrClosed)
	server.Close() // what interrupts the read in progress
	wg.Wait()
	for i, err := range errs {
		var be *brokenError
		if !errors.As(err, &be) {
			t.Errorf("ticket %d: %v, want a *brokenError", i, err)
		}
		if i > 0 && !errors.Is(err, ErrClosed) {
			t.Errorf("ticket %d: %v, want ErrClosed", i, err)
		}
	}
	if _, err := s.next(t.Context(), s.enqueue("QUIT")); !errors.Is(err, ErrClosed) {
		t.Errorf("after close: %v, want ErrClosed", err)
	}
}
