package web

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoginCookieAndCSRF(t *testing.T) {
	ta := startApp(t)
	c := ta.client(t)
	if code, msg := c.do("POST", "/api/login", loginRequest{User: "alice", Password: "wrong"}, nil); code != http.StatusUnauthorized || msg != "wrong user name or password" {
		t.Fatalf("wrong password: %d %q", code, msg)
	}
	if code, _ := c.do("GET", "/api/me", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("me before login: %d", code)
	}
	res, err := http.Post(ta.srv.URL+"/api/login", "application/json", strings.NewReader(`{"user":"alice","password":"alice-secret"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var ck *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == cookieName {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict (not Secure over HTTP)", ck)
	}
	c.login("alice")
	// Without the CSRF token, every state-changing request is refused.
	tok := c.csrf
	c.csrf = ""
	for _, p := range []string{"/api/endpoints", "/api/mkdir", "/api/rename", "/api/delete", "/api/advice", "/api/jobs", "/api/jobs/x/cancel", "/api/logout"} {
		if code, _ := c.do("POST", p, map[string]string{}, nil); code != http.StatusForbidden {
			t.Errorf("POST %s without CSRF token: %d, want 403", p, code)
		}
	}
	c.csrf = strings.Map(func(r rune) rune { return 'f' - r + '0' }, tok[:1]) + tok[1:] // another hex digit
	if c.csrf == tok {
		c.csrf = "x" + tok[1:]
	}
	if code, _ := c.do("POST", "/api/endpoints", openRequest{URL: "file://" + ta.root}, nil); code != http.StatusForbidden {
		t.Errorf("bad CSRF token: %d, want 403", code)
	}
	c.csrf = tok
	c.open("file://" + ta.root)
	// A cross-origin login is refused.
	req, _ := http.NewRequest("POST", ta.srv.URL+"/api/login", strings.NewReader(`{"user":"alice","password":"alice-secret"}`))
	req.Header.Set("Origin", "https://evil.example")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin login: %d, want 403", res.StatusCode)
	}
	c.must("POST", "/api/logout", nil, nil)
	if code, _ := c.do("GET", "/api/me", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("me after logout: %d", code)
	}
}

func TestLoginRateLimit(t *testing.T) {
	ta := startApp(t)
	c := ta.client(t)
	for i := range 5 {
		if code, _ := c.do("POST", "/api/login", loginRequest{User: "bob", Password: "nope"}, nil); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, code)
		}
	}
	// Even the right password waits now.
	code, msg := c.do("POST", "/api/login", loginRequest{User: "bob", Password: "bob-secret"}, nil)
	if code != http.StatusTooManyRequests || !strings.Contains(msg, "too many failed logins") {
		t.Fatalf("sixth login: %d %q, want 429", code, msg)
	}
}

func TestFileRootConfinement(t *testing.T) {
	ta := startApp(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), []byte("secret"))
	writeFile(t, filepath.Join(ta.root, "ok.txt"), []byte("ok"))
	if err := os.Symlink(outside, filepath.Join(ta.root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ta.root, "secretlink")); err != nil {
		t.Fatal(err)
	}
	c := ta.client(t)
	c.login("alice")
	for _, u := range []string{"file://" + outside, "file://" + ta.root + "/..", "file://" + ta.root + "/link", "file:///etc"} {
		if code, _ := c.do("POST", "/api/endpoints", openRequest{URL: u}, nil); code != http.StatusForbidden {
			t.Errorf("open %s: %d, want 403", u, code)
		}
	}
	ep := c.open("file://" + ta.root)
	for _, p := range []string{ta.root + "/..", outside, ta.root + "/link", ta.root + "/../" + filepath.Base(outside)} {
		if code, _ := c.do("GET", "/api/list?ep="+ep.ID+"&path="+p, nil, nil); code != http.StatusForbidden {
			t.Errorf("list %s: %d, want 403", p, code)
		}
	}
	for _, n := range []string{"../x", "..", "a/b", ""} {
		if code, _ := c.do("POST", "/api/mkdir", fileOpRequest{EP: ep.ID, Dir: ta.root, Name: n}, nil); code != http.StatusBadRequest {
			t.Errorf("mkdir %q: %d, want 400", n, code)
		}
	}
	if code, _ := c.do("POST", "/api/mkdir", fileOpRequest{EP: ep.ID, Dir: ta.root + "/link", Name: "x"}, nil); code != http.StatusForbidden {
		t.Errorf("mkdir through a symlink out: %d, want 403", code)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Errorf("mkdir escaped the root")
	}
	if code, _ := c.do("POST", "/api/rename", fileOpRequest{EP: ep.ID, Dir: ta.root, Name: "ok.txt", To: "../ok.txt"}, nil); code == http.StatusOK {
		t.Errorf("rename out of the root succeeded")
	}
	if code, _ := c.do("POST", "/api/delete", fileOpRequest{EP: ep.ID, Dir: ta.root + "/link", Name: "secret"}, nil); code != http.StatusForbidden {
		t.Errorf("delete through a symlink out: %d, want 403", code)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Errorf("delete escaped the root: %v", err)
	}
	// A copy may not read through a link that leaves the root.
	dst := c.open("file://" + ta.root)
	if err := os.Mkdir(filepath.Join(ta.root, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _ := c.do("POST", "/api/jobs", copyRequest{Src: ep.ID, SrcDir: ta.root, Names: []string{"secretlink"}, Dst: dst.ID, DstDir: ta.root + "/in"}, nil)
	if code == http.StatusOK {
		var jobs []job
		c.must("GET", "/api/jobs", nil, &jobs)
		if len(jobs) > 0 {
			c.waitJob(jobs[0].ID, stateDone, stateFailed, stateCancelled)
		}
	}
	if _, err := os.Stat(filepath.Join(ta.root, "in", "secretlink")); err == nil {
		t.Errorf("a copy read through a symbolic link out of the root")
	}
	if code, _ := c.do("POST", "/api/jobs", copyRequest{Src: ep.ID, SrcDir: ta.root + "/link", Names: []string{"secret"}, Dst: dst.ID, DstDir: ta.root + "/in"}, nil); code != http.StatusForbidden {
		t.Errorf("copy from a directory through a link out: %d, want 403", code)
	}
	if code, _ := c.do("POST", "/api/jobs", copyRequest{Src: ep.ID, SrcDir: ta.root, Names: []string{"ok.txt"}, Dst: dst.ID, DstDir: outside}, nil); code != http.StatusForbidden {
		t.Errorf("copy to outside the root: %d, want 403", code)
	}
}

func TestCopyFTPToFileAndBack(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	data := randomData(3<<20 + 17)
	writeFile(t, filepath.Join(f.dir, "a.bin"), data)
	writeFile(t, filepath.Join(f.dir, "tree", "x.txt"), []byte("x"))
	writeFile(t, filepath.Join(f.dir, "tree", "sub", "y.txt"), []byte("yy"))
	c := ta.client(t)
	c.login("alice")
	src := c.open(f.url + "/")
	dst := c.open("file://" + ta.root)
	var ls listReply
	c.must("GET", "/api/list?ep="+src.ID+"&path=/", nil, &ls)
	if len(ls.Entries) != 2 {
		t.Fatalf("listing %+v", ls)
	}
	req := copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"a.bin", "tree"}, Dst: dst.ID, DstDir: ta.root}
	var adv adviceReply
	c.must("POST", "/api/advice", req, &adv)
	if adv.Files != 3 || adv.Bytes != int64(len(data))+3 || adv.Params.Parallel < 1 {
		t.Fatalf("advice %+v", adv)
	}
	req.Params = &adv.Params
	var j job
	c.must("POST", "/api/jobs", req, &j)
	j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled)
	if j.State != stateDone || j.Bytes != j.Total || j.Done != 3 || j.Verified != "MD5" {
		t.Fatalf("job %+v", j)
	}
	var sum1, sum2 checksumReply
	c.must("POST", "/api/checksum", fileOpRequest{EP: src.ID, Dir: "/", Name: "a.bin"}, &sum1)
	c.must("POST", "/api/checksum", fileOpRequest{EP: dst.ID, Dir: ta.root, Name: "a.bin"}, &sum2)
	if want := fmt.Sprintf("%x", md5.Sum(data)); sum1.Sum != want || sum2.Sum != want || sum1.Alg != "MD5" {
		t.Errorf("checksums %+v %+v, want MD5 %s", sum1, sum2, want)
	}
	for name, want := range map[string][]byte{"a.bin": data, "tree/x.txt": []byte("x"), "tree/sub/y.txt": []byte("yy")} {
		got, err := os.ReadFile(filepath.Join(ta.root, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	// And back, to a new directory made on the server.
	c.must("POST", "/api/mkdir", fileOpRequest{EP: src.ID, Dir: "/", Name: "back"}, nil)
	c.must("POST", "/api/jobs", copyRequest{Src: dst.ID, SrcDir: ta.root, Names: []string{"a.bin"}, Dst: src.ID, DstDir: "/back"}, &j)
	if j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled); j.State != stateDone {
		t.Fatalf("upload %+v", j)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "back", "a.bin")); !bytes.Equal(got, data) {
		t.Errorf("upload: %d bytes differ", len(got))
	}
	c.must("POST", "/api/rename", fileOpRequest{EP: src.ID, Dir: "/back", Name: "a.bin", To: "b.bin"}, nil)
	c.must("POST", "/api/delete", fileOpRequest{EP: src.ID, Dir: "/back", Name: "b.bin"}, nil)
	c.must("POST", "/api/delete", fileOpRequest{EP: src.ID, Dir: "/", Name: "back", IsDir: true}, nil)
	if _, err := os.Stat(filepath.Join(f.dir, "back")); !os.IsNotExist(err) {
		t.Errorf("back not deleted: %v", err)
	}
	var hist []historyRow
	c.must("GET", "/api/history", nil, &hist)
	if len(hist) != 4 {
		t.Errorf("history: %d rows, want 4: %+v", len(hist), hist)
	}
}

func TestUserIsolation(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	writeFile(t, filepath.Join(f.dir, "slow.bin"), randomData(64<<20))
	alice, bob := ta.client(t), ta.client(t)
	alice.login("alice")
	bob.login("bob")
	src := alice.open(f.url + "/")
	dst := alice.open("file://" + ta.root)
	var j job
	alice.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: ta.root}, &j)
	alice.waitJob(j.ID, stateRunning)

	var eps []endpoint
	bob.must("GET", "/api/endpoints", nil, &eps)
	var jobs []job
	bob.must("GET", "/api/jobs", nil, &jobs)
	if len(eps) != 0 || len(jobs) != 0 {
		t.Errorf("bob sees alice's endpoints %v or jobs %v", eps, jobs)
	}
	if code, _ := bob.do("GET", "/api/list?ep="+src.ID, nil, nil); code != http.StatusNotFound {
		t.Errorf("bob lists alice's endpoint: %d", code)
	}
	if code, _ := bob.do("POST", "/api/mkdir", fileOpRequest{EP: dst.ID, Dir: ta.root, Name: "bob"}, nil); code != http.StatusNotFound {
		t.Errorf("bob uses alice's endpoint: %d", code)
	}
	if code, _ := bob.do("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: ta.root}, nil); code != http.StatusNotFound {
		t.Errorf("bob copies with alice's endpoints: %d", code)
	}
	if code, _ := bob.do("POST", "/api/jobs/"+j.ID+"/cancel", nil, nil); code != http.StatusNotFound {
		t.Errorf("bob cancels alice's job: %d", code)
	}
	// Bob's CSRF token is not alice's.
	tok := alice.csrf
	alice.csrf = bob.csrf
	if code, _ := alice.do("POST", "/api/jobs/"+j.ID+"/cancel", nil, nil); code != http.StatusForbidden {
		t.Errorf("alice with bob's CSRF token: %d", code)
	}
	alice.csrf = tok
	if got := alice.waitJob(j.ID, stateRunning); got.State != stateRunning {
		t.Fatalf("alice's job %+v", got)
	}
	alice.must("POST", "/api/jobs/"+j.ID+"/cancel", nil, nil)
	if got := alice.waitJob(j.ID, stateCancelled, stateDone, stateFailed); got.State != stateCancelled || got.Bytes >= got.Total {
		t.Errorf("cancelled job %+v", got)
	}
	var hist []historyRow
	bob.must("GET", "/api/history", nil, &hist)
	if len(hist) != 0 {
		t.Errorf("bob sees alice's history: %+v", hist)
	}
	alice.must("GET", "/api/history", nil, &hist)
	if len(hist) != 1 || hist[0].Outcome != "cancelled" {
		t.Errorf("alice's history: %+v", hist)
	}
}

func TestRetryResumes(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	// Larger than what the engine copies whole to a temporary file:
	// this one is written in place, with its resume state beside it.
	data := randomData(80 << 20)
	writeFile(t, filepath.Join(f.dir, "slow.bin"), data)
	c := ta.client(t)
	c.login("alice")
	src := c.open(f.url + "/")
	dst := c.open("file://" + ta.root)
	var j job
	c.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: dst.ID, DstDir: ta.root, Params: &jobParams{Parallel: 4}}, &j)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var jobs []job
		c.must("GET", "/api/jobs", nil, &jobs)
		if jobs[0].Bytes > 4<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress: %+v", jobs[0])
		}
	}
	if code, _ := c.do("POST", "/api/jobs/"+j.ID+"/retry", nil, nil); code != http.StatusConflict {
		t.Errorf("retry of a running job: %d, want 409", code)
	}
	c.must("POST", "/api/jobs/"+j.ID+"/cancel", nil, nil)
	cancelled := c.waitJob(j.ID, stateCancelled, stateDone, stateFailed)
	if cancelled.State != stateCancelled {
		t.Fatalf("job %+v", cancelled)
	}
	f.slow.Store(false)
	var r job
	c.must("POST", "/api/jobs/"+j.ID+"/retry", nil, &r)
	if r = c.waitJob(r.ID, stateDone, stateFailed, stateCancelled); r.State != stateDone || !r.Resume || r.Verified != "MD5" {
		t.Fatalf("retry %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(ta.root, "slow.bin")); !bytes.Equal(got, data) {
		t.Errorf("retried copy: %d bytes, not the original", len(got))
	}
	var hist []historyRow
	c.must("GET", "/api/history", nil, &hist)
	if len(hist) != 2 || hist[0].Outcome != "ok" || hist[1].Outcome != "cancelled" {
		t.Fatalf("history %+v", hist)
	}
	// The retry resumed: it moved less than the whole file.
	if hist[0].Bytes >= int64(len(data)) {
		t.Errorf("the retry moved %d bytes of %d: not resumed", hist[0].Bytes, len(data))
	}
}

func TestSync(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	f.slow.Store(false)
	for _, n := range []string{"d/a", "d/b", "d/sub/c"} {
		writeFile(t, filepath.Join(f.dir, n), randomData(1000))
	}
	c := ta.client(t)
	c.login("alice")
	src := c.open(f.url + "/")
	dst := c.open("file://" + ta.root)
	req := copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"d"}, Dst: dst.ID, DstDir: ta.root, Sync: true}
	var j job
	c.must("POST", "/api/jobs", req, &j)
	if j = c.waitJob(j.ID, stateDone, stateFailed); j.State != stateDone || j.Files != 3 {
		t.Fatalf("first sync %+v", j)
	}
	// Nothing changed: nothing to copy.
	var adv adviceReply
	c.must("POST", "/api/advice", req, &adv)
	if adv.Files != 0 {
		t.Errorf("in sync, the advice still counts %d files", adv.Files)
	}
	// One changed in size, one new.
	writeFile(t, filepath.Join(f.dir, "d/b"), randomData(2000))
	writeFile(t, filepath.Join(f.dir, "d/sub/new"), []byte("new"))
	c.must("POST", "/api/jobs", req, &j)
	if j = c.waitJob(j.ID, stateDone, stateFailed); j.State != stateDone || j.Files != 2 {
		t.Fatalf("second sync %+v", j)
	}
	for _, n := range []string{"d/a", "d/b", "d/sub/c", "d/sub/new"} {
		want, _ := os.ReadFile(filepath.Join(f.dir, n))
		if got, err := os.ReadFile(filepath.Join(ta.root, n)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, or not the same", n, err)
		}
	}
}
