package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loginFrom posts a login to the app's handler as if from remote
// ("addr:port"); it returns the status and the error text.
func loginFrom(a *App, remote, user, pass string) (int, string) {
	b, _ := json.Marshal(loginRequest{User: user, Password: pass})
	r := httptest.NewRequest("POST", "http://127.0.0.1:8080/api/login", bytes.NewReader(b))
	r.Header.Set("Content-Type", "application/json")
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	var e apiError
	json.Unmarshal(w.Body.Bytes(), &e)
	return w.Code, e.Error
}

// countChecks makes the app's password checks slow (as PBKDF2 is) and
// counts them.
func countChecks(a *App) *atomic.Int32 {
	var n atomic.Int32
	verify := a.verify
	a.verify = func(user, pass string) bool {
		n.Add(1)
		time.Sleep(20 * time.Millisecond)
		return verify(user, pass)
	}
	return &n
}

// TestLoginConcurrentLimit is the attack review's bypass: 30 concurrent
// guesses from one source, each retried while the app is busy. At most
// LoginFailures passwords are checked in the window, and the right
// password after them is refused.
func TestLoginConcurrentLimit(t *testing.T) {
	ta := startApp(t)
	checks := countChecks(ta.app)
	var wg sync.WaitGroup
	var unauthorized, limited atomic.Int32
	for i := range 29 {
		wg.Go(func() {
			for {
				code, msg := loginFrom(ta.app, "192.0.2.7:4000", "bob", fmt.Sprint("guess", i))
				switch {
				case code == http.StatusTooManyRequests && strings.Contains(msg, "at once"):
					time.Sleep(time.Millisecond)
					continue
				case code == http.StatusTooManyRequests:
					limited.Add(1)
				case code == http.StatusUnauthorized:
					unauthorized.Add(1)
				default:
					t.Errorf("guess %d: %d %s", i, code, msg)
				}
				return
			}
		})
	}
	wg.Wait()
	if n := checks.Load(); n > 5 {
		t.Errorf("%d passwords checked, want at most 5", n)
	}
	if unauthorized.Load() > 5 || unauthorized.Load()+limited.Load() != 29 {
		t.Errorf("%d wrong, %d limited", unauthorized.Load(), limited.Load())
	}
	if code, msg := loginFrom(ta.app, "192.0.2.7:4001", "bob", testPasswords["bob"]); code != http.StatusTooManyRequests {
		t.Errorf("the right password after the limit: %d %s, want 429", code, msg)
	}
}

// TestLoginLimitKeys: failures of one name lock out that name from the
// source, not the other users behind it until four times as many; IPv6
// sources count by /64.
func TestLoginLimitKeys(t *testing.T) {
	ta := startApp(t)
	for range 5 {
		if code, _ := loginFrom(ta.app, "192.0.2.7:1", "bob", "nope"); code != http.StatusUnauthorized {
			t.Fatalf("failure: %d", code)
		}
	}
	if code, _ := loginFrom(ta.app, "192.0.2.7:1", "bob", testPasswords["bob"]); code != http.StatusTooManyRequests {
		t.Errorf("bob after 5 failures: %d, want 429", code)
	}
	if code, msg := loginFrom(ta.app, "192.0.2.7:1", "alice", testPasswords["alice"]); code != http.StatusOK {
		t.Errorf("alice behind the same address: %d %s, want 200", code, msg)
	}
	if code, _ := loginFrom(ta.app, "192.0.2.8:1", "bob", testPasswords["bob"]); code != http.StatusOK {
		t.Errorf("bob from another address: %d, want 200", code)
	}
	// One IPv6 /64 is one source: many names from it reach its limit.
	for i := range 20 {
		addr := fmt.Sprintf("[2001:db8:1:2::%x]:1", i+1)
		if code, _ := loginFrom(ta.app, addr, fmt.Sprint("user", i%4), "nope"); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, code)
		}
	}
	if code, _ := loginFrom(ta.app, "[2001:db8:1:2::ffff]:1", "alice", testPasswords["alice"]); code != http.StatusTooManyRequests {
		t.Errorf("alice from a /64 with 20 failures: %d, want 429", code)
	}
	if code, _ := loginFrom(ta.app, "[2001:db8:1:3::1]:1", "alice", testPasswords["alice"]); code != http.StatusOK {
		t.Errorf("alice from another /64: %d, want 200", code)
	}
}

// TestLoginLimiterBounded: the counters of many sources stay bounded.
func TestLoginLimiterBounded(t *testing.T) {
	l := newLoginLimiter(5, time.Minute)
	now := time.Now()
	for i := range maxLimiterKeys {
		src := fmt.Sprintf("198.51.%d.%d/32", i/256, i%256)
		if wait, busy := l.beginLocked(src, src, now); wait > 0 || busy {
			t.Fatalf("source %d refused", i)
		}
		l.endLocked(src, src, now, false)
	}
	if len(l.keys) > maxLimiterKeys || len(l.users) > maxUserKeys || len(l.srcBusy) != 0 || l.busy != 0 {
		t.Errorf("%d keys, %d user keys, %d busy sources, %d busy", len(l.keys), len(l.users), len(l.srcBusy), l.busy)
	}
}

// TestLoginLimiterEvictKeepsUsers: a flood of failures of new names
// from new sources evicts source counters, never a name's counter with
// failures in the window, so it cannot lift a victim's lockout.
func TestLoginLimiterEvictKeepsUsers(t *testing.T) {
	l := newLoginLimiter(5, time.Minute)
	now := time.Now()
	fail := func(src, user string) {
		if wait, busy := l.beginLocked(src, user, now); wait == 0 && !busy {
			l.endLocked(src, user, now, false)
		}
	}
	// 20 failures of victim from four /64s lock the name everywhere.
	for i := range 4 {
		for range 5 {
			fail(fmt.Sprintf("2001:db8:%x::/64", i), "victim")
		}
	}
	if wait, _ := l.beginLocked("2001:db8:ff::/64", "victim", now); wait == 0 {
		t.Fatal("victim not locked out after 20 failures")
	}
	now = now.Add(time.Second)
	for i := range 12000 {
		fail(fmt.Sprintf("2001:db8:1:%x::/64", i/20), fmt.Sprintf("junk%d", i))
	}
	if len(l.keys) > maxLimiterKeys || len(l.users) > maxUserKeys {
		t.Errorf("%d keys, %d user keys: not bounded", len(l.keys), len(l.users))
	}
	if wait, busy := l.beginLocked("2001:db8:fe::/64", "victim", now); wait == 0 {
		t.Errorf("victim's lockout lifted by eviction (keys %d, user keys %d, busy %v)", len(l.keys), len(l.users), busy)
	}
}

// TestJSONContentType: a body that does not say it is JSON gets 415.
func TestJSONContentType(t *testing.T) {
	ta := startApp(t)
	for ct, want := range map[string]int{
		"text/plain":                        http.StatusUnsupportedMediaType,
		"application/x-www-form-urlencoded": http.StatusUnsupportedMediaType,
		"":                                  http.StatusUnsupportedMediaType,
		"application/json; charset=utf-8":   http.StatusOK,
	} {
		b, _ := json.Marshal(loginRequest{User: "alice", Password: testPasswords["alice"]})
		r := httptest.NewRequest("POST", "http://127.0.0.1:8080/api/login", bytes.NewReader(b))
		r.RemoteAddr = "192.0.2.9:1"
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		w := httptest.NewRecorder()
		ta.app.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Content-Type %q: %d, want %d", ct, w.Code, want)
		}
	}
}
