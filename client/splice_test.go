package client_test

import (
	"bytes"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// offsetWriter is an io.WriterAt that is not an *os.File: the receiver
// must copy through its buffer.
type offsetWriter struct{ w io.WriterAt }

func (o offsetWriter) WriteAt(p []byte, off int64) (int, error) { return o.w.WriteAt(p, off) }

// TestModeEDownloadSplices: a MODE E download over plain TCP into an
// *os.File moves every full-size block from the socket to the file with
// splice(2) (posix.SplicedBytes grows by twelve 1 MiB blocks; the 4321-byte
// tail is a small block, read together with the header behind it); into
// another WriterAt it copies. Both give the file's contents.
func TestModeEDownloadSplices(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("splice(2) is Linux-only")
	}
	srv := startFerry(t)
	const size = 12<<20 + 4321
	const inBlocks = 12 << 20 // the full 1 MiB blocks
	data := seeded(size, 77)
	writeShared(t, filepath.Join(srv.dir, "big"), data)
	c := login(t, srv.addr, nil)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name    string
		wrap    bool
		spliced bool
	}{{"os.File", false, true}, {"WriterAt", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, par := range []int{1, 4} {
				dst := newLocal(t)
				var w io.WriterAt = dst
				if tc.wrap {
					w = offsetWriter{dst}
				}
				before := posix.SplicedBytes()
				n, err := c.RetrieveAt(ctx, "/big", w, &client.RetrieveOptions{Parallel: par, ModeE: true})
				if err != nil || n != size {
					t.Fatalf("p%d: RetrieveAt = %d, %v", par, n, err)
				}
				spliced := posix.SplicedBytes() - before
				if tc.spliced && spliced != inBlocks || !tc.spliced && spliced != 0 {
					t.Errorf("p%d: %d bytes spliced, want %v", par, spliced, map[bool]int{true: inBlocks, false: 0}[tc.spliced])
				}
				if got := readAll(t, dst.Name()); !bytes.Equal(got, data) {
					t.Errorf("p%d: downloaded file differs (%d bytes)", par, len(got))
				}
			}
		})
	}
}
