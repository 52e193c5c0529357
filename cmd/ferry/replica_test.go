package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/internal/testutil/postgres"
	"github.com/ferrygrid/ferry/server"
)

// replicaSrv is a Ferry server in-process serving dir; while slow is
// set its reads are throttled (to replicaSlowRate), and read counts the
// bytes it served, so that a test can kill it in the middle of a
// download.
type replicaSrv struct {
	dir, url string
	srv      *server.Server
	slow     atomic.Bool
	read     atomic.Int64
	once     sync.Once
	wg       sync.WaitGroup
}

// replicaSlowRate is the read rate of a slow replicaSrv, bytes a second.
const replicaSlowRate = 4 << 20

type replicaFS struct {
	dsi.Storage
	s *replicaSrv
}

func (f replicaFS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := f.Storage.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return replicaReader{r, f.s}, nil
}

type replicaReader struct {
	dsi.Reader
	s *replicaSrv
}

func (r replicaReader) ReadAt(p []byte, off int64) (int, error) {
	// Counted before the pause: a test that kills the server once it
	// read anything kills it in the middle of that read.
	r.s.read.Add(int64(len(p)))
	if r.s.slow.Load() {
		time.Sleep(time.Duration(len(p)) * time.Second / replicaSlowRate)
	}
	return r.Reader.ReadAt(p, off)
}

func startReplicaSrv(t *testing.T) *replicaSrv {
	t.Helper()
	s := &replicaSrv{dir: t.TempDir()}
	fs, err := posix.New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.srv, err = server.New(server.Config{Storage: replicaFS{fs, s}, Anonymous: true, AnonymousWrite: true}); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.wg.Go(func() { _ = s.srv.Serve(l) })
	t.Cleanup(s.kill)
	s.url = "ftp://" + l.Addr().String()
	return s
}

// kill closes the server and every session at once.
func (s *replicaSrv) kill() {
	s.once.Do(func() {
		s.srv.Close()
		s.wg.Wait()
	})
}

// catalogueEnv points the history (and so the catalogue) at a new SQLite
// file, and hides ~/.netrc.
func catalogueEnv(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "history.db")
	t.Setenv("FERRY_HISTORY", db)
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	return db
}

// markFirst makes url the replica Rank tries first among replicas of
// equal predicted rate: verified most recently.
func markFirst(t *testing.T, lfn, url string) {
	t.Helper()
	c, err := replica.Open(t.Context(), os.Getenv("FERRY_HISTORY"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mark(t.Context(), lfn, url, replica.OK, -1, "", time.Now().Add(time.Hour), ""); err != nil {
		t.Fatal(err)
	}
}

// lookup is the catalogue's entry of lfn.
func lookup(t *testing.T, lfn string) replica.Entry {
	t.Helper()
	c, err := replica.Open(t.Context(), os.Getenv("FERRY_HISTORY"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	en, err := c.Lookup(t.Context(), lfn)
	if err != nil {
		t.Fatal(err)
	}
	return en
}

func stateOf(en replica.Entry, url string) replica.State {
	for _, r := range en.Replicas {
		if r.URL == url {
			return r.State
		}
	}
	return "absent"
}

// oneLineError checks that a command failed with one line on stderr.
func oneLineError(t *testing.T, r result, want string) {
	t.Helper()
	if r.code == 0 {
		t.Errorf("exit 0, want failure; stdout %q", r.stdout)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q: want one line with %q", r.stderr, want)
	}
}

// TestReplicaCLI registers replicas of one name on two Ferry servers and
// a GCT server, shows and lists them, copies the name with ferry cp,
// removes a replica, and refuses bad input with one line each.
func TestReplicaCLI(t *testing.T) {
	catalogueEnv(t)
	data := randomData(t, 3<<20+11)
	a, b := startReplicaSrv(t), startReplicaSrv(t)
	g := startGCT(t)
	writeFile(t, filepath.Join(a.dir, "f.root"), data)
	writeFile(t, filepath.Join(b.dir, "f.root"), data)
	writeServed(t, filepath.Join(g.dir, "f.root"), data)
	urls := []string{a.url + "/f.root", b.url + "/f.root", g.url + "/f.root"}
	const lfn = "lfn:/cms/run1/f.root"
	r := ok(t, append([]string{"replica", "add", lfn}, urls...)...)
	if strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("add printed %q", r.stdout)
	}
	en := lookup(t, "/cms/run1/f.root")
	if en.Size != int64(len(data)) || en.Alg != "SHA256" || len(en.Replicas) != 3 {
		t.Fatalf("entry %+v", en)
	}
	for _, u := range urls {
		if s := stateOf(en, u); s != replica.OK {
			t.Errorf("%s: %s", u, s)
		}
	}
	r = ok(t, "replica", "show", lfn)
	t.Logf("show:\n%s", r.stdout)
	for _, u := range urls {
		if !strings.Contains(r.stdout, u) {
			t.Errorf("show lacks %s", u)
		}
	}
	r = ok(t, "replica", "ls", "lfn:/cms")
	if !strings.Contains(r.stdout, lfn) || !strings.Contains(r.stdout, "3 replicas, 3 ok") {
		t.Errorf("ls: %q", r.stdout)
	}

	// A replica with other contents is refused by add.
	writeFile(t, filepath.Join(a.dir, "other"), data[:100])
	oneLineError(t, ferry(t, nil, "replica", "add", lfn, a.url+"/other"), "differs from the catalogue")

	dir := t.TempDir()
	ok(t, "cp", "-v", lfn, dir+"/")
	if !bytes.Equal(mustRead(t, filepath.Join(dir, "f.root")), data) {
		t.Fatal("the copy differs")
	}

	ok(t, "replica", "rm", lfn, urls[1])
	if en := lookup(t, "/cms/run1/f.root"); len(en.Replicas) != 2 || stateOf(en, urls[1]) != "absent" {
		t.Errorf("after rm: %+v", en.Replicas)
	}

	t.Run("BadInput", func(t *testing.T) {
		oneLineError(t, ferry(t, nil, "cp", "lfn:/cms/run1/nonesuch", dir+"/x"), "unknown LFN lfn:/cms/run1/nonesuch")
		for _, bad := range []string{"lfn:", "lfn:cms/f", "lfn://host/cms/f", "lfn:/cms/../f", "lfn:/cms//f"} {
			oneLineError(t, ferry(t, nil, "cp", bad, dir+"/x"), "malformed lfn: URL")
			oneLineError(t, ferry(t, nil, "replica", "show", bad), "malformed lfn: URL")
		}
		oneLineError(t, ferry(t, nil, "replica", "show", "lfn:/nonesuch"), "unknown LFN")
		oneLineError(t, ferry(t, nil, "replicate", "lfn:/nonesuch", a.url+"/x"), "unknown LFN")
		oneLineError(t, ferry(t, nil, "cp", "lfn:/cms", dir+"/x"), "copy them with -r")
		oneLineError(t, ferry(t, nil, "cp", dir+"/f.root", "lfn:/cms/new"), "no destination")

		// A name whose replicas are all unreachable.
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "ftp://" + closed.Addr().String() + "/f.root"
		closed.Close()
		c, err := replica.Open(t.Context(), os.Getenv("FERRY_HISTORY"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Add(t.Context(), "/dead/f", "ADLER32", replica.Replica{URL: dead, Size: 5, Sum: "0a"}); err != nil {
			t.Fatal(err)
		}
		c.Close()
		r := ferry(t, nil, "cp", "-q", "lfn:/dead/f", dir+"/dead")
		oneLineError(t, r, "no replica could be copied")
		if _, err := os.Stat(filepath.Join(dir, "dead")); err == nil {
			t.Error("a failed copy left its destination")
		}
	})
}

// TestLFNFailover: the replica tried first is killed in the middle of
// the download, and the copy finishes from another (GCT); then a
// replica with the same size and other bytes is tried first, caught by
// its checksum, marked bad and the file fetched from a good one.
func TestLFNFailover(t *testing.T) {
	catalogueEnv(t)
	data := randomData(t, 12<<20)
	a, c := startReplicaSrv(t), startReplicaSrv(t)
	g := startGCT(t)
	writeFile(t, filepath.Join(a.dir, "f"), data)
	writeFile(t, filepath.Join(c.dir, "f"), data)
	writeServed(t, filepath.Join(g.dir, "f"), data)
	const lfn = "/run/f"
	ok(t, "replica", "add", "lfn:"+lfn, a.url+"/f", g.url+"/f")
	markFirst(t, lfn, a.url+"/f")

	t.Run("Killed", func(t *testing.T) {
		a.slow.Store(true)
		a.read.Store(0)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for a.read.Load() < 2<<20 {
				time.Sleep(10 * time.Millisecond)
			}
			a.kill()
		}()
		dst := filepath.Join(t.TempDir(), "f")
		r := ferry(t, nil, "cp", "-p", "2", lfn2(lfn), dst)
		<-done
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		t.Logf("stderr: %s", r.stderr)
		if read := a.read.Load(); read >= int64(len(data)) {
			t.Fatalf("the killed replica served all %d bytes", read)
		}
		if !bytes.Equal(mustRead(t, dst), data) {
			t.Fatal("the copy differs")
		}
		if !strings.Contains(r.stderr, "trying "+g.url+"/f") {
			t.Errorf("stderr %q does not say it failed over to GCT", r.stderr)
		}
	})

	t.Run("WrongContents", func(t *testing.T) {
		wrong := bytes.Clone(data)
		wrong[5<<20] ^= 0x55
		writeFile(t, filepath.Join(c.dir, "f"), wrong)
		// Registered as if it were good, then made the first choice.
		cat, err := replica.Open(t.Context(), os.Getenv("FERRY_HISTORY"))
		if err != nil {
			t.Fatal(err)
		}
		en, _ := cat.Lookup(t.Context(), lfn)
		if err := cat.Add(t.Context(), lfn, "", replica.Replica{URL: c.url + "/f", Size: en.Size, Sum: en.Sum, Verified: time.Now().Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		cat.Close()
		dst := filepath.Join(t.TempDir(), "f")
		r := ferry(t, nil, "cp", lfn2(lfn), dst)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		t.Logf("stderr: %s", r.stderr)
		if !strings.Contains(r.stderr, "checksum mismatch") {
			t.Errorf("stderr %q does not report the mismatch", r.stderr)
		}
		if !bytes.Equal(mustRead(t, dst), data) {
			t.Fatal("the copy differs")
		}
		en = lookup(t, lfn)
		if s := stateOf(en, c.url+"/f"); s != replica.Bad {
			t.Errorf("the wrong replica is %s, want bad", s)
		}
		// The next copy does not try it.
		r = ferry(t, nil, "cp", lfn2(lfn), dst)
		if r.code != 0 || strings.Contains(r.stderr, c.url) {
			t.Errorf("second copy: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

func lfn2(p string) string { return replica.Format(p) }

// TestReplicaRegisterVerify registers a tree, damages one file (same
// size) and removes another on the server, and verifies: the damaged is
// bad, the removed missing, the rest ok, exit 1; then syncs the names to
// a directory and syncs again (nothing to do).
func TestReplicaRegisterVerify(t *testing.T) {
	catalogueEnv(t)
	s := startReplicaSrv(t)
	files := map[string][]byte{
		"a":          randomData(t, 1000),
		"sub/b":      randomData(t, 70000),
		"sub/c d":    randomData(t, 10),
		"sub/deep/e": randomData(t, 1<<20),
	}
	for name, d := range files {
		p := filepath.Join(s.dir, "tree", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, d)
	}
	r := ok(t, "replica", "register", "-checksum-alg", "md5", s.url+"/tree", "lfn:/data")
	t.Logf("register:\n%s", r.stdout)
	if n := strings.Count(r.stdout, "\n"); n != len(files) {
		t.Fatalf("registered %d files, want %d", n, len(files))
	}
	for name := range files {
		en := lookup(t, "/data/"+name)
		if en.Alg != "MD5" || len(en.Replicas) != 1 || en.Replicas[0].State != replica.OK {
			t.Errorf("%s: %+v", name, en)
		}
	}
	r = ok(t, "replica", "verify", "lfn:/data")
	if strings.Count(r.stdout, "ok ") != len(files) {
		t.Errorf("verify: %q", r.stdout)
	}

	dir := t.TempDir()
	r = ok(t, "sync", "-v", "-sources", "2", "lfn:/data", dir)
	for name, d := range files {
		if !bytes.Equal(mustRead(t, filepath.Join(dir, filepath.FromSlash(name))), d) {
			t.Errorf("sync: %s differs", name)
		}
	}
	r = ok(t, "sync", "-v", "lfn:/data", dir)
	if strings.Count(r.stderr, "up to date") != len(files) {
		t.Errorf("second sync: %q", r.stderr)
	}

	bad := bytes.Clone(files["sub/b"])
	bad[0] ^= 1
	writeFile(t, filepath.Join(s.dir, "tree", "sub", "b"), bad)
	if err := os.Remove(filepath.Join(s.dir, "tree", "a")); err != nil {
		t.Fatal(err)
	}
	r = ferry(t, nil, "replica", "verify", "lfn:/data")
	t.Logf("verify:\n%s", r.stdout)
	if r.code != 1 || !strings.Contains(r.stdout, "BAD lfn:/data/sub/b") || !strings.Contains(r.stdout, "MISSING lfn:/data/a") ||
		strings.Count(r.stdout, "ok ") != 2 {
		t.Errorf("verify: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if s := lookup(t, "/data/sub/b").Replicas[0].State; s != replica.Bad {
		t.Errorf("sub/b is %s", s)
	}
	if s := lookup(t, "/data/a").Replicas[0].State; s != replica.Missing {
		t.Errorf("a is %s", s)
	}
	// Only bad and missing replicas left: one line, non-zero exit.
	oneLineError(t, ferry(t, nil, "cp", "lfn:/data/sub/b", filepath.Join(dir, "b2")), "no usable replica")
}

// TestReplicate copies a name third-party to a Ferry server and to GCT,
// registering each new replica; a wrong replica tried first is marked
// bad on the way.
func TestReplicate(t *testing.T) {
	catalogueEnv(t)
	data := randomData(t, 2<<20+3)
	a, b, w := startReplicaSrv(t), startReplicaSrv(t), startReplicaSrv(t)
	g := startGCT(t)
	writeFile(t, filepath.Join(a.dir, "f"), data)
	ok(t, "replica", "add", "lfn:/x/f", a.url+"/f")

	wrong := bytes.Clone(data)
	wrong[len(wrong)-1] ^= 1
	writeFile(t, filepath.Join(w.dir, "f"), wrong)
	cat, err := replica.Open(t.Context(), os.Getenv("FERRY_HISTORY"))
	if err != nil {
		t.Fatal(err)
	}
	en, _ := cat.Lookup(t.Context(), "/x/f")
	if err := cat.Add(t.Context(), "/x/f", "", replica.Replica{URL: w.url + "/f", Size: en.Size, Sum: en.Sum, Verified: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	cat.Close()

	r := ok(t, "replicate", "-cd", "lfn:/x/f", b.url+"/copies/")
	t.Logf("%s%s", r.stdout, r.stderr)
	if !bytes.Equal(mustRead(t, filepath.Join(b.dir, "copies", "f")), data) {
		t.Fatal("the replica differs")
	}
	en = lookup(t, "/x/f")
	if s := stateOf(en, b.url+"/copies/f"); s != replica.OK {
		t.Errorf("new replica: %s", s)
	}
	if s := stateOf(en, w.url+"/f"); s != replica.Bad {
		t.Errorf("the wrong replica: %s", s)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "f")); err != nil {
		t.Errorf("the wrong source itself was touched: %v", err)
	}

	ok(t, "replicate", "lfn:/x/f", g.url+"/f")
	if !bytes.Equal(mustRead(t, filepath.Join(g.dir, "f")), data) {
		t.Fatal("the GCT replica differs")
	}
	if s := stateOf(lookup(t, "/x/f"), g.url+"/f"); s != replica.OK {
		t.Errorf("GCT replica: %s", s)
	}
	oneLineError(t, ferry(t, nil, "replicate", "lfn:/x/f", g.url+"/f"), "already")
}

// TestReplicaPostgres runs the catalogue of ferry replica and ferry cp
// in a PostgreSQL database named by -history.
func TestReplicaPostgres(t *testing.T) {
	catalogueEnv(t)
	dsn := postgres.Start(t)
	data := randomData(t, 100000)
	a, b := startReplicaSrv(t), startReplicaSrv(t)
	writeFile(t, filepath.Join(a.dir, "f"), data)
	writeFile(t, filepath.Join(b.dir, "f"), data)
	ok(t, "replica", "add", "-history", dsn, "lfn:/pg/f", a.url+"/f", b.url+"/f")
	markFirst2 := func() {
		c, err := replica.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Mark(t.Context(), "/pg/f", a.url+"/f", replica.OK, -1, "", time.Now().Add(time.Hour), ""); err != nil {
			t.Fatal(err)
		}
	}
	markFirst2()
	a.kill()
	dst := filepath.Join(t.TempDir(), "f")
	r := ok(t, "cp", "-history", dsn, "lfn:/pg/f", dst)
	t.Logf("stderr: %s", r.stderr)
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("the copy differs")
	}
	r = ok(t, "replica", "show", "-history", dsn, "lfn:/pg/f")
	if !strings.Contains(r.stdout, b.url+"/f") {
		t.Errorf("show: %q", r.stdout)
	}
	// The SQLite default holds nothing of it.
	oneLineError(t, ferry(t, nil, "replica", "show", "lfn:/pg/f"), "unknown LFN")
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestShellGetLFN: the shell's get takes a lfn: source, without an open
// connection, failing over from a dead replica.
func TestShellGetLFN(t *testing.T) {
	catalogueEnv(t)
	data := randomData(t, 200000)
	a, b := startReplicaSrv(t), startReplicaSrv(t)
	writeFile(t, filepath.Join(a.dir, "f"), data)
	writeFile(t, filepath.Join(b.dir, "f"), data)
	ok(t, "replica", "add", "lfn:/sh/f", a.url+"/f", b.url+"/f")
	markFirst(t, "/sh/f", a.url+"/f")
	a.kill()
	dir := t.TempDir()
	r := ferry(t, []byte("lcd "+dir+"\nget lfn:/sh/f got\nget lfn:/sh/nonesuch\nget lfn:bad\n"), "shell")
	t.Logf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	if !bytes.Equal(mustRead(t, filepath.Join(dir, "got")), data) {
		t.Fatal("the copy differs")
	}
	if !strings.Contains(r.stderr, "unknown LFN lfn:/sh/nonesuch") || !strings.Contains(r.stderr, "malformed lfn: URL") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestLFNMultiSource reads one file from three replicas at once (two
// Ferry servers, one slow, and GCT): byte-identical, each replica read;
// then with one killed in the middle; then with one whose bytes are
// wrong, caught by the checksum and fetched again replica by replica.
func TestLFNMultiSource(t *testing.T) {
	catalogueEnv(t)
	data := randomData(t, 24<<20+5)
	a, b, w := startReplicaSrv(t), startReplicaSrv(t), startReplicaSrv(t)
	g := startGCT(t)
	for _, s := range []*replicaSrv{a, b} {
		writeFile(t, filepath.Join(s.dir, "f"), data)
	}
	writeServed(t, filepath.Join(g.dir, "f"), data)
	ok(t, "replica", "add", "lfn:/m/f", a.url+"/f", b.url+"/f", g.url+"/f")
	// Two slow replicas and a fast one: the fast one reads most.
	a.slow.Store(true)
	b.slow.Store(true)

	dst := filepath.Join(t.TempDir(), "f")
	// The temporary file of a run that was killed goes; that of a run
	// still going (its lock held) stays.
	stale, busy := filepath.Join(filepath.Dir(dst), ".f.ferry-multi-1"), filepath.Join(filepath.Dir(dst), ".f.ferry-multi-2")
	writeFile(t, stale, []byte("left by a killed run"))
	writeFile(t, busy, []byte("another run's"))
	held, err := os.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "cp", "-v", "-vb", "-sources", "3", "lfn:/m/f", dst)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a killed run's temporary file is still there (%v)", err)
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("a running download's temporary file was removed: %v", err)
	}
	t.Logf("stderr: %s", r.stderr)
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("the copy differs")
	}
	if !strings.Contains(r.stderr, "from 3 replicas") || strings.Contains(r.stderr, "again") {
		t.Errorf("stderr %q", r.stderr)
	}
	// Progress as a single-source copy shows it (-vb), each replica a
	// stream, ending at the whole file.
	if !strings.Contains(r.stderr, fmt.Sprintf("%13d bytes", len(data))) || !strings.Contains(r.stderr, "stream  2:") {
		t.Errorf("no progress report of the whole file from three streams: %q", r.stderr)
	}
	// Each replica's part is in the history, as a download of its own.
	hs, err := hist.Open(t.Context(), os.Getenv("FERRY_HISTORY"), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := hs.Records(t.Context(), hist.Filter{})
	hs.Close()
	if err != nil {
		t.Fatal(err)
	}
	var parts, sum int64
	for _, rec := range recs {
		if rec.DstPath == dst && rec.Kind == "download" && rec.Outcome == hist.OK && rec.Size == int64(len(data)) {
			parts++
			sum += rec.Bytes
		}
	}
	if parts != 3 || sum != int64(len(data)) {
		t.Errorf("history: %d parts of %d bytes, want 3 of %d", parts, sum, len(data))
	}
	read := map[string]int64{}
	for _, line := range strings.Split(r.stderr, "\n") {
		var u string
		var n int64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "%s %d bytes", &u, &n); err == nil {
			read[strings.TrimSuffix(u, ":")] = n
		}
	}
	for _, u := range []string{a.url, b.url, g.url} {
		if read[u+"/f"] == 0 {
			t.Errorf("%s read nothing: %q", u, r.stderr)
		}
	}
	if read[g.url+"/f"] < read[a.url+"/f"] || read[g.url+"/f"] < read[b.url+"/f"] {
		t.Errorf("the fast replica read less than a slow one: %v", read)
	}

	// Three slow Ferry replicas of another name, all read at once; the
	// one killed as soon as it starts to serve.
	t.Run("Killed", func(t *testing.T) {
		c := startReplicaSrv(t)
		small := data[:8<<20]
		for _, s := range []*replicaSrv{a, b, c} {
			writeFile(t, filepath.Join(s.dir, "k"), small)
			s.slow.Store(true)
		}
		ok(t, "replica", "add", "lfn:/m/k", a.url+"/k", b.url+"/k", c.url+"/k")
		for _, s := range []*replicaSrv{a, b, c} {
			s.read.Store(0)
		}
		stop := make(chan struct{})
		killed := make(chan bool, 1)
		go func() {
			for a.read.Load() == 0 {
				select {
				case <-stop:
					killed <- false
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			a.kill()
			killed <- true
		}()
		dst := filepath.Join(t.TempDir(), "f")
		r := ferry(t, nil, "cp", "-v", "-sources", "3", "lfn:/m/k", dst)
		close(stop)
		if !<-killed {
			t.Fatalf("the slow replica never started; exit %d, stderr %q", r.code, r.stderr)
		}
		t.Logf("stderr: %s", r.stderr)
		if r.code != 0 {
			t.Fatalf("exit %d", r.code)
		}
		if !bytes.Equal(mustRead(t, dst), small) {
			t.Fatal("the copy differs")
		}
		if !strings.Contains(r.stderr, "its ranges go to the others") {
			t.Errorf("stderr %q does not report the dead replica", r.stderr)
		}
		// What the others served: the file once, and what the dead one
		// had in flight (it was killed in its first read).
		if n := b.read.Load() + c.read.Load(); n > int64(len(small))+1<<20 {
			t.Errorf("the live replicas served %d bytes of a file of %d", n, len(small))
		}
	})

	t.Run("WrongContents", func(t *testing.T) {
		// Every byte of it is wrong: whatever range it serves spoils
		// the file.
		writeFile(t, filepath.Join(w.dir, "f"), randomData(t, len(data)))
		cat, err := replica.Open(t.Context(), os.Getenv("FERRY_HISTORY"))
		if err != nil {
			t.Fatal(err)
		}
		en, _ := cat.Lookup(t.Context(), "/m/f")
		if err := cat.Add(t.Context(), "/m/f", "", replica.Replica{URL: w.url + "/f", Size: en.Size, Sum: en.Sum, Verified: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		cat.Close()
		dst := filepath.Join(t.TempDir(), "f")
		r := ok(t, "cp", "-sources", "2", "lfn:/m/f", dst)
		t.Logf("stderr: %s", r.stderr)
		if !bytes.Equal(mustRead(t, dst), data) {
			t.Fatal("the copy differs")
		}
		if s := stateOf(lookup(t, "/m/f"), w.url+"/f"); s != replica.Bad {
			t.Errorf("the wrong replica is %s", s)
		}
		if !strings.Contains(r.stderr, "replica by replica") || !strings.Contains(r.stderr, "checksum mismatch") {
			t.Errorf("stderr %q", r.stderr)
		}
	})
	oneLineError(t, ferry(t, nil, "cp", "-sources", "2", a.url+"/f", dst), "-sources")
}

// TestReplicaRegisterGCT registers a tree on GCT's server (MLSD, CKSM),
// verifies it, damages a file and verifies again.
func TestReplicaRegisterGCT(t *testing.T) {
	catalogueEnv(t)
	g := startGCT(t)
	a, b := randomData(t, 5000), randomData(t, 300000)
	if err := os.Mkdir(filepath.Join(g.dir, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	writeServed(t, filepath.Join(g.dir, "a"), a)
	writeServed(t, filepath.Join(g.dir, "sub", "b"), b)
	r := ok(t, "replica", "register", "-checksum-alg", "MD5", g.url, "lfn:/gct")
	t.Logf("register:\n%s", r.stdout)
	if strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("registered %q", r.stdout)
	}
	ok(t, "replica", "verify", "lfn:/gct")
	dst := filepath.Join(t.TempDir(), "b")
	ok(t, "cp", "lfn:/gct/sub/b", dst)
	if !bytes.Equal(mustRead(t, dst), b) {
		t.Fatal("the copy differs")
	}
	bad := bytes.Clone(a)
	bad[10] ^= 1
	writeServed(t, filepath.Join(g.dir, "a"), bad)
	r = ferry(t, nil, "replica", "verify", "lfn:/gct")
	if r.code != 1 || !strings.Contains(r.stdout, "BAD lfn:/gct/a") {
		t.Errorf("verify: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
}

// TestLFNBadReplicaKeepsDestination: a single-source lfn: copy from a
// replica whose bytes fail the checksum leaves an existing destination
// as it was, locally and on a server, and leaves no temporary file (the
// outside review's r9 finding: the bytes were written to DEST itself,
// then DEST removed on the mismatch).
func TestLFNBadReplicaKeepsDestination(t *testing.T) {
	catalogueEnv(t)
	data := randomData(t, 1<<20)
	s, d := startReplicaSrv(t), startReplicaSrv(t)
	wrong := bytes.Clone(data)
	wrong[1000] ^= 0x55
	writeFile(t, filepath.Join(s.dir, "f"), data)
	const lfn = "/r9/f"
	ok(t, "replica", "add", "lfn:"+lfn, s.url+"/f")
	writeFile(t, filepath.Join(s.dir, "f"), wrong) // the replica now lies

	dir := t.TempDir()
	dst := filepath.Join(dir, "f")
	writeFile(t, dst, data) // a good copy is already there
	r := ferry(t, nil, "cp", lfn2(lfn), dst)
	t.Logf("exit %d: %s", r.code, r.stderr)
	if r.code == 0 || !strings.Contains(r.stderr, "checksum mismatch") {
		t.Errorf("exit %d, stderr %q: want a checksum mismatch", r.code, r.stderr)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
		t.Errorf("after a copy from a bad replica failed its check, the destination is gone or changed: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left in the directory: %v", es)
	}

	markFirst(t, lfn, s.url+"/f") // ok again: tried again
	writeFile(t, filepath.Join(d.dir, "f"), data)
	r = ferry(t, nil, "cp", lfn2(lfn), d.url+"/f")
	t.Logf("exit %d: %s", r.code, r.stderr)
	if r.code == 0 || !strings.Contains(r.stderr, "checksum mismatch") {
		t.Errorf("exit %d, stderr %q: want a checksum mismatch", r.code, r.stderr)
	}
	if got, err := os.ReadFile(filepath.Join(d.dir, "f")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the destination on the server is gone or changed: %v", err)
	}
	if es, _ := os.ReadDir(d.dir); len(es) != 1 {
		t.Errorf("left on the server: %v", es)
	}

	// A good replica replaces the destination's other contents.
	markFirst(t, lfn, s.url+"/f")
	writeFile(t, filepath.Join(s.dir, "f"), data)
	writeFile(t, dst, []byte("old"))
	ok(t, "cp", lfn2(lfn), dst)
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Error("the verified copy did not replace the destination")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left in the directory: %v", es)
	}
}
