package web

import (
	"context"
	"crypto/sha256"
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
	token   string // the cookie's value, the key in App.sessions
	user    string
	csrf    string
	expires time.Time
	cert    [32]byte // the SHA-256 of the client certificate that logged it in; zero for a password
}

// maxSessionsPerUser bounds a user's sessions: a new one ends the
// oldest beyond it.
const maxSessionsPerUser = 32

// pruneInterval is how often expired sessions are forgotten.
const pruneInterval = time.Minute

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
	for _, s := range a.sessions {
		if now.After(s.expires) {
			a.dropLocked(s)
		}
	}
}

// pruneLoop forgets expired sessions every pruneInterval until the app
// closes.
func (a *App) pruneLoop() {
	t := time.NewTicker(pruneInterval)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case now := <-t.C:
			a.mu.Lock()
			a.pruneLocked(now)
			a.mu.Unlock()
			if a.site != nil {
				if err := a.site.prune(a.ctx); err != nil && a.ctx.Err() == nil {
					a.cfg.Log.Warn("web: site: pruning sessions", "err", err)
				}
			}
		}
	}
}

// dropLocked ends the session s; App.mu must be held.
func (a *App) dropLocked(s *session) {
	if a.sessions[s.token] == s {
		delete(a.sessions, s.token)
	}
	if a.certSessions[s.cert] == s {
		delete(a.certSessions, s.cert)
	}
	list := a.userSessions[s.user]
	for i, x := range list {
		if x == s {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(a.userSessions, s.user)
	} else {
		a.userSessions[s.user] = list
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
	// Catalogue says the app shows a replica catalogue.
	Catalogue bool `json:"catalogue,omitempty"`
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
	s, _, err := a.newSession(w, req.User)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "sessions: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, meReply{User: s.user, CSRF: s.csrf, Catalogue: a.cfg.Catalogue != nil})
}

// authed wraps a handler that needs a logged-in user; a state-changing
// one (csrf) also needs the session's CSRF token in X-CSRF-Token.
func (a *App) authed(csrf bool, h func(http.ResponseWriter, *http.Request, *userState, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		var s *session
		var u *userState
		if err == nil && a.site != nil {
			s, err = a.site.session(r.Context(), c.Value)
			if err != nil {
				writeError(w, http.StatusServiceUnavailable, "sessions: "+err.Error())
				return
			}
			if s != nil {
				a.mu.Lock()
				u = a.userLocked(s.user)
				a.mu.Unlock()
			}
		} else if err == nil {
			a.mu.Lock()
			s = a.sessions[c.Value]
			if s != nil && time.Now().After(s.expires) {
				a.dropLocked(s)
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
	// A browser that shows the certificate again without the cookie
	// (another tab, cookies off) gets the session it has.
	fp := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
	if a.site != nil {
		// The database keeps no token, only its hash: a new session.
		s, u, err := a.newSessionWith(w, name, fp)
		if err != nil {
			a.cfg.Log.Warn("web: site: session not stored", "err", err)
			return nil, nil
		}
		return s, u
	}
	a.mu.Lock()
	s := a.certSessions[fp]
	if s != nil && (s.user != name || time.Now().After(s.expires) || a.sessions[s.token] != s) {
		s = nil
	}
	var u *userState
	if s != nil {
		u = a.userLocked(name)
		a.setCookie(w, s)
	}
	a.mu.Unlock()
	if s != nil {
		return s, u
	}
	s, u, _ = a.newSessionWith(w, name, fp)
	return s, u
}

// newSession starts a session of user name and sets its cookie.
func (a *App) newSession(w http.ResponseWriter, name string) (*session, *userState, error) {
	return a.newSessionWith(w, name, [32]byte{})
}

// newSessionWith is newSession of a session bound to the certificate
// fingerprint cert (zero: none). A user's sessions beyond
// maxSessionsPerUser end, the oldest first.
func (a *App) newSessionWith(w http.ResponseWriter, name string, cert [32]byte) (*session, *userState, error) {
	now := time.Now()
	s := &session{token: newToken(), user: name, csrf: newToken(), expires: now.Add(a.cfg.SessionTTL), cert: cert}
	if a.site != nil {
		ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
		defer cancel()
		if err := a.site.saveSession(ctx, s); err != nil {
			return nil, nil, err
		}
		a.mu.Lock()
		u := a.userLocked(name)
		a.mu.Unlock()
		a.setCookie(w, s)
		return s, u, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[s.token] = s
	a.userSessions[name] = append(a.userSessions[name], s)
	for len(a.userSessions[name]) > maxSessionsPerUser {
		a.dropLocked(a.userSessions[name][0])
	}
	if cert != ([32]byte{}) {
		a.certSessions[cert] = s
	}
	u := a.userLocked(name)
	a.setCookie(w, s)
	return s, u, nil
}

// setCookie sets the cookie of session s.
func (a *App) setCookie(w http.ResponseWriter, s *session) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: s.token, Path: "/", HttpOnly: true, Secure: a.cfg.Secure,
		SameSite: http.SameSiteStrictMode, Expires: s.expires,
	})
}

func (a *App) logout(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	if a.site != nil {
		if err := a.site.dropSession(r.Context(), s.token); err != nil {
			writeError(w, http.StatusServiceUnavailable, "sessions: "+err.Error())
			return
		}
	}
	a.mu.Lock()
	a.dropLocked(s)
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: a.cfg.Secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	writeJSON(w, http.StatusOK, struct{}{})
}

func (a *App) me(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	writeJSON(w, http.StatusOK, meReply{User: s.user, CSRF: s.csrf, Catalogue: a.cfg.Catalogue != nil})
}
