package server_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/server"
)

// storeStream starts "STOR name" (after extra commands) in stream mode,
// sends data and returns the control client and the data connection.
func storeStream(t *testing.T, addr string, extra []string, name string, data []byte) (*client, net.Conn) {
	t.Helper()
	c := dial(t, addr)
	c.read()
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	c.expect("TYPE I", 200)
	c.send("EPSV")
	r := c.read()
	ap, err := wire.ParseEPSVReply(r.Lines[0])
	if r.Code != 229 || err != nil {
		t.Fatalf("EPSV: %v %v", r, err)
	}
	for _, line := range extra {
		c.send(line)
		c.read()
	}
	c.send("STOR " + name)
	d, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(int(ap.Port()))))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.read(); r.Code != 150 {
		t.Fatalf("STOR: %v", r)
	}
	if _, err := d.Write(data); err != nil {
		t.Fatal(err)
	}
	return c, d
}

func content(t *testing.T, st dsi.Storage, name string) (string, bool) {
	t.Helper()
	r, err := st.Open(context.Background(), name)
	if err != nil {
		return "", false
	}
	defer r.Close()
	b, err := io.ReadAll(io.NewSectionReader(r, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// waitIdle waits until the server has no session left.
func waitIdle(t *testing.T, srv *server.Server) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for srv.Sessions() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("sessions did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInterruptedUploadLooksIncomplete: an upload cut off by the client
// (Ctrl-C: both connections closed) leaves neither a truncated file under
// the target's name nor a spoiled older file; a restart completes it.
func TestInterruptedUploadLooksIncomplete(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	w, _ := st.Create(ctx, "/old", dsi.CreateOptions{Truncate: true, Size: -1})
	w.WriteAt([]byte("the previous version"), 0)
	w.Close()
	srv, addr, _ := start(t, server.Config{Storage: st, Anonymous: true, AnonymousWrite: true})

	for _, name := range []string{"/old", "/new"} {
		// globus-url-copy and ferry cp announce the size (ALLO).
		c, d := storeStream(t, addr, []string{"ALLO 22"}, name, []byte("first half;"))
		time.Sleep(50 * time.Millisecond) // let the bytes land
		d.Close()
		c.c.Close()
		waitIdle(t, srv)
		got, found := content(t, st, name)
		switch {
		case name == "/old" && got != "the previous version":
			t.Errorf("%s after an interrupted overwrite: %q (found %v); want the previous version intact", name, got, found)
		case name == "/new" && found:
			t.Errorf("%s after an interrupted upload exists with %q; want no file under its name", name, got)
		}
		if part, found := content(t, st, "/."+name[1:]+".ferry-part"); !found || part != "first half;" {
			t.Errorf("the part of %s: %q (found %v); want the bytes received", name, part, found)
		}
	}

	// Without ALLO, a client that is gone before its data ends.
	c, d := storeStream(t, addr, nil, "/quiet", []byte("first half;"))
	time.Sleep(50 * time.Millisecond)
	c.c.Close()
	time.Sleep(50 * time.Millisecond)
	d.Close()
	waitIdle(t, srv)
	if got, found := content(t, st, "/quiet"); found {
		t.Errorf("/quiet after its client died: %q; want no file under its name", got)
	}

	// A restart of /new continues the part and then puts it in place.
	c, d = storeStream(t, addr, []string{"REST 11"}, "/new", []byte("second half"))
	d.Close()
	if r := c.read(); r.Code != 226 {
		t.Fatalf("restarted STOR: %v", r)
	}
	if got, _ := content(t, st, "/new"); got != "first half;second half" {
		t.Errorf("/new after the restart: %q", got)
	}
	if _, found := content(t, st, "/.new.ferry-part"); found {
		t.Error("the part file is left after a completed upload")
	}

	// GCT's way, when asked for: the file is written in place.
	inPlace := memory.New()
	srv2, addr2, _ := start(t, server.Config{Storage: inPlace, Anonymous: true, AnonymousWrite: true, UploadInPlace: true})
	c, d = storeStream(t, addr2, nil, "/f", []byte("partial"))
	time.Sleep(50 * time.Millisecond)
	d.Close()
	c.c.Close()
	waitIdle(t, srv2)
	if got, _ := content(t, inPlace, "/f"); got != "partial" {
		t.Errorf("in place: /f is %q; want the partial bytes under its name", got)
	}
}

// TestPartFilesCannotBeHijacked: clients may not write, create or rename
// upload part files, so one client cannot slip bytes into another's upload
// or take them; names as long as the file system allows still upload.
func TestPartFilesCannotBeHijacked(t *testing.T) {
	_, st := posixTree(t)
	w, _ := st.Create(context.Background(), "/.report.ferry-part", dsi.CreateOptions{Truncate: true, Size: -1})
	w.WriteAt([]byte("a victim's bytes"), 0)
	w.Close()
	w, _ = st.Create(context.Background(), "/mine", dsi.CreateOptions{Truncate: true, Size: -1})
	w.Close()
	_, addr, _ := start(t, server.Config{Storage: st, Anonymous: true, AnonymousWrite: true})
	c := dial(t, addr)
	c.read()
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	c.expect("MODE E", 200)
	for _, cmd := range []string{"STOR /.report.ferry-part", "APPE /.report.ferry-part", "ESTO A 0 /.report.ferry-part", "STOR /sub/../.x.ferry-part"} {
		c.send(cmd)
		if r := c.read(); r.Code != 553 {
			t.Errorf("%s: %v, want 553", cmd, r)
		}
	}
	c.expect("MODE S", 200)
	c.expect("RNFR /.report.ferry-part", 553)
	c.expect("RNFR /mine", 350)
	c.expect("RNTO /.report.ferry-part", 553)
	c.expect("MKD /.d.ferry-part", 553)
	c.expect("SIZE /.report.ferry-part", 213) // looking is allowed
	if got, _ := content(t, st, "/.report.ferry-part"); got != "a victim's bytes" {
		t.Errorf("the part file is now %q", got)
	}
	c.expect("DELE /.report.ferry-part", 250) // and dropping a leftover

	// A name of 255 bytes, the most the file system takes, uploads.
	long := "/" + strings.Repeat("n", 255)
	c2, d := storeStream(t, addr, nil, long, []byte("long"))
	d.Close()
	if r := c2.read(); r.Code != 226 {
		t.Fatalf("STOR of a 255-byte name: %v", r)
	}
	if got, _ := content(t, st, long); got != "long" {
		t.Errorf("the 255-byte name holds %q", got)
	}
}

// TestUploadInProgressIsOffLimits: while an upload runs, other sessions
// can neither write the same file (with or without REST), nor delete or
// rename it, its part file or a directory above it, nor change the part
// file's mode or time; a part file name planted as a symbolic link is not
// followed; and a replaced file keeps its mode.
func TestUploadInProgressIsOffLimits(t *testing.T) {
	root, st := posixTree(t)
	os.MkdirAll(filepath.Join(root, "proj"), 0o777)
	os.WriteFile(filepath.Join(root, "proj", "data.csv"), []byte("old"), 0o600)
	// Another spelling of the same directory, as a local user may make.
	os.Symlink("proj", filepath.Join(root, "alias"))
	os.MkdirAll(filepath.Join(root, "h1"), 0o777)
	os.Symlink("..", filepath.Join(root, "h1", "up"))
	_, addr, _ := start(t, server.Config{Storage: st, Anonymous: true, AnonymousWrite: true})

	victim, data := storeStream(t, addr, []string{"ALLO 10"}, "/proj/data.csv", []byte("GOOD"))
	time.Sleep(50 * time.Millisecond)
	c := dial(t, addr)
	c.read()
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	c.expect("TYPE I", 200)
	for _, cmd := range []struct {
		line string
		code int
	}{
		{"REST 0", 350}, {"STOR /proj/data.csv", 450},
		{"STOR /proj/data.csv", 450},
		{"DELE /proj/.data.csv.ferry-part", 450},
		{"DELE /proj/data.csv", 450},
		{"RNFR /proj", 450},
		{"RNFR /proj/data.csv", 450},
		{"RMD /proj", 450},
		{"REST 0", 350}, {"STOR /alias/data.csv", 450},
		{"STOR /h1/up/proj/data.csv", 450},
		{"DELE /alias/.data.csv.ferry-part", 450},
		{"RNFR /h1/up/proj", 450},
		{"SITE CHMOD 000 /proj/.data.csv.ferry-part", 553},
		{"MFMT 20200101000000 /proj/.data.csv.ferry-part", 553},
	} {
		c.send(cmd.line)
		if r := c.read(); r.Code != cmd.code {
			t.Errorf("%s during another's upload: %v, want %d", cmd.line, r, cmd.code)
		}
	}
	data.Write([]byte("ENDS"))
	data.Write([]byte("!!"))
	data.Close()
	if r := victim.read(); r.Code != 226 {
		t.Fatalf("the victim's upload: %v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "proj", "data.csv")); string(got) != "GOODENDS!!" {
		t.Errorf("the victim's file holds %q", got)
	}
	if fi, err := os.Stat(filepath.Join(root, "proj", "data.csv")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the replaced file's mode: %v %v, want 0600 kept", fi.Mode(), err)
	}
	// Afterwards the file is free again.
	c.expect("RNFR /proj/data.csv", 350)
	c.expect("RNTO /proj/data2.csv", 250)

	// A part file name planted as a link by a local user.
	os.WriteFile(filepath.Join(root, "precious"), []byte("keep"), 0o600)
	os.Symlink("../precious", filepath.Join(root, "proj", ".notes.ferry-part"))
	storeStreamRefused(t, addr, "/proj/notes")
	if got, _ := os.ReadFile(filepath.Join(root, "precious")); string(got) != "keep" {
		t.Errorf("the link's target now holds %q", got)
	}
}

// storeStreamRefused sends STOR name, expecting a refusal before data.
func storeStreamRefused(t *testing.T, addr, name string) (*client, int) {
	t.Helper()
	c := dial(t, addr)
	c.read()
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	c.expect("TYPE I", 200)
	c.send("EPSV")
	c.read()
	c.send("STOR " + name)
	r := c.read()
	if r.Code/100 != 5 {
		t.Errorf("STOR %s onto a planted link: %v, want a refusal", name, r)
	}
	return c, r.Code
}

// posixTree is a posix storage over a fresh directory, and that directory.
func posixTree(t *testing.T) (string, dsi.Storage) {
	t.Helper()
	root := t.TempDir()
	st, err := posix.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, st
}
