package pi_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// TestModuleESTOOverlapsRefused: a client withholding the first block
// and sending the same 64 KiB again and again at offsets shifted by one
// byte (each block overlaps the last, none starts where another does)
// must not have all of it kept (the spill file would grow without
// bound): the upload fails as overlapping, and the session goes on.
func TestModuleESTOOverlapsRefused(t *testing.T) {
	cfg := config(seed(t))
	cfg.AllowedModules = []string{"tar"}
	cfg.ModuleMaxBytes = 4 << 20
	c := dial(t, serve(t, cfg))
	c.login()
	c.expect("MODE E", 200)
	block := make([]byte, 64<<10)
	_, rest := c.modeEStoreRaw(`ESTO tar="" /ov`, func(d net.Conn) {
		var h [eblock.HeaderSize]byte
		for i := range 256 { // 16 MiB, four times the limit
			eblock.Header{Count: uint64(len(block)), Offset: uint64(1<<20 + i)}.Put(h[:])
			if _, err := d.Write(h[:]); err != nil {
				return
			}
			if _, err := d.Write(block); err != nil {
				return
			}
		}
		eblock.Header{Desc: eblock.DescEOF | eblock.DescEOD, Offset: 1}.Put(h[:])
		d.Write(h[:])
	})
	final := rest[len(rest)-1]
	if final.Code == 226 || !strings.Contains(final.Text(), "overlap") {
		t.Errorf("ESTO of overlapping blocks: %v; want a failure naming the overlap", final)
	}
	c.expect("MODE S", 200)
	c.expect("NOOP", 200)
}

// TestModuleESTOTinyBlocksRefused: one-byte blocks at scattered offsets
// ahead of a withheld first block each cost the server about a hundred
// bytes of memory until the first block comes; past a bound the upload
// is refused instead. (The range markers list every block: read with
// no bound on the line.)
func TestModuleESTOTinyBlocksRefused(t *testing.T) {
	cfg := config(seed(t))
	cfg.AllowedModules = []string{"tar"}
	c := dial(t, serve(t, cfg))
	c.login()
	c.expect("MODE E", 200)
	r := c.expect("PASV", 227)
	ap, _ := wire.ParsePASVReply(r.Text())
	c.send(`ESTO tar="" /tiny`)
	d, err := net.Dial("tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c.read() // 150
	go func() {
		var b [eblock.HeaderSize + 1]byte
		for i := range 100_000 {
			eblock.Header{Count: 1, Offset: uint64(64<<20 + 2*i)}.Put(b[:])
			if _, err := d.Write(b[:]); err != nil {
				return
			}
		}
		eblock.Header{Desc: eblock.DescEOF | eblock.DescEOD, Offset: 1}.Put(b[:])
		d.Write(b[:eblock.HeaderSize])
	}()
	br := bufio.NewReaderSize(c.conn, 1<<16)
	c.conn.SetReadDeadline(time.Now().Add(time.Minute))
	var final string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the ESTO replies: %v", err)
		}
		if len(line) >= 4 && line[3] == ' ' && line[0] >= '2' {
			final = line
			break
		}
	}
	if strings.HasPrefix(final, "226") || !strings.Contains(final, "small blocks") {
		t.Errorf("ESTO of 100000 one-byte blocks: %q; want a failure naming the small blocks", final)
	}
	c.rr = wire.NewReplyReader(br)
	c.expect("MODE S", 200)
	c.expect("NOOP", 200)
}

// TestModuleESTOTarNoEmptyFileWhileStreaming: while a tar entry's data
// is still arriving (a slow or stalled client), nothing is under the
// entry's name: no empty file that a reader would take for the whole
// file, and that a crash of the server would leave behind as one.
func TestModuleESTOTarNoEmptyFileWhileStreaming(t *testing.T) {
	st := seed(t)
	cfg := config(st)
	cfg.AllowedModules = []string{"tar"}
	c := dial(t, serve(t, cfg))
	c.login()
	data := randomBytes(1 << 20)
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big.bin", Size: int64(len(data)), Mode: 0o644})
	tw.Write(data)
	tw.Close()
	archive := b.Bytes()
	half := 512 + len(data)/2

	d := c.dataConn()
	c.send(`ESTO tar="" /slow`)
	if r := c.read(); r.Class() != 1 {
		t.Fatalf("ESTO: %v", r)
	}
	d.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := d.Write(archive[:half]); err != nil {
		t.Fatal(err)
	}
	// The entry's part file appears once its data is being written.
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; {
		list, _ := st.ReadDir(ctx, "/slow")
		if slices.ContainsFunc(list, func(e dsi.FileInfo) bool { return xfer.IsPartName(e.Name) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no part file while the entry's data arrives: %v", list)
		}
		time.Sleep(time.Millisecond)
	}
	if fi, err := st.Stat(ctx, "/slow/big.bin"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("while its data arrives, big.bin is there (%d bytes, %v)", fi.Size, err)
	}
	if _, err := d.Write(archive[half:]); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if r := c.readUntilFinal(); r[len(r)-1].Code != 226 {
		t.Fatalf("ESTO: %v", r)
	}
	if got, r := c.retr("/slow/big.bin"); r.Code != 226 || !bytes.Equal(got, data) {
		t.Errorf("big.bin after the upload: %d bytes, %v", len(got), r)
	}
}
