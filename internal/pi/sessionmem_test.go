package pi_test

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// idleSessionBudget is the most heap and stack an idle logged-in session
// may hold (issue 17: 10,000 sessions at 16 KiB each at most). It
// includes this test's own end of each connection, a few hundred bytes.
const idleSessionBudget = 16 << 10

// TestIdleSessionMemory logs in idleSessions sessions and leaves them
// idle: each must keep one goroutine (its reader) and hold, with it, at
// most idleSessionBudget of heap and goroutine stack.
func TestIdleSessionMemory(t *testing.T) {
	const idleSessions = 500
	addr := serve(t, config(seed(t)))
	// One session first, so that what every session shares (the
	// listener, lazily made tables) is in the baseline.
	conns := []net.Conn{loginRaw(t, addr)}
	g0 := settledGoroutines(t, -1)
	before := inUse()
	for range idleSessions {
		conns = append(conns, loginRaw(t, addr))
	}
	// The executors that answered the logins end once idle.
	if g := settledGoroutines(t, g0+idleSessions); g > g0+idleSessions {
		t.Errorf("%d goroutines for %d more idle sessions, want one each", g-g0, idleSessions)
	}
	after := inUse()
	per := float64(after-before) / idleSessions
	t.Logf("%d idle sessions: %.0f bytes each (heap+stacks in use)", idleSessions, per)
	budget := idleSessionBudget
	if raceEnabled {
		budget += budget / 2 // the race detector's own state per goroutine
	}
	if per > float64(budget) {
		t.Errorf("an idle session holds %.0f bytes, want at most %d", per, budget)
	}
	// Every session is still there and answers.
	for _, c := range conns {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if err := rawCmd(c, "NOOP", "200 "); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// settledGoroutines returns the number of goroutines once it is at most
// want (want < 0: at once), or after 10s, whichever comes first.
func settledGoroutines(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if want < 0 || n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// inUse returns the heap and goroutine stacks in use after full
// collections (the second one also shrinks stacks that grew).
func inUse() uint64 {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// loginRaw logs in anonymously on a plain connection with no buffer of
// its own, so that the client side adds little to what is measured.
func loginRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	for _, step := range []struct{ line, want string }{{"", "220 "}, {"USER anonymous", "331 "}, {"PASS x@y", "230 "}} {
		if err := rawCmd(c, step.line, step.want); err != nil {
			c.Close()
			t.Fatal(err)
		}
	}
	c.SetDeadline(time.Time{})
	return c
}

// rawCmd sends line (none if empty) and reads a reply up to the line that
// starts with want.
func rawCmd(c net.Conn, line, want string) error {
	if line != "" {
		if _, err := io.WriteString(c, line+"\r\n"); err != nil {
			return err
		}
	}
	var got []byte
	var b [256]byte
	for {
		n, err := c.Read(b[:])
		got = append(got, b[:n]...)
		if i := bytes.LastIndex(got, []byte("\r\n")); i >= 0 {
			last := got[:i]
			if j := bytes.LastIndex(last, []byte("\r\n")); j >= 0 {
				last = last[j+2:]
			}
			if len(last) >= 4 && last[3] == ' ' {
				if !bytes.HasPrefix(last, []byte(want)) {
					return &replyError{line: line, got: string(last), want: want}
				}
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
}

type replyError struct{ line, got, want string }

func (e *replyError) Error() string {
	return "after " + e.line + ": got " + e.got + ", want " + e.want
}
