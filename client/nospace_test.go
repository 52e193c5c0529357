package client_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/server"
)

// fullStorage is a Storage whose files take at most limit bytes each;
// beyond, writes fail as on a full disk.
type fullStorage struct {
	dsi.Storage
	limit int64
}

func (s fullStorage) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	w, err := s.Storage.Create(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return &fullWriter{Writer: w, limit: s.limit}, nil
}

type fullWriter struct {
	dsi.Writer
	limit int64
}

func (w *fullWriter) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > w.limit {
		return 0, dsi.ErrNoSpace
	}
	return w.Writer.WriteAt(p, off)
}

// TestStoreFullDiskReply: a stream-mode upload that the server stops
// (a full disk) fails with the server's 452, not with the write error
// of the data connection it dropped (docs/bench/chaos.md, defect 3).
func TestStoreFullDiskReply(t *testing.T) {
	root, err := posix.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := ftpserver.Start(t, server.Config{Storage: fullStorage{Storage: root, limit: 1 << 20}, Anonymous: true, AnonymousWrite: true})
	ctx := testCtx(t)
	for i := range 3 {
		c := login(t, addr, nil)
		const size = 64 << 20
		data := io.LimitReader(zeros{}, size)
		_, err := c.Store(ctx, "/big", data, &client.StoreOptions{Size: size})
		var re *client.ReplyError
		if !errors.As(err, &re) || re.Reply.Code != 452 {
			t.Fatalf("upload %d to a full disk: %v; want the server's 452", i, err)
		}
		// The control connection is in step.
		if _, err := c.Pwd(ctx); err != nil {
			t.Fatalf("NOOP after the 452: %v", err)
		}
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
