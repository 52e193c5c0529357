package transfer

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// uploadEnv is retuneEnv(part) with the resume state files under state.
func uploadEnv(part int64, state string) func(string) string {
	env := retuneEnv(part)
	return func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return env(k)
	}
}

// TestRetuneUpload: an automatic upload of a large file to a Ferry
// server (PART) moves in re-tuned parts that tile the file exactly; the
// server's copy is byte-identical and appears only when complete, each
// byte moved once, the record holds the steps. An upload interrupted in
// the middle leaves no file under its name, and resumes from its state
// file without loss or corruption.
func TestRetuneUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 × 48 MiB")
	}
	s := startServer(t)
	const size = 48 << 20
	data := randomData(t, size)
	local := t.TempDir()
	src := filepath.Join(local, "big")
	writeFile(t, src, data)
	st := openStore(t)
	state := t.TempDir()
	getenv := uploadEnv(6<<20, state)
	e := &Engine{History: st, Tool: "test", Getenv: getenv}
	ctx := t.Context()
	o := Options{Length: -1, Auto: true}

	var autoEv *AutoChoice
	var last int64
	res, err := e.Copy(ctx, Request{Src: LocalLocation(src), Dst: s.loc("big"), Options: o}, func(ev Event) {
		switch ev.Kind {
		case EventAuto:
			autoEv = ev.Auto
		case EventProgress:
			if ev.Progress.Bytes < last {
				t.Errorf("progress went back from %d to %d", last, ev.Progress.Bytes)
			}
			last = ev.Progress.Bytes
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if autoEv == nil || !autoEv.ModeE {
		t.Fatalf("automatic choice %+v, want MODE E", autoEv)
	}
	if got := mustReadFile(t, filepath.Join(s.dir, "big")); !bytes.Equal(got, data) {
		t.Fatal("the upload differs")
	}
	if res.Bytes != size {
		t.Errorf("moved %d bytes, want exactly %d", res.Bytes, size)
	}
	if parts := tuningParts(t, res.Tuning, size); len(parts) < 3 {
		t.Errorf("%d parts, want several: %s", len(parts), res.Tuning)
	}
	t.Logf("tuning: %s", res.Tuning)
	if _, err := os.Stat(filepath.Join(s.dir, xfer.PartName("big"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("part file left behind: %v", err)
	}
	dst2 := s.loc("big2")
	stateFile, err := UploadStatePath(getenv, src, dst2.String())
	if err != nil {
		t.Fatal(err)
	}

	// Interrupted in the middle of a part, then resumed.
	cctx, cancel := context.WithCancel(ctx)
	_, err = e.Copy(cctx, Request{Src: LocalLocation(src), Dst: dst2, Options: o}, func(ev Event) {
		if ev.Kind == EventProgress && ev.Progress.Bytes > 20<<20 {
			cancel()
		}
	})
	cancel()
	var left *LeftError
	if !errors.As(err, &left) {
		t.Fatalf("interrupted upload: %v, want a LeftError", err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "big2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an interrupted upload in parts shows under its name: %v", err)
	}
	stt, err := ReadResumeState(stateFile)
	if err != nil || stt.Ranges.Total() == 0 || stt.Ranges.Total() >= size {
		t.Fatalf("resume state %v: %v", stt.Ranges, err)
	}
	kept := stt.Ranges.Total()
	res, err = e.Copy(ctx, Request{Src: LocalLocation(src), Dst: dst2, Options: o}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustReadFile(t, filepath.Join(s.dir, "big2")); !bytes.Equal(got, data) {
		t.Fatal("the resumed upload differs")
	}
	if res.Bytes+kept != size {
		t.Errorf("resumed: moved %d after %d kept, want %d in all", res.Bytes, kept, size)
	}
	tuningParts(t, res.Tuning, size)
	if _, err := os.Stat(stateFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left behind: %v", err)
	}

	recs := records(t, e, st)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, r := range recs {
		if !r.Params.Auto || r.Params.Mode != "E" || r.Tuning == "" {
			t.Errorf("record %d: params %+v tuning %q", i, r.Params, r.Tuning)
		}
	}
	if recs[1].Outcome != history.Cancelled {
		t.Errorf("interrupted record: %s", recs[1].Outcome)
	}
}

// readRecorder is an io.ReaderAt over buf that keeps the ranges read.
type readRecorder struct {
	buf    []byte
	mu     sync.Mutex
	read   int64
	ranges client.RangeSet
}

func (r *readRecorder) ReadAt(p []byte, off int64) (int, error) {
	n := copy(p, r.buf[off:])
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read += int64(n)
	if n > 0 {
		r.ranges.Add(client.Range{Start: off, End: off + int64(n)})
	}
	return n, nil
}

// TestRetuneUploadParts: the parts of retuneUpload read and send each
// byte of the file exactly once, and the server's file is the source's;
// with the first half acknowledged before (a resumed upload), only the
// rest travels.
func TestRetuneUploadParts(t *testing.T) {
	s := startServer(t)
	const size = 20<<20 + 12345
	data := randomData(t, size)
	e := &Engine{Getenv: retuneEnv(3 << 20)}
	c := &copier{e: e, o: Options{Length: -1}, sessions: map[string]*client.Session{}}
	defer c.closeSessions(t.Context())
	c.auto = &AutoChoice{Parallel: 2, ModeE: true}
	sess := c.session(s.loc("f"))
	if !c.retuneUploadWanted(t.Context(), sess, 0, size, size) {
		t.Fatal("a Ferry server's upload is not re-tuned")
	}
	r := &readRecorder{buf: data}
	n, tuning, err := c.retuneUpload(t.Context(), sess, LocalLocation("x"), s.loc("f"), r, size, client.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n != size || r.read != size || r.ranges.Total() != size {
		t.Fatalf("sent %d, read %d covering %d, want %d each", n, r.read, r.ranges.Total(), int64(size))
	}
	if got := mustReadFile(t, filepath.Join(s.dir, "f")); !bytes.Equal(got, data) {
		t.Fatal("the server's file differs")
	}
	if parts := tuningParts(t, tuning, size); len(parts) < 4 {
		t.Errorf("%d parts, want several: %s", len(parts), tuning)
	}

	// Resumed: the first half is on the server (in its part file).
	const half = 10 << 20
	var first client.RangeSet
	first.Add(client.Range{Start: 0, End: half})
	if _, err := sess.Upload(t.Context(), bytes.NewReader(data), size, "/g", &client.StoreOptions{Part: client.Range{Start: 0, End: half}, ModeE: true}); err != nil {
		t.Fatal(err)
	}
	r = &readRecorder{buf: data}
	n, tuning, err = c.retuneUpload(t.Context(), sess, LocalLocation("x"), s.loc("g"), r, size, client.StoreOptions{Restart: first})
	if err != nil {
		t.Fatal(err)
	}
	if n != size-half || r.read != size-half || covered(r.ranges, half, size) != size-half {
		t.Fatalf("resumed: sent %d, read %d (%d after the first half), want %d each", n, r.read, covered(r.ranges, half, size), int64(size-half))
	}
	if got := mustReadFile(t, filepath.Join(s.dir, "g")); !bytes.Equal(got, data) {
		t.Fatal("the resumed file differs")
	}
	tuningParts(t, tuning, size)
}

// TestRetuneThirdParty: an automatic third-party copy of a large file to
// a Ferry server moves in re-tuned parts (ERET on the source, PART and
// ESTO on the destination) that tile the file exactly; the copy is
// byte-identical, no part file is left, the record holds the steps.
func TestRetuneThirdParty(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 32 MiB between two servers")
	}
	s1, s2 := startServer(t), startServer(t)
	const size = 32<<20 + 4321
	data := randomData(t, size)
	writeFile(t, filepath.Join(s1.dir, "big"), data)
	st := openStore(t)
	e := &Engine{History: st, Tool: "test", Getenv: retuneEnv(4 << 20)}
	res, err := e.Copy(t.Context(), Request{Src: s1.loc("big"), Dst: s2.loc("big"), Options: Options{Length: -1, Auto: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustReadFile(t, filepath.Join(s2.dir, "big")); !bytes.Equal(got, data) {
		t.Fatal("the copy differs")
	}
	if res.Bytes != size {
		t.Errorf("moved %d bytes, want exactly %d", res.Bytes, size)
	}
	if parts := tuningParts(t, res.Tuning, size); len(parts) < 3 {
		t.Errorf("%d parts, want several: %s", len(parts), res.Tuning)
	}
	t.Logf("tuning: %s", res.Tuning)
	if _, err := os.Stat(filepath.Join(s2.dir, xfer.PartName("big"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("part file left behind: %v", err)
	}
	recs := records(t, e, st)
	if len(recs) != 1 || !recs[0].Params.Auto || recs[0].Params.Mode != "E" || recs[0].Tuning == "" {
		t.Fatalf("records %+v", recs)
	}
}

// TestRetuneUploadGCT: a server without PART (GCT's) gets an automatic
// upload whole, as before: byte-identical, no tuning steps.
func TestRetuneUploadGCT(t *testing.T) {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	host, _, _ := net.SplitHostPort(addr)
	dst := Location{Kind: Remote, Path: dir + "/big", Addr: addr, Host: host, Display: "ftp://" + addr + dir + "/big"}
	const size = 12 << 20
	data := randomData(t, size)
	src := filepath.Join(t.TempDir(), "big")
	writeFile(t, src, data)
	e := &Engine{Getenv: uploadEnv(2<<20, t.TempDir())}
	res, err := e.Copy(t.Context(), Request{Src: LocalLocation(src), Dst: dst, Options: Options{Length: -1, Auto: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustReadFile(t, filepath.Join(dir, "big")); !bytes.Equal(got, data) {
		t.Fatal("the upload differs")
	}
	if res.Bytes != size || res.Tuning != "" {
		t.Errorf("moved %d bytes with tuning %q, want %d whole", res.Bytes, res.Tuning, int64(size))
	}
}
