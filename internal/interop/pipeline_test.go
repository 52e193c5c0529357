package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// smallTree writes n small files (0 B to 20 KB) spread over a few
// directories under root.
func smallTree(t testing.TB, root string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, uint64(n)))
	for i := range n {
		name := filepath.Join(root, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%03d", i))
		if i%9 == 0 {
			name = filepath.Join(root, fmt.Sprintf("f%03d", i))
		}
		b := make([]byte, r.IntN(20<<10))
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGlobusURLCopyPipelined copies a tree of small files with
// globus-url-copy's many-files options (-cc 4 -pp -fast -r) from and to
// ferry serve: several sessions, cached MODE E data connections.
func TestGlobusURLCopyPipelined(t *testing.T) {
	root := t.TempDir()
	smallTree(t, filepath.Join(root, "tree"), 120)
	srv := startFerry(t, root, "-anonymous-write", "-log-level", "debug")
	down := filepath.Join(t.TempDir(), "down")
	flags := []string{"-cc", "4", "-pp", "-fast", "-r", "-cd"}
	mustRun(t, "", "", "globus-url-copy", append(slices.Clone(flags), srv.url("/tree/"), "file://"+down+"/")...)
	sameTree(t, down, filepath.Join(root, "tree"))
	mustRun(t, "", "", "globus-url-copy", append(slices.Clone(flags), "file://"+down+"/", srv.url("/up/"))...)
	sameTree(t, filepath.Join(root, "up"), filepath.Join(root, "tree"))
	// -fast: one data channel per session, reused for every file.
	log := srv.log.String()
	retr, stor := strings.Count(log, `cmd="RETR `), strings.Count(log, `cmd="STOR `)
	channels := strings.Count(log, `cmd="PORT `) + strings.Count(log, `cmd="EPRT `) + strings.Count(log, `cmd=PASV`) + strings.Count(log, `cmd=EPSV`)
	if retr != 120 || stor != 120 || channels > 16 {
		t.Errorf("server saw %d RETR, %d STOR and %d data channel set-ups; want 120, 120 and a few", retr, stor, channels)
	}
}

// TestBatchesGCT runs client.GetFiles and PutFiles against GCT's server:
// 200 files in one batch each way, one missing (download) or refused
// (upload) in the middle; that file gets the server's error and every
// other file arrives intact.
func TestBatchesGCT(t *testing.T) {
	root := gct.Dir(t)
	src := filepath.Join(root, "src")
	smallTree(t, src, 200)
	var names []string
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o777)
		}
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(src, p)
			names = append(names, rel)
		}
		return nil
	})
	if len(names) != 200 {
		t.Fatalf("%d files in the tree", len(names))
	}
	const bad = 100
	if err := os.Remove(filepath.Join(src, names[bad])); err != nil {
		t.Fatal(err)
	}
	addr := gct.Start(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ctx, "anonymous", "ferry@"); err != nil {
		t.Fatal(err)
	}

	local := t.TempDir()
	gets := make([]client.Get, len(names))
	for i, n := range names {
		gets[i] = client.Get{Path: filepath.Join(src, n), Open: func() (io.WriterAt, error) {
			dst := filepath.Join(local, n)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
			return os.Create(dst)
		}}
	}
	for i, err := range c.GetFiles(ctx, gets, nil) {
		if i == bad {
			var re *client.ReplyError
			if !errors.As(err, &re) {
				t.Errorf("missing file: err %v, want the server's refusal", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("get %s: %v", names[i], err)
		}
	}
	sameTree(t, local, src)

	// Upload the copy into a directory tree where one directory is
	// missing: that file is refused, the others land.
	up := filepath.Join(root, "up")
	for _, d := range []string{"", "d0", "d1", "d2", "d3"} { // no d4
		os.MkdirAll(filepath.Join(up, d), 0o777)
		os.Chmod(filepath.Join(up, d), 0o777)
	}
	var puts []client.Put
	var refused []int
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(local, n)); err != nil {
			continue // the missing one
		}
		if strings.HasPrefix(n, "d4/") {
			refused = append(refused, len(puts))
		}
		puts = append(puts, client.Put{Path: filepath.Join(up, n), Size: -1, Open: func() (io.ReaderAt, error) {
			return os.Open(filepath.Join(local, n))
		}})
	}
	if len(refused) == 0 {
		t.Fatal("no file goes to the missing directory")
	}
	for i, err := range c.PutFiles(ctx, puts, &client.BatchOptions{Window: 16}) {
		if slices.Contains(refused, i) {
			var re *client.ReplyError
			if !errors.As(err, &re) {
				t.Errorf("put into a missing directory: err %v, want the server's refusal", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("put %s: %v", puts[i].Path, err)
			continue
		}
		rel, _ := filepath.Rel(up, puts[i].Path)
		got, _ := os.ReadFile(puts[i].Path)
		want, _ := os.ReadFile(filepath.Join(local, rel))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes on the server, want %d", rel, len(got), len(want))
		}
	}
}
