package transfer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/job"
)

// openStore opens a new SQLite history in a temporary directory.
func openStore(t *testing.T) history.Store {
	t.Helper()
	st, err := history.Open(t.Context(), filepath.Join(t.TempDir(), "history.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// records closes the engine (writing its records) and reads them back,
// oldest first.
func records(t *testing.T, e *Engine, st history.Store) []history.Record {
	t.Helper()
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Records(t.Context(), history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
		recs[i], recs[j] = recs[j], recs[i]
	}
	return recs
}

// TestEngineRecords: each copy is one record, failed ones included,
// with its kind, endpoints, size, parameters and outcome.
func TestEngineRecords(t *testing.T) {
	s := startServer(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	st := openStore(t)
	e := &Engine{History: st, Tool: "test"}
	data := randomData(t, 256<<10)
	local := t.TempDir()
	src := filepath.Join(local, "src")
	writeFile(t, src, data)
	ctx := t.Context()
	o := Options{Length: -1, Parallel: 2, TCPBuffer: 1 << 20, Auto: true, PredictedETA: 3 * time.Second}
	for _, req := range []Request{
		{Src: LocalLocation(src), Dst: s.loc("up"), Options: o},
		{Src: s.loc("up"), Dst: LocalLocation(filepath.Join(local, "down")), Options: o},
		{Src: s.loc("up"), Dst: s.loc("third"), Options: o},
	} {
		if _, err := e.Copy(ctx, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Copy(ctx, Request{Src: s.loc("missing"), Dst: LocalLocation(filepath.Join(local, "missing")), Options: o}, nil); err == nil {
		t.Fatal("copy of a missing file succeeded")
	}
	recs := records(t, e, st)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	server := s.loc("").HistoryEndpoint()
	file := history.Endpoint{Scheme: "file"}
	for i, want := range []struct {
		kind     string
		src, dst history.Endpoint
		outcome  string
	}{
		{"upload", file, server, history.OK},
		{"download", server, file, history.OK},
		{"third-party", server, server, history.OK},
		{"download", server, file, history.Failed},
	} {
		r := recs[i]
		if r.Kind != want.kind || r.Src != want.src || r.Dst != want.dst || r.Outcome != want.outcome || r.Tool != "test" {
			t.Errorf("record %d: %s %+v -> %+v %s (%s), want %+v", i, r.Kind, r.Src, r.Dst, r.Outcome, r.Tool, want)
		}
		if want.outcome == history.OK && (r.Size != int64(len(data)) || r.Bytes != int64(len(data)) || r.Error != "") {
			t.Errorf("record %d: size %d bytes %d error %q", i, r.Size, r.Bytes, r.Error)
		}
		if p := r.Params; p.Mode != "E" || p.Parallel != 2 || p.TCPBuffer != 1<<20 || p.Concurrency != 1 || !p.Auto || r.PredictedETA != 3*time.Second {
			t.Errorf("record %d: params %+v", i, p)
		}
	}
	if recs[3].Error == "" {
		t.Error("the failed copy has no error")
	}
	if len(recs[1].StreamRates) != 2 {
		t.Errorf("download stream rates %v, want 2", recs[1].StreamRates)
	}
}

// TestEngineRecordsBatch: the files of a pipelined batch are recorded
// one by one.
func TestEngineRecordsBatch(t *testing.T) {
	s := startServer(t)
	st := openStore(t)
	e := &Engine{History: st, Tool: "test"}
	dir := filepath.Join(s.dir, "tree")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		writeFile(t, filepath.Join(dir, fmt.Sprint("f", i)), randomData(t, 1000+i))
	}
	o := Options{Length: -1, Concurrency: 1, Pipeline: true}
	j := e.NewJob(o, true)
	first := j.NewWorker()
	defer first.Close(context.Background())
	plan := &job.Plan{}
	dst := filepath.Join(t.TempDir(), "out")
	if err := j.Plan(t.Context(), first, plan, s.loc("tree/"), LocalLocation(dst+"/"), job.Options{Recursive: true, CreateDirs: true}); err != nil {
		t.Fatal(err)
	}
	r := &job.Runner{Workers: 1, NewWorker: j.NewWorker, MaxBatch: BatchMaxPairs}
	if sum := r.Run(t.Context(), plan, first); !sum.OK() || sum.Files != 3 {
		t.Fatalf("job: %+v", sum)
	}
	recs := records(t, e, st)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if r.Kind != "download" || r.Outcome != history.OK || r.Size != r.Bytes || r.Size < 1000 || !r.Params.Pipeline || r.Params.Mode != "E" {
			t.Errorf("record %+v", r)
		}
	}
}

// failingStore fails every Add.
type failingStore struct {
	history.Off
	adds int
}

func (f *failingStore) Add(context.Context, *history.Record) (int64, error) {
	f.adds++
	return 0, errors.New("disk full")
}

// TestEngineHistoryFails: a history that cannot be written does not fail
// the copies.
func TestEngineHistoryFails(t *testing.T) {
	s := startServer(t)
	fs := &failingStore{}
	e := &Engine{History: fs}
	src := filepath.Join(t.TempDir(), "src")
	writeFile(t, src, []byte("data"))
	for range 2 {
		if _, err := e.Copy(t.Context(), Request{Src: LocalLocation(src), Dst: s.loc("up"), Options: Options{Length: -1}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	e.Close(ctx)
	if fs.adds != 2 {
		t.Errorf("%d records tried, want 2", fs.adds)
	}
}

// TestLinkOf: the link measurements come from the connections' TCP_INFO.
func TestLinkOf(t *testing.T) {
	p := client.Progress{Streams: []int64{1000, 3000}, Bytes: 4000, Conns: []client.ConnStats{
		{Bytes: 1000, RTT: 10 * time.Millisecond, Retransmits: 1, SegsOut: 50},
		{Bytes: 3000, RTT: 30 * time.Millisecond, Retransmits: 3, SegsOut: 150},
	}}
	l, rates := linkOf(p, 500, 2*time.Second)
	if l.RTT != 20*time.Millisecond || l.Retransmits != 4 || l.LossRate != 0.02 || l.Bandwidth != 4000 {
		t.Errorf("link %+v", l)
	}
	if len(rates) != 2 || rates[0] != 500 || rates[1] != 1500 {
		t.Errorf("rates %v", rates)
	}
	if l, _ := linkOf(client.Progress{Bytes: 5}, 0, time.Second); l.Retransmits != -1 {
		t.Errorf("no TCP_INFO: %+v", l)
	}
}

// TestEngineRecordsFailures: a copy that cannot start (no server) and
// one interrupted under way are recorded, Failed and Cancelled.
func TestEngineRecordsFailures(t *testing.T) {
	s := startServer(t)
	st := openStore(t)
	e := &Engine{History: st}
	src := filepath.Join(t.TempDir(), "src")
	writeFile(t, src, randomData(t, 1<<20))
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := Location{Kind: Remote, Path: "/x", Addr: l.Addr().String(), Host: "127.0.0.1", Display: "ftp://" + l.Addr().String() + "/x"}
	l.Close()
	if _, err := e.Copy(t.Context(), Request{Src: LocalLocation(src), Dst: dead, Options: Options{Length: -1}}, nil); err == nil {
		t.Fatal("upload to a closed port succeeded")
	}
	// Standard input gives some bytes, then nothing until the copy is
	// cancelled.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e.Stdin = &stallReader{ctx: ctx, cancel: cancel}
	if _, err := e.Copy(ctx, Request{Src: Location{Kind: Stdio, Display: "-"}, Dst: s.loc("up"), Options: Options{Length: -1}}, nil); err == nil {
		t.Fatal("cancelled upload succeeded")
	}
	recs := records(t, e, st)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if r := recs[0]; r.Outcome != history.Failed || r.Error == "" || r.Kind != "upload" || r.Size != 1<<20 || r.Bytes != 0 {
		t.Errorf("failed upload: %+v", r)
	}
	if r := recs[1]; r.Outcome != history.Cancelled || r.Error == "" || r.Kind != "upload" {
		t.Errorf("cancelled upload: %+v", r)
	}
}

// stallReader gives 64 KiB, then cancels and blocks until its context is
// done.
type stallReader struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   bool
}

func (r *stallReader) Read(p []byte) (int, error) {
	if !r.done {
		r.done = true
		return len(p[:min(len(p), 64<<10)]), nil
	}
	r.cancel()
	<-r.ctx.Done()
	return 0, r.ctx.Err()
}

// gatedStore blocks its first Add until gate is closed, and counts the
// records of each AddBatch.
type gatedStore struct {
	history.Off
	gate    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	paths   []string // in the order stored
	batches []int    // the size of each AddBatch
}

func (g *gatedStore) Add(_ context.Context, r *history.Record) (int64, error) {
	if len(g.paths) == 0 {
		close(g.entered)
		<-g.gate
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paths = append(g.paths, r.SrcPath)
	return int64(len(g.paths)), nil
}

func (g *gatedStore) AddBatch(_ context.Context, rs []*history.Record) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.batches = append(g.batches, len(rs))
	for _, r := range rs {
		g.paths = append(g.paths, r.SrcPath)
	}
	return nil
}

// TestRecorderBatches: the records queued while one is written are
// written together, with one AddBatch (one transaction), in order.
func TestRecorderBatches(t *testing.T) {
	g := &gatedStore{gate: make(chan struct{}), entered: make(chan struct{})}
	e := &Engine{History: g}
	r := e.recorder()
	n := recordBatch + 10
	r.add(&history.Record{SrcPath: "0"})
	<-g.entered // the writer holds record 0
	for i := 1; i < n; i++ {
		r.add(&history.Record{SrcPath: strconv.Itoa(i)})
	}
	close(g.gate)
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(g.paths) != n {
		t.Fatalf("%d records stored, want %d", len(g.paths), n)
	}
	for i, p := range g.paths {
		if p != strconv.Itoa(i) {
			t.Fatalf("record %d is %s: out of order", i, p)
		}
	}
	if want := []int{recordBatch, n - 1 - recordBatch}; !slices.Equal(g.batches, want) {
		t.Errorf("batches %v, want %v", g.batches, want)
	}
}
