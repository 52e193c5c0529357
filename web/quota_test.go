package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// countStates counts c's jobs by state.
func countStates(c *apiClient) map[string]int {
	var jobs []job
	c.must("GET", "/api/jobs", nil, &jobs)
	n := map[string]int{}
	for _, j := range jobs {
		n[j.State]++
	}
	return n
}

// TestJobFairness: a user's queue holds at most MaxRunningPerUser of the
// app's slots, so another user's copy starts at once; a user's queued
// and running jobs are bounded.
func TestJobFairness(t *testing.T) {
	ta := startAppWith(t, func(c *Config) { c.MaxRunning, c.MaxJobsPerUser = 3, 4 })
	f := startFerrySrv(t)
	writeFile(t, filepath.Join(f.dir, "slow.bin"), randomData(16<<20))
	alice, bob := ta.client(t), ta.client(t)
	alice.login("alice")
	bob.login("bob")
	asrc, adst := alice.open(f.url+"/"), alice.open("file://"+ta.root)
	bsrc, bdst := bob.open(f.url+"/"), bob.open("file://"+ta.root)
	var ids []string
	for i := range 4 {
		var j job
		alice.must("POST", "/api/jobs", copyRequest{Src: asrc.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: adst.ID, DstDir: filepath.Join(ta.root, fmt.Sprint("a", i))}, &j)
		ids = append(ids, j.ID)
	}
	if code, msg := alice.do("POST", "/api/jobs", copyRequest{Src: asrc.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: adst.ID, DstDir: filepath.Join(ta.root, "a4")}, nil); code != http.StatusTooManyRequests {
		t.Errorf("a fifth job: %d %s, want 429", code, msg)
	}
	alice.waitJob(ids[1], stateRunning)
	var bj job
	bob.must("POST", "/api/jobs", copyRequest{Src: bsrc.ID, SrcDir: "/", Names: []string{"slow.bin"}, Dst: bdst.ID, DstDir: filepath.Join(ta.root, "b")}, &bj)
	if got := bob.waitJob(bj.ID, stateRunning, stateDone, stateFailed); got.State == stateFailed {
		t.Errorf("bob's job %+v", got)
	}
	for range 10 {
		if n := countStates(alice); n[stateRunning] > 2 {
			t.Errorf("alice runs %d jobs at once, want at most 2", n[stateRunning])
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range ids {
		alice.do("POST", "/api/jobs/"+id+"/cancel", nil, nil)
	}
	bob.do("POST", "/api/jobs/"+bj.ID+"/cancel", nil, nil)
	for _, id := range ids {
		alice.waitJob(id, stateCancelled, stateDone, stateFailed)
	}
}

// TestPerUserRequestCaps: listings (and advice, job requests) and event
// streams of one user are bounded.
func TestPerUserRequestCaps(t *testing.T) {
	ta := startApp(t)
	c := ta.client(t)
	c.login("alice")
	ep := c.open("file://" + ta.root)
	ta.app.mu.Lock()
	u := ta.app.users["alice"]
	ta.app.mu.Unlock()
	defer func(d time.Duration) { busyWait = d }(busyWait)
	busyWait = 100 * time.Millisecond
	for range maxBusyPerUser {
		u.busy <- struct{}{}
	}
	if code, _ := c.do("GET", "/api/list?ep="+ep.ID, nil, nil); code != http.StatusTooManyRequests {
		t.Errorf("a listing beyond the cap: %d, want 429", code)
	}
	for range maxBusyPerUser {
		<-u.busy
	}
	c.must("GET", "/api/list?ep="+ep.ID, nil, nil)

	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for i := range maxStreamsPerUser + 1 {
		res, err := c.hc.Get(c.base + "/api/events")
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, res)
		want := http.StatusOK
		if i == maxStreamsPerUser {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Errorf("event stream %d: %d, want %d", i, res.StatusCode, want)
		}
	}
}

// TestListingBounded: a directory with too many entries is refused, not
// read whole.
func TestListingBounded(t *testing.T) {
	defer func(n int) { maxListEntries = n }(maxListEntries)
	maxListEntries = 3
	ta := startApp(t)
	for i := range 4 {
		writeFile(t, filepath.Join(ta.root, "big", fmt.Sprint(i)), nil)
	}
	c := ta.client(t)
	c.login("alice")
	ep := c.open("file://" + ta.root)
	if code, msg := c.do("GET", "/api/list?ep="+ep.ID+"&path="+filepath.Join(ta.root, "big"), nil, nil); code != http.StatusBadRequest {
		t.Errorf("a listing of 4 entries with a cap of 3: %d %s", code, msg)
	}
	c.must("GET", "/api/list?ep="+ep.ID, nil, nil)
}

// TestEventsOutliveReadTimeout: the server's ReadTimeout (cmd/ferry sets
// one) does not end an event stream.
func TestEventsOutliveReadTimeout(t *testing.T) {
	ta := startApp(t)
	srv := httptest.NewUnstartedServer(ta.app)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	c := ta.client(t)
	c.base = srv.URL
	c.login("alice")
	res, err := c.hc.Get(c.base + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	first := make([]byte, 4096)
	if _, err := res.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	// A change after the read timeout still arrives.
	ta.app.mu.Lock()
	u := ta.app.users["alice"]
	ta.app.mu.Unlock()
	u.mu.Lock()
	u.bumpLocked()
	u.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := res.Body.Read(first)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the stream ended after the read timeout: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("no event after the read timeout")
	}
}
