package web

import (
	"context"
	"net/http"
	"time"
)

// Per-user bounds on the work a request can start.
const (
	// maxBusyPerUser listings, advice and job requests of one user are
	// served at once; more wait, then get 429.
	maxBusyPerUser = 4
	// resolveTimeout bounds expanding a copy request's directories.
	resolveTimeout = 2 * time.Minute
	// maxStreamsPerUser event streams are open per user; more get 429.
	maxStreamsPerUser = 8
)

// busyWait is how long a request waits for one of u.busy's tokens (a
// variable for the tests).
var busyWait = 30 * time.Second

// enter takes one of u's busy tokens, waiting up to busyWait (a page
// may start many copies at once), or answers 429 and returns false.
// Call the returned func when done.
func (u *userState) enter(w http.ResponseWriter, r *http.Request) (func(), bool) {
	t := time.NewTimer(busyWait)
	defer t.Stop()
	select {
	case u.busy <- struct{}{}:
		return func() { <-u.busy }, true
	case <-t.C:
	case <-r.Context().Done():
	}
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusTooManyRequests, "too many requests at once: try again")
	return nil, false
}

// limited wraps a handler of a user's slow work (listings, advice, job
// requests) in u.enter.
func limited(h func(http.ResponseWriter, *http.Request, *userState, *session)) func(http.ResponseWriter, *http.Request, *userState, *session) {
	return func(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
		leave, ok := u.enter(w, r)
		if !ok {
			return
		}
		defer leave()
		h(w, r, u, s)
	}
}

// resolveContext bounds a request's resolve (directory expansion).
func resolveContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, resolveTimeout)
}

// activeLocked counts u's queued and running jobs; u.mu must be held.
func (u *userState) activeLocked() int {
	n := 0
	for _, j := range u.jobs {
		if j.State == stateQueued || j.State == stateRunning {
			n++
		}
	}
	return n
}
