package transfer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/history"
)

// retuneEnv makes an engine's re-tuning move files of any size (the
// in-place download path still needs more than 64 MiB) in parts of at
// most part bytes.
func retuneEnv(part int64) func(string) string {
	return func(k string) string {
		switch k {
		case EnvRetuneMin:
			return "1"
		case EnvRetuneMaxPart:
			return strconv.FormatInt(part, 10)
		}
		return os.Getenv(k)
	}
}

var (
	partRE        = regexp.MustCompile(`; (\d+)\+(\d+) `)
	partStreamsRE = regexp.MustCompile(`; (\d+)\+(\d+) -p (\d+)`)
)

// tuningParts returns the ranges of a Tuning summary, checking that
// they tile [0, size) exactly.
func tuningParts(t *testing.T, tuning string, size int64) [][2]int64 {
	t.Helper()
	var parts [][2]int64
	next := int64(0)
	for _, m := range partRE.FindAllStringSubmatch(tuning, -1) {
		off, _ := strconv.ParseInt(m[1], 10, 64)
		n, _ := strconv.ParseInt(m[2], 10, 64)
		if off != next || n <= 0 {
			t.Fatalf("part %d+%d after %d: the parts do not tile the file: %s", off, n, next, tuning)
		}
		next = off + n
		parts = append(parts, [2]int64{off, n})
	}
	if next != size {
		t.Fatalf("the parts end at %d, want %d: %s", next, size, tuning)
	}
	return parts
}

// TestRetuneDownload: an automatic download of a large file moves in
// re-tuned parts over MODE E that tile the file exactly; the copy is
// byte-identical, moved each byte once, and its record holds the steps.
// A copy interrupted in the middle resumes from its .ferry-ranges
// without loss.
func TestRetuneDownload(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 × 80 MiB")
	}
	s := startServer(t)
	const size = 80 << 20
	data := randomData(t, size)
	writeFile(t, filepath.Join(s.dir, "big"), data)
	local := t.TempDir()
	st := openStore(t)
	e := &Engine{History: st, Tool: "test", Getenv: retuneEnv(8 << 20)}
	ctx := t.Context()
	o := Options{Length: -1, Auto: true}

	dst := filepath.Join(local, "big")
	var autoEv *AutoChoice
	var last int64
	res, err := e.Copy(ctx, Request{Src: s.loc("big"), Dst: LocalLocation(dst), Options: o}, func(ev Event) {
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
	if autoEv == nil || !autoEv.ModeE || autoEv.Parallel < 2 {
		t.Fatalf("automatic choice %+v, want MODE E with streams", autoEv)
	}
	if got := mustReadFile(t, dst); !bytes.Equal(got, data) {
		t.Fatal("the download differs")
	}
	if res.Bytes != size {
		t.Errorf("moved %d bytes, want exactly %d", res.Bytes, size)
	}
	if parts := tuningParts(t, res.Tuning, size); len(parts) < 3 {
		t.Errorf("%d parts, want several: %s", len(parts), res.Tuning)
	}
	t.Logf("tuning: %s", res.Tuning)
	if _, err := os.Stat(dst + RangesSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind", dst+RangesSuffix)
	}

	// Interrupted in the middle of a part, then resumed.
	dst2 := filepath.Join(local, "big2")
	cctx, cancel := context.WithCancel(ctx)
	_, err = e.Copy(cctx, Request{Src: s.loc("big"), Dst: LocalLocation(dst2), Options: o}, func(ev Event) {
		if ev.Kind == EventProgress && ev.Progress.Bytes > 28<<20 {
			cancel()
		}
	})
	cancel()
	var left *LeftError
	if !errors.As(err, &left) {
		t.Fatalf("interrupted copy: %v, want a LeftError", err)
	}
	stt, err := ReadResumeState(dst2 + RangesSuffix)
	if err != nil || stt.Ranges.Total() == 0 || stt.Ranges.Total() >= size {
		t.Fatalf("resume state %v: %v", stt.Ranges, err)
	}
	kept := stt.Ranges.Total()
	res, err = e.Copy(ctx, Request{Src: s.loc("big"), Dst: LocalLocation(dst2), Options: o}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustReadFile(t, dst2); !bytes.Equal(got, data) {
		t.Fatal("the resumed download differs")
	}
	if res.Bytes+kept != size {
		t.Errorf("resumed: moved %d after %d kept, want %d in all", res.Bytes, kept, size)
	}
	tuningParts(t, res.Tuning, size)

	recs := records(t, e, st)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, r := range recs {
		if !r.Params.Auto || r.Params.Mode != "E" || r.Tuning == "" {
			t.Errorf("record %d: params %+v tuning %q", i, r.Params, r.Tuning)
		}
		// The record names the setting that moved most of the file.
		by := map[int]int64{}
		for _, m := range partStreamsRE.FindAllStringSubmatch(r.Tuning, -1) {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			p, _ := strconv.Atoi(m[3])
			by[p] += n
		}
		if len(by) == 0 {
			t.Errorf("record %d: no parts in %q", i, r.Tuning)
		}
		for p, n := range by {
			if n > by[r.Params.Parallel] {
				t.Errorf("record %d names -p %d, but -p %d moved more (%v): %s", i, r.Params.Parallel, p, by, r.Tuning)
			}
		}
	}
	if recs[1].Outcome != history.Cancelled {
		t.Errorf("interrupted record: %s", recs[1].Outcome)
	}
}

func mustReadFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCovered: the bytes of a range a RangeSet holds.
func TestCovered(t *testing.T) {
	var rs client.RangeSet
	rs.Add(client.Range{Start: 0, End: 10})
	rs.Add(client.Range{Start: 20, End: 30})
	for _, c := range []struct{ a, b, want int64 }{{0, 10, 10}, {5, 25, 10}, {10, 20, 0}, {0, 40, 20}, {25, 26, 1}} {
		if got := covered(rs, c.a, c.b); got != c.want {
			t.Errorf("covered(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// rangeRecorder is an io.WriterAt that counts the bytes written and
// keeps the ranges they covered.
type rangeRecorder struct {
	mu      sync.Mutex
	buf     []byte
	written int64
	ranges  client.RangeSet
}

func (w *rangeRecorder) WriteAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	copy(w.buf[off:], p)
	w.written += int64(len(p))
	w.ranges.Add(client.Range{Start: off, End: off + int64(len(p))})
	return len(p), nil
}

// TestRetuneMoveRanges: the parts of retuneDownload write each byte of
// the range asked for exactly once, and nothing outside it.
func TestRetuneMoveRanges(t *testing.T) {
	s := startServer(t)
	const size = 24<<20 + 12345
	data := randomData(t, size)
	writeFile(t, filepath.Join(s.dir, "f"), data)
	e := &Engine{Getenv: retuneEnv(3 << 20)}
	c := &copier{e: e, o: Options{Length: -1}, sessions: map[string]*client.Session{}}
	defer c.closeSessions(t.Context())
	c.auto = &AutoChoice{Parallel: 2, ModeE: true}
	w := &rangeRecorder{buf: make([]byte, size)}
	const start, end = 1<<20 + 7, size - 99
	n, tuning, err := c.retuneDownload(t.Context(), c.session(s.loc("f")), s.loc("f"), LocalLocation("x"), w, start, end, client.RetrieveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n != end-start || w.written != end-start || w.ranges.Total() != end-start || covered(w.ranges, start, end) != end-start {
		t.Fatalf("moved %d, wrote %d covering %d (%d inside the range), want %d each", n, w.written, w.ranges.Total(), covered(w.ranges, start, end), end-start)
	}
	if !bytes.Equal(w.buf[start:end], data[start:end]) {
		t.Fatal("the bytes written differ from the file's")
	}
	if parts := partRE.FindAllString(tuning, -1); len(parts) < 4 {
		t.Errorf("%d parts, want several: %s", len(parts), tuning)
	}
}

// TestPartCounts: a part on the connections of the part before counts
// only its own segments; a connection whose counters went back (a new
// one) and one without a predecessor keep theirs.
func TestPartCounts(t *testing.T) {
	before := []client.ConnStats{{SegsIn: 100, RcvOOO: 5, SegsOut: 40, Retransmits: 2}, {SegsIn: 50}}
	after := []client.ConnStats{{SegsIn: 300, RcvOOO: 5, SegsOut: 90, Retransmits: 3}, {SegsIn: 20, RcvOOO: 1}, {SegsIn: 7}}
	got := partCounts(before, after)
	want := []client.ConnStats{{SegsIn: 200, RcvOOO: 0, SegsOut: 50, Retransmits: 1}, {SegsIn: 20, RcvOOO: 1}, {SegsIn: 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("partCounts = %+v, want %+v", got, want)
	}
	if after[0].SegsIn != 300 {
		t.Error("partCounts changed its input")
	}
	if got := partCounts(nil, after); !reflect.DeepEqual(got, after) {
		t.Errorf("no part before: %+v", got)
	}
	if in, ooo := receivedTotals(want); in != 227 || ooo != 1 {
		t.Errorf("receivedTotals = %d, %d", in, ooo)
	}
}
