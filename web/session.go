package web

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/transfer"
)

const cookieName = "ferry_session"

// session is one logged-in browser.
type session struct {
	user    string
	csrf    string
	expires time.Time
}

// userState is everything of one user: endpoints (with their
// credentials), jobs, the engine that runs them. Handlers reach it only
// through the user's session.
type userState struct {
	name   string
	engine *transfer.Engine

	mu        sync.Mutex
	endpoints map[string]*endpoint // by id; guarded by mu
	jobs      map[string]*job      // by id; guarded by mu
	order     []string             // job ids, oldest first; guarded by mu
	cred      *gsi.Credential      // the GSI proxy; guarded by mu
	version   uint64               // bumped on every job change; guarded by mu
	changed   chan struct{}        // closed and replaced on every change; guarded by mu
	streams   int                  // open event streams; guarded by mu

	// running holds a token per running job of the user
	// (Config.MaxRunningPerUser); busy one per listing, advice or job
	// request being resolved (maxBusyPerUser).
	running chan struct{}
	busy    chan struct{}
}

// userStore records a user's transfers under their name.
type userStore struct {
	history.Store
	user string
}

func (s userStore) Add(ctx context.Context, r *history.Record) (int64, error) {
	c := *r
	c.User = s.user
	return s.Store.Add(ctx, &c)
}

func (a *App) userLocked(name string) *userState {
	u := a.users[name]
	if u == nil {
		u = &userState{
			name:      name,
			endpoints: map[string]*endpoint{},
			jobs:      map[string]*job{},
			changed:   make(chan struct{}),
			running:   make(chan struct{}, a.cfg.MaxRunningPerUser),
			busy:      make(chan struct{}, maxBusyPerUser),
		}
		u.engine = &transfer.Engine{History: userStore{a.cfg.History, name}, Tool: "web", Log: a.cfg.Log,
			Dial: func(ctx context.Context, l transfer.Location) (*client.Conn, error) { return a.dial(ctx, u, l) }}
		a.users[name] = u
	}
	return u
}

// bumpLocked notes a change of u's jobs; u.mu must be held.
func (u *userState) bumpLocked() {
	u.version++
	close(u.changed)
	u.changed = make(chan struct{})
}

// pruneLocked forgets expired sessions; App.mu must be held.
func (a *App) pruneLocked(now time.Time) {
	for tok, s := range a.sessions {
		if now.After(s.expires) {
			delete(a.sessions, tok)
		}
	}
}

// source is the client's address, without the port.
func source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// sameOrigin refuses cross-site requests that carry an Origin (a login
// form on another site must not log the browser in).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

type meReply struct {
	User string `json:"user"`
	CSRF string `json:"csrf"`
}

func (a *App) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "cross-origin login refused")
		return
	}
	var req loginRequest
	if !readJSON(w, r, &req) {
		return
	}
	if a.cfg.Passwd == nil || req.User == "" || len(req.User) > 256 {
		writeError(w, http.StatusUnauthorized, "wrong user name or password")
		return
	}
	// The attempt is reserved before the (slow) check, so that
	// concurrent attempts cannot all pass the limit.
	src := sourceKey(r)
	a.mu.Lock()
	wait, busy := a.limiter.beginLocked(src, req.User, time.Now())
	a.mu.Unlock()
	switch {
	case wait > 0:
		secs := int(wait.Seconds()) + 1
		w.Header().Set("Retry-After", fmt.Sprint(secs))
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many failed logins: try again in %d s", secs))
		return
	case busy:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "too many logins at once: try again in 1 s")
		return
	}
	ok := a.verify(req.User, req.Password)
	a.mu.Lock()
	a.limiter.endLocked(src, req.User, time.Now(), ok)
	a.mu.Unlock()
	if !ok {
		writeError(w, http.StatusUnauthorized, "wrong user name or password")
		return
	}
	s, _ := a.newSession(w, req.User)
	writeJSON(w, http.StatusOK, meReply{User: s.user, CSRF: s.csrf})
}

// authed wraps a handler that needs a logged-in user; a state-changing
// one (csrf) also needs the session's CSRF token in X-CSRF-Token.
func (a *App) authed(csrf bool, h func(http.ResponseWriter, *http.Request, *userState, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		var s *session
		var u *userState
		if err == nil {
			a.mu.Lock()
			s = a.sessions[c.Value]
			if s != nil && time.Now().After(s.expires) {
				delete(a.sessions, c.Value)
				s = nil
			}
			if s != nil {
				u = a.userLocked(s.user)
			}
			a.mu.Unlock()
		}
		if s == nil && !csrf {
			// A browser that shows a certificate we map to a user is
			// logged in by it (a GET: the page then reads its CSRF
			// token from /api/me).
			s, u = a.certSession(w, r)
		}
		if s == nil {
			writeError(w, http.StatusUnauthorized, "not logged in")
			return
		}
		if csrf {
			t := r.Header.Get("X-CSRF-Token")
			if t == "" || subtle.ConstantTimeCompare([]byte(t), []byte(s.csrf)) != 1 || !sameOrigin(r) {
				writeError(w, http.StatusForbidden, "missing or bad CSRF token")
				return
			}
		}
		h(w, r, u, s)
	}
}

// certSession logs in the user the request's client certificate maps
// to, or returns nil.
func (a *App) certSession(w http.ResponseWriter, r *http.Request) (*session, *userState) {
	if a.cfg.CertUser == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, nil
	}
	name, err := a.cfg.CertUser(r.TLS.PeerCertificates)
	if err != nil || name == "" {
		if err != nil {
			a.cfg.Log.Info("web: client certificate refused", "remote", r.RemoteAddr, "err", err)
		}
		return nil, nil
	}
	return a.newSession(w, name)
}

// newSession starts a session of user name and sets its cookie.
func (a *App) newSession(w http.ResponseWriter, name string) (*session, *userState) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pruneLocked(now)
	s := &session{user: name, csrf: newToken(), expires: now.Add(a.cfg.SessionTTL)}
	tok := newToken()
	a.sessions[tok] = s
	u := a.userLocked(name)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: tok, Path: "/", HttpOnly: true, Secure: a.cfg.Secure,
		SameSite: http.SameSiteStrictMode, Expires: s.expires,
	})
	return s, u
}

func (a *App) logout(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	c, _ := r.Cookie(cookieName)
	a.mu.Lock()
	delete(a.sessions, c.Value)
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: a.cfg.Secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	writeJSON(w, http.StatusOK, struct{}{})
}

func (a *App) me(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	writeJSON(w, http.StatusOK, meReply{User: s.user, CSRF: s.csrf})
}
