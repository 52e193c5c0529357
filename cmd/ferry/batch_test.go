package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/server"
)

// failingFS fails the reads of one file while fails is positive (each
// open that fails counts down): the server has already answered the
// RETR with 150 when the read fails, which breaks a pipelined batch.
type failingFS struct {
	dsi.Storage
	name  string
	fails *atomic.Int32
}

func (s failingFS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	r, err := s.Storage.Open(ctx, name)
	if err != nil || !strings.HasSuffix(name, s.name) || s.fails.Add(-1) < 0 {
		return r, err
	}
	return failingReader{r}, nil
}

type failingReader struct{ dsi.Reader }

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, errors.New("injected read error") }

// TestCpBatchBreaks downloads a tree whose batch breaks in the middle (a
// read error on the server after the transfer started): without -rst the
// broken file is reported and the files after it in the batch, which
// never started, are fetched again on a new connection; with -rst the
// broken file is retried too. Every file is reported once (-json), and
// no temporary file is left.
func TestCpBatchBreaks(t *testing.T) {
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	dir := t.TempDir()
	const n = 60
	for i := range n {
		name := filepath.Join(dir, "tree", fmt.Sprintf("f%03d", i))
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, seededData(1000+i*37, byte(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fails atomic.Int32
	srv, err := server.New(server.Config{Storage: failingFS{fs, "/f040", &fails}, Anonymous: true})
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
	url := "ftp://" + l.Addr().String() + "/tree/"

	check := func(dst string, except string) {
		t.Helper()
		for i := range n {
			name := fmt.Sprintf("f%03d", i)
			got, err := os.ReadFile(filepath.Join(dst, name))
			if name == except {
				if err == nil {
					t.Errorf("%s arrived although it failed", name)
				}
				continue
			}
			if !bytes.Equal(got, seededData(1000+i*37, byte(i))) {
				t.Errorf("%s: %d bytes, %v", name, len(got), err)
			}
		}
		assertNoTemp(t, dst)
	}

	fails.Store(1)
	dst := filepath.Join(t.TempDir(), "a")
	r := ferry(t, nil, "cp", "-r", "-cc", "1", "-json", url, dst)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	files := map[string]int{}
	var failed []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec struct {
			Type, Src, Error string
			OK               bool
			Files            int
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("bad JSON %q: %v", line, err)
		}
		switch rec.Type {
		case "file":
			files[rec.Src]++
			if !rec.OK {
				failed = append(failed, rec.Src+": "+rec.Error)
			}
		case "summary":
			if rec.Files != n-1 {
				t.Errorf("summary: %d files, want %d", rec.Files, n-1)
			}
		}
	}
	if len(files) != n {
		t.Errorf("%d files reported, want %d", len(files), n)
	}
	for src, k := range files {
		if k != 1 {
			t.Errorf("%s reported %d times", src, k)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "f040") || !strings.Contains(failed[0], "451") {
		t.Errorf("failures %q, want f040's 451", failed)
	}
	check(dst, "f040")

	// With -rst the broken file is tried again and arrives.
	fails.Store(1)
	dst = filepath.Join(t.TempDir(), "b")
	ok(t, "cp", "-q", "-r", "-cc", "1", "-rst", "-rst-interval", "10ms", url, dst)
	check(dst, "")
	if fails.Load() >= 0 {
		t.Errorf("the read error was never injected")
	}
}
