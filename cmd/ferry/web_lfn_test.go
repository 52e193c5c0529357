package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/internal/replica"
)

// TestWebLFNCopy runs ferry web over a catalogue of two replicas on
// Ferry servers, one with wrong bytes of the same size ranked first, and
// copies the LFN into a file:// pane through POST /api/catalogue/copy:
// the wrong replica is marked bad, the file comes from the good one.
func TestWebLFNCopy(t *testing.T) {
	db := catalogueEnv(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := webCert(t, dir)
	pw := filepath.Join(dir, "passwd")
	if err := auth.SetUser(pw, "alice", "alice-secret", ""); err != nil {
		t.Fatal(err)
	}
	data := randomData(t, 2<<20+5)
	wrong := bytes.Clone(data)
	wrong[1000] ^= 0x55
	good, bad := startReplicaSrv(t), startReplicaSrv(t)
	writeFile(t, filepath.Join(good.dir, "f"), data)
	writeFile(t, filepath.Join(bad.dir, "f"), data)
	const lfn = "/web/f"
	ok(t, "replica", "add", "lfn:"+lfn, good.url+"/f", bad.url+"/f")
	writeFile(t, filepath.Join(bad.dir, "f"), wrong) // after its checksum was taken
	markFirst(t, lfn, bad.url+"/f")

	base := startWeb(t, "-listen", "127.0.0.1:0", "-cert", certFile, "-key", keyFile, "-passwd", pw, "-history", db,
		"-root", root, "-allow-net", "127.0.0.0/8")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var csrf string
	call := func(method, path, body string, out any) int {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return res.StatusCode
	}
	var me struct{ CSRF string }
	if code := call("POST", "api/login", `{"user":"alice","password":"alice-secret"}`, &me); code != 200 {
		t.Fatalf("login: %d", code)
	}
	csrf = me.CSRF
	var ep struct{ ID string }
	if code := call("POST", "api/endpoints", `{"url":"file://`+root+`"}`, &ep); code != 200 {
		t.Fatalf("open the pane: %d", code)
	}
	var e struct{ Error string }
	if code := call("POST", "api/catalogue/copy", `{"lfn":"lfn:/web/nonesuch","dst":"`+ep.ID+`","dstDir":"`+root+`"}`, &e); code != 404 || e.Error != "unknown LFN lfn:/web/nonesuch" {
		t.Errorf("unknown LFN: %d %q", code, e.Error)
	}
	type job struct {
		ID, State, Error, Replica, Verified string
		Notes                               []string
	}
	var j job
	if code := call("POST", "api/catalogue/copy", `{"lfn":"lfn:/web/f","dst":"`+ep.ID+`","dstDir":"`+root+`"}`, &j); code != 200 {
		t.Fatalf("copy: %d", code)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var jobs []job
		call("GET", "api/jobs", "", &jobs)
		if len(jobs) == 1 && jobs[0].State != "queued" && jobs[0].State != "running" {
			j = jobs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not end: %+v", jobs)
		}
	}
	if j.State != "done" || j.Replica != good.url+"/f" || j.Verified != "SHA256" {
		t.Fatalf("job %+v", j)
	}
	if len(j.Notes) != 1 || !strings.Contains(j.Notes[0], "checksum mismatch") {
		t.Errorf("notes %q", j.Notes)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(root, "f")), data) {
		t.Fatal("the copy differs")
	}
	en := lookup(t, lfn)
	if s := stateOf(en, bad.url+"/f"); s != replica.Bad {
		t.Errorf("the wrong replica is %s, want bad", s)
	}
}
