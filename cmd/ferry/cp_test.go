package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// gctServer is a GCT server for the client subcommands: dir is the served
// directory and url the ftp:// URL of that directory (no trailing slash).
type gctServer struct {
	dir, url string
}

// startGCT starts a GCT server and hides the user's ~/.netrc.
func startGCT(t *testing.T) gctServer {
	t.Helper()
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	return gctServer{dir: dir, url: "ftp://" + addr + dir}
}

// result is what a subcommand run in-process did.
type result struct {
	code           int
	stdout, stderr string
}

// ferry runs a subcommand in-process with stdin as its standard input.
func ferry(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := runMain(ctx, &env{stdin: bytes.NewReader(stdin), stdout: &out, stderr: &errOut}, args)
	return result{code, out.String(), errOut.String()}
}

// ok runs a subcommand that must succeed.
func ok(t *testing.T, args ...string) result {
	t.Helper()
	r := ferry(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("ferry %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

func randomData(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeServed writes a file the server (running as nobody) can read.
func writeServed(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		t.Fatal(err)
	}
}

// mkdirServed makes a directory the server (running as nobody) can write.
func mkdirServed(t *testing.T, name string) {
	t.Helper()
	if err := os.Mkdir(name, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o777); err != nil {
		t.Fatal(err)
	}
}

func TestCpUploadDownload(t *testing.T) {
	s := startGCT(t)
	local := t.TempDir()
	data := randomData(t, 10<<20)
	src := filepath.Join(local, "big.bin")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}

	// Upload, silently.
	if r := ok(t, "cp", src, s.url+"/big.bin"); r.stdout != "" || r.stderr != "" {
		t.Errorf("cp printed %q, %q", r.stdout, r.stderr)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "big.bin")), data) {
		t.Fatal("uploaded file differs")
	}
	// Upload into a directory URL: the base name is appended.
	mkdirServed(t, filepath.Join(s.dir, "in"))
	ok(t, "cp", "file://"+src, s.url+"/in/")
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "in", "big.bin")), data) {
		t.Fatal("file uploaded into a directory differs")
	}

	// Download to a new file, with -v and in active mode.
	dst := filepath.Join(local, "down.bin")
	r := ok(t, "cp", "-v", "-active", s.url+"/big.bin", dst)
	if !strings.Contains(r.stderr, "10485760 bytes") {
		t.Errorf("-v printed %q", r.stderr)
	}
	if !bytes.Equal(mustRead(t, dst), data) {
		t.Fatal("downloaded file differs")
	}
	// -q silences -v.
	if r := ok(t, "cp", "-v", "-q", s.url+"/big.bin", dst); r.stderr != "" {
		t.Errorf("-q -v printed %q", r.stderr)
	}

	// Download into an existing directory.
	sub := filepath.Join(local, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	ok(t, "cp", s.url+"/big.bin", sub)
	if !bytes.Equal(mustRead(t, filepath.Join(sub, "big.bin")), data) {
		t.Fatal("file downloaded into a directory differs")
	}

	// Over an existing file: replaced whole, its mode kept, no temporary
	// file left behind.
	small := []byte("small")
	writeServed(t, filepath.Join(s.dir, "small"), small)
	if err := os.WriteFile(dst, []byte("old content that is longer"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, 0o640); err != nil {
		t.Fatal(err)
	}
	ok(t, "cp", s.url+"/small", dst)
	if got := mustRead(t, dst); !bytes.Equal(got, small) {
		t.Errorf("replaced file = %q", got)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("replaced file mode %v, %v; want 0640", fi.Mode(), err)
	}
	assertNoTemp(t, local)

	// Empty file.
	writeServed(t, filepath.Join(s.dir, "empty"), nil)
	ok(t, "cp", s.url+"/empty", filepath.Join(local, "empty"))
	if fi, err := os.Stat(filepath.Join(local, "empty")); err != nil || fi.Size() != 0 {
		t.Errorf("empty download: %v, %v", fi, err)
	}
}

// assertNoTemp fails if dir holds one of cp's temporary files.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".ferry-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestCpFailures(t *testing.T) {
	s := startGCT(t)
	local := t.TempDir()

	// A missing source: exit 1, the server's reply in the message (to
	// SIZE, 550, or to RETR, 500), and no file created.
	dst := filepath.Join(local, "new")
	r := ferry(t, nil, "cp", s.url+"/missing", dst)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "ferry cp: download "+s.url+"/missing: 5") {
		t.Errorf("missing source: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a failed download left %s: %v", dst, err)
	}
	// An existing destination stays untouched.
	if err := os.WriteFile(dst, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := ferry(t, nil, "cp", s.url+"/missing", dst); r.code != 1 {
		t.Errorf("missing source: exit %d", r.code)
	}
	if got := mustRead(t, dst); string(got) != "keep" {
		t.Errorf("existing destination became %q", got)
	}
	assertNoTemp(t, local)

	// A directory as the source.
	if r := ferry(t, nil, "cp", local, s.url+"/x"); r.code != 1 || !strings.Contains(r.stderr, "is a directory") {
		t.Errorf("local directory as source: exit %d, stderr %q", r.code, r.stderr)
	}
	// Uploading where the server may not write.
	if r := ferry(t, []byte("x"), "cp", "-", s.url+"/nonexistent-dir/f"); r.code != 1 || !strings.HasPrefix(r.stderr, "ferry cp: upload to ") {
		t.Errorf("upload to a missing directory: exit %d, stderr %q", r.code, r.stderr)
	}
	// No server.
	if r := ferry(t, nil, "cp", "ftp://127.0.0.1:1/x", dst); r.code != 1 || !strings.Contains(r.stderr, "connect to 127.0.0.1:1") {
		t.Errorf("no server: exit %d, stderr %q", r.code, r.stderr)
	}

	// Usage errors exit 2.
	for _, args := range [][]string{
		{"cp", "onlyone"},
		{"cp", "gopher://h/x", "y"},
		{"cp", "-nodcau", "-dcsafe", "gsiftp://h/x", "y"},
		{"cp", "-len", "0", "a", "b"},
		{"cp", "-off", "-1", "a", "b"},
		{"cp", "-nosuchflag", "a", "b"},
		{"cp", "-", local},
	} {
		if r := ferry(t, nil, args...); r.code != 2 {
			t.Errorf("ferry %v: exit %d (stderr %q), want 2", args, r.code, r.stderr)
		}
	}
	if r := ferry(t, nil, "cp", "gopher://h/x", "y"); !strings.Contains(r.stderr, "gsiftp://") {
		t.Errorf("unsupported scheme message: %q", r.stderr)
	}
	if r := ferry(t, nil, "cp", "-h"); r.code != 0 || !strings.Contains(r.stdout, "third-party") {
		t.Errorf("cp -h: exit %d, %q", r.code, r.stdout)
	}
}

func TestCpStreamsAndPartial(t *testing.T) {
	s := startGCT(t)
	local := t.TempDir()
	data := randomData(t, 100_000)

	// stdin → server → stdout.
	if r := ferry(t, data, "cp", "-", s.url+"/piped"); r.code != 0 {
		t.Fatalf("stdin upload: %d %q", r.code, r.stderr)
	}
	r := ok(t, "cp", s.url+"/piped", "-")
	if r.stdout != string(data) {
		t.Fatalf("stdout download: %d bytes, want %d", len(r.stdout), len(data))
	}

	// Server to server, through the client (-notpt), with -active.
	ok(t, "cp", "-notpt", "-active", s.url+"/piped", s.url+"/copied")
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "copied")), data) {
		t.Fatal("server-to-server copy differs")
	}
	// A failing source fails the copy and names the source.
	if r := ferry(t, nil, "cp", "-notpt", s.url+"/missing", s.url+"/copy2"); r.code != 1 || !strings.Contains(r.stderr, "download "+s.url+"/missing") {
		t.Errorf("server-to-server from a missing file: exit %d, stderr %q", r.code, r.stderr)
	}
	// Third party (the default), and its failure naming both ends.
	ok(t, "cp", s.url+"/piped", s.url+"/copied3")
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "copied3")), data) {
		t.Fatal("third-party copy differs")
	}
	if r := ferry(t, nil, "cp", s.url+"/missing", s.url+"/copy3"); r.code != 1 || !strings.Contains(r.stderr, "third-party copy "+s.url+"/missing") {
		t.Errorf("third party from a missing file: exit %d, stderr %q", r.code, r.stderr)
	}

	// Partial download: the bytes land at the same offset.
	part := filepath.Join(local, "part")
	ok(t, "cp", "-off", "1000", "-len", "5000", s.url+"/piped", part)
	got := mustRead(t, part)
	if len(got) != 6000 || !bytes.Equal(got[1000:], data[1000:6000]) {
		t.Errorf("partial download: %d bytes", len(got))
	}
	// Partial download to stdout: just the bytes.
	if r := ok(t, "cp", "-off", "10", "-len", "20", s.url+"/piped", "-"); r.stdout != string(data[10:30]) {
		t.Errorf("partial download to stdout: %d bytes", len(r.stdout))
	}
	// Partial upload: written at the offset, the rest of the file kept.
	src := filepath.Join(local, "src")
	patch := randomData(t, 100_000)
	if err := os.WriteFile(src, patch, 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, "cp", "-off", "2000", "-len", "300", src, s.url+"/piped")
	want := bytes.Clone(data)
	copy(want[2000:2300], patch[2000:2300])
	if !bytes.Equal(mustRead(t, filepath.Join(s.dir, "piped")), want) {
		t.Error("partial upload: unexpected server file")
	}

	// Local to local.
	ok(t, "cp", src, filepath.Join(local, "copy"))
	if !bytes.Equal(mustRead(t, filepath.Join(local, "copy")), patch) {
		t.Error("local copy differs")
	}
}
