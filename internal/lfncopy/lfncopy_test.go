package lfncopy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/server"
	"github.com/ferrygrid/ferry/transfer"
)

// serve starts an anonymous Ferry server over a new directory holding
// f with data, and returns its URL of f.
func serve(t *testing.T, data []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return "ftp://" + ftpserver.Start(t, server.Config{Storage: fs, Anonymous: true}) + "/f"
}

// TestCopyIntoRoot copies an LFN whose first-ranked replica has wrong
// bytes into a directory through an *os.Root: the wrong one is marked
// bad, the good one ok, the destination replaced, no temporary file
// left; a destination outside the root is refused before any copy.
func TestCopyIntoRoot(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("ferry lfn "), 100000)
	wrongData := bytes.Clone(data)
	wrongData[12345] ^= 1
	good, wrong := serve(t, data), serve(t, wrongData)
	sum, err := checksum.Compute(ctx, bytes.NewReader(data), int64(len(data)), 0, -1, "MD5")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := replica.Open(ctx, filepath.Join(t.TempDir(), "cat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	for _, u := range []string{good, wrong} {
		if err := cat.Add(ctx, "/a/f", "MD5", replica.Replica{URL: u, Size: int64(len(data)), Sum: sum}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cat.Mark(ctx, "/a/f", wrong, replica.OK, -1, "", time.Now().Add(time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	en, err := cat.Lookup(ctx, "/a/f")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dst := transfer.LocalLocation(filepath.Join(dir, "f"))
	dst.Root = root
	if err := os.WriteFile(dst.Path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	eng := &transfer.Engine{}
	defer eng.Close(ctx)
	cp := &Copier{Catalogue: cat, Engine: eng}
	var notes []string
	res, err := cp.Copy(ctx, Request{Entry: en, Dst: dst, Options: transfer.Options{Length: -1}}, func(e transfer.Event) {
		if e.Kind == transfer.EventNote {
			notes = append(notes, e.Note)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.URL != good || res.Dst.Path != dst.Path {
		t.Errorf("copied from %q to %q", res.URL, res.Dst.Path)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "checksum mismatch") {
		t.Errorf("notes %q", notes)
	}
	if got, _ := os.ReadFile(dst.Path); !bytes.Equal(got, data) {
		t.Error("the destination does not hold the verified copy")
	}
	if des, _ := os.ReadDir(dir); len(des) != 1 {
		t.Errorf("left behind: %v", des)
	}
	en, _ = cat.Lookup(ctx, "/a/f")
	for _, r := range en.Replicas {
		want := replica.OK
		if r.URL == wrong {
			want = replica.Bad
		}
		if r.State != want {
			t.Errorf("%s is %s, want %s", r.URL, r.State, want)
		}
	}

	out := dst
	out.Path = filepath.Join(filepath.Dir(dir), "outside")
	if _, err := cp.Copy(ctx, Request{Entry: en, Dst: out, Options: transfer.Options{Length: -1}}, nil); !errors.Is(err, transfer.ErrEscape) {
		t.Errorf("outside the root: %v, want ErrEscape", err)
	}
	if _, err := os.Stat(out.Path); err == nil {
		t.Error("a file was written outside the root")
	}
}
