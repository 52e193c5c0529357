package posix_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/server"
)

// TestHardLinkRefusedByServer: through the server, APPE and SITE CHMOD
// of a file hard-linked to one outside the served tree get 550 and
// change nothing; STOR replaces the name (the part file is renamed over
// it) and leaves the other file alone.
func TestHardLinkRefusedByServer(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	const orig = "do not change me"
	if err := os.WriteFile(outside, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(root, "linked")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	fsys, err := posix.New(root)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Storage: fsys, Anonymous: true, AnonymousWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(l) })
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
		fsys.Close()
	})
	c := loginAnon(t, l.Addr().String())
	ctx := t.Context()

	r, err := c.Do(ctx, "SITE CHMOD 600 /linked")
	if err != nil || r.Code != 550 {
		t.Errorf("SITE CHMOD of a hard-linked file: %v, %v; want 550", r, err)
	}
	_, err = c.Store(ctx, "/linked", strings.NewReader("appended"), &client.StoreOptions{Append: true})
	var re *client.ReplyError
	if !errors.As(err, &re) || re.Reply.Code != 550 {
		t.Errorf("APPE to a hard-linked file: %v; want 550", err)
	}
	if got, _ := os.ReadFile(outside); string(got) != orig {
		t.Errorf("the file outside changed: %q", got)
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o644 {
		t.Errorf("the file outside changed mode: %v", fi.Mode())
	}
	if _, err := c.Store(ctx, "/linked", strings.NewReader("new"), nil); err != nil {
		t.Fatalf("STOR over a hard-linked name: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "linked")); string(got) != "new" {
		t.Errorf("STOR: %q, want %q", got, "new")
	}
	if got, _ := os.ReadFile(outside); string(got) != orig {
		t.Errorf("STOR changed the file outside: %q", got)
	}
}
