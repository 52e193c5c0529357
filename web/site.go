package web

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/transfer"
)

// Site mode: with Config.Site, several instances of ferry web share one
// PostgreSQL database (docs/web-site-mode.md):
//
//   - sessions (web_sessions): the cookie's token is stored as its
//     SHA-256, with the user, the CSRF token and the expiry, so that a
//     cookie one instance issued is valid on every other;
//   - endpoints (web_endpoints): what a pane opened, without its
//     password, so that any instance can list it;
//   - jobs (web_jobs): the queue. Each instance claims queued jobs with
//     SELECT … FOR UPDATE SKIP LOCKED, renews its lease every
//     heartbeat while it writes the job's progress, and writes the
//     result; a job whose lease ran out (its instance died) is queued
//     again and resumed by another. Cancel sets cancel_requested, which
//     the running instance reads at its next heartbeat.
//
// Secrets: an FTP password is sealed with the site key (AES-256-GCM,
// bound to its row) when there is one; without a key it stays in the
// memory of the instance it was given to, and the endpoint and the jobs
// that need it are pinned there. A GSI proxy is never shared: it stays
// in the memory of the instance it was uploaded to, and gsiftp:// jobs
// are pinned to that instance.

//go:embed migrations
var siteMigrations embed.FS

// SiteConfig makes an App one of several instances sharing a
// PostgreSQL database.
type SiteConfig struct {
	// DSN is the PostgreSQL database (postgres://…); it may be the
	// history's.
	DSN string
	// Key, 32 bytes, seals endpoint passwords stored in the database;
	// nil keeps them in the memory of the instance they were given to,
	// and pins the jobs that need them to it.
	Key []byte
	// Instance names this instance in the database; "" means a random
	// name. Two running instances must not share one.
	Instance string
	// Lease is how long a claimed job stays this instance's without a
	// heartbeat; 0 means 30 s. Heartbeats come every Lease/3 (at most
	// every 500 ms, when progress is written too).
	Lease time.Duration
	// Poll is how often the instance looks for queued jobs, expired
	// leases and (in event streams) changes made by other instances;
	// 0 means 500 ms.
	Poll time.Duration

	// hold, for tests, starts the instance not claiming jobs until
	// site.hold is cleared.
	hold bool
}

// LoadSiteKey reads a site key file: 32 bytes, or 64 hex digits (white
// space around them allowed). A file that group or others may read is
// refused.
func LoadSiteKey(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("site key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("site key: %s may be read by group or others (chmod 600 it)", name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("site key: %w", err)
	}
	if len(b) == 32 {
		return b, nil
	}
	if k, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil && len(k) == 32 {
		return k, nil
	}
	return nil, fmt.Errorf("site key: %s holds neither 32 bytes nor 64 hex digits (make one with: head -c 32 /dev/urandom > FILE)", name)
}

// site is the shared state of site mode.
type site struct {
	db       *sql.DB
	key      cipher.AEAD // nil: no site key
	instance string
	lease    time.Duration
	poll     time.Duration
	beat     time.Duration
	kick     chan struct{} // a job was queued here: look now
	hold     atomic.Bool   // claim nothing (tests)

	mu      sync.Mutex
	secrets map[string]jobSecret // pinned jobs' passwords, by job id; guarded by mu
	running int                  // jobs this instance runs; guarded by mu
}

// maxPinnedSecrets bounds the passwords of pinned jobs an instance
// keeps (for the jobs, then for their retries).
const maxPinnedSecrets = 10000

// siteLock is the advisory lock key that serialises migrations of web's
// schema ("ferryweb" in ASCII).
const siteLock = 0x6665727279776562

func openSite(ctx context.Context, c SiteConfig) (*site, error) {
	cfg, err := pgx.ParseConfig(c.DSN)
	if err != nil {
		return nil, fmt.Errorf("web: site database: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(16)
	s := &site{db: db, instance: c.Instance, lease: c.Lease, poll: c.Poll, kick: make(chan struct{}, 1), secrets: map[string]jobSecret{}}
	if s.instance == "" {
		s.instance = newToken()[:12]
	}
	if s.lease <= 0 {
		s.lease = 30 * time.Second
	}
	if s.poll <= 0 {
		s.poll = 500 * time.Millisecond
	}
	s.beat = min(s.lease/3, 500*time.Millisecond)
	s.hold.Store(c.hold)
	if c.Key != nil {
		if len(c.Key) != 32 {
			db.Close()
			return nil, errors.New("web: the site key must be 32 bytes")
		}
		b, _ := aes.NewCipher(c.Key)
		s.key, _ = cipher.NewGCM(b)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("web: site database: %w", err)
	}
	return s, nil
}

// migrate applies migrations/postgres/NNNN_*.sql in order, recording
// them in web_schema_version (the scheme of internal/history).
func (s *site) migrate(ctx context.Context) error {
	entries, err := fs.ReadDir(siteMigrations, "migrations/postgres")
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(siteLock)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS web_schema_version (
		version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	var cur int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(max(version), 0) FROM web_schema_version").Scan(&cur); err != nil {
		return err
	}
	if cur > len(entries) {
		return fmt.Errorf("schema version %d is newer than this ferry's %d", cur, len(entries))
	}
	for i, e := range entries[cur:] {
		v := cur + i + 1
		num, _, _ := strings.Cut(e.Name(), "_")
		if n, err := strconv.Atoi(num); err != nil || n != v {
			return fmt.Errorf("migration %s: want number %d", e.Name(), v)
		}
		b, err := fs.ReadFile(siteMigrations, path.Join("migrations/postgres", e.Name()))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(b)); err != nil {
			return fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO web_schema_version (version) VALUES ($1)", v); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *site) close() { s.db.Close() }

// seal encrypts plain for the row named by aad; nil without a key.
func (s *site) seal(plain []byte, aad string) []byte {
	if s.key == nil {
		return nil
	}
	nonce := make([]byte, s.key.NonceSize())
	rand.Read(nonce)
	return s.key.Seal(nonce, nonce, plain, []byte(aad))
}

// open decrypts what seal made for the row aad.
func (s *site) open(sealed []byte, aad string) ([]byte, error) {
	if s.key == nil {
		return nil, errors.New("no site key to open a sealed password")
	}
	n := s.key.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed password too short")
	}
	p, err := s.key.Open(nil, sealed[:n], sealed[n:], []byte(aad))
	if err != nil {
		return nil, errors.New("sealed password does not open with this site key")
	}
	return p, nil
}

// Sessions.

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// saveSession stores s, and ends its user's sessions beyond
// maxSessionsPerUser, the oldest first.
func (st *site) saveSession(ctx context.Context, s *session) error {
	var cert []byte
	if s.cert != ([32]byte{}) {
		cert = s.cert[:]
	}
	if _, err := st.db.ExecContext(ctx, "INSERT INTO web_sessions (token_hash, owner, csrf, cert, expires) VALUES ($1, $2, $3, $4, $5)",
		tokenHash(s.token), s.user, s.csrf, cert, s.expires); err != nil {
		return err
	}
	_, err := st.db.ExecContext(ctx, `DELETE FROM web_sessions WHERE owner = $1 AND token_hash NOT IN
		(SELECT token_hash FROM web_sessions WHERE owner = $1 ORDER BY created DESC LIMIT $2)`, s.user, maxSessionsPerUser)
	return err
}

// session returns the live session of token, or nil.
func (st *site) session(ctx context.Context, token string) (*session, error) {
	s := &session{token: token}
	var cert []byte
	err := st.db.QueryRowContext(ctx, "SELECT owner, csrf, cert, expires FROM web_sessions WHERE token_hash = $1 AND expires > now()",
		tokenHash(token)).Scan(&s.user, &s.csrf, &cert, &s.expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	copy(s.cert[:], cert)
	return s, nil
}

func (st *site) dropSession(ctx context.Context, token string) error {
	_, err := st.db.ExecContext(ctx, "DELETE FROM web_sessions WHERE token_hash = $1", tokenHash(token))
	return err
}

func (st *site) prune(ctx context.Context) error {
	_, err := st.db.ExecContext(ctx, "DELETE FROM web_sessions WHERE expires <= now()")
	return err
}

// Endpoints.

// epSpec is an endpoint without its password: what another instance
// needs to open it again.
type epSpec struct {
	ID      string `json:"id"`
	Display string `json:"display"`
	Base    string `json:"base"`
	Home    string `json:"home"`
	Local   bool   `json:"local,omitempty"`
	Addr    string `json:"addr,omitempty"`
	GSI     bool   `json:"gsi,omitempty"`
	User    string `json:"user,omitempty"`
	HasUser bool   `json:"hasUser,omitempty"`
}

// epSecret is an endpoint's password.
type epSecret struct {
	Pass    string `json:"pass,omitempty"`
	HasPass bool   `json:"hasPass,omitempty"`
}

func specOf(ep *endpoint) (epSpec, epSecret) {
	sp := epSpec{ID: ep.ID, Display: ep.Display, Base: ep.Base, Home: ep.Home, Local: ep.local}
	if ep.local {
		return sp, epSecret{}
	}
	sp.Addr, sp.GSI, sp.User, sp.HasUser = ep.loc.Addr, ep.loc.GSI, ep.loc.User, ep.loc.HasUser
	return sp, epSecret{Pass: ep.loc.Pass, HasPass: ep.loc.HasPass}
}

// endpointOf rebuilds an endpoint of u from its spec and password.
func (a *App) endpointFrom(u *userState, sp epSpec, sec epSecret) (*endpoint, error) {
	ep := &endpoint{ID: sp.ID, Display: sp.Display, Base: sp.Base, Home: sp.Home, local: sp.Local, opened: time.Now()}
	if sp.Local {
		root, err := a.rootOf(sp.Home)
		if err != nil {
			return nil, err
		}
		ep.root = root
		return ep, nil
	}
	scheme := "ftp://"
	if sp.GSI {
		scheme = "gsiftp://"
	}
	l, err := transfer.ParseLocation(scheme + sp.Addr + "/")
	if err != nil {
		return nil, err
	}
	l.User, l.HasUser, l.Pass, l.HasPass = sp.User, sp.HasUser, sec.Pass, sec.HasPass
	ep.loc = l
	ep.dialer = func(ctx context.Context, l transfer.Location) (*client.Conn, error) { return a.dial(ctx, u, l) }
	return ep, nil
}

func (st *site) saveEndpoint(ctx context.Context, owner string, ep *endpoint) error {
	sp, sec := specOf(ep)
	b, _ := json.Marshal(sp)
	var sealed []byte
	pinned := ""
	if sec.HasPass {
		if st.key != nil {
			p, _ := json.Marshal(sec)
			sealed = st.seal(p, "endpoint:"+owner+":"+ep.ID)
		} else {
			pinned = st.instance
		}
	}
	if _, err := st.db.ExecContext(ctx, "INSERT INTO web_endpoints (owner, id, spec, secret, pinned) VALUES ($1, $2, $3, $4, $5)",
		owner, ep.ID, string(b), sealed, pinned); err != nil {
		return err
	}
	// Panes keep only the last ones opened (jobs keep their own copy).
	_, err := st.db.ExecContext(ctx, `DELETE FROM web_endpoints WHERE owner = $1 AND id NOT IN
		(SELECT id FROM web_endpoints WHERE owner = $1 ORDER BY opened DESC LIMIT $2)`, owner, maxEndpoints)
	return err
}

// errPinned is what another instance says of an endpoint or job whose
// password stays on the instance it was given to.
var errPinned = errors.New("opened on another ferry web instance, which alone holds its password (the site has no -site-key): open it again here")

// loadEndpoint returns u's endpoint id from the database, or nil.
func (a *App) loadEndpoint(ctx context.Context, u *userState, id string) (*endpoint, error) {
	st := a.site
	var spec, pinned string
	var sealed []byte
	err := st.db.QueryRowContext(ctx, "SELECT spec, secret, pinned FROM web_endpoints WHERE owner = $1 AND id = $2", u.name, id).Scan(&spec, &sealed, &pinned)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if pinned != "" {
		return nil, errPinned
	}
	var sp epSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		return nil, err
	}
	var sec epSecret
	if sealed != nil {
		p, err := st.open(sealed, "endpoint:"+u.name+":"+id)
		if err != nil {
			return nil, err
		}
		json.Unmarshal(p, &sec)
	}
	return a.endpointFrom(u, sp, sec)
}

// Jobs.

// jobRequest is what an instance needs to run a job, without
// passwords.
type jobRequest struct {
	Src   epSpec     `json:"src"`
	Dst   epSpec     `json:"dst"`
	Items []itemSpec `json:"items"`
}

type itemSpec struct {
	Src   string    `json:"src"`
	Dst   string    `json:"dst"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime,omitzero"`
}

// jobSecret holds the passwords of a job's endpoints.
type jobSecret struct {
	Src epSecret `json:"src"`
	Dst epSecret `json:"dst"`
}

// insertJob queues j of owner in the database.
func (st *site) insertJob(ctx context.Context, owner string, j *job) error {
	req := jobRequest{}
	var sec jobSecret
	req.Src, sec.Src = specOf(j.src)
	req.Dst, sec.Dst = specOf(j.dst)
	for _, it := range j.items {
		req.Items = append(req.Items, itemSpec{Src: it.src, Dst: it.dst, Size: it.size, MTime: it.mtime})
	}
	rb, _ := json.Marshal(req)
	db, _ := json.Marshal(j)
	var sealed []byte
	pinned := ""
	switch {
	case !j.src.local && j.src.loc.GSI, !j.dst.local && j.dst.loc.GSI:
		// The user's proxy is in this instance's memory only.
		pinned = st.instance
	case sec.Src.HasPass || sec.Dst.HasPass:
		if st.key == nil {
			pinned = st.instance
		}
	}
	if sec.Src.HasPass || sec.Dst.HasPass {
		if st.key != nil {
			p, _ := json.Marshal(sec)
			sealed = st.seal(p, "job:"+owner+":"+j.ID)
		} else {
			st.mu.Lock()
			if len(st.secrets) >= maxPinnedSecrets {
				// Some jobs (in map order, not the oldest) lose
				// their passwords: a queued one then fails to log
				// in, a finished one cannot be retried here.
				for id := range st.secrets {
					delete(st.secrets, id)
					if len(st.secrets) < maxPinnedSecrets*9/10 {
						break
					}
				}
			}
			st.secrets[j.ID] = sec
			st.mu.Unlock()
		}
	}
	_, err := st.db.ExecContext(ctx, "INSERT INTO web_jobs (id, owner, state, request, secret, pinned, doc) VALUES ($1, $2, $3, $4, $5, $6, $7)",
		j.ID, owner, stateQueued, string(rb), sealed, pinned, string(db))
	if err == nil {
		select {
		case st.kick <- struct{}{}:
		default:
		}
	}
	return err
}

// jobRow is a job as the database has it.
type jobRow struct {
	id, owner, state, errText, pinned string
	request, doc                      string
	secret                            []byte
	attempts                          int
	ended                             sql.NullTime
}

// toJob is the job the page shows: the progress document with the
// columns that are the truth laid over it.
func (r *jobRow) toJob() job {
	var j job
	json.Unmarshal([]byte(r.doc), &j)
	j.ID, j.State = r.id, r.state
	if r.errText != "" {
		j.Error = r.errText
	}
	if r.ended.Valid {
		j.Ended = r.ended.Time.UTC()
	}
	if j.State != stateRunning {
		j.Current, j.ETA, j.Streams = "", 0, nil
	}
	return j
}

const jobCols = "id, owner, state, error, pinned, request, doc, secret, attempts, ended"

func scanJob(sc interface{ Scan(...any) error }) (*jobRow, error) {
	r := &jobRow{}
	err := sc.Scan(&r.id, &r.owner, &r.state, &r.errText, &r.pinned, &r.request, &r.doc, &r.secret, &r.attempts, &r.ended)
	return r, err
}

// jobs returns owner's last maxJobs jobs, oldest first.
func (st *site) jobs(ctx context.Context, owner string) ([]job, error) {
	rows, err := st.db.QueryContext(ctx, "SELECT "+jobCols+" FROM (SELECT * FROM web_jobs WHERE owner = $1 ORDER BY seq DESC LIMIT $2) t ORDER BY seq",
		owner, maxJobs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []job{}
	for rows.Next() {
		r, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r.toJob())
	}
	return out, rows.Err()
}

// job returns owner's job id, or nil.
func (st *site) job(ctx context.Context, owner, id string) (*jobRow, error) {
	r, err := scanJob(st.db.QueryRowContext(ctx, "SELECT "+jobCols+" FROM web_jobs WHERE owner = $1 AND id = $2", owner, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// active counts owner's queued and running jobs.
func (st *site) active(ctx context.Context, owner string) (int, error) {
	var n int
	err := st.db.QueryRowContext(ctx, "SELECT count(*) FROM web_jobs WHERE owner = $1 AND state IN ('queued', 'running')", owner).Scan(&n)
	return n, err
}

// cancel asks for owner's job id to stop: a queued one is cancelled at
// once, a running one by its instance at its next heartbeat. It reports
// whether owner has such a job.
func (st *site) cancel(ctx context.Context, owner, id string) (bool, error) {
	res, err := st.db.ExecContext(ctx, `UPDATE web_jobs SET cancel_requested = true,
		state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
		ended = CASE WHEN state = 'queued' THEN now() ELSE ended END
		WHERE owner = $1 AND id = $2`, owner, id)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// claim takes the oldest queued job this instance may run, whose owner
// runs fewer than perUser jobs on the site, or returns nil.
func (st *site) claim(ctx context.Context, perUser int) (*jobRow, error) {
	r, err := scanJob(st.db.QueryRowContext(ctx, `UPDATE web_jobs SET state = 'running', claimed_by = $1,
		lease_until = now() + $2 * interval '1 millisecond', attempts = attempts + 1
		WHERE seq = (SELECT q.seq FROM web_jobs q
			WHERE q.state = 'queued' AND (q.pinned = '' OR q.pinned = $1)
			AND (SELECT count(*) FROM web_jobs r WHERE r.owner = q.owner AND r.state = 'running') < $3
			ORDER BY q.seq LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+jobCols, st.instance, st.lease.Milliseconds(), perUser))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// expire queues again the running jobs whose lease ran out (their
// instance stopped); those pinned to it, or whose cancel was asked,
// end.
func (st *site) expire(ctx context.Context) error {
	if _, err := st.db.ExecContext(ctx, `UPDATE web_jobs SET state = 'queued', claimed_by = NULL, lease_until = NULL
		WHERE state = 'running' AND lease_until < now() AND pinned = '' AND NOT cancel_requested`); err != nil {
		return err
	}
	_, err := st.db.ExecContext(ctx, `UPDATE web_jobs SET lease_until = NULL, ended = now(),
		state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END,
		error = CASE WHEN cancel_requested THEN '' ELSE 'the ferry web instance that ran it stopped, and it held the job''s credentials' END
		WHERE state = 'running' AND lease_until < now() AND (pinned <> '' OR cancel_requested)`)
	return err
}

// errLost is the cause of a run's end when another instance has its
// job (this one's lease ran out).
var errLost = errors.New("lease lost")

// errCancelAsked is the cause of a run's end when its user cancelled it.
var errCancelAsked = errors.New("cancelled")

// heartbeat renews this instance's lease on job id, claimed as its
// attempt-th run, and writes its progress document; it reports whether a
// cancel was asked, or errLost. The attempt tells this run from a later
// claim of the same job by the same instance (after its lease ran out).
func (st *site) heartbeat(ctx context.Context, id string, attempt int, doc []byte) (bool, error) {
	var cancel bool
	err := st.db.QueryRowContext(ctx, `UPDATE web_jobs SET lease_until = now() + $3 * interval '1 millisecond', doc = $4
		WHERE id = $1 AND claimed_by = $2 AND state = 'running' AND attempts = $5 RETURNING cancel_requested`,
		id, st.instance, st.lease.Milliseconds(), string(doc), attempt).Scan(&cancel)
	if errors.Is(err, sql.ErrNoRows) {
		return false, errLost
	}
	return cancel, err
}

// finish writes the result of job j, if this instance still has it as
// its attempt-th run.
func (st *site) finish(ctx context.Context, j job, attempt int) error {
	doc, _ := json.Marshal(j)
	_, err := st.db.ExecContext(ctx, `UPDATE web_jobs SET state = $3, error = $4, doc = $5, ended = now(), lease_until = NULL
		WHERE id = $1 AND claimed_by = $2 AND state = 'running' AND attempts = $6`, j.ID, st.instance, j.State, j.Error, string(doc), attempt)
	return err
}

// claimLoop claims queued jobs while this instance has room, and
// requeues expired ones, every poll, until the app closes.
func (a *App) claimLoop() {
	st := a.site
	t := time.NewTicker(st.poll)
	defer t.Stop()
	for {
		if err := st.expire(a.ctx); err != nil && a.ctx.Err() == nil {
			a.cfg.Log.Warn("web: site: expiring leases", "err", err)
		}
		for a.ctx.Err() == nil && !st.hold.Load() {
			st.mu.Lock()
			room := st.running < a.cfg.MaxRunning
			if room {
				st.running++
			}
			st.mu.Unlock()
			if !room {
				break
			}
			r, err := st.claim(a.ctx, a.cfg.MaxRunningPerUser)
			if r == nil || err != nil {
				st.mu.Lock()
				st.running--
				st.mu.Unlock()
				if err != nil && a.ctx.Err() == nil {
					a.cfg.Log.Warn("web: site: claiming a job", "err", err)
				}
				break
			}
			a.wg.Go(func() {
				defer func() {
					st.mu.Lock()
					st.running--
					st.mu.Unlock()
					select {
					case st.kick <- struct{}{}:
					default:
					}
				}()
				a.runClaimed(r)
			})
		}
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		case <-st.kick:
		}
	}
}

// runClaimed runs the job r this instance claimed, heartbeating its
// lease and progress, and writes its result.
func (a *App) runClaimed(r *jobRow) {
	st := a.site
	fail := func(msg string) {
		j := r.toJob()
		j.State, j.Error, j.Ended = stateFailed, sanitize(msg), time.Now().UTC()
		if err := st.finish(context.Background(), j, r.attempts); err != nil {
			a.cfg.Log.Warn("web: site: writing a job's result", "job", r.id, "err", err)
		}
	}
	var req jobRequest
	if err := json.Unmarshal([]byte(r.request), &req); err != nil {
		fail("bad job request: " + err.Error())
		return
	}
	var sec jobSecret
	switch {
	case r.secret != nil:
		p, err := st.open(r.secret, "job:"+r.owner+":"+r.id)
		if err != nil {
			fail(err.Error())
			return
		}
		json.Unmarshal(p, &sec)
	default:
		st.mu.Lock()
		sec = st.secrets[r.id]
		st.mu.Unlock()
	}
	a.mu.Lock()
	u := a.userLocked(r.owner)
	a.mu.Unlock()
	j := r.toJob()
	var err error
	if j.src, err = a.endpointFrom(u, req.Src, sec.Src); err == nil {
		j.dst, err = a.endpointFrom(u, req.Dst, sec.Dst)
	}
	if err != nil {
		fail(err.Error())
		return
	}
	for _, it := range req.Items {
		j.items = append(j.items, item{src: it.Src, dst: it.Dst, size: it.Size, mtime: it.MTime})
	}
	// A job an instance that stopped had begun resumes its partial files.
	j.Resume = j.Resume || r.attempts > 1
	j.Error, j.Done, j.Bytes, j.Rate, j.ETA = "", 0, 0, 0, 0
	ctx, cancel := context.WithCancelCause(a.ctx)
	j.cancel = func() { cancel(context.Canceled) }
	done := make(chan struct{})
	// The heartbeat: renew the lease, publish the progress, read cancel.
	a.wg.Go(func() {
		t := time.NewTicker(st.beat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			u.mu.Lock()
			doc, _ := json.Marshal(j)
			u.mu.Unlock()
			hctx, hcancel := context.WithTimeout(a.ctx, st.lease)
			asked, err := st.heartbeat(hctx, r.id, r.attempts, doc)
			hcancel()
			switch {
			case errors.Is(err, errLost):
				cancel(errLost)
				return
			case asked:
				cancel(errCancelAsked)
			case err != nil && a.ctx.Err() == nil:
				a.cfg.Log.Warn("web: site: heartbeat", "job", r.id, "err", err)
			}
		}
	})
	a.execute(ctx, u, &j)
	close(done)
	cause := context.Cause(ctx)
	if a.ctx.Err() != nil || errors.Is(cause, errLost) {
		// This instance stops, or another has the job: its lease runs
		// out, and another instance resumes it.
		cancel(nil)
		return
	}
	cancel(nil)
	u.mu.Lock()
	snap := j
	u.mu.Unlock()
	if err := st.finish(context.Background(), snap, r.attempts); err != nil {
		a.cfg.Log.Warn("web: site: writing a job's result", "job", r.id, "err", err)
	}
}

// siteRetry queues again u's failed or cancelled job, resuming its
// partial files.
func (a *App) siteRetry(w http.ResponseWriter, r *http.Request, u *userState) {
	st := a.site
	old, err := st.job(r.Context(), u.name, r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "jobs: "+err.Error())
		return
	}
	if old == nil {
		writeError(w, http.StatusNotFound, "no such job")
		return
	}
	if old.state != stateFailed && old.state != stateCancelled {
		writeError(w, http.StatusConflict, "only a failed or cancelled job can be retried")
		return
	}
	if !a.roomForJob(w, u) {
		return
	}
	var req jobRequest
	if err := json.Unmarshal([]byte(old.request), &req); err != nil {
		writeError(w, http.StatusInternalServerError, "bad job request: "+err.Error())
		return
	}
	var sec jobSecret
	switch {
	case old.secret != nil:
		p, err := st.open(old.secret, "job:"+u.name+":"+old.id)
		if err != nil {
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		json.Unmarshal(p, &sec)
	default:
		var ok bool
		st.mu.Lock()
		sec, ok = st.secrets[old.id]
		st.mu.Unlock()
		if !ok && old.pinned != "" && old.pinned != st.instance && !req.Src.GSI && !req.Dst.GSI {
			writeError(w, http.StatusConflict, "the job was "+errPinned.Error())
			return
		}
	}
	prev := old.toJob()
	j := &job{ID: newToken()[:16], Src: prev.Src, Dst: prev.Dst, Names: prev.Names, Params: prev.Params, Resume: true}
	if j.src, err = a.endpointFrom(u, req.Src, sec.Src); err == nil {
		j.dst, err = a.endpointFrom(u, req.Dst, sec.Dst)
	}
	if err != nil {
		opError(w, err)
		return
	}
	for _, it := range req.Items {
		j.items = append(j.items, item{src: it.Src, dst: it.Dst, size: it.Size, mtime: it.MTime})
	}
	// The tree may have changed since: check the items again.
	ends, err := openEnds(j.src, j.dst)
	if err != nil {
		opError(w, err)
		return
	}
	defer ends.close()
	for _, it := range j.items {
		if err := ends.check(it.src, it.dst); err != nil {
			opError(w, err)
			return
		}
	}
	a.siteEnqueue(w, r, u, j)
}

// siteEvents streams the user's jobs from the database: a "jobs" event
// whenever they changed, looked at every poll (jobs other instances run
// included: their progress comes from the heartbeats).
func (a *App) siteEvents(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, user string, live func() bool) {
	tick := time.NewTicker(a.site.poll)
	defer tick.Stop()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	var last []byte
	for {
		jobs, err := a.site.jobs(r.Context(), user)
		if err == nil {
			b, _ := json.Marshal(jobs)
			if !bytes.Equal(b, last) {
				last = b
				if _, err := fmt.Fprintf(w, "event: jobs\ndata: %s\n\n", b); err != nil {
					return
				}
				if err := rc.Flush(); err != nil {
					return
				}
			}
		} else if r.Context().Err() == nil {
			a.cfg.Log.Warn("web: site: reading jobs", "err", err)
		}
		select {
		case <-tick.C:
		case <-keepalive.C:
			if !live() {
				return // logged out
			}
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			rc.Flush()
		case <-r.Context().Done():
			return
		case <-a.ctx.Done():
			return
		}
	}
}

// endpoints lists owner's endpoints, as the page shows them.
func (st *site) endpoints(ctx context.Context, owner string) ([]*endpoint, error) {
	rows, err := st.db.QueryContext(ctx, "SELECT spec FROM web_endpoints WHERE owner = $1 ORDER BY opened DESC LIMIT $2", owner, maxEndpoints)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*endpoint{}
	for rows.Next() {
		var spec string
		if err := rows.Scan(&spec); err != nil {
			return nil, err
		}
		var sp epSpec
		if json.Unmarshal([]byte(spec), &sp) == nil {
			out = append(out, &endpoint{ID: sp.ID, Display: sp.Display, Base: sp.Base, Home: sp.Home})
		}
	}
	return out, rows.Err()
}
