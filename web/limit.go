package web

import (
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// Login limits. A password check is reserved under App.mu before it
// runs (slow PBKDF2), so concurrent attempts count toward the limits
// as they start, not when they fail.
const (
	// maxChecks password checks run at once, maxChecksPerSource of
	// them from one source; more get 429 at once.
	maxChecks          = 4
	maxChecksPerSource = 1
	// sourceFactor × LoginFailures failures per window are allowed from
	// one source over all user names, and for one user name over all
	// sources: a lockout of one name does not lock out the other users
	// behind the same address as soon.
	sourceFactor = 4
	// maxLimiterKeys bounds the counters kept of sources and of names
	// from a source; beyond it the oldest go. maxUserKeys bounds the
	// counters of user names on their own: a flood of new sources and
	// names never evicts a name's counter (which would lift its
	// lockout); only past maxUserKeys names failing within the window
	// do the oldest go.
	maxLimiterKeys = 20000
	maxUserKeys    = 20000
)

// loginLimiter counts failed logins of a user name from a source
// (LoginFailures per LoginWindow), of a source and of a user name. A
// source is an IPv4 address or an IPv6 /64 (xfer.Source). It is guarded
// by App.mu.
type loginLimiter struct {
	max     int
	window  time.Duration
	keys    map[string]*attempts // by source, and name from a source
	users   map[string]*attempts // by user name
	busy    int                  // password checks running
	srcBusy map[string]int       // password checks running per source
}

// attempts are the recent failures and the running checks of one key.
type attempts struct {
	fails   []time.Time // oldest first, within the window
	pending int         // checks running
}

func newLoginLimiter(max int, window time.Duration) loginLimiter {
	return loginLimiter{max: max, window: window, keys: map[string]*attempts{}, users: map[string]*attempts{}, srcBusy: map[string]int{}}
}

// sourceKey is the limiter's name of the request's source.
func sourceKey(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return source(r)
	}
	return xfer.Source(ap.Addr()).String()
}

type limitKey struct {
	key string
	max int
}

func (l *loginLimiter) keysOf(src, user string) [3]limitKey {
	return [3]limitKey{
		{"n\x00" + src + "\x00" + user, l.max},
		{"s\x00" + src, l.max * sourceFactor},
		{"u\x00" + user, l.max * sourceFactor},
	}
}

// table is the map that holds key: users for a user name's key, keys
// for the others.
func (l *loginLimiter) table(key string) map[string]*attempts {
	if strings.HasPrefix(key, "u\x00") {
		return l.users
	}
	return l.keys
}

// prune drops a's failures older than the window.
func (l *loginLimiter) prune(a *attempts, now time.Time) {
	i := 0
	for i < len(a.fails) && now.Sub(a.fails[i]) > l.window {
		i++
	}
	a.fails = a.fails[i:]
}

// beginLocked reserves a password check of user from src. It returns
// wait > 0 while the limits refuse logins (for that long), busy when
// too many checks run; otherwise the check is reserved and endLocked
// must follow.
func (l *loginLimiter) beginLocked(src, user string, now time.Time) (wait time.Duration, busy bool) {
	keys := l.keysOf(src, user)
	for _, k := range keys {
		a := l.table(k.key)[k.key]
		if a == nil {
			continue
		}
		l.prune(a, now)
		if len(a.fails)+a.pending >= k.max {
			w := time.Second // pending checks: retry soon
			if len(a.fails) > 0 {
				w = max(l.window-now.Sub(a.fails[0]), time.Second)
			}
			wait = max(wait, w)
		}
	}
	if wait > 0 {
		return wait, false
	}
	if l.busy >= maxChecks || l.srcBusy[src] >= maxChecksPerSource {
		return 0, true
	}
	l.busy++
	l.srcBusy[src]++
	for _, k := range keys {
		t := l.table(k.key)
		a := t[k.key]
		if a == nil {
			a = &attempts{}
			t[k.key] = a
		}
		a.pending++
	}
	return 0, false
}

// endLocked ends a check beginLocked reserved; a failed one counts.
func (l *loginLimiter) endLocked(src, user string, now time.Time, ok bool) {
	l.busy--
	if l.srcBusy[src]--; l.srcBusy[src] <= 0 {
		delete(l.srcBusy, src)
	}
	for _, k := range l.keysOf(src, user) {
		t := l.table(k.key)
		a := t[k.key]
		if a == nil {
			continue
		}
		a.pending--
		if !ok {
			a.fails = append(a.fails, now)
		}
		if a.pending == 0 && len(a.fails) == 0 {
			delete(t, k.key)
		}
	}
	if len(l.keys) > maxLimiterKeys {
		l.evictLocked(l.keys, maxLimiterKeys, now)
	}
	if len(l.users) > maxUserKeys {
		l.evictLocked(l.users, maxUserKeys, now)
	}
}

// evictLocked drops the expired counters of t, then the oldest idle
// ones, down to 90 % of limit.
func (l *loginLimiter) evictLocked(t map[string]*attempts, limit int, now time.Time) {
	type aged struct {
		key  string
		last time.Time
	}
	var idle []aged
	for k, a := range t {
		l.prune(a, now)
		switch {
		case a.pending > 0:
		case len(a.fails) == 0:
			delete(t, k)
		default:
			idle = append(idle, aged{k, a.fails[len(a.fails)-1]})
		}
	}
	if over := len(t) - limit*9/10; over > 0 {
		sort.Slice(idle, func(i, j int) bool { return idle[i].last.Before(idle[j].last) })
		for _, x := range idle[:min(over, len(idle))] {
			delete(t, x.key)
		}
	}
}
