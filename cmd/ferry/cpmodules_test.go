package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/server"
)

// startModuleSrv starts a Ferry server on a new directory that allows
// the processing modules allowed; it returns the directory and the
// server's ftp:// URL (no path).
func startModuleSrv(t *testing.T, allowed ...string) (dir, url string) {
	t.Helper()
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	dir = t.TempDir()
	fs, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Storage: fs, Anonymous: true, AnonymousWrite: true, AllowedModules: allowed})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(l) })
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return dir, "ftp://" + l.Addr().String()
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("bad gzip: %v", err)
	}
	return out
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tarEntries lists a tar stream's names and the contents of its files.
func tarEntries(t *testing.T, b []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return m
		}
		if err != nil {
			t.Fatalf("bad tar: %v", err)
		}
		data, _ := io.ReadAll(tr)
		m[h.Name] = string(data)
	}
}

// TestCpModules: ferry cp -src-module and -dst-module round trips
// against a Ferry server, in stream mode and MODE E, downloads, uploads
// and third-party copies; gzip and tar.
func TestCpModules(t *testing.T) {
	dir, url := startModuleSrv(t, "gzip", "tar", "zstd")
	local := t.TempDir()
	data := bytes.Repeat(randomData(t, 1<<10), 2560) // compressible (gzip window), 2.5 MiB
	writeServed(t, filepath.Join(dir, "data.bin"), data)
	mkdirServed(t, filepath.Join(dir, "tree"))
	mkdirServed(t, filepath.Join(dir, "tree", "sub"))
	writeServed(t, filepath.Join(dir, "tree", "a.txt"), []byte("alpha"))
	writeServed(t, filepath.Join(dir, "tree", "sub", "b.txt"), []byte("beta"))

	for _, p := range []string{"1", "4"} {
		// Download compressed by the server.
		gz := filepath.Join(local, "data.gz."+p)
		ok(t, "cp", "-p", p, "-src-module", "gzip=9", url+"/data.bin", gz)
		got := mustRead(t, gz)
		if len(got) >= len(data) {
			t.Errorf("-p %s: the gzip download has %d bytes for %d", p, len(got), len(data))
		}
		if !bytes.Equal(gunzip(t, got), data) {
			t.Errorf("-p %s: -src-module gzip: the download is not the file, compressed", p)
		}
		// Upload it back, decompressed by the server.
		ok(t, "cp", "-p", p, "-dst-module", "gzip", gz, url+"/back."+p)
		if !bytes.Equal(mustRead(t, filepath.Join(dir, "back."+p)), data) {
			t.Errorf("-p %s: -dst-module gzip: the server stored other bytes", p)
		}
	}
	assertNoTemp(t, local)

	// A directory as one tar, and a tar unpacked into a new directory.
	tarFile := filepath.Join(local, "tree.tar")
	ok(t, "cp", "-src-module", "tar", url+"/tree", tarFile)
	ents := tarEntries(t, mustRead(t, tarFile))
	if ents["a.txt"] != "alpha" || ents["sub/b.txt"] != "beta" {
		t.Errorf("-src-module tar: entries %q", ents)
	}
	ok(t, "cp", "-dst-module", "tar", tarFile, url+"/unpacked")
	for name, want := range map[string]string{"a.txt": "alpha", "sub/b.txt": "beta"} {
		if got := mustRead(t, filepath.Join(dir, "unpacked", name)); string(got) != want {
			t.Errorf("-dst-module tar: unpacked/%s = %q", name, got)
		}
	}

	// Third party: a chain on each side (tar then zstd, undone on the
	// destination), and gzip on the source only.
	ok(t, "cp", "-p", "2", "-src-module", "tar,zstd=|5", "-dst-module", "tar,zstd", url+"/tree", url+"/tree-copy")
	if got := mustRead(t, filepath.Join(dir, "tree-copy", "sub", "b.txt")); string(got) != "beta" {
		t.Errorf("third-party tar,zstd: tree-copy/sub/b.txt = %q", got)
	}
	ok(t, "cp", "-src-module", "gzip", url+"/data.bin", url+"/data.gz")
	if !bytes.Equal(gunzip(t, mustRead(t, filepath.Join(dir, "data.gz"))), data) {
		t.Error("third-party -src-module gzip: the copy is not the file, compressed")
	}
	// Through the client (-notpt), to standard output and from standard input.
	ok(t, "cp", "-notpt", "-src-module", "gzip", "-dst-module", "gzip", url+"/data.bin", url+"/data.notpt")
	if !bytes.Equal(mustRead(t, filepath.Join(dir, "data.notpt")), data) {
		t.Error("-notpt with modules: the copy differs")
	}
	if r := ok(t, "cp", "-src-module", "gzip", url+"/tree/a.txt", "-"); string(gunzip(t, []byte(r.stdout))) != "alpha" {
		t.Errorf("-src-module gzip to stdout: %q", r.stdout)
	}
	if r := ferry(t, gzipped(t, []byte("from stdin")), "cp", "-dst-module", "gzip", "-", url+"/stdin.txt"); r.code != 0 {
		t.Fatalf("-dst-module gzip from stdin: %v", r)
	}
	if got := mustRead(t, filepath.Join(dir, "stdin.txt")); string(got) != "from stdin" {
		t.Errorf("-dst-module gzip from stdin stored %q", got)
	}
}

// TestCpModuleRefused: a module the server does not allow fails the copy
// with the server's reply naming it, exit 1, and leaves no file on
// either side; module flags with options they cannot go with are usage
// errors.
func TestCpModuleRefused(t *testing.T) {
	dir, url := startModuleSrv(t, "gzip")
	local := t.TempDir()
	writeServed(t, filepath.Join(dir, "f"), []byte("file"))

	dst := filepath.Join(local, "f.tar")
	r := ferry(t, nil, "cp", "-src-module", "tar", url+"/f", dst)
	if r.code != 1 || !strings.Contains(r.stderr, "504 ERET module tar is not allowed") {
		t.Errorf("download with a refused module: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a refused module download left %s: %v", dst, err)
	}
	assertNoTemp(t, local)

	src := filepath.Join(local, "up")
	if err := os.WriteFile(src, []byte("up"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = ferry(t, nil, "cp", "-dst-module", "zstd", src, url+"/up")
	if r.code != 1 || !strings.Contains(r.stderr, "504 ESTO module zstd is not allowed") {
		t.Errorf("upload with a refused module: exit %d, stderr %q", r.code, r.stderr)
	}
	// An allowed module refusing the data (not gzip) stores nothing.
	r = ferry(t, nil, "cp", "-dst-module", "gzip", src, url+"/up")
	if r.code != 1 || !strings.Contains(r.stderr, "553") {
		t.Errorf("upload of data gzip refuses: exit %d, stderr %q", r.code, r.stderr)
	}
	r = ferry(t, nil, "cp", "-src-module", "nosuch", url+"/f", url+"/g")
	if r.code != 1 || !strings.Contains(r.stderr, "nosuch is not known") {
		t.Errorf("third party with an unknown module: exit %d, stderr %q", r.code, r.stderr)
	}
	// The destination of the refused third-party copy cleans up when its
	// STOR ends, which may be after the client gave up waiting for it.
	var left []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		left = left[:0]
		for _, e := range ents {
			if e.Name() != "f" {
				left = append(left, e.Name())
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, name := range left {
		t.Errorf("refused copies left %s on the server", name)
	}

	for _, args := range [][]string{
		{"cp", "-src-module", "gzip", "-off", "5", url + "/f", dst},
		{"cp", "-src-module", "gzip", "-len", "5", url + "/f", dst},
		{"cp", "-src-module", "gzip", "-r", url + "/", local},
		{"cp", "-dst-module", "gzip", "-verify-checksum", src, url + "/up"},
		{"cp", "-src-module", "", url + "/f", dst},
		{"cp", "-src-module", `gzip="`, url + "/f", dst},
	} {
		if r := ferry(t, nil, args...); r.code != 2 {
			t.Errorf("ferry %q: exit %d (stderr %q), want 2", args, r.code, r.stderr)
		}
	}
	// A module on a side that is no server.
	if r := ferry(t, nil, "cp", "-src-module", "gzip", src, url+"/x"); r.code != 1 || !strings.Contains(r.stderr, "source module needs a server") {
		t.Errorf("-src-module on a local source: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := ferry(t, nil, "cp", "-h"); !strings.Contains(r.stdout, "-src-module NAME[=PARAMS]") {
		t.Errorf("cp -h says nothing of -src-module: %q", r.stdout)
	}
}
