package translog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ftpclient "github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/translog"
	"github.com/ferrygrid/ferry/internal/xfer"
	"github.com/ferrygrid/ferry/server"
)

// readRecords parses the lines of the log file.
func readRecords(t *testing.T, file string) []translog.Record {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var recs []translog.Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r translog.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestServerLines: a real server with the log as its observer writes one
// line per transfer (an upload, a MODE E download after CKSM, a failed
// upload), with GCT's fields and Ferry's.
func TestServerLines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "transfers.log")
	tl, err := translog.Open(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	srv, err := server.New(server.Config{Storage: memory.New(), Anonymous: true, AnonymousWrite: true,
		Observers: []server.Observer{server.TransferFunc(tl.Transfer)}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ftpclient.Dial(ctx, l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ctx, "anonymous", "x"); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 30000)
	if _, err := c.Store(ctx, "/up.dat", bytes.NewReader(data), nil); err != nil {
		t.Fatal(err)
	}
	sum, err := c.Checksum(ctx, "MD5", "/up.dat", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "SBUF 262144"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data))
	if _, err := c.RetrieveAt(ctx, "/up.dat", &writerAt{buf}, &ftpclient.RetrieveOptions{Parallel: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, "/short.dat", strings.NewReader("tiny"), &ftpclient.StoreOptions{Size: 100}); err == nil {
		t.Fatal("a short upload succeeded")
	}
	c.Quit(ctx)

	recs := readRecords(t, file)
	if len(recs) != 3 {
		t.Fatalf("%d lines, want 3: %+v", len(recs), recs)
	}
	host, _ := os.Hostname()
	size := int64(len(data))
	want := []translog.Record{
		{Type: "STOR", File: "/up.dat", User: "anonymous", Host: host, Remote: "127.0.0.1", Bytes: size, Code: 226,
			Mode: "stream", Streams: 1, Stripes: 1},
		{Type: "RETR", File: "/up.dat", User: "anonymous", Host: host, Remote: "127.0.0.1", Bytes: size, Code: 226,
			Mode: "eblock", Streams: 2, Stripes: 1, Buffer: 262144, Block: 1 << 20, Checksum: "MD5:" + sum},
		{Type: "STOR", File: "/short.dat", User: "anonymous", Host: host, Remote: "127.0.0.1", Bytes: 4, Code: 426,
			Mode: "stream", Streams: 1, Stripes: 1, Buffer: 262144},
	}
	for i, r := range recs {
		checkTimes(t, r)
		// What the test cannot know exactly is checked above.
		r.Start, r.End, r.Duration, r.Rate, r.Retransmits = time.Time{}, time.Time{}, 0, 0, nil
		if r != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, r, want[i])
		}
	}
}

// checkTimes checks the times, rate and retransmission count of a line.
func checkTimes(t *testing.T, r translog.Record) {
	t.Helper()
	if r.Start.IsZero() || r.End.Before(r.Start) || r.Duration <= 0 {
		t.Errorf("times of %s %s: %v to %v, %vs", r.Type, r.File, r.Start, r.End, r.Duration)
	}
	if r.Code == 226 && r.Rate <= 0 {
		t.Errorf("rate of %s %s: %v", r.Type, r.File, r.Rate)
	}
	if r.Retransmits == nil || *r.Retransmits < 0 {
		t.Errorf("retransmissions of %s %s unknown", r.Type, r.File)
	}
}

type writerAt struct{ b []byte }

func (w *writerAt) WriteAt(p []byte, off int64) (int, error) { return copy(w.b[off:], p), nil }

// TestReopenAfterRename: a rotation renames the log while transfers end
// and then reopens it; no line is lost, none is torn.
func TestReopenAfterRename(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "transfers.log")
	tl, err := translog.Open(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	const writers, each = 4, 500
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				tl.Transfer(&xfer.Summary{Op: "RETR", Path: "/f", User: "u", Start: start, End: time.Now(), Bytes: int64(w*each + i), Stripes: 1, Retransmits: -1})
			}
		})
	}
	time.Sleep(time.Millisecond)
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	if err := tl.Reopen(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	old, cur := readRecords(t, file+".1"), readRecords(t, file)
	seen := map[int64]bool{}
	for _, r := range append(old, cur...) {
		if seen[r.Bytes] {
			t.Fatalf("line %d twice", r.Bytes)
		}
		seen[r.Bytes] = true
		if r.Retransmits != nil {
			t.Fatalf("unknown retransmissions written as %d", *r.Retransmits)
		}
	}
	if len(seen) != writers*each {
		t.Fatalf("%d lines (%d before the rotation, %d after), want %d", len(seen), len(old), len(cur), writers*each)
	}
	t.Logf("%d lines before the rotation, %d after", len(old), len(cur))
}

// TestRecordFields: the JSON keys, and the DN and checksum when known.
func TestRecordFields(t *testing.T) {
	start := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	tl, err := translog.Open("-", &b, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &xfer.Summary{Op: "STOR", Upload: true, Mode: xfer.ModeEBlock, Path: "/d/f", User: "alice",
		DN: "/O=Grid/CN=Alice", Start: start, Bytes: 1 << 30, Streams: 8, Opened: 8, Stripes: 2,
		Buffer: 1 << 24, BlockSize: 1 << 20, Retransmits: 12, Checksum: "ADLER32:0a0b0c0d"}
	tl.Transfer(s) // the start: no line
	s.End, s.Code = start.Add(4*time.Second), 226
	tl.Transfer(s)
	line := b.String()
	if strings.Count(line, "\n") != 1 {
		t.Fatalf("%q: want one line", line)
	}
	for _, want := range []string{`"start":"2026-11-27T16:00:00Z"`, `"end":"2026-11-27T16:00:04Z"`, `"user":"alice"`,
		`"dn":"/O=Grid/CN=Alice"`, `"file":"/d/f"`, `"type":"STOR"`, `"mode":"eblock"`, `"bytes":1073741824`,
		`"streams":8`, `"stripes":2`, `"buffer":16777216`, `"block":1048576`, `"code":226`, `"duration":4`,
		`"rate":268435456`, `"retransmits":12`, `"checksum":"ADLER32:0a0b0c0d"`} {
		if !strings.Contains(line, want) {
			t.Errorf("no %s in %s", want, line)
		}
	}
}
