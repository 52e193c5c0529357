package web

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/postgres"
)

// TestSiteHistory runs two ferry web instances on one PostgreSQL
// history and one password file: a user's transfer made on one instance
// is in their history on the other, and in nobody else's.
func TestSiteHistory(t *testing.T) {
	dsn := postgres.Start(t)
	root := t.TempDir()
	a := startAppOn(t, dsn, root, nil)
	b := startAppOn(t, dsn, root, nil)
	f := startFerrySrv(t)
	f.slow.Store(false)
	data := randomData(1 << 20)
	writeFile(t, filepath.Join(f.dir, "s.bin"), data)

	onA := a.client(t)
	onA.login("alice")
	src := onA.open(f.url + "/")
	dst := onA.open("file://" + a.root)
	var j job
	onA.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/", Names: []string{"s.bin"}, Dst: dst.ID, DstDir: a.root}, &j)
	if j = onA.waitJob(j.ID, stateDone, stateFailed, stateCancelled); j.State != stateDone {
		t.Fatalf("job %+v", j)
	}
	if got, _ := os.ReadFile(filepath.Join(a.root, "s.bin")); !bytes.Equal(got, data) {
		t.Fatal("s.bin differs")
	}
	waitRecords(t, a.hist, 1)

	onB, bobOnB := b.client(t), b.client(t)
	onB.login("alice")
	bobOnB.login("bob")
	var hist []historyRow
	onB.must("GET", "/api/history", nil, &hist)
	if len(hist) != 1 || hist[0].Outcome != "ok" || hist[0].Bytes != int64(len(data)) {
		t.Errorf("alice's history on the other instance: %+v", hist)
	}
	bobOnB.must("GET", "/api/history", nil, &hist)
	if len(hist) != 0 {
		t.Errorf("bob sees alice's history: %+v", hist)
	}
	// The advisor of the other instance learns from it too.
	src2 := onB.open(f.url + "/")
	dst2 := onB.open("file://" + b.root)
	var adv adviceReply
	onB.must("POST", "/api/advice", copyRequest{Src: src2.ID, SrcDir: "/", Names: []string{"s.bin"}, Dst: dst2.ID, DstDir: b.root}, &adv)
	if adv.Basis != "host-pair" || adv.ETA <= 0 {
		t.Errorf("advice on the other instance: %+v", adv)
	}
}
