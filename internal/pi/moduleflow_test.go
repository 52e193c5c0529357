package pi_test

// ESTO tar unpacks while the data arrives (internal/reorder between the
// data channel and the chain): uploads over MODE E with parallel
// streams and blocks out of order. ERET tar is laid out ahead and sent
// without a temporary file (dpm.Layout): the same bytes as the packing.

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net"
	"path"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/dpm"
	"github.com/ferrygrid/ferry/internal/eblock"
)

// treeFile is one entry of a test tree ("" content and dir: a directory).
type treeFile struct {
	name string
	data []byte
	dir  bool
}

// testTree is a tree with nested and empty directories, empty files, a
// long name and files of several blocks.
func testTree() []treeFile {
	long := strings.Repeat("a-rather-long-directory-name/", 5) + strings.Repeat("x", 120)
	fs := []treeFile{
		{name: "empty-dir", dir: true},
		{name: "d1", dir: true},
		{name: "d1/d2", dir: true},
		{name: "d1/d2/deep.bin", data: randomBytes(1<<20 + 333)},
		{name: "d1/empty", data: nil},
		{name: "big.bin", data: randomBytes(2<<20 + 5)},
		{name: long, data: []byte("at the end of a long name")},
	}
	for i := range 150 {
		fs = append(fs, treeFile{name: fmt.Sprintf("small/%03d.txt", i), data: randomBytes(i * 37)})
	}
	return fs
}

// tarOf packs files (in order) as a tar stream.
func tarOf(t *testing.T, files []treeFile) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Size: int64(len(f.data)), Mode: 0o644}
		if f.dir {
			h = &tar.Header{Typeflag: tar.TypeDir, Name: f.name + "/", Mode: 0o755}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkTree compares what the server holds below dir with files.
func checkTree(t *testing.T, c *ctl, dir string, files []treeFile) {
	t.Helper()
	for _, f := range files {
		if f.dir {
			continue
		}
		got, r := c.retr(dir + "/" + f.name)
		if r.Code != 226 || !bytes.Equal(got, f.data) {
			t.Errorf("%s/%s: %d bytes back (%v), want %d", dir, f.name, len(got), r, len(f.data))
		}
	}
}

// sendReversed writes data as 64 KiB MODE E blocks, the last first, on
// one connection, then ends it.
func sendReversed(data []byte) func(net.Conn) {
	return func(d net.Conn) {
		const bs = 64 << 10
		var h [eblock.HeaderSize]byte
		for off := (len(data) - 1) / bs * bs; off >= 0; off -= bs {
			end := min(off+bs, len(data))
			eblock.Header{Count: uint64(end - off), Offset: uint64(off)}.Put(h[:])
			d.Write(h[:])
			d.Write(data[off:end])
		}
		eblock.Header{Desc: eblock.DescEOF | eblock.DescEOD, Offset: 1}.Put(h[:])
		d.Write(h[:])
	}
}

// TestModuleESTOTarModeE: ESTO tar over MODE E with four streams, and
// with its blocks sent in reverse order, unpacks the whole tree.
func TestModuleESTOTarModeE(t *testing.T) {
	c := moduleServer(t, "tar", "gzip")
	files := testTree()
	data := tarOf(t, files)
	c.expect("MODE E", 200)
	if _, rest := c.modeEStore(`ESTO tar="" /up4`, data, 4, nil); rest[len(rest)-1].Code != 226 {
		t.Fatalf("ESTO tar, MODE E -p 4: %v", rest)
	}
	_, rest := c.modeEStoreRaw(`ESTO tar="" /upr`, sendReversed(data))
	if rest[len(rest)-1].Code != 226 {
		t.Fatalf("ESTO tar, MODE E, blocks reversed: %v", rest)
	}
	c.expect("MODE S", 200)
	checkTree(t, c, "/up4", files)
	checkTree(t, c, "/upr", files)
}

// TestModuleESTOTarRefusedMidway: an unsafe entry after good ones ends
// the unpacking while the data still comes; the rest of the data is
// drained, the reply is 553, and the files before it stay whole.
func TestModuleESTOTarRefusedMidway(t *testing.T) {
	c := moduleServer(t, "tar")
	good := []treeFile{{name: "first.bin", data: randomBytes(300 << 10)}}
	var b bytes.Buffer
	b.Write(tarOf(t, good))
	b.Truncate(b.Len() - 1024) // without its end
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "../escape", Size: 5, Mode: 0o644})
	tw.Write([]byte("evil!"))
	after := randomBytes(3 << 20)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "after.bin", Size: int64(len(after)), Mode: 0o644})
	tw.Write(after)
	tw.Close()
	c.expect("MODE E", 200)
	_, rest := c.modeEStore(`ESTO tar="" /mid`, b.Bytes(), 4, nil)
	if final := rest[len(rest)-1]; final.Code != 553 || !strings.Contains(final.Text(), "escape") {
		t.Fatalf("ESTO tar with ../ midway: %v; want 553 naming the entry", final)
	}
	c.expect("MODE S", 200)
	checkTree(t, c, "/mid", good)
	if _, r := c.retr("/mid/after.bin"); r.Code == 226 {
		t.Error("an entry after the refused one was unpacked")
	}
	c.expect("NOOP", 200)
}

// putTree writes files below dir in st.
func putTree(t *testing.T, st dsi.Storage, dir string, files []treeFile) {
	t.Helper()
	ctx := context.Background()
	if err := st.Mkdir(ctx, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := path.Join(dir, f.name)
		for _, d := range parents(dir, path.Dir(name)) {
			st.Mkdir(ctx, d, 0o755)
		}
		if f.dir {
			st.Mkdir(ctx, name, 0o755)
			continue
		}
		w, err := st.Create(ctx, name, dsi.CreateOptions{Truncate: true, Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt(f.data, 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// parents lists the directories from below top down to d.
func parents(top, d string) []string {
	var out []string
	for ; d != top && d != "/" && d != "."; d = path.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}

// packed is what the tar module's packing (dpm's Retrieve, through a
// pipe, no layout) makes of p.
func packed(t *testing.T, st dsi.Storage, spec, p string) []byte {
	t.Helper()
	sp, err := dpm.ParseSpec(spec + " " + p)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := dpm.Resolve(sp, dpm.Names(), false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := chain.Retrieve(context.Background(), dpm.Env{Storage: st, Path: p}, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestModuleERETTarModeE: ERET tar, sent without a temporary file,
// gives tarPack's bytes in stream mode, over MODE E with four streams,
// and as REST ranges; ERET cat too.
func TestModuleERETTarModeE(t *testing.T) {
	st := memory.New()
	putTree(t, st, "/tree", testTree())
	want := packed(t, st, `tar=""`, "/tree")
	wantCat := packed(t, st, `cat="big.bin,d1/d2/deep.bin,small/007.txt"`, "/tree")
	cfg := config(st)
	cfg.AllowedModules = []string{"tar", "cat"}
	c := dial(t, serve(t, cfg))
	c.login()
	if got, r := c.retrCmd(`ERET tar="" /tree`); r.Code != 226 || !bytes.Equal(got, want) {
		t.Fatalf("ERET tar, stream mode: %v, %d bytes, want %d identical", r, len(got), len(want))
	}
	c.expect("MODE E", 200)
	if got, r := c.modeERetrieve(`ERET tar="" /tree`, 4); r.Code != 226 || !bytes.Equal(got, want) {
		t.Fatalf("ERET tar, MODE E -p 4: %v, %d bytes, want %d identical", r, len(got), len(want))
	}
	if got, r := c.modeERetrieve(`ERET cat="big.bin,d1/d2/deep.bin,small/007.txt" /tree`, 3); r.Code != 226 || !bytes.Equal(got, wantCat) {
		t.Fatalf("ERET cat, MODE E -p 3: %v, %d bytes, want %d identical", r, len(got), len(wantCat))
	}
	// A restart: the range the client has is not sent again.
	c.expect("REST 700000-1900000", 350)
	got, r := c.modeERetrieve(`ERET tar="" /tree`, 2)
	if r.Code != 226 || len(got) != len(want) || !bytes.Equal(got[:700_000], want[:700_000]) ||
		!bytes.Equal(got[1_900_000:], want[1_900_000:]) || !bytes.Equal(got[700_000:1_900_000], make([]byte, 1_200_000)) {
		t.Fatalf("ERET tar with REST: %v, %d bytes", r, len(got))
	}
}

// growOnOpen grows name to a new size when it is opened.
type growOnOpen struct {
	dsi.Storage
	name string
}

func (g *growOnOpen) Open(ctx context.Context, name string) (dsi.Reader, error) {
	if name == g.name {
		w, err := g.Storage.Create(ctx, name, dsi.CreateOptions{Size: -1})
		if err != nil {
			return nil, err
		}
		w.WriteAt([]byte("appended after the walk"), 5<<20)
		w.Close()
	}
	return g.Storage.Open(ctx, name)
}

// TestModuleERETTarFileChanged: a file that changes between the walk
// and its read fails the ERET with a reply that says so.
func TestModuleERETTarFileChanged(t *testing.T) {
	st := memory.New()
	putTree(t, st, "/tree", testTree())
	gs := &growOnOpen{Storage: st, name: "/tree/d1/d2/deep.bin"}
	cfg := config(gs)
	cfg.AllowedModules = []string{"tar"}
	c := dial(t, serve(t, cfg))
	c.login()
	_, r := c.retrCmd(`ERET tar="" /tree`)
	if r.Code != 451 || !strings.Contains(r.Text(), "changed") {
		t.Fatalf("ERET tar of a file growing: %v; want 451 saying it changed", r)
	}
	c.expect("NOOP", 200)
}

// TestModuleESTOTarNoData: an ESTO tar whose data channel never opens
// makes nothing, not even its target directory.
func TestModuleESTOTarNoData(t *testing.T) {
	c := moduleServer(t, "tar")
	c.expect(`ESTO tar="" /nodir`, 425)
	c.send("MLST /nodir")
	if r := c.read(); r.Code != 550 {
		t.Errorf("MLST /nodir after a failed ESTO tar: %v; want 550 (nothing made)", r)
	}
}
