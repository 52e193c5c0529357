package web

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/replica"
)

//go:embed assets
var assets embed.FS

// Config configures an App. The zero value of a field means what its
// comment says.
type Config struct {
	// Passwd holds the accounts (ferry passwd's file format); nil lets
	// nobody log in.
	Passwd *auth.Passwd
	// Roots are the local directories file:// endpoints may open; none
	// means no file:// endpoints.
	Roots []string
	// History keeps the transfer records and feeds the advisor; nil
	// means history.Off.
	History history.Store
	// CertUser maps the certificate chain a browser presented over
	// HTTPS (leaf first) to a user, or says why not; nil means no
	// certificate logins. Only a GET logs in this way; the page then
	// reads its CSRF token from /api/me.
	CertUser func(chain []*x509.Certificate) (string, error)
	// Secure marks cookies Secure: set it when serving HTTPS.
	Secure bool
	// SessionTTL is how long a session lives; 0 means 12 hours.
	SessionTTL time.Duration
	// LoginFailures failed logins of one user name per LoginWindow from
	// one source (an IPv4 address or an IPv6 /64) are allowed before
	// logins of that name from it are refused with 429; four times as
	// many from one source over all names, and of one name over all
	// sources. 0 means 5 per minute. At most 4 password checks run at
	// once, one per source.
	LoginFailures int
	LoginWindow   time.Duration
	// AllowNet are networks endpoints (and their data connections) may
	// be on although the default policy refuses them: loopback,
	// link-local, multicast and unspecified addresses, and this host's
	// own addresses (those of its interfaces when New ran; an address
	// added later is not known until a restart). A laptop user browsing
	// a server on this host allows 127.0.0.0/8.
	AllowNet []netip.Prefix
	// DenyNet are networks endpoints may never be on; it wins over
	// AllowNet.
	DenyNet []netip.Prefix
	// Hosts are the host names (without port) requests may name in
	// their Host header, besides IP literals and "localhost": a page of
	// another name (DNS rebinding) gets 421. Nil allows only those.
	Hosts []string
	// Self are the app's own listen addresses, never connected to.
	Self []netip.AddrPort
	// TrustDir is the trust directory (CA certificates) that gsiftp://
	// servers' certificates are checked against; "" means none, and no
	// gsiftp://.
	TrustDir string
	// MaxRunning bounds the jobs that run at once (the others wait,
	// queued); 0 means 4.
	MaxRunning int
	// MaxRunningPerUser bounds the jobs of one user that run at once,
	// so that one user's queue cannot hold every slot (the users'
	// waiting jobs take the freed slots in turn); 0 means 2.
	MaxRunningPerUser int
	// MaxJobsPerUser bounds a user's queued and running jobs (more are
	// refused with 429); 0 means 100.
	MaxJobsPerUser int
	// Log gets the app's warnings; nil discards them.
	Log *slog.Logger
	// Catalogue, when not nil, is the replica catalogue the app shows
	// to every logged-in user (catalogue.go), whose LFNs users copy
	// into their panes (catalogue_copy.go: the copies mark replicas ok
	// or bad); nil means no catalogue view. The app does not close it.
	Catalogue *replica.Catalogue
	// Site, when not nil, makes the app one of several instances that
	// share sessions, endpoints and the job queue through a PostgreSQL
	// database (site.go); nil keeps them in this process.
	Site *SiteConfig
}

// App is the ferry web application, an http.Handler. Close stops its
// transfers.
type App struct {
	cfg    Config
	roots  []string // clean absolute Roots
	mux    *http.ServeMux
	ctx    context.Context // the lifetime of jobs
	cancel context.CancelFunc
	wg     sync.WaitGroup // running jobs and pruneLoop
	closed sync.Once
	slots  chan struct{} // one per running job
	// beforeItem, when not nil, runs before each file of a job is
	// copied (tests swap files for symbolic links there).
	beforeItem func(i int)
	// verify checks a password (cfg.Passwd; tests count the checks).
	verify func(user, pass string) bool
	trust  *gsi.TrustStore
	// hostAddrs are the addresses of this host's interfaces when New
	// ran (unmapped, without zone): checkAddr refuses them by default.
	hostAddrs []netip.Addr
	// site is the shared database of site mode; nil for one instance.
	site *site

	mu       sync.Mutex
	sessions map[string]*session // by token; guarded by mu
	// userSessions are each user's sessions, oldest first; certSessions
	// the sessions of certificate logins by fingerprint. Guarded by mu.
	userSessions map[string][]*session
	certSessions map[[32]byte]*session
	users        map[string]*userState // by name; guarded by mu
	limiter      loginLimiter
}

// New returns an App serving cfg.
func New(cfg Config) (*App, error) {
	if cfg.History == nil {
		cfg.History = history.Off{}
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.LoginFailures <= 0 {
		cfg.LoginFailures = 5
	}
	if cfg.LoginWindow <= 0 {
		cfg.LoginWindow = time.Minute
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 4
	}
	if cfg.MaxRunningPerUser <= 0 {
		cfg.MaxRunningPerUser = 2
	}
	if cfg.MaxJobsPerUser <= 0 {
		cfg.MaxJobsPerUser = 100
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &App{cfg: cfg, sessions: map[string]*session{}, users: map[string]*userState{}, slots: make(chan struct{}, cfg.MaxRunning)}
	for _, r := range cfg.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		} else {
			return nil, errors.New("web: root " + r + ": " + err.Error())
		}
		a.roots = append(a.roots, abs)
	}
	if cfg.TrustDir != "" {
		t, err := client.LoadTrustStore(cfg.TrustDir)
		if err != nil {
			return nil, fmt.Errorf("web: %w", err)
		}
		a.trust = t
	}
	hostAddrs, err := interfaceAddrs()
	if err != nil {
		cfg.Log.Warn("web: cannot list this host's addresses; only loopback and link-local ones are refused by default", "err", err)
	}
	a.hostAddrs = hostAddrs
	a.limiter = newLoginLimiter(cfg.LoginFailures, cfg.LoginWindow)
	a.verify = func(user, pass string) bool {
		_, ok := cfg.Passwd.Verify(user, pass)
		return ok
	}
	if cfg.Site != nil {
		st, err := openSite(context.Background(), *cfg.Site)
		if err != nil {
			return nil, err
		}
		a.site = st
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.userSessions, a.certSessions = map[string][]*session{}, map[[32]byte]*session{}
	a.wg.Go(a.pruneLoop)
	if a.site != nil {
		a.wg.Go(a.claimLoop)
	}
	a.routes()
	return a, nil
}

// Close cancels the running transfers and waits for them.
func (a *App) Close() error {
	a.closed.Do(a.close)
	return nil
}

func (a *App) close() {
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	users := make([]*userState, 0, len(a.users))
	for _, u := range a.users {
		users = append(users, u)
	}
	a.mu.Unlock()
	for _, u := range users {
		u.engine.Close(context.Background())
	}
	if a.site != nil {
		a.site.close()
	}
}

func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if a.cfg.Secure {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	if !a.hostAllowed(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "unknown host name "+r.Host+" (ferry web -host)")
		return
	}
	a.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether a request's Host names this app: an IP
// literal (DNS rebinding needs a name), "localhost" or one of
// Config.Hosts, with or without a port.
func (a *App) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if _, err := netip.ParseAddr(host); err == nil || host == "localhost" {
		return true
	}
	for _, h := range a.cfg.Hosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}

func (a *App) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	m.Handle("GET /", http.FileServerFS(static))
	m.HandleFunc("POST /api/login", a.login)
	m.HandleFunc("POST /api/logout", a.authed(true, a.logout))
	m.HandleFunc("GET /api/me", a.authed(false, a.me))
	m.HandleFunc("POST /api/endpoints", a.authed(true, a.openEndpoint))
	m.HandleFunc("GET /api/endpoints", a.authed(false, a.listEndpoints))
	m.HandleFunc("GET /api/list", a.authed(false, limited(a.list)))
	m.HandleFunc("POST /api/mkdir", a.authed(true, a.mkdir))
	m.HandleFunc("POST /api/rename", a.authed(true, a.rename))
	m.HandleFunc("POST /api/delete", a.authed(true, a.remove))
	m.HandleFunc("POST /api/advice", a.authed(true, limited(a.advice)))
	m.HandleFunc("POST /api/jobs", a.authed(true, limited(a.startJob)))
	m.HandleFunc("GET /api/jobs", a.authed(false, a.listJobs))
	m.HandleFunc("POST /api/jobs/{id}/cancel", a.authed(true, a.cancelJob))
	m.HandleFunc("POST /api/jobs/{id}/retry", a.authed(true, limited(a.retryJob)))
	m.HandleFunc("POST /api/checksum", a.authed(true, limited(a.checksum)))
	m.HandleFunc("GET /api/credential", a.authed(false, a.getCredential))
	m.HandleFunc("POST /api/credential", a.authed(true, a.setCredential))
	m.HandleFunc("POST /api/credential/delete", a.authed(true, a.dropCredential))
	m.HandleFunc("GET /api/events", a.authed(false, a.events))
	m.HandleFunc("GET /api/history", a.authed(false, a.history))
	m.HandleFunc("GET /api/catalogue/list", a.authed(false, limited(a.catalogueList)))
	m.HandleFunc("GET /api/catalogue/lfn", a.authed(false, limited(a.catalogueLFN)))
	m.HandleFunc("POST /api/catalogue/copy", a.authed(true, limited(a.catalogueCopy)))
	a.mux = m
}

// newToken returns a random 256-bit hex token.
func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// apiError is the JSON body of an error reply.
type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{Error: sanitize(msg)})
}

// readJSON decodes a request body of at most 1 MiB into v. The body
// must say it is JSON (415 otherwise): a form another site posts
// cannot. A body whose fields are bad (v's validate method) is answered
// 400.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "the request body must be application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return false
	}
	if c, ok := v.(validator); ok {
		if err := c.validate(); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return false
		}
	}
	return true
}
