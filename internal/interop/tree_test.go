package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// makeRichTree is makeTree plus non-ASCII names, empty files and more
// nesting, the tree the many-file tests copy around.
func makeRichTree(t testing.TB, root string) {
	t.Helper()
	makeTree(t, root)
	writeFile(t, filepath.Join(root, "ñandú", "größe ü.dat"), "non-ASCII\n")
	writeFile(t, filepath.Join(root, "sub", "zero"), "")
	writeFile(t, filepath.Join(root, "run-01", "x.dat"), "run 1\n")
	writeFile(t, filepath.Join(root, "run-02", "x.dat"), "run 2\n")
	writeFile(t, filepath.Join(root, "run-02", "y.txt"), "run 2 text\n")
	if err := os.MkdirAll(filepath.Join(root, "empty", "emptier"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// jobRecord is a line of ferry cp -json.
type jobRecord struct {
	Type     string `json:"type"`
	Src, Dst string
	Bytes    int64
	OK       bool
	Error    string
	Files    int
	Skipped  int
	Deleted  int
	Failed   int
	Failures []struct{ Src, Dst, Error string }
	Action   string
}

// jsonRun runs ferry with -json and returns its records and exit code.
func jsonRun(t *testing.T, args ...string) ([]jobRecord, result) {
	t.Helper()
	r := run(t, "", "", ferryBin, args...)
	var recs []jobRecord
	for _, l := range lines(r.stdout) {
		var rec jobRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("ferry %s: bad JSON line %q: %v\n%v", strings.Join(args, " "), l, err, r)
		}
		recs = append(recs, rec)
	}
	return recs, r
}

// summaryOf returns the summary record.
func summaryOf(t *testing.T, recs []jobRecord) jobRecord {
	t.Helper()
	for _, r := range recs {
		if r.Type == "summary" || r.Type == "plan-summary" {
			return r
		}
	}
	t.Fatalf("no summary in %+v", recs)
	return jobRecord{}
}

// TestCpTreeFerry copies a tree in every direction with ferry serve
// as the server(s): up, down, third party, local to local; wildcards;
// -cd; sync twice; -delete with -dry-run; -preserve; -f and -df.
func TestCpTreeFerry(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "none"))
	local := t.TempDir()
	src := filepath.Join(local, "src")
	makeRichTree(t, src)
	root := t.TempDir()
	e := &treeEnv{local: local, src: src, root: root, srv: startFerry(t, root), other: startFerry(t, t.TempDir())}
	t.Run("up-down-thirdparty-local", e.upDownThirdPartyLocal)
	t.Run("wildcards", e.wildcards)
	t.Run("sync-twice-delete-dry-run", e.syncTwiceDelete)
	t.Run("preserve", e.preserve)
	t.Run("list-file-and-dump-file", e.listAndDumpFile)
	t.Run("list", e.list)
}

// treeEnv is what the subtests of TestCpTreeFerry share.
type treeEnv struct {
	local, src string  // a local directory, and the tree in it
	root       string  // srv's root
	srv, other *server // two ferry servers
}

// upDownThirdPartyLocal copies the tree up, down, to the other server
// (third party), within one server and locally.
func (e *treeEnv) upDownThirdPartyLocal(t *testing.T) {
	local, src, root, srv, other := e.local, e.src, e.root, e.srv, e.other
	ferry(t, "cp", "-q", "-r", src, srv.url("/up"))
	sameTree(t, filepath.Join(root, "up"), src)
	ferry(t, "cp", "-q", "-r", "-cc", "3", "-p", "2", srv.url("/up/"), filepath.Join(local, "down")+"/")
	sameTree(t, filepath.Join(local, "down"), src)
	ferry(t, "cp", "-q", "-r", srv.url("/up/"), other.url("/tp/"))
	sameTree(t, filepath.Join(other.root, "tp"), src)
	ferry(t, "cp", "-q", "-r", "-fast", "-p", "2", srv.url("/up"), srv.url("/same-server"))
	sameTree(t, filepath.Join(root, "same-server"), src)
	ferry(t, "cp", "-q", "-r", src, filepath.Join(local, "copy"))
	sameTree(t, filepath.Join(local, "copy"), src)
}

// wildcards copies by wildcards, in both directions, and needs -cd for
// a missing directory.
func (e *treeEnv) wildcards(t *testing.T) {
	local, src, root, srv := e.local, e.src, e.root, e.srv
	dst := filepath.Join(local, "wild")
	// A missing destination directory needs -cd without -r.
	if r := run(t, "", "", ferryBin, "cp", srv.url("/up/run-0?/x.dat"), dst+"/"); r.code != 1 || !strings.Contains(r.stderr, "-cd") {
		t.Errorf("no -cd: %v", r)
	}
	ferry(t, "cp", "-q", "-r", "-cd", srv.url("/up/run-??/"), dst+"/")
	sameTree(t, filepath.Join(dst, "run-02"), filepath.Join(src, "run-02"))
	ferry(t, "cp", "-q", srv.url("/up/[st]*.txt"), dst+"/")
	sameFile(t, filepath.Join(dst, "top.txt"), fileSum(t, filepath.Join(src, "top.txt")))
	ferry(t, "cp", "-q", "-cd", filepath.Join(src, "ñ*", "*.dat"), srv.url("/wild-up/"))
	if _, err := os.Stat(filepath.Join(root, "wild-up", "größe ü.dat")); err != nil {
		t.Errorf("local wildcard upload: %v", err)
	}
	if r := run(t, "", "", ferryBin, "cp", srv.url("/up/*.none"), dst+"/"); r.code != 1 || !strings.Contains(r.stderr, "no match") {
		t.Errorf("no match: %v", r)
	}
}

// syncTwiceDelete syncs twice (the second run copies nothing), then
// shows and runs -delete.
func (e *treeEnv) syncTwiceDelete(t *testing.T) {
	src, root, srv := e.src, e.root, e.srv
	dst := srv.url("/mirror")
	recs, r := jsonRun(t, "sync", "-json", src, dst)
	if s := summaryOf(t, recs); r.code != 0 || s.Files != 10 || s.Failed != 0 {
		t.Fatalf("first sync: %+v\n%v", s, r)
	}
	sameTree(t, filepath.Join(root, "mirror"), src)
	recs, r = jsonRun(t, "sync", "-json", src, dst)
	if s := summaryOf(t, recs); r.code != 0 || s.Files != 0 || s.Skipped != 10 {
		t.Errorf("second sync changed something: %+v\n%v", s, r)
	}
	// An extra on the server, a changed file at the source.
	writeFile(t, filepath.Join(root, "mirror", "sub", "extra.txt"), "extra\n")
	writeFile(t, filepath.Join(root, "mirror", "gone", "deep.txt"), "extra\n")
	time.Sleep(1100 * time.Millisecond) // MLSx times have whole seconds
	writeFile(t, filepath.Join(src, "top.txt"), "top, changed\n")
	out := ferry(t, "sync", "-delete", "-dry-run", src, dst)
	for _, want := range []string{"delete " + srv.url("/mirror/sub/extra.txt"), "delete " + srv.url("/mirror/gone"), "copy " + filepath.Join(src, "top.txt")} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "mirror", "sub", "extra.txt")); err != nil {
		t.Fatalf("the dry run deleted: %v", err)
	}
	recs, r = jsonRun(t, "sync", "-delete", "-json", src, dst)
	if s := summaryOf(t, recs); r.code != 0 || s.Files != 1 || s.Deleted != 3 {
		t.Errorf("sync -delete: %+v\n%v", s, r)
	}
	sameTree(t, filepath.Join(root, "mirror"), src)
}

// preserve keeps a modification time and permission bits (-preserve)
// both ways.
func (e *treeEnv) preserve(t *testing.T) {
	local, src, root, srv := e.local, e.src, e.root, e.srv
	mt := time.Date(2021, 2, 3, 4, 5, 6, 0, time.UTC)
	f := filepath.Join(src, "sub", "mid.bin")
	os.Chtimes(f, mt, mt)
	os.Chmod(f, 0o640)
	ferry(t, "cp", "-q", "-r", "-preserve", src, srv.url("/kept"))
	fi, err := os.Stat(filepath.Join(root, "kept", "sub", "mid.bin"))
	if err != nil || !fi.ModTime().Equal(mt) || fi.Mode().Perm() != 0o640 {
		t.Errorf("preserved upload: %v, %v", fi, err)
	}
	ferry(t, "cp", "-q", "-r", "-preserve", srv.url("/kept"), filepath.Join(local, "kept"))
	fi, err = os.Stat(filepath.Join(local, "kept", "sub", "mid.bin"))
	if err != nil || !fi.ModTime().Equal(mt) || fi.Mode().Perm() != 0o640 {
		t.Errorf("preserved download: %v, %v", fi, err)
	}
}

// listAndDumpFile copies the pairs of a -f list, writes the failed one
// to the -df dump file, and runs it again from there.
func (e *treeEnv) listAndDumpFile(t *testing.T) {
	src, root, srv := e.src, e.root, e.srv
	dir := t.TempDir()
	list := filepath.Join(dir, "pairs")
	df := filepath.Join(dir, "failed")
	missing := filepath.Join(dir, "appears later.txt")
	text := fmt.Sprintf("# pairs\n%s %s\n\n\"%s\" \"%s\"\n%s %s\n",
		srv.url("/up/top.txt"), "file://"+filepath.Join(dir, "top.txt"),
		missing, srv.url("/listed/appears later.txt"),
		srv.url("/up/sub/"), "file://"+filepath.Join(dir, "sub")+"/")
	os.WriteFile(list, []byte(text), 0o644)
	r := run(t, "", "", ferryBin, "cp", "-r", "-cd", "-f", list, "-df", df)
	if r.code != 1 || !strings.Contains(r.stderr, "appears later.txt") {
		t.Fatalf("a list with a missing source: %v", r)
	}
	sameTree(t, filepath.Join(dir, "sub"), filepath.Join(src, "sub"))
	dump, _ := os.ReadFile(df)
	if n := len(lines(string(dump))); n != 1 || !strings.Contains(string(dump), "appears%20later.txt") {
		t.Fatalf("dump file: %q", dump)
	}
	writeFile(t, missing, "now here\n")
	// The dump file exists: it is the input (as in globus-url-copy).
	ferry(t, "cp", "-q", "-cd", "-df", df)
	sameFile(t, filepath.Join(root, "listed", "appears later.txt"), fileSum(t, missing))
	if _, err := os.Stat(df); !os.IsNotExist(err) {
		t.Errorf("the dump file stays after success: %v", err)
	}
}

// list lists a directory with -list.
func (e *treeEnv) list(t *testing.T) {
	srv := e.srv
	out := ferry(t, "cp", "-list", srv.url("/up/"))
	for _, want := range []string{srv.url("/up/"), "    empty/", "    top.txt", "    with space.txt", "    ñandú/"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("-list lacks %q:\n%s", want, out)
		}
	}
}

// TestCpManyFiles uploads a tree of 2,000 small files with four
// concurrent sessions (and -pp accepted), then syncs it again.
func TestCpManyFiles(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "none"))
	src := filepath.Join(t.TempDir(), "many")
	for i := range 2000 {
		writeFile(t, filepath.Join(src, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d", i)), fmt.Sprintf("file %d\n", i))
	}
	root := t.TempDir()
	srv := startFerry(t, root)
	recs, r := jsonRun(t, "cp", "-r", "-cc", "4", "-pp", "-json", src, srv.url("/many"))
	if s := summaryOf(t, recs); r.code != 0 || s.Files != 2000 || len(recs) != 2001 {
		t.Fatalf("upload: %+v (%d records)\n%v", s, len(recs), r.stderr)
	}
	sameTree(t, filepath.Join(root, "many"), src)
	recs, r = jsonRun(t, "sync", "-cc", "4", "-json", src, srv.url("/many"))
	if s := summaryOf(t, recs); r.code != 0 || s.Files != 0 || s.Skipped != 2000 {
		t.Errorf("sync after copy: %+v", s)
	}
}

// TestCpTreeGCT copies a tree to and from GCT's server, with -links copy
// (SITE SYMLINKFROM/TO), and syncs it twice.
func TestCpTreeGCT(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "none"))
	root := gct.Dir(t)
	addr := gct.Start(t, root)
	url := func(p string) string { return "ftp://" + addr + root + p }
	src := filepath.Join(t.TempDir(), "src")
	// GCT's server drops the non-ASCII bytes of names (ñandú becomes
	// "and"), so this tree keeps to ASCII.
	makeTree(t, src)
	writeFile(t, filepath.Join(src, "sub", "zero"), "")

	ferry(t, "cp", "-q", "-r", "-cc", "2", src, url("/up"))
	sameTree(t, filepath.Join(root, "up"), src)
	down := filepath.Join(t.TempDir(), "down")
	ferry(t, "cp", "-q", "-r", "-p", "2", url("/up/"), down)
	sameTree(t, down, src)
	ferry(t, "cp", "-q", "-r", url("/up"), url("/tp"))
	sameTree(t, filepath.Join(root, "tp"), src)

	recs, r := jsonRun(t, "sync", "-json", src, url("/up"))
	if s := summaryOf(t, recs); r.code != 0 || s.Files != 0 || s.Skipped != 6 {
		t.Errorf("sync against GCT changed something: %+v\n%v", s, r)
	}
	recs, r = jsonRun(t, "sync", "-json", "-sync-level", "3", url("/up"), down)
	if s := summaryOf(t, recs); r.code != 0 || s.Files != 0 || s.Skipped != 6 {
		t.Errorf("sync -sync-level 3 from GCT: %+v\n%v", s, r)
	}

	// Symbolic links: GCT's MLSD reports them with UNIX.slink.
	ln := filepath.Join(t.TempDir(), "links")
	writeFile(t, filepath.Join(ln, "target.txt"), "target\n")
	os.Symlink("target.txt", filepath.Join(ln, "link"))
	ferry(t, "cp", "-q", "-r", "-links", "copy", ln, url("/links"))
	// GCT stores the target resolved to an absolute path.
	if got, err := os.Readlink(filepath.Join(root, "links", "link")); err != nil || filepath.Base(got) != "target.txt" {
		t.Errorf("-links copy to GCT: %q, %v", got, err)
	}
	ferry(t, "cp", "-q", "-r", "-links", "ignore", url("/links/"), filepath.Join(t.TempDir(), "nolinks"))
}

// TestCpTreeBadInput: unreadable files and directories, a name with a
// line break, a destination that fills up, a source growing while it is
// read. Each is reported with its reason, the rest is copied, and a
// second run finishes the job.
func TestCpTreeBadInput(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "none"))
	src := filepath.Join(t.TempDir(), "src")
	makeRichTree(t, src)
	writeFile(t, filepath.Join(src, "bad\nname.txt"), "a line break\n")
	writeFile(t, filepath.Join(src, "locked.txt"), "no access\n")
	os.MkdirAll(filepath.Join(src, "locked-dir"), 0o755)
	writeFile(t, filepath.Join(src, "locked-dir", "in.txt"), "inside\n")
	root := t.TempDir()
	srv := startFerry(t, root)

	// Run as nobody so that permissions bite even though tests run as root.
	uploader := func(args ...string) result {
		cmd := []string{"-u", "nobody", "--", "env", "NETRC=/nonexistent", "HOME=/nonexistent", ferryBin}
		return run(t, "", "", "runuser", append(cmd, args...)...)
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (runuser to nobody)")
	}
	os.Chmod(filepath.Dir(src), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(src)), 0o755)
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			os.Chmod(p, fi.Mode().Perm()|0o555)
		}
		return nil
	})
	os.Chmod(filepath.Join(src, "locked.txt"), 0)
	os.Chmod(filepath.Join(src, "locked-dir"), 0)
	r := uploader("cp", "-r", src, srv.url("/up"))
	if r.code != 1 {
		t.Fatalf("upload with bad input: %v", r)
	}
	for _, want := range []string{"line break", "locked.txt: open", "permission denied", "locked-dir"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "10 files") {
		t.Errorf("the rest was not copied:\n%s", r.stderr)
	}
	os.Chmod(filepath.Join(src, "locked.txt"), 0o644)
	os.Chmod(filepath.Join(src, "locked-dir"), 0o755)
	os.Remove(filepath.Join(src, "bad\nname.txt"))
	r = uploader("cp", "-r", "-sync", src+"/", srv.url("/up"))
	if r.code != 0 || !strings.Contains(r.stderr, "2 files") {
		t.Fatalf("re-run: %v", r)
	}
	sameTree(t, filepath.Join(root, "up"), src)

	t.Run("destination-full", func(t *testing.T) {
		mnt := t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount tmpfs: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
		big := filepath.Join(t.TempDir(), "big")
		os.MkdirAll(big, 0o755)
		for i := range 3 {
			writeRandom(t, filepath.Join(big, fmt.Sprintf("part%d.bin", i)), 400<<10, uint64(i))
		}
		ferry(t, "cp", "-q", "-r", big, srv.url("/big"))
		dst := filepath.Join(mnt, "got")
		r := run(t, "", "", ferryBin, "cp", "-r", "-cc", "1", srv.url("/big"), dst)
		if r.code != 1 || !strings.Contains(r.stderr, "no space left on device") || !strings.Contains(r.stderr, "2 files") {
			t.Fatalf("full destination: %v", r)
		}
		// No partial file is left looking complete.
		entries, _ := os.ReadDir(dst)
		if len(entries) != 2 {
			t.Errorf("destination holds %d files, want the 2 complete ones", len(entries))
		}
		exec.Command("mount", "-o", "remount,size=4m", mnt).Run()
		ferry(t, "cp", "-q", "-r", "-sync", srv.url("/big/"), dst)
		sameTree(t, dst, big)
	})

	t.Run("source-grows", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "grow")
		os.MkdirAll(dir, 0o755)
		writeRandom(t, filepath.Join(dir, "growing.bin"), 64<<20, 7)
		writeFile(t, filepath.Join(dir, "steady.txt"), "steady\n")
		f, err := os.OpenFile(filepath.Join(dir, "growing.bin"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command(ferryBin, "cp", "-r", "-cc", "1", dir, srv.url("/grow"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Append while the copy runs; the first write may come late, so
		// keep going until ferry exits (bounded by cmdTimeout).
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.After(cmdTimeout)
	loop:
		for {
			select {
			case err = <-done:
				break loop
			case <-deadline:
				cmd.Process.Kill()
				t.Fatal("ferry cp did not end")
			default:
				f.Write([]byte("more\n"))
				time.Sleep(time.Millisecond)
			}
		}
		if err == nil || !strings.Contains(stderr.String(), "changed while it was copied") || !strings.Contains(stderr.String(), "1 file,") {
			t.Errorf("growing source: %v\n%s", err, stderr.String())
		}
	})
}

// TestCpLargeSparse moves more than 4 GiB in MODE E (offsets past 32
// bits) from a server's null storage, and compares the sizes of sparse
// files of more than 4 GiB (data at both ends) with -sync without
// moving them.
func TestCpLargeSparse(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "none"))
	const size = 4<<30 + 12345
	null := startFerry(t, t.TempDir(), "-storage", "null", "-anonymous-write")
	recs, r := jsonRun(t, "cp", "-json", "-p", "4", null.url("/4100M"), os.DevNull)
	if s := summaryOf(t, recs); r.code != 0 || s.Bytes != 4100<<20 {
		t.Fatalf("4100M download: %+v\n%v", s, r)
	}
	sparse := func(name string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(name), 0o755)
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("head")
		f.WriteAt([]byte("tail"), size-4)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	srv := startFerry(t, root)
	sparse(filepath.Join(root, "d", "big.bin"))
	local := filepath.Join(t.TempDir(), "mirror")
	sparse(filepath.Join(local, "big.bin"))
	out := ferry(t, "cp", "-r", "-dry-run", srv.url("/d"), filepath.Join(t.TempDir(), "x"))
	if !strings.Contains(out, fmt.Sprintf("(%d bytes)", int64(size))) {
		t.Errorf("dry run shows no size %d:\n%s", int64(size), out)
	}
	recs, r = jsonRun(t, "sync", "-json", "-sync-level", "1", srv.url("/d"), local)
	if s := summaryOf(t, recs); r.code != 0 || s.Skipped != 1 || s.Files != 0 {
		t.Errorf("sync of equal 4 GiB files: %+v\n%v", s, r)
	}
}
