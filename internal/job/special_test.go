package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/server"
)

// TestRemoteFIFONotCopied: a FIFO on a real server, listed by MLSD as
// "Type=OS.unix=fifo", is nothing a recursive copy downloads: it is left
// out of the copies with a note, while the file beside it is copied.
func TestRemoteFIFONotCopied(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := ftpserver.Start(t, server.Config{Storage: st, Anonymous: true})
	src := Remote{Conn: func(ctx context.Context) (*client.Conn, error) {
		c, err := client.Dial(ctx, addr, &client.Config{})
		if err != nil {
			return nil, err
		}
		if err := c.Login(ctx, "anonymous", "x"); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pl := &Planner{Src: src, Dst: Local{}, SrcEnd: "ftp://" + addr, Options: Options{Recursive: true}}
	plan := &Plan{}
	dst := t.TempDir()
	if err := pl.Add(ctx, plan, "/", dst+"/"); err != nil {
		t.Fatal(err)
	}
	var copied []string
	for _, p := range plan.Pairs {
		copied = append(copied, p.Src.Path)
	}
	if len(copied) != 1 || !strings.HasSuffix(copied[0], "/f") {
		t.Errorf("copies %v; want only /f", copied)
	}
	noted := false
	for _, f := range plan.Failed {
		noted = noted || strings.HasSuffix(f.Pair.Src.Path, "/fifo") && strings.Contains(f.Err.Error(), "not a regular file")
	}
	if !noted {
		t.Errorf("no note says why the FIFO is not copied: %v", plan.Failed)
	}
}
