package web

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/replica"
)

// lfnCopyApp starts an app with a catalogue holding /run/f.bin
// (randomData) on two Ferry servers: wrong, whose copy has the same size
// and other bytes and is ranked first (verified most recently), and good.
func lfnCopyApp(t *testing.T) (ta *testApp, cat *replica.Catalogue, data []byte, wrong, good *ferrySrv) {
	t.Helper()
	data = randomData(3<<20 + 17)
	bad := bytes.Clone(data)
	bad[1<<20] ^= 0x55
	wrong, good = startFerrySrv(t), startFerrySrv(t)
	wrong.slow.Store(false)
	good.slow.Store(false)
	writeFile(t, filepath.Join(wrong.dir, "f.bin"), bad)
	writeFile(t, filepath.Join(good.dir, "f.bin"), data)
	sum, err := checksum.Compute(context.Background(), bytes.NewReader(data), int64(len(data)), 0, -1, "MD5")
	if err != nil {
		t.Fatal(err)
	}
	dsn := filepath.Join(t.TempDir(), "history.db")
	if cat, err = replica.Open(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	ctx := context.Background()
	for _, s := range []*ferrySrv{good, wrong} {
		if err := cat.Add(ctx, "/run/f.bin", "MD5", replica.Replica{URL: s.url + "/f.bin", Size: int64(len(data)), Sum: sum}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cat.Mark(ctx, "/run/f.bin", wrong.url+"/f.bin", replica.OK, -1, "", time.Now().Add(time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	ta = startAppOn(t, dsn, t.TempDir(), func(c *Config) { c.Catalogue = cat })
	return ta, cat, data, wrong, good
}

func replicaState(t *testing.T, cat *replica.Catalogue, lfn, url string) replica.State {
	t.Helper()
	en, err := cat.Lookup(context.Background(), lfn)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range en.Replicas {
		if r.URL == url {
			return r.State
		}
	}
	return "absent"
}

// TestCatalogueCopy copies an LFN into a local pane and a server pane
// through POST /api/catalogue/copy: the wrong replica, tried first, is
// caught by the checksum and marked bad, the file comes from the good
// one, the job says which, and nothing temporary is left behind.
func TestCatalogueCopy(t *testing.T) {
	ta, cat, data, wrong, good := lfnCopyApp(t)
	c := ta.client(t)
	c.login("alice")
	local := c.open("file://" + ta.root)
	if err := os.Mkdir(filepath.Join(ta.root, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An existing file of that name is replaced by the verified copy.
	writeFile(t, filepath.Join(ta.root, "in", "f.bin"), []byte("old"))

	var j job
	c.must("POST", "/api/catalogue/copy", lfnCopyRequest{LFN: "lfn:/run/f.bin", Dst: local.ID, DstDir: filepath.Join(ta.root, "in")}, &j)
	if j.LFN != "/run/f.bin" || j.Src != "lfn:/run/f.bin" || j.Dst != "file://"+filepath.Join(ta.root, "in") {
		t.Errorf("job %+v", j)
	}
	j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled)
	if j.State != stateDone {
		t.Fatalf("job %s: %s", j.State, j.Error)
	}
	if j.Replica != good.url+"/f.bin" || j.Verified != "MD5" || j.Bytes != int64(len(data)) || j.Total != int64(len(data)) || j.Done != 1 {
		t.Errorf("job: replica %q verified %q bytes %d/%d done %d", j.Replica, j.Verified, j.Bytes, j.Total, j.Done)
	}
	if len(j.Notes) != 1 || !strings.Contains(j.Notes[0], "checksum mismatch") || !strings.Contains(j.Notes[0], wrong.url) {
		t.Errorf("notes %q: want the wrong replica's checksum mismatch", j.Notes)
	}
	got, err := os.ReadFile(filepath.Join(ta.root, "in", "f.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy differs (%v)", err)
	}
	if s := replicaState(t, cat, "/run/f.bin", wrong.url+"/f.bin"); s != replica.Bad {
		t.Errorf("the wrong replica is %s, want bad", s)
	}
	if s := replicaState(t, cat, "/run/f.bin", good.url+"/f.bin"); s != replica.OK {
		t.Errorf("the good replica is %s, want ok", s)
	}
	des, _ := os.ReadDir(filepath.Join(ta.root, "in"))
	if len(des) != 1 {
		t.Errorf("left in the directory: %v", des)
	}

	// Into a server's pane: the bad replica is not tried again.
	dstSrv := startFerrySrv(t)
	remote := c.open(dstSrv.url)
	c.must("POST", "/api/catalogue/copy", lfnCopyRequest{LFN: "/run/f.bin", Dst: remote.ID, DstDir: "/"}, &j)
	j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled)
	if j.State != stateDone || j.Replica != good.url+"/f.bin" || len(j.Notes) != 0 {
		t.Fatalf("to a server: %s %q replica %q notes %q", j.State, j.Error, j.Replica, j.Notes)
	}
	if got, err := os.ReadFile(filepath.Join(dstSrv.dir, "f.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the server's copy differs (%v)", err)
	}
	if des, _ := os.ReadDir(dstSrv.dir); len(des) != 1 {
		t.Errorf("left on the server: %v", des)
	}

	// A server's pane with the wrong replica first again: the
	// destination's CKSM catches it, the copy comes from the good one,
	// but a checksum a server of the user's choice reports changes no
	// replica's state in the catalogue (a lying server would otherwise
	// mark every replica bad for everyone).
	if err := cat.Mark(t.Context(), "/run/f.bin", wrong.url+"/f.bin", replica.OK, -1, "", time.Now().Add(2*time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dstSrv.dir, "f.bin"))
	c.must("POST", "/api/catalogue/copy", lfnCopyRequest{LFN: "/run/f.bin", Dst: remote.ID, DstDir: "/"}, &j)
	j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled)
	if j.State != stateDone || j.Replica != good.url+"/f.bin" || len(j.Notes) != 1 || !strings.Contains(j.Notes[0], "left as it was") {
		t.Fatalf("to a server, wrong replica first: %s %q replica %q notes %q", j.State, j.Error, j.Replica, j.Notes)
	}
	if s := replicaState(t, cat, "/run/f.bin", wrong.url+"/f.bin"); s != replica.OK {
		t.Errorf("a destination server's checksum changed the replica's state to %s", s)
	}
	if got, err := os.ReadFile(filepath.Join(dstSrv.dir, "f.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the server's copy differs (%v)", err)
	}
	if err := cat.Mark(t.Context(), "/run/f.bin", wrong.url+"/f.bin", replica.Bad, -1, "", time.Now(), "wrong"); err != nil {
		t.Fatal(err)
	}

	// Only the bad replica left: the job fails and says why.
	if err := cat.Remove(context.Background(), "/run/f.bin", good.url+"/f.bin"); err != nil {
		t.Fatal(err)
	}
	c.must("POST", "/api/catalogue/copy", lfnCopyRequest{LFN: "/run/f.bin", Dst: local.ID, DstDir: ta.root}, &j)
	j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled)
	if j.State != stateFailed || !strings.Contains(j.Error, "no usable replica") {
		t.Errorf("bad replicas only: %s %q", j.State, j.Error)
	}
	if _, err := os.Stat(filepath.Join(ta.root, "f.bin")); err == nil {
		t.Error("a file was written from a bad replica")
	}
	// The good replica registered again, the failed job retried.
	en, err := cat.Lookup(context.Background(), "/run/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Add(context.Background(), "/run/f.bin", "MD5", replica.Replica{URL: good.url + "/f.bin", Size: en.Size, Sum: en.Sum}); err != nil {
		t.Fatal(err)
	}
	var again job
	c.must("POST", "/api/jobs/"+j.ID+"/retry", nil, &again)
	again = c.waitJob(again.ID, stateDone, stateFailed, stateCancelled)
	if again.State != stateDone || again.LFN != "/run/f.bin" || again.Replica != good.url+"/f.bin" {
		t.Errorf("retry: %s %q replica %q", again.State, again.Error, again.Replica)
	}
	if got, err := os.ReadFile(filepath.Join(ta.root, "f.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the retried copy differs (%v)", err)
	}
}

// TestCatalogueCopyRefused checks what POST /api/catalogue/copy refuses,
// each with a JSON error: no login, no CSRF token, a malformed or
// unknown LFN, a directory of names, an unknown endpoint, a directory
// outside the root.
func TestCatalogueCopyRefused(t *testing.T) {
	ta, _, _, _, _ := lfnCopyApp(t)
	c := ta.client(t)
	anon := ta.client(t)
	c.login("alice")
	local := c.open("file://" + ta.root)
	noCSRF := *c
	noCSRF.csrf = ""
	for _, tc := range []struct {
		name   string
		c      *apiClient
		req    lfnCopyRequest
		code   int
		substr string
	}{
		{"no login", anon, lfnCopyRequest{LFN: "/run/f.bin", Dst: local.ID, DstDir: ta.root}, 401, ""},
		{"no CSRF token", &noCSRF, lfnCopyRequest{LFN: "/run/f.bin", Dst: local.ID, DstDir: ta.root}, 403, ""},
		{"malformed", c, lfnCopyRequest{LFN: "lfn:/run/../f.bin", Dst: local.ID, DstDir: ta.root}, 400, "malformed lfn: URL"},
		{"no LFN", c, lfnCopyRequest{Dst: local.ID, DstDir: ta.root}, 400, "which LFN"},
		{"unknown", c, lfnCopyRequest{LFN: "/run/nonesuch", Dst: local.ID, DstDir: ta.root}, 404, "unknown LFN lfn:/run/nonesuch"},
		{"a directory", c, lfnCopyRequest{LFN: "/run", Dst: local.ID, DstDir: ta.root}, 400, "directory of names"},
		{"unknown endpoint", c, lfnCopyRequest{LFN: "/run/f.bin", Dst: "nonesuch", DstDir: ta.root}, 404, "no such endpoint"},
		{"outside the root", c, lfnCopyRequest{LFN: "/run/f.bin", Dst: local.ID, DstDir: filepath.Dir(ta.root)}, 403, "outside the allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := tc.c.do("POST", "/api/catalogue/copy", tc.req, nil)
			if code != tc.code || !strings.Contains(msg, tc.substr) {
				t.Errorf("%d %q, want %d with %q", code, msg, tc.code, tc.substr)
			}
		})
	}
	var jobs []job
	c.must("GET", "/api/jobs", nil, &jobs)
	if len(jobs) != 0 {
		t.Errorf("jobs started: %+v", jobs)
	}
}
