package client_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// Batches against a Ferry server pipeline each file's MODE E blocks right
// behind its STOR (STOR-DRAIN). A STOR the server refuses for its
// arguments before any handler runs ("STOR " with no path: 501) must have
// its blocks drained like any other refusal; otherwise they stay on the
// cached data connections and the next STOR stores them, so one file's
// bytes land in another's path and that file reports success.

// TestPutFilesEmptyPathDrained: a pipelined upload batch with an empty
// path in the middle.
func TestPutFilesEmptyPathDrained(t *testing.T) {
	dst := ferryPeer(t)
	ctx := testCtx(t)
	const n = 4
	want := make([][]byte, n)
	puts := make([]client.Put, n)
	for i := range n {
		want[i] = seeded(1000+i*100, uint64(700+i))
		puts[i] = client.Put{Path: dst.remote(fmt.Sprintf("p%d", i)), Size: int64(len(want[i])),
			Open: func() (io.ReaderAt, error) { return bytes.NewReader(want[i]), nil }}
	}
	puts[1].Path = ""
	c := login(t, dst.addr, nil)
	errs := c.PutFiles(ctx, puts, &client.BatchOptions{Window: 4})
	if errs[1] == nil {
		t.Error("file 1 (empty path) succeeded")
	}
	checkOwnBytes(t, dst.dir, "p", errs, want, 0, 2, 3)
}

// TestThirdPartyFilesEmptyDestinationDrained: the same in a third-party
// batch to a Ferry destination (the source leads).
func TestThirdPartyFilesEmptyDestinationDrained(t *testing.T) {
	src, dst := ferryPeer(t), ferryPeer(t)
	ctx := testCtx(t)
	const n = 4
	want := make([][]byte, n)
	files := make([]client.ThirdPartyFile, n)
	for i := range n {
		want[i] = seeded(1000+i*100, uint64(500+i))
		writeShared(t, filepath.Join(src.dir, fmt.Sprintf("e%d", i)), want[i])
		files[i] = client.ThirdPartyFile{Src: src.remote(fmt.Sprintf("e%d", i)), Dst: dst.remote(fmt.Sprintf("o%d", i))}
	}
	files[1].Dst = ""
	sc, dc := login(t, src.addr, nil), login(t, dst.addr, nil)
	errs := client.ThirdPartyFiles(ctx, sc, dc, files, &client.BatchOptions{Window: 4})
	if errs[1] == nil {
		t.Error("file 1 (empty destination path) succeeded")
	}
	checkOwnBytes(t, dst.dir, "o", errs, want, 0, 2, 3)
}

// checkOwnBytes checks that files idx of the batch succeeded and that
// dir/PREFIXi holds exactly want[i].
func checkOwnBytes(t *testing.T, dir, prefix string, errs []error, want [][]byte, idx ...int) {
	t.Helper()
	for _, i := range idx {
		got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s%d", prefix, i)))
		if errs[i] != nil || err != nil || !bytes.Equal(got, want[i]) {
			t.Errorf("%s%d: reported %v; on disk %d bytes, %v; want its own %d bytes", prefix, i, errs[i], len(got), err, len(want[i]))
		}
	}
}
