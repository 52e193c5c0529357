package client_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// These tests run against the reference server, GCT's
// globus-gridftp-server, serving a world-writable temporary directory as
// user nobody.

// login dials addr and logs in anonymously; the Conn is closed at the end
// of the test.
func login(t *testing.T, addr string, cfg *client.Config) *client.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(ctx, "anonymous", "ferry@"); err != nil {
		t.Fatal(err)
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
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

// modes runs f with a passive and with an active Conn.
func modes(t *testing.T, addr string, f func(t *testing.T, c *client.Conn)) {
	for _, active := range []bool{false, true} {
		name := "passive"
		if active {
			name = "active"
		}
		t.Run(name, func(t *testing.T) {
			f(t, login(t, addr, &client.Config{Active: active}))
		})
	}
}

func TestGCTRoundTrip(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	modes(t, addr, func(t *testing.T, c *client.Conn) {
		ctx := testCtx(t)
		for _, size := range []int{0, 1, 10 << 20} {
			data := randomBytes(t, size)
			remote := filepath.Join(dir, t.Name()[len("TestGCTRoundTrip/"):]+"-mem")
			n, err := c.Store(ctx, remote, bytes.NewReader(data), &client.StoreOptions{Size: int64(size)})
			if err != nil || n != int64(size) {
				t.Fatalf("Store %d bytes: %d, %v", size, n, err)
			}
			var buf bytes.Buffer
			n, err = c.Retrieve(ctx, remote, &buf, nil)
			if err != nil || n != int64(size) || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("Retrieve %d bytes: %d, %v, equal %v", size, n, err, bytes.Equal(buf.Bytes(), data))
			}

			// From and to *os.File: the sendfile and splice paths.
			local := filepath.Join(t.TempDir(), "src")
			if err := os.WriteFile(local, data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(local)
			if err != nil {
				t.Fatal(err)
			}
			n, err = c.Store(ctx, remote+"-file", f, nil)
			f.Close()
			if err != nil || n != int64(size) {
				t.Fatalf("Store from file %d bytes: %d, %v", size, n, err)
			}
			out, err := os.Create(filepath.Join(t.TempDir(), "dst"))
			if err != nil {
				t.Fatal(err)
			}
			n, err = c.Retrieve(ctx, remote+"-file", out, nil)
			if err != nil || n != int64(size) {
				t.Fatalf("Retrieve to file %d bytes: %d, %v", size, n, err)
			}
			got, err := os.ReadFile(out.Name())
			out.Close()
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("file content differs (%d of %d bytes), %v", len(got), size, err)
			}
		}
	})
}

func TestGCTPartial(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	data := randomBytes(t, 100_000)
	name := filepath.Join(dir, "partial")
	writeServed(t, name, data)
	c := login(t, addr, nil)
	ctx := testCtx(t)
	for _, tc := range []struct {
		off, length int64
		want        []byte
	}{
		{0, 0, data},
		{1000, 0, data[1000:]},             // REST
		{1000, 5000, data[1000:6000]},      // ERET
		{99_000, 5000, data[99_000:]},      // ERET clipped at EOF
		{200_000, 0, nil},                  // REST beyond EOF
		{0, 1, data[:1]},                   // ERET of one byte
		{99_999, 1_000_000, data[99_999:]}, // the last byte
	} {
		var buf bytes.Buffer
		n, err := c.Retrieve(ctx, name, &buf, &client.RetrieveOptions{Offset: tc.off, Length: tc.length})
		if err != nil || n != int64(len(tc.want)) || !bytes.Equal(buf.Bytes(), tc.want) {
			t.Errorf("Retrieve off %d len %d: n %d (want %d), %v", tc.off, tc.length, n, len(tc.want), err)
		}
	}

	// Store at an offset keeps the head; APPE appends.
	target := filepath.Join(dir, "rest-stor")
	if _, err := c.Store(ctx, target, bytes.NewReader([]byte("0123456789")), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, target, bytes.NewReader([]byte("ab")), &client.StoreOptions{Offset: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, target, bytes.NewReader([]byte("XY")), &client.StoreOptions{Append: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "0123ab6789XY" {
		t.Fatalf("after REST+STOR and APPE: %q, %v", got, err)
	}
}

func TestGCTFileOps(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	data := randomBytes(t, 12345)
	c := login(t, addr, nil)
	ctx := testCtx(t)
	// Uploaded, so that nobody owns it and may change its time and mode.
	if _, err := c.Store(ctx, filepath.Join(dir, "f.bin"), bytes.NewReader(data), nil); err != nil {
		t.Fatal(err)
	}

	if _, ok := c.Features()["MLST"]; !ok {
		t.Errorf("Features() lacks MLST: %v", c.Features())
	}
	sub := filepath.Join(dir, "sub")
	fileOpsDirs(t, ctx, c, dir, sub)
	fileOpsMetadata(t, ctx, c, dir, sub)
	fileOpsListing(t, ctx, c, dir, sub)
	fileOpsChecksum(t, ctx, c, filepath.Join(dir, "f.bin"), data)
	fileOpsRemove(t, ctx, c, sub)
	fileOpsInjection(t, ctx, c, dir)
	fileOpsAfterFailure(t, ctx, c, dir)
}

// fileOpsDirs checks PWD, MKD and CWD: it makes sub and, with a relative
// path from within it, sub/rel.txt, and returns to dir.
func fileOpsDirs(t *testing.T, ctx context.Context, c *client.Conn, dir, sub string) {
	t.Helper()
	if wd, err := c.Pwd(ctx); err != nil || wd != dir {
		t.Errorf("Pwd = %q, %v; want %q", wd, err, dir)
	}
	if err := c.Mkdir(ctx, sub); err != nil {
		t.Fatal(err)
	}
	var re *client.ReplyError
	if err := c.Mkdir(ctx, sub); !errors.As(err, &re) || re.Reply.Class() != 5 {
		t.Errorf("Mkdir of an existing directory: %v, want a 5xx *ReplyError", err)
	}
	if err := c.Cwd(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, "rel.txt", bytes.NewReader([]byte("hello")), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Cwd(ctx, dir); err != nil {
		t.Fatal(err)
	}
}

// fileOpsMetadata checks Stat, Size, SetModTime and ModTime, and Chmod
// (seen on the disk), leaving dir/f.bin with mode 0644.
func fileOpsMetadata(t *testing.T, ctx context.Context, c *client.Conn, dir, sub string) {
	t.Helper()
	f := filepath.Join(dir, "f.bin")
	st, err := c.Stat(ctx, f)
	if err != nil || st.Type != "file" || st.Size != 12345 || st.Name != "f.bin" || st.Modify.IsZero() {
		t.Errorf("Stat(f.bin) = %+v, %v", st, err)
	}
	if st, err := c.Stat(ctx, sub); err != nil || st.Type != "dir" {
		t.Errorf("Stat(sub) = %+v, %v", st, err)
	}
	var re *client.ReplyError
	if _, err := c.Stat(ctx, filepath.Join(dir, "missing")); !errors.As(err, &re) {
		t.Errorf("Stat(missing) = %v, want *ReplyError", err)
	}
	if n, err := c.Size(ctx, f); err != nil || n != 12345 {
		t.Errorf("Size = %d, %v", n, err)
	}
	when := time.Date(2020, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := c.SetModTime(ctx, f, when); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ModTime(ctx, f); err != nil || !got.Equal(when) {
		t.Errorf("ModTime = %v, %v; want %v", got, err, when)
	}
	if err := c.Chmod(ctx, f, 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("after Chmod 0600: %v, %v", fi.Mode(), err)
	}
	if err := c.Chmod(ctx, f, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileOpsListing checks List of dir (f.bin and sub) and NameList of sub
// (rel.txt).
func fileOpsListing(t *testing.T, ctx context.Context, c *client.Conn, dir, sub string) {
	t.Helper()
	entries, err := c.List(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name+"/"+e.Type)
	}
	slices.Sort(names)
	if want := []string{"f.bin/file", "sub/dir"}; !slices.Equal(names, want) {
		t.Errorf("List = %v, want %v", names, want)
	}
	nl, err := c.NameList(ctx, sub)
	if err != nil || len(nl) != 1 || filepath.Base(nl[0]) != "rel.txt" {
		t.Errorf("NameList(sub) = %q, %v", nl, err)
	}
}

// fileOpsChecksum checks the MD5 of the whole of name and of a part,
// against data, its content.
func fileOpsChecksum(t *testing.T, ctx context.Context, c *client.Conn, name string, data []byte) {
	t.Helper()
	sum := md5.Sum(data)
	if got, err := c.Checksum(ctx, "MD5", name, 0, -1); err != nil || got != hex.EncodeToString(sum[:]) {
		t.Errorf("Checksum MD5 = %q, %v; want %x", got, err, sum)
	}
	sum = md5.Sum(data[100:1100])
	if got, err := c.Checksum(ctx, "md5", name, 100, 1000); err != nil || got != hex.EncodeToString(sum[:]) {
		t.Errorf("Checksum MD5 100+1000 = %q, %v; want %x", got, err, sum)
	}
}

// fileOpsRemove checks Rename, Delete and Rmdir, and their refusals, by
// emptying and removing sub.
func fileOpsRemove(t *testing.T, ctx context.Context, c *client.Conn, sub string) {
	t.Helper()
	if err := c.Rename(ctx, filepath.Join(sub, "rel.txt"), filepath.Join(sub, "moved.txt")); err != nil {
		t.Fatal(err)
	}
	var re *client.ReplyError
	if err := c.Rename(ctx, filepath.Join(sub, "nothere"), filepath.Join(sub, "x")); !errors.As(err, &re) {
		t.Errorf("Rename of a missing file: %v, want *ReplyError", err)
	}
	if err := c.Rmdir(ctx, sub); !errors.As(err, &re) {
		t.Errorf("Rmdir of a non-empty directory: %v, want *ReplyError", err)
	}
	if err := c.Delete(ctx, filepath.Join(sub, "moved.txt")); err != nil {
		t.Fatal(err)
	}
	if err := c.Rmdir(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sub); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sub still exists: %v", err)
	}
}

// fileOpsInjection checks that a path that would inject a command is
// refused before sending.
func fileOpsInjection(t *testing.T, ctx context.Context, c *client.Conn, dir string) {
	t.Helper()
	if _, err := c.Retrieve(ctx, "x\r\nDELE "+filepath.Join(dir, "f.bin"), io.Discard, nil); !errors.Is(err, client.ErrBadCommand) {
		t.Errorf("Retrieve of a path with CRLF: %v, want ErrBadCommand", err)
	}
	if err := c.Delete(ctx, "x\nDELE y"); !errors.Is(err, client.ErrBadCommand) {
		t.Errorf("Delete of a path with LF: %v, want ErrBadCommand", err)
	}
}

// fileOpsAfterFailure checks that a failed transfer is a *ReplyError and
// leaves the Conn usable, then that Quit closes it.
func fileOpsAfterFailure(t *testing.T, ctx context.Context, c *client.Conn, dir string) {
	t.Helper()
	var re *client.ReplyError
	_, err := c.Retrieve(ctx, filepath.Join(dir, "missing"), io.Discard, nil)
	if !errors.As(err, &re) || re.Reply.Class() != 5 {
		t.Fatalf("Retrieve(missing) = %v, want 5xx *ReplyError", err)
	}
	if r, err := c.Do(ctx, "NOOP"); err != nil || r.Code != 200 {
		t.Fatalf("NOOP after a failed RETR: %v, %v", r, err)
	}
	if err := c.Quit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "NOOP"); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Do after Quit: %v, want ErrClosed", err)
	}
}

// TestGCTPlainServer disables EPSV, EPRT and FEAT, so that the client
// must use PASV, PORT, LIST, SIZE/MDTM/CWD and REST with a cut-off instead.
func TestGCTPlainServer(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir, "-disable-command-list", "EPSV,EPRT,FEAT")
	data := randomBytes(t, 300_000)
	writeServed(t, filepath.Join(dir, "f.bin"), data)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o777); err != nil {
		t.Fatal(err)
	}
	modes(t, addr, func(t *testing.T, c *client.Conn) {
		ctx := testCtx(t)
		if len(c.Features()) != 0 {
			t.Errorf("Features() = %v, want none", c.Features())
		}
		for range 2 { // the second round uses the remembered fallback
			var buf bytes.Buffer
			if _, err := c.Retrieve(ctx, filepath.Join(dir, "f.bin"), &buf, nil); err != nil || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("Retrieve: %v (%d bytes)", err, buf.Len())
			}
		}
		var buf bytes.Buffer
		n, err := c.Retrieve(ctx, filepath.Join(dir, "f.bin"), &buf, &client.RetrieveOptions{Offset: 10, Length: 100})
		if err != nil || n != 100 || !bytes.Equal(buf.Bytes(), data[10:110]) {
			t.Fatalf("Retrieve 100 bytes at 10 without ERET: %d, %v", n, err)
		}
		if r, err := c.Do(ctx, "NOOP"); err != nil || r.Code != 200 {
			t.Fatalf("NOOP after a cut-off RETR: %v, %v", r, err)
		}
		entries, err := c.List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range entries {
			got[e.Name] = e.Type
		}
		if got["f.bin"] != "file" || got["d"] != "dir" || len(got) < 2 {
			t.Errorf("List via LIST = %v", got)
		}
		st, err := c.Stat(ctx, filepath.Join(dir, "f.bin"))
		if err != nil || st.Type != "file" || st.Size != 300_000 || st.Modify.IsZero() {
			t.Errorf("Stat(f.bin) without MLST = %+v, %v", st, err)
		}
		st, err = c.Stat(ctx, filepath.Join(dir, "d"))
		if err != nil || st.Type != "dir" {
			t.Errorf("Stat(d) without MLST = %+v, %v", st, err)
		}
		if wd, err := c.Pwd(ctx); err != nil || wd != dir {
			t.Errorf("Pwd after Stat = %q, %v; want %q", wd, err, dir)
		}
	})
}

// TestGCTFallbackRemembered checks on the wire that a refused EPSV or EPRT
// is tried once per session and PASV or PORT used from then on.
func TestGCTFallbackRemembered(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir, "-disable-command-list", "EPSV,EPRT")
	writeServed(t, filepath.Join(dir, "f"), []byte("x"))
	for _, active := range []bool{false, true} {
		var log bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := login(t, addr, &client.Config{Active: active, Logger: logger})
		ctx := testCtx(t)
		for range 3 {
			if _, err := c.Retrieve(ctx, filepath.Join(dir, "f"), io.Discard, nil); err != nil {
				t.Fatal(err)
			}
		}
		extended, plain := "EPSV", "PASV"
		if active {
			extended, plain = "EPRT", "PORT"
		}
		sent := func(verb string) int {
			return strings.Count(log.String(), "cmd="+verb) + strings.Count(log.String(), `cmd="`+verb)
		}
		if n := sent(extended); n != 1 {
			t.Errorf("active=%v: %s sent %d times, want 1", active, extended, n)
		}
		if n := sent(plain); n != 3 {
			t.Errorf("active=%v: %s sent %d times, want 3", active, plain, n)
		}
		if strings.Contains(log.String(), "ferry@") {
			t.Errorf("the password was logged")
		}
	}
}

// cancelWriter cancels its context at the first write and keeps accepting.
type cancelWriter struct {
	cancel context.CancelFunc
	n      int64
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.cancel()
	w.n += int64(len(p))
	return len(p), nil
}

// cancelReader cancels its context after the first read and keeps giving
// bytes.
type cancelReader struct {
	cancel context.CancelFunc
	reads  int
}

func (r *cancelReader) Read(p []byte) (int, error) {
	r.reads++
	if r.reads > 1 {
		r.cancel()
	}
	clear(p)
	return len(p), nil
}

// TestGCTCancel cancels transfers midway: the call returns promptly with
// the context's error, and the Conn is closed (GCT ends the session after
// ABOR of a running transfer).
func TestGCTCancel(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil { // sparse: cheap to make, slow to send
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chmod(big, 0o644); err != nil {
		t.Fatal(err)
	}
	modes(t, addr, func(t *testing.T, c *client.Conn) {
		ctx, cancel := context.WithCancel(testCtx(t))
		w := &cancelWriter{cancel: cancel}
		start := time.Now()
		_, err := c.Retrieve(ctx, big, w, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Retrieve: %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("cancelled Retrieve took %v", d)
		}
		if w.n >= 4<<30 {
			t.Errorf("the whole file arrived")
		}
		if _, err := c.Do(testCtx(t), "NOOP"); !errors.Is(err, client.ErrClosed) {
			t.Errorf("Do after a cancelled transfer: %v, want ErrClosed", err)
		}

		// Upload.
		c = login(t, addr, nil)
		ctx, cancel = context.WithCancel(testCtx(t))
		r := &cancelReader{cancel: cancel}
		start = time.Now()
		_, err = c.Store(ctx, filepath.Join(dir, "up"), io.LimitReader(r, 8<<30), nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Store: %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("cancelled Store took %v", d)
		}

		// The server still serves new sessions.
		c = login(t, addr, nil)
		if _, err := c.Size(testCtx(t), big); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGCTCancelledBeforeStart uses a context that is already done.
func TestGCTCancelledBeforeStart(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	c := login(t, addr, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Retrieve(ctx, filepath.Join(dir, "x"), io.Discard, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Retrieve with a done ctx: %v", err)
	}
	if _, err := client.Dial(ctx, addr, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a done ctx: %v", err)
	}
}
