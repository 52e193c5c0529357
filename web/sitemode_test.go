package web

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/internal/testutil/postgres"
	"github.com/ferrygrid/ferry/server"
)

// siteLease is the tests' lease: short, so that a stopped instance's job
// is taken over soon.
const siteLease = 2 * time.Second

// startSiteApp starts an instance of a site on the PostgreSQL database
// dsn (history and site), with the file:// root root.
func startSiteApp(t *testing.T, dsn, root string, mod func(*Config)) *testApp {
	t.Helper()
	return startSiteAppHeld(t, dsn, root, false, mod)
}

// startSiteAppHeld is startSiteApp of an instance that claims no job
// until its site.hold is cleared (when hold).
func startSiteAppHeld(t *testing.T, dsn, root string, hold bool, mod func(*Config)) *testApp {
	t.Helper()
	return startAppOn(t, dsn, root, func(c *Config) {
		c.Site = &SiteConfig{DSN: dsn, Lease: siteLease, Poll: 100 * time.Millisecond, hold: hold}
		if os.Getenv("SITEDEBUG") != "" {
			c.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		if mod != nil {
			mod(c)
		}
	})
}

// on returns a client of another instance with c's cookies and CSRF
// token: a load balancer that sends the browser's next request there.
func (c *apiClient) on(ta *testApp) *apiClient {
	d := *c
	d.base = ta.srv.URL
	return &d
}

// siteDB opens the site's database for the tests' own looks.
func siteDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var _ = stdlib.GetDefaultDriver // registers "pgx"

// claimedBy waits until job id runs, and returns the instance running
// it.
func claimedBy(t *testing.T, db *sql.DB, id string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var state string
		var by sql.NullString
		if err := db.QueryRow("SELECT state, claimed_by FROM web_jobs WHERE id = $1", id).Scan(&state, &by); err != nil {
			t.Fatal(err)
		}
		if state == stateRunning && by.Valid {
			return by.String
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("job %s never claimed", id)
	return ""
}

// waitBytes polls the user's job until it has copied some bytes, and
// returns it.
func (c *apiClient) waitBytes(id string) job {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var jobs []job
		c.must("GET", "/api/jobs", nil, &jobs)
		for _, j := range jobs {
			if j.ID == id && j.State == stateRunning && j.Bytes > 0 {
				return j
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("job %s never made progress", id)
	return job{}
}

// TestSiteMode runs two (or three) ferry web instances on one
// PostgreSQL database: sessions, endpoints and jobs are shared, every
// job runs once, a stopped instance's job is resumed by another, a
// cancel reaches the instance that runs the job, and no user reaches
// another's objects through any instance.
func TestSiteMode(t *testing.T) {
	pg := postgres.Launch(t)

	t.Run("Sessions", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		a := startSiteApp(t, dsn, root, nil)
		b := startSiteApp(t, dsn, root, nil)
		onA := a.client(t)
		onA.login("alice")
		onB := onA.on(b)
		var me meReply
		onB.must("GET", "/api/me", nil, &me)
		if me.User != "alice" || me.CSRF != onA.csrf {
			t.Fatalf("me on B: %+v", me)
		}
		// The CSRF token A gave is checked on B; a missing one is not.
		ep := onB.open("file://" + b.root)
		noCSRF := *onB
		noCSRF.csrf = ""
		if code, _ := noCSRF.do("POST", "/api/endpoints", openRequest{URL: "file://" + b.root}, nil); code != http.StatusForbidden {
			t.Errorf("POST without CSRF on B: %d", code)
		}
		// The endpoint opened on B lists on A.
		var l listReply
		onA.must("GET", "/api/list?ep="+ep.ID, nil, &l)
		// Logging out on B ends the session on A.
		onB.must("POST", "/api/logout", struct{}{}, nil)
		if code, _ := onA.do("GET", "/api/me", nil, nil); code != http.StatusUnauthorized {
			t.Errorf("me on A after logout on B: %d", code)
		}
		// A forged cookie is refused.
		forged := a.client(t)
		u, _ := http.NewRequest("GET", a.srv.URL, nil)
		forged.hc.Jar.SetCookies(u.URL, []*http.Cookie{{Name: cookieName, Value: newToken()}})
		if code, _ := forged.do("GET", "/api/me", nil, nil); code != http.StatusUnauthorized {
			t.Errorf("forged cookie: %d", code)
		}
	})

	t.Run("Queue", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		// Two jobs at most per instance: neither can take all twenty.
		mod := func(c *Config) { c.MaxRunning, c.MaxRunningPerUser = 2, 20 }
		a := startSiteApp(t, dsn, root, mod)
		b := startSiteApp(t, dsn, root, mod)
		f := startFerrySrv(t)
		const n = 20
		data := map[string][]byte{}
		for i := range n {
			name := fmt.Sprintf("slow%02d.bin", i)
			data[name] = randomData(256 << 10)
			writeFile(t, filepath.Join(f.dir, name), data[name])
		}
		onA := a.client(t)
		onA.login("alice")
		onB := onA.on(b)
		src := onA.open(f.url + "/")
		dst := onA.open("file://" + a.root)
		var ids []string
		for i := range n {
			c := onA
			if i%2 == 1 {
				c = onB // the endpoints A opened, used through B
			}
			var j job
			c.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{fmt.Sprintf("slow%02d.bin", i)}, Dst: dst.ID, DstDir: a.root}, &j)
			ids = append(ids, j.ID)
		}
		for _, id := range ids {
			if j := onB.waitJob(id, stateDone, stateFailed, stateCancelled); j.State != stateDone {
				t.Fatalf("job %+v", j)
			}
		}
		for name, want := range data {
			if got, _ := os.ReadFile(filepath.Join(a.root, name)); !bytes.Equal(got, want) {
				t.Errorf("%s differs", name)
			}
		}
		db := siteDB(t, dsn)
		rows, err := db.Query("SELECT id, claimed_by, attempts FROM web_jobs")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		by := map[string]int{}
		for rows.Next() {
			var id, inst string
			var attempts int
			if err := rows.Scan(&id, &inst, &attempts); err != nil {
				t.Fatal(err)
			}
			if attempts != 1 {
				t.Errorf("job %s ran %d times", id, attempts)
			}
			by[inst]++
		}
		if len(by) != 2 || by[a.app.site.instance] == 0 || by[b.app.site.instance] == 0 {
			t.Errorf("jobs per instance: %v", by)
		}
		// One history record per file: none was copied twice.
		waitRecords(t, a.hist, n)
		recs, err := a.hist.Records(context.Background(), history.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		copies := map[string]int{}
		for _, r := range recs {
			copies[r.SrcPath]++
		}
		if len(recs) != n || len(copies) != n {
			t.Errorf("%d history records of %d files: %v", len(recs), len(copies), copies)
		}
	})

	t.Run("Takeover", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		a := startSiteApp(t, dsn, root, nil)
		b := startSiteAppHeld(t, dsn, root, true, nil) // A runs the job
		f := startFerrySrv(t)
		// Larger than what the engine copies whole to a temporary file:
		// this one is written in place, with its resume state beside it.
		data := randomData(80 << 20)
		writeFile(t, filepath.Join(f.dir, "slow.bin"), data)
		onA := a.client(t)
		onA.login("alice")
		src := onA.open(f.url + "/")
		dst := onA.open("file://" + a.root)
		var j job
		onA.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: a.root, Params: &jobParams{Parallel: 4}}, &j)
		db := siteDB(t, dsn)
		if by := claimedBy(t, db, j.ID); by != a.app.site.instance {
			t.Fatalf("claimed by %s", by)
		}
		// B's event stream shows A's progress.
		onB := onA.on(b)
		seen := sseProgress(t, onB, j.ID)
		if seen.Bytes <= 0 || seen.Bytes >= int64(len(data)) {
			t.Fatalf("progress of A's job seen on B: %+v", seen)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if onB.waitBytes(j.ID).Bytes > 4<<20 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no progress")
			}
		}
		// A stops mid-transfer (no result written): after its lease, B
		// resumes the job.
		a.app.Close()
		f.slow.Store(false)
		b.app.site.hold.Store(false)
		done := onB.waitJob(j.ID, stateDone, stateFailed, stateCancelled)
		if done.State != stateDone {
			t.Fatalf("job after takeover: %+v", done)
		}
		var by string
		var attempts int
		if err := db.QueryRow("SELECT claimed_by, attempts FROM web_jobs WHERE id = $1", j.ID).Scan(&by, &attempts); err != nil {
			t.Fatal(err)
		}
		if by != b.app.site.instance || attempts != 2 {
			t.Errorf("finished by %s after %d attempts", by, attempts)
		}
		if got, _ := os.ReadFile(filepath.Join(a.root, "slow.bin")); !bytes.Equal(got, data) {
			t.Fatal("slow.bin differs after the takeover")
		}
		if !done.Resume || done.Verified != "MD5" {
			t.Errorf("job after takeover: %+v", done)
		}
		// B resumed: its copy moved less than the whole file.
		var hist []historyRow
		onB.must("GET", "/api/history", nil, &hist)
		var ok bool
		for _, h := range hist {
			if h.Outcome == "ok" {
				ok = true
				if h.Bytes >= int64(len(data)) {
					t.Errorf("B moved %d bytes of %d: not resumed", h.Bytes, len(data))
				}
			}
		}
		if !ok {
			t.Errorf("no finished copy in the history: %+v", hist)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		a := startSiteApp(t, dsn, root, nil)
		b := startSiteAppHeld(t, dsn, root, true, nil) // A runs the job
		f := startFerrySrv(t)
		writeFile(t, filepath.Join(f.dir, "slow.bin"), randomData(64<<20))
		onA := a.client(t)
		onA.login("alice")
		src := onA.open(f.url + "/")
		dst := onA.open("file://" + a.root)
		var j job
		onA.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: a.root}, &j)
		db := siteDB(t, dsn)
		if by := claimedBy(t, db, j.ID); by != a.app.site.instance {
			t.Fatalf("claimed by %s", by)
		}
		onB := onA.on(b)
		onB.waitBytes(j.ID)
		onB.must("POST", "/api/jobs/"+j.ID+"/cancel", struct{}{}, nil)
		if got := onB.waitJob(j.ID, stateDone, stateFailed, stateCancelled); got.State != stateCancelled {
			t.Fatalf("job after cancel on B: %+v", got)
		}
		// A stopped the copy itself (not a lease running out).
		var by string
		var attempts int
		if err := db.QueryRow("SELECT claimed_by, attempts FROM web_jobs WHERE id = $1", j.ID).Scan(&by, &attempts); err != nil {
			t.Fatal(err)
		}
		if by != a.app.site.instance || attempts != 1 {
			t.Errorf("cancelled by %s after %d attempts", by, attempts)
		}
		// Retry through B resumes it (B or A runs it).
		var again job
		onB.must("POST", "/api/jobs/"+j.ID+"/retry", struct{}{}, &again)
		if !again.Resume || again.State != stateQueued {
			t.Errorf("retry: %+v", again)
		}
		onB.must("POST", "/api/jobs/"+again.ID+"/cancel", struct{}{}, nil)
		onB.waitJob(again.ID, stateCancelled, stateFailed, stateDone)
	})

	t.Run("LeaseLost", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		a := startSiteApp(t, dsn, root, nil)
		f := startFerrySrv(t)
		writeFile(t, filepath.Join(f.dir, "slow.bin"), randomData(64<<20))
		onA := a.client(t)
		onA.login("alice")
		src := onA.open(f.url + "/")
		dst := onA.open("file://" + a.root)
		var j job
		onA.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: a.root}, &j)
		onA.waitBytes(j.ID)
		// Another instance has the job now (A's lease ran out while it
		// could not reach the database): A stops its copy at its next
		// heartbeat and writes nothing more.
		db := siteDB(t, dsn)
		if _, err := db.Exec("UPDATE web_jobs SET claimed_by = 'ghost', lease_until = now() + interval '1 hour', doc = '{}' WHERE id = $1", j.ID); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			a.app.site.mu.Lock()
			n := a.app.site.running
			a.app.site.mu.Unlock()
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("A still runs the job it lost")
			}
		}
		var state, by, doc string
		if err := db.QueryRow("SELECT state, claimed_by, doc FROM web_jobs WHERE id = $1", j.ID).Scan(&state, &by, &doc); err != nil {
			t.Fatal(err)
		}
		if state != stateRunning || by != "ghost" || doc != "{}" {
			t.Errorf("A wrote the job it lost: %s %s %s", state, by, doc)
		}
	})

	t.Run("Isolation", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		a := startSiteApp(t, dsn, root, nil)
		b := startSiteApp(t, dsn, root, nil)
		f := startFerrySrv(t)
		writeFile(t, filepath.Join(f.dir, "slow.bin"), randomData(64<<20))
		alice := a.client(t)
		alice.login("alice")
		src := alice.open(f.url + "/")
		dst := alice.open("file://" + a.root)
		var j job
		alice.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: a.root}, &j)
		alice.waitBytes(j.ID)
		for _, inst := range []*testApp{a, b} {
			bob := inst.client(t)
			bob.login("bob")
			var jobs []job
			bob.must("GET", "/api/jobs", nil, &jobs)
			if len(jobs) != 0 {
				t.Errorf("bob sees %d jobs", len(jobs))
			}
			var eps []endpoint
			bob.must("GET", "/api/endpoints", nil, &eps)
			if len(eps) != 0 {
				t.Errorf("bob sees endpoints %+v", eps)
			}
			for _, p := range []string{"/api/jobs/" + j.ID + "/cancel", "/api/jobs/" + j.ID + "/retry"} {
				if code, _ := bob.do("POST", p, struct{}{}, nil); code != http.StatusNotFound {
					t.Errorf("bob: %s: %d", p, code)
				}
			}
			if code, _ := bob.do("GET", "/api/list?ep="+src.ID, nil, nil); code != http.StatusNotFound {
				t.Errorf("bob lists alice's endpoint: %d", code)
			}
			if code, _ := bob.do("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: a.root}, nil); code != http.StatusNotFound {
				t.Errorf("bob copies with alice's endpoints: %d", code)
			}
			// Bob's event stream carries no job of alice's.
			if got := sseFirst(t, bob); len(got) != 0 {
				t.Errorf("bob's events: %+v", got)
			}
		}
		var got []job
		alice.on(b).must("GET", "/api/jobs", nil, &got)
		if len(got) != 1 || got[0].State != stateRunning {
			t.Errorf("alice's jobs after bob's tries: %+v", got)
		}
		alice.on(b).must("POST", "/api/jobs/"+j.ID+"/cancel", struct{}{}, nil)
		alice.waitJob(j.ID, stateCancelled, stateFailed, stateDone)
	})
}

// sseFirst reads the first "jobs" event of c's event stream.
func sseFirst(t *testing.T, c *apiClient) []job {
	t.Helper()
	var out []job
	sseRead(t, c, func(jobs []job) bool { out = jobs; return true })
	return out
}

// sseProgress reads c's event stream until job id runs with some
// bytes copied, and returns it.
func sseProgress(t *testing.T, c *apiClient, id string) job {
	t.Helper()
	var out job
	sseRead(t, c, func(jobs []job) bool {
		for _, j := range jobs {
			if j.ID == id && j.State == stateRunning && j.Bytes > 0 {
				out = j
				return true
			}
		}
		return false
	})
	return out
}

// sseRead calls f with the jobs of each event of c's event stream until
// it returns true.
func sseRead(t *testing.T, c *apiClient, f func([]job) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/api/events", nil)
	hc := *c.hc
	hc.Timeout = 0
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events: %s", res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var jobs []job
		if err := json.Unmarshal([]byte(data), &jobs); err != nil {
			t.Fatal(err)
		}
		if f(jobs) {
			return
		}
	}
	t.Fatalf("event stream ended: %v", sc.Err())
}

// startPasswordSrv starts a Ferry server on dir whose one account,
// user, logs in with pass and may write.
func startPasswordSrv(t *testing.T, dir, user, pass string) string {
	t.Helper()
	fs, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return "ftp://" + ftpserver.Start(t, server.Config{Storage: fs,
		Authenticate: func(ctx context.Context, u, p string) (*server.Account, error) {
			if u == user && p == pass {
				return &server.Account{Name: u, Writable: true}, nil
			}
			return nil, server.ErrLoginDenied
		}})
}

// TestSiteSecrets checks where an endpoint's password goes in site
// mode: sealed with the site key, any instance runs the job and the
// database never holds it in clear; without a key, the job is pinned to
// the instance that was given it.
func TestSiteSecrets(t *testing.T) {
	pg := postgres.Launch(t)
	const user, pass = "carol", "pw-s3cret-xyz"
	dir := t.TempDir()
	data := randomData(1 << 20)
	writeFile(t, filepath.Join(dir, "s.bin"), data)
	url := startPasswordSrv(t, dir, user, pass)

	// inDB reports whether any text of the site's tables holds s.
	inDB := func(db *sql.DB, s string) bool {
		var n int
		err := db.QueryRow(`SELECT (SELECT count(*) FROM web_endpoints WHERE spec LIKE $1 OR encode(COALESCE(secret, ''), 'escape') LIKE $1)
			+ (SELECT count(*) FROM web_jobs WHERE request LIKE $1 OR doc LIKE $1 OR encode(COALESCE(secret, ''), 'escape') LIKE $1)`, "%"+s+"%").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}

	t.Run("Key", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		key := func(c *Config) { c.Site.Key = bytes.Repeat([]byte{7}, 32) }
		a := startSiteAppHeld(t, dsn, root, true, key) // B runs the job
		b := startSiteApp(t, dsn, root, key)
		onA := a.client(t)
		onA.login("alice")
		var src endpoint
		onA.must("POST", "/api/endpoints", openRequest{URL: url + "/", User: user, Password: pass}, &src)
		dst := onA.open("file://" + a.root)
		onB := onA.on(b)
		var l listReply
		onB.must("GET", "/api/list?ep="+src.ID, nil, &l) // B opens the sealed password
		var j job
		onB.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"s.bin"}, Dst: dst.ID, DstDir: a.root}, &j)
		if got := onA.waitJob(j.ID, stateDone, stateFailed, stateCancelled); got.State != stateDone {
			t.Fatalf("job: %+v", got)
		}
		db := siteDB(t, dsn)
		var by string
		db.QueryRow("SELECT claimed_by FROM web_jobs WHERE id = $1", j.ID).Scan(&by)
		if by != b.app.site.instance {
			t.Errorf("run by %s", by)
		}
		if got, _ := os.ReadFile(filepath.Join(a.root, "s.bin")); !bytes.Equal(got, data) {
			t.Error("s.bin differs")
		}
		if inDB(db, pass) {
			t.Error("the password is in the database in clear")
		}
		// An instance with another key cannot open it.
		c := startSiteApp(t, dsn, root, func(c *Config) { c.Site.Key = bytes.Repeat([]byte{8}, 32) })
		if code, _ := onA.on(c).do("GET", "/api/list?ep="+src.ID, nil, nil); code == http.StatusOK {
			t.Error("an instance with another site key opened the password")
		}
	})

	t.Run("NoKey", func(t *testing.T) {
		dsn := pg.NewDatabase(t)
		root := t.TempDir()
		a := startSiteAppHeld(t, dsn, root, true, nil)
		b := startSiteApp(t, dsn, root, nil)
		onA := a.client(t)
		onA.login("alice")
		var src endpoint
		onA.must("POST", "/api/endpoints", openRequest{URL: url + "/", User: user, Password: pass}, &src)
		dst := onA.open("file://" + a.root)
		onB := onA.on(b)
		if code, msg := onB.do("GET", "/api/list?ep="+src.ID, nil, nil); code != http.StatusNotFound || !strings.Contains(msg, "another ferry web instance") {
			t.Errorf("B lists A's endpoint with a password: %d %s", code, msg)
		}
		var j job
		onA.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"s.bin"}, Dst: dst.ID, DstDir: a.root}, &j)
		// B, free to claim, leaves the job to A, which alone has the
		// password.
		time.Sleep(time.Second)
		var got []job
		onB.must("GET", "/api/jobs", nil, &got)
		if len(got) != 1 || got[0].State != stateQueued {
			t.Fatalf("jobs while A holds: %+v", got)
		}
		a.app.site.hold.Store(false)
		if got := onB.waitJob(j.ID, stateDone, stateFailed, stateCancelled); got.State != stateDone {
			t.Fatalf("job: %+v", got)
		}
		db := siteDB(t, dsn)
		if inDB(db, pass) {
			t.Error("the password is in the database")
		}
	})
}

func TestLoadSiteKey(t *testing.T) {
	dir := t.TempDir()
	raw := bytes.Repeat([]byte{0xab}, 32)
	for _, c := range []struct {
		name string
		data []byte
		perm os.FileMode
		ok   bool
	}{
		{"raw", raw, 0o600, true},
		{"hex", []byte(strings.Repeat("ab", 32) + "\n"), 0o400, true},
		{"short", raw[:16], 0o600, false},
		{"hexshort", []byte(strings.Repeat("ab", 31)), 0o600, false},
		{"readable", raw, 0o644, false},
	} {
		name := filepath.Join(dir, c.name)
		if err := os.WriteFile(name, c.data, c.perm); err != nil {
			t.Fatal(err)
		}
		os.Chmod(name, c.perm)
		k, err := LoadSiteKey(name)
		if (err == nil) != c.ok || (c.ok && !bytes.Equal(k, raw)) {
			t.Errorf("%s: %x, %v", c.name, k, err)
		}
	}
	if _, err := LoadSiteKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing key file loaded")
	}
}
