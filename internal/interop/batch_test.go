package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// batchTree writes n small files under root, in d0..d3, world-readable.
func batchTree(t testing.TB, root string, n int) {
	t.Helper()
	for i := range n {
		name := filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%03d", i))
		os.MkdirAll(filepath.Dir(name), 0o755)
		writeRandom(t, name, int64(i*97%5000), uint64(i))
	}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			os.Chmod(p, fi.Mode().Perm()|0o755)
		}
		return nil
	})
}

// asNobody runs ferry as user nobody, so that file permissions bite
// although the tests run as root.
func asNobody(t *testing.T, args ...string) result {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (runuser to nobody)")
	}
	cmd := []string{"-u", "nobody", "--", "env", "NETRC=/nonexistent", "HOME=/nonexistent", ferryBin}
	return run(t, "", "", "runuser", append(cmd, args...)...)
}

// openDirs makes root and everything below it writable by everyone.
func openDirs(t testing.TB, root string) {
	t.Helper()
	for d := root; d != "/" && d != "."; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, fi.Mode().Perm()|0o755)
	}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			os.Chmod(p, 0o777)
		}
		return nil
	})
}

// checkBatchFailure checks a job's result: exit code 1, bad (a path
// fragment) among the failures and in the -df file, every other file
// of want in got.
func checkBatchFailure(t *testing.T, r result, df, bad string, files int) {
	t.Helper()
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("%d files", files-1)) || !strings.Contains(r.stderr, "1 FAILED") {
		t.Fatalf("want %d files and 1 failure: %v", files-1, r)
	}
	if !strings.Contains(r.stderr, "failed: ") || !strings.Contains(r.stderr, bad) {
		t.Errorf("the failure does not name %s:\n%s", bad, r.stderr)
	}
	b, err := os.ReadFile(df)
	if err != nil || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), bad) {
		t.Errorf("-df file %q, %v; want one line for %s", b, err, bad)
	}
}

// sameExcept compares two trees like sameTree, leaving out one file.
func sameExcept(t *testing.T, got, want, except string) {
	t.Helper()
	g, w := treeOf(t, got), treeOf(t, want)
	delete(w, except)
	delete(g, except)
	if len(g) != len(w) {
		t.Fatalf("%s has %d entries, want %d", got, len(g), len(w))
	}
	for k, v := range w {
		if g[k] != v {
			t.Errorf("%s: got %q, want %q", k, g[k], v)
		}
	}
}

// TestCpBatchesFerry runs pipelined batches (the default of ferry cp -r)
// against ferry serve with a file in the middle of a batch that cannot
// be read (upload) or written (download): the others arrive, the
// failure is reported and dumped (-df), and the re-run from the dump
// file completes. The server's log shows the batches: a few data
// channel set-ups for all the files.
func TestCpBatchesFerry(t *testing.T) {
	const n = 120
	base := t.TempDir()
	openDirs(t, base)
	src := filepath.Join(base, "src")
	batchTree(t, src, n)
	root := filepath.Join(base, "root")
	os.Mkdir(root, 0o777)
	srv := startFerry(t, root, "-anonymous-write", "-log-level", "debug")
	df := filepath.Join(base, "failed.txt")

	// Upload: one source file unreadable for nobody.
	const bad = "d2/f062"
	os.Chmod(filepath.Join(src, bad), 0)
	r := asNobody(t, "cp", "-r", "-cc", "2", "-df", df, src, srv.url("/up"))
	checkBatchFailure(t, r, df, bad, n)
	os.Chmod(filepath.Join(src, bad), 0o644)
	sameExcept(t, filepath.Join(root, "up"), src, bad)
	if r := asNobody(t, "cp", "-r", "-cc", "2", "-df", df, src, srv.url("/up")); r.code != 0 || !strings.Contains(r.stderr, "1 file,") {
		t.Fatalf("re-run from the -df file: %v", r)
	}
	if _, err := os.Stat(df); !os.IsNotExist(err) {
		t.Errorf("-df file left after success: %v", err)
	}
	sameTree(t, filepath.Join(root, "up"), src)
	log := srv.log.String()
	if stor, pasv := strings.Count(log, `cmd="STOR `), strings.Count(log, `cmd=PASV`)+strings.Count(log, `cmd=EPSV`); stor != n || pasv > 20 {
		t.Errorf("server saw %d STOR and %d passive set-ups; want %d and a few (batches)", stor, pasv, n)
	}

	// Download: one destination directory not writable for nobody.
	down := filepath.Join(base, "down")
	for _, d := range []string{"d0", "d1", "d2", "d3"} {
		os.MkdirAll(filepath.Join(down, d), 0o777)
		os.Chmod(filepath.Join(down, d), 0o777)
	}
	os.Chmod(down, 0o777)
	// A file in a read-only directory fails to open; make it the only one.
	os.Mkdir(filepath.Join(down, "d1a"), 0o555)
	writeFile(t, filepath.Join(root, "up", "d1a", "x"), "read-only destination\n")
	os.Chmod(filepath.Join(root, "up", "d1a"), 0o755)
	r = asNobody(t, "cp", "-r", "-cc", "2", "-df", df, srv.url("/up/"), down)
	checkBatchFailure(t, r, df, "d1a/x", n+1)
	sameExcept(t, down, filepath.Join(root, "up"), "d1a/x")
	if entries, _ := os.ReadDir(filepath.Join(down, "d1a")); len(entries) != 0 {
		t.Errorf("read-only directory holds %v", entries)
	}
	os.Chmod(filepath.Join(down, "d1a"), 0o777)
	if r := asNobody(t, "cp", "-r", "-df", df, srv.url("/up/"), down); r.code != 0 || !strings.Contains(r.stderr, "1 file,") {
		t.Fatalf("re-run from the -df file: %v", r)
	}
	sameTree(t, down, filepath.Join(root, "up"))
	log = srv.log.String()
	if retr, port := strings.Count(log, `cmd="RETR `), strings.Count(log, `cmd="PORT `)+strings.Count(log, `cmd="EPRT `); retr < n || port > 20 {
		t.Errorf("server saw %d RETR and %d active set-ups; want %d and a few (batches)", retr, port, n+2)
	}

	// -pp=false: every file on its own, same result.
	one := filepath.Join(base, "one")
	ferry(t, "cp", "-q", "-r", "-pp=false", srv.url("/up/"), one)
	sameTree(t, one, filepath.Join(root, "up"))
}

// TestCpBatchesGCT runs the pipelined batches against GCT's server, whose
// sessions run as nobody: a file it cannot read, and a directory it cannot
// write, in the middle of the batches; the rest arrives and a re-run
// completes.
func TestCpBatchesGCT(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "none"))
	const n = 120
	root := gct.Dir(t)
	src := filepath.Join(root, "src")
	batchTree(t, src, n)
	addr := gct.Start(t, root)
	url := func(p string) string { return "ftp://" + addr + root + p }
	df := filepath.Join(t.TempDir(), "failed.txt")

	const bad = "d1/f061"
	os.Chmod(filepath.Join(src, bad), 0)
	down := filepath.Join(t.TempDir(), "down")
	r := run(t, "", "", ferryBin, "cp", "-r", "-cc", "2", "-df", df, url("/src/"), down)
	checkBatchFailure(t, r, df, bad, n)
	sameExcept(t, down, src, bad)
	if _, err := os.Stat(filepath.Join(down, bad)); !os.IsNotExist(err) {
		t.Errorf("the unreadable file left %v", err)
	}
	os.Chmod(filepath.Join(src, bad), 0o644)
	if r := run(t, "", "", ferryBin, "cp", "-r", "-df", df, url("/src/"), down); r.code != 0 || !strings.Contains(r.stderr, "1 file,") {
		t.Fatalf("re-run from the -df file: %v", r)
	}
	sameTree(t, down, src)

	// Upload into a tree where one directory is read-only for nobody.
	up := filepath.Join(root, "up")
	for _, d := range []string{"d0", "d1", "d2", "d3"} {
		os.MkdirAll(filepath.Join(up, d), 0o777)
		os.Chmod(filepath.Join(up, d), 0o777)
	}
	os.Chmod(up, 0o777)
	os.Chmod(filepath.Join(up, "d3"), 0o555)
	r = run(t, "", "", ferryBin, "cp", "-r", "-cc", "2", down+"/", url("/up/"))
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("%d files", n-n/4)) || !strings.Contains(r.stderr, fmt.Sprintf("%d FAILED", n/4)) {
		t.Fatalf("upload with a read-only directory: %v", r)
	}
	os.Chmod(filepath.Join(up, "d3"), 0o777)
	if r := run(t, "", "", ferryBin, "sync", "-cc", "2", down+"/", url("/up/")); r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("%d files", n/4)) {
		t.Fatalf("sync after the failures: %v", r)
	}
	sameTree(t, up, src)
}
