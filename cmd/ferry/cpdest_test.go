package main

import (
	"bytes"
	"context"
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

// TestCpSingleFileDirs: for a single file, -cd creates the missing
// directories above the destination (MKD on a server, here locally, and
// on the destination of a third-party copy), as globus-url-copy -cd
// does; an existing directory on a server receives the file under its
// own name, as cp(1) does; a server's directory as the source of a copy
// without -r says to use -r. Against Ferry's server and GCT.
func TestCpSingleFileDirs(t *testing.T) {
	run := func(t *testing.T, dir, url string) {
		local := t.TempDir()
		data := randomData(t, 100_000)
		src := filepath.Join(local, "f")
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		check := func(name string) {
			t.Helper()
			if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, data) {
				t.Errorf("%s: %d bytes, %v; want the %d bytes of f", name, len(got), err, len(data))
			}
		}
		ok(t, "cp", "-cd", src, url+"/new/deeper/f")
		check(filepath.Join(dir, "new", "deeper", "f"))
		ok(t, "cp", "-cd", url+"/new/deeper/f", filepath.Join(local, "down", "deeper", "f"))
		check(filepath.Join(local, "down", "deeper", "f"))
		ok(t, "cp", "-cd", url+"/new/deeper/f", url+"/tpt/deeper/f")
		check(filepath.Join(dir, "tpt", "deeper", "f"))
		// A destination URL ending in / is the directory to create.
		ok(t, "cp", "-cd", src, url+"/slash/")
		check(filepath.Join(dir, "slash", "f"))

		// Into an existing directory, named without a trailing slash.
		mkdirServed(t, filepath.Join(dir, "existing"))
		ok(t, "cp", src, url+"/existing")
		check(filepath.Join(dir, "existing", "f"))
		ok(t, "cp", url+"/new/deeper/f", url+"/existing/again")
		mkdirServed(t, filepath.Join(dir, "into"))
		ok(t, "cp", url+"/existing/again", url+"/into")
		check(filepath.Join(dir, "into", "again"))

		// Without -cd a missing directory is still an error.
		if r := ferry(t, nil, "cp", src, url+"/missing/f"); r.code != 1 {
			t.Errorf("upload into a missing directory without -cd: exit %d, %q", r.code, r.stderr)
		}
		// A directory as the source, without -r.
		for _, dst := range []string{filepath.Join(local, "d"), url + "/d"} {
			r := ferry(t, nil, "cp", url+"/new", dst)
			if r.code != 1 || !strings.Contains(r.stderr, "is a directory (use -r)") {
				t.Errorf("cp of a remote directory to %s: exit %d, %q; want a hint to use -r", dst, r.code, r.stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(local, "d")); !os.IsNotExist(err) {
			t.Errorf("the failed download of a directory left %v", err)
		}
	}
	t.Run("ferry", func(t *testing.T) {
		s := startFerrySrv(t)
		run(t, s.dir, s.url)
	})
	t.Run("gct", func(t *testing.T) {
		s := startGCT(t)
		run(t, s.dir, s.url)
	})
}

// TestCpServerShuttingDown: a server that shuts down during a download
// (426, then 421) fails the copy with a message that says so.
func TestCpServerShuttingDown(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	f := &ferrySrv{dir: t.TempDir(), release: make(chan struct{})}
	fs, err := posix.New(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	writeServed(t, filepath.Join(f.dir, "big"), seededData(32<<20, 11))
	for _, args := range [][]string{{"cp"}, {"cp", "-p", "4"}, {"cp", "-rst", "-rst-retries", "1", "-rst-interval", "10ms"}} {
		srv, err := server.New(server.Config{Storage: slowFS{fs, &f.slow, f}, Anonymous: true})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = srv.Serve(l) })
		f.slow.Store(true)
		var r result
		wg.Go(func() {
			r = ferry(t, nil, append(args, "ftp://"+l.Addr().String()+"/big", filepath.Join(t.TempDir(), "big"))...)
		})
		time.Sleep(300 * time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		srv.Shutdown(ctx)
		cancel()
		wg.Wait()
		srv.Close()
		t.Logf("%v: %q", args, r.stderr)
		if r.code != 1 || !strings.Contains(r.stderr, "shutting down") {
			t.Errorf("%v: exit %d, %q; want the server's shutdown named", args, r.code, r.stderr)
		}
	}
}

// TestCpTreeIntoUnmakeableDir copies a tree into a directory the server
// refuses to create: the summary names that failure once, counts the
// files below it, and lists no failure per directory under it.
func TestCpTreeIntoUnmakeableDir(t *testing.T) {
	s := startGCT(t)
	local := t.TempDir()
	src := filepath.Join(local, "tree")
	for _, d := range []string{"a/b/c", "a/x", "y"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, d, "f"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// GCT runs as nobody: a root-owned directory it may not write in.
	ro := filepath.Join(s.dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	r := ferry(t, nil, "cp", "-r", src+"/", s.url+"/ro/dst/")
	if r.code != 1 {
		t.Fatalf("exit %d, %q", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "failed: "); n != 1 {
		t.Errorf("%d failures listed, want 1 (the directory that could not be made): %q", n, r.stderr)
	}
	if !strings.Contains(r.stderr, "not copied: 3 files below "+s.url+"/ro/dst") {
		t.Errorf("the files below are not counted once: %q", r.stderr)
	}
	if !strings.Contains(r.stderr, "0 files, 0 B") {
		t.Errorf("summary: %q", r.stderr)
	}
}
