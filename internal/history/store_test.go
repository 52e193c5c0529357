package history

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

// runStoreTests is the conformance suite of a back-end. newDSN returns
// the DSN of a new, empty database each time it is called.
func runStoreTests(t *testing.T, newDSN func(t *testing.T) string) {
	tests := []struct {
		name string
		f    func(t *testing.T, dsn string)
	}{
		{"RoundTrip", testRoundTrip},
		{"AddBatch", testAddBatch},
		{"Filter", testFilter},
		{"Links", testLinks},
		{"Probes", testProbes},
		{"ConcurrentWriters", testConcurrentWriters},
		{"SecondStore", testSecondStore},
		{"NewerSchema", testNewerSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, newDSN(t)) })
	}
}

// open opens dsn for a test and closes it when the test ends.
func open(t *testing.T, dsn string) Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func add(t *testing.T, s Store, r Record) Record {
	t.Helper()
	id, err := s.Add(t.Context(), &r)
	if err != nil {
		t.Fatal(err)
	}
	r.ID = id
	return r
}

func records(t *testing.T, s Store, f Filter) []Record {
	t.Helper()
	rs, err := s.Records(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// t0 is a start time with nanoseconds, in a zone other than UTC.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))

var (
	epA  = NewEndpoint("gsiftp", "dtn1.Example.org", 2811)
	epB  = NewEndpoint("gsiftp", "gridftp.uni-x.de", 2812)
	epC  = NewEndpoint("ftp", "10.1.2.3", 21)
	file = NewEndpoint("file", "", 0)
)

// full is a record with every field set.
func full() Record {
	return Record{
		Start:   t0,
		End:     t0.Add(12*time.Second + 345678901),
		Kind:    "third-party",
		Tool:    "cp",
		Src:     epA,
		Dst:     epB,
		SrcPath: "/data/run 7/ünïcode.h5",
		DstPath: "/store/it's \"quoted\".h5",
		Size:    1 << 40,
		Bytes:   1<<40 - 12345,
		// Kept as given, not derived from Start and End.
		Duration: 12*time.Second + 345678901,
		Outcome:  Failed,
		Error:    "426 Data connection: connection reset by peer",
		Params: Params{
			Mode: "E", Parallel: 8, TCPBuffer: 64 << 20, BlockSize: 1 << 20, Concurrency: 4,
			Pipeline: true, Stripes: 2, DCAU: "A", Prot: "P", Auto: true,
		},
		Link: Link{
			RTT: 23456789 * time.Nanosecond, Bandwidth: 9.87e9, Retransmits: 1234567, LossRate: 0.000123,
		},
		StreamRates:  []float64{1.25e8, 1.5e8, 0, 3.3333333333333335e7},
		PredictedETA: 11*time.Second + 5,
		Tuning:       "p 4→8 after 3 s",
		ClientHost:   "laptop.example.org",
		User:         "alice",
	}
}

// stored is r as a Store gives it back: times in UTC to the microsecond.
func stored(r Record) Record {
	r.Start = r.Start.UTC().Truncate(time.Microsecond)
	r.End = r.End.UTC().Truncate(time.Microsecond)
	return r
}

func testRoundTrip(t *testing.T, dsn string) {
	s := open(t, dsn)
	sparse := Record{Start: t0, Kind: "local", Src: file, Dst: file, Size: -1, Outcome: OK,
		Link: Link{Retransmits: -1}}
	for _, r := range []Record{full(), sparse} {
		want := stored(add(t, s, r))
		got := records(t, s, Filter{Limit: 1})
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, want)
		}
	}
}

// testAddBatch: AddAll stores a batch (in one transaction) as Add
// would, in order.
func testAddBatch(t *testing.T, dsn string) {
	s := open(t, dsn)
	if _, ok := s.(BatchAdder); !ok {
		t.Fatalf("%T is not a BatchAdder", s)
	}
	sparse := Record{Start: t0, Kind: "local", Src: file, Dst: file, Size: -1, Outcome: OK,
		Link: Link{Retransmits: -1}}
	batch := []Record{full(), sparse, writerRecord(1, 2)}
	ptrs := []*Record{&batch[0], &batch[1], &batch[2]}
	if err := AddAll(t.Context(), s, ptrs); err != nil {
		t.Fatal(err)
	}
	got := records(t, s, Filter{})
	if len(got) != len(batch) {
		t.Fatalf("%d records, want %d", len(got), len(batch))
	}
	for i, r := range batch {
		g := got[len(got)-1-i] // newest first
		want := stored(r)
		want.ID = g.ID
		if !reflect.DeepEqual(g, want) {
			t.Errorf("record %d read back\n%+v\nwant\n%+v", i, g, want)
		}
		if i > 0 && g.ID <= got[len(got)-i].ID {
			t.Errorf("record %d has ID %d, not after %d", i, g.ID, got[len(got)-i].ID)
		}
	}
	if err := AddAll(t.Context(), s, nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	// More than one statement's worth, and a remainder.
	n := 2*batchRows + 3
	var many []*Record
	for i := range n {
		r := writerRecord(2, i)
		many = append(many, &r)
	}
	if err := AddAll(t.Context(), s, many); err != nil {
		t.Fatal(err)
	}
	got = records(t, s, Filter{})
	if len(got) != len(batch)+n {
		t.Fatalf("%d records, want %d", len(got), len(batch)+n)
	}
	for i := range n {
		if g := got[n-1-i]; g.SrcPath != many[i].SrcPath {
			t.Fatalf("record %d of the big batch is %s, want %s", i, g.SrcPath, many[i].SrcPath)
		}
	}
}

func ids(rs []Record) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func testFilter(t *testing.T, dsn string) {
	s := open(t, dsn)
	// r[i] starts i hours after t0.
	var r []Record
	for i, c := range []struct {
		src, dst Endpoint
		outcome  string
	}{
		{epA, epB, OK}, {epB, epA, Failed}, {epA, epC, OK}, {file, epC, Cancelled}, {epC, epB, Failed},
	} {
		rec := Record{Start: t0.Add(time.Duration(i) * time.Hour), Src: c.src, Dst: c.dst, Outcome: c.outcome, Size: -1,
			User: []string{"alice", "bob", "alice", "alice", "bob"}[i], Tool: []string{"web", "web", "cp", "web", "cp"}[i]}
		r = append(r, add(t, s, rec))
	}
	tests := []struct {
		name string
		f    Filter
		want []int // indexes into r
	}{
		{"all", Filter{}, []int{4, 3, 2, 1, 0}},
		{"limit", Filter{Limit: 2}, []int{4, 3}},
		{"since inclusive", Filter{Since: t0.Add(3 * time.Hour)}, []int{4, 3}},
		{"until exclusive", Filter{Until: t0.Add(2 * time.Hour)}, []int{1, 0}},
		{"window", Filter{Since: t0.Add(time.Hour), Until: t0.Add(3*time.Hour + time.Microsecond)}, []int{3, 2, 1}},
		{"host either end", Filter{Host: epB.Host}, []int{4, 1, 0}},
		{"host any case", Filter{Host: "DTN1.example.ORG"}, []int{2, 1, 0}},
		{"outcome", Filter{Outcome: Failed}, []int{4, 1}},
		{"all together", Filter{Host: epC.Host, Outcome: Failed, Since: t0, Limit: 1}, []int{4}},
		{"nothing", Filter{Host: "elsewhere.org"}, nil},
		{"user", Filter{User: "alice"}, []int{3, 2, 0}},
		{"user and tool, limit after them", Filter{User: "alice", Tool: "web", Limit: 1}, []int{3}},
		{"tool", Filter{Tool: "cp"}, []int{4, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []int64
			for _, i := range tt.want {
				want = append(want, r[i].ID)
			}
			if got := ids(records(t, s, tt.f)); !reflect.DeepEqual(got, want) {
				t.Errorf("IDs %v, want %v", got, want)
			}
		})
	}
}

func testLinks(t *testing.T, dsn string) {
	s := open(t, dsn)
	const mb = 1e6
	p4 := Params{Mode: "E", Parallel: 4, TCPBuffer: 8 << 20}
	p8 := Params{Mode: "E", Parallel: 8, TCPBuffer: 16 << 20, Pipeline: true, DCAU: "A", Auto: true}
	rec := func(h int, src, dst Endpoint, outcome string, bytes int64, d time.Duration, p Params, l Link) {
		add(t, s, Record{Start: t0.Add(time.Duration(h) * time.Hour), Src: src, Dst: dst, Outcome: outcome,
			Bytes: bytes, Duration: d, Params: p, Link: l, Size: bytes})
	}
	// A → B, the newest on another port: that endpoint is reported.
	epB2 := epB
	epB2.Port = 2811
	rec(0, epA, epB, OK, 100*mb, 10*time.Second, p4, Link{RTT: 10 * time.Millisecond, Bandwidth: 1e9})
	rec(1, epA, epB, OK, 300*mb, 10*time.Second, p8, Link{RTT: 20 * time.Millisecond})
	rec(2, epA, epB2, Failed, 5*mb, time.Second, p8, Link{})
	// B → A: cancelled only.
	rec(3, epB, epA, Cancelled, 7*mb, time.Second, p4, Link{})
	// A → C: a success without a duration has no rate.
	rec(-1, epA, epC, OK, 10, 0, p4, Link{})

	abWant := LinkSummary{
		Src: epA, Dst: epB2, Transfers: 3, Failures: 1, Bytes: 405 * mb,
		MeanRate: 400 * mb / 20, BestRate: 300 * mb / 10, BestParams: p8,
		RTT: 20 * time.Millisecond, Bandwidth: 1e9, Last: t0.Add(2 * time.Hour).UTC().Truncate(time.Microsecond),
	}
	baWant := LinkSummary{Src: epB, Dst: epA, Transfers: 1, Bytes: 7 * mb,
		Last: t0.Add(3 * time.Hour).UTC().Truncate(time.Microsecond)}
	acWant := LinkSummary{Src: epA, Dst: epC, Transfers: 1, Bytes: 10,
		Last: t0.Add(-time.Hour).UTC().Truncate(time.Microsecond)}
	tests := []struct {
		name string
		f    Filter
		want []LinkSummary
	}{
		{"all", Filter{}, []LinkSummary{baWant, abWant, acWant}},
		{"limit", Filter{Limit: 1}, []LinkSummary{baWant}},
		{"host", Filter{Host: epC.Host}, []LinkSummary{acWant}},
		{"outcome", Filter{Outcome: Cancelled}, []LinkSummary{baWant}},
		{"until", Filter{Until: t0.Add(time.Hour)}, []LinkSummary{{
			Src: epA, Dst: epB, Transfers: 1, Bytes: 100 * mb, MeanRate: 10 * mb, BestRate: 10 * mb, BestParams: p4,
			RTT: 10 * time.Millisecond, Bandwidth: 1e9, Last: t0.UTC().Truncate(time.Microsecond),
		}, acWant}},
		{"nothing", Filter{Host: "elsewhere.org"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Links(t.Context(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("links\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func testProbes(t *testing.T, dsn string) {
	s := open(t, dsn)
	full := Probe{
		Time: t0, Src: epA, Dst: epB,
		Link:      Link{RTT: 31 * time.Millisecond, Bandwidth: 4.2e9, Retransmits: 17, LossRate: 1e-5},
		MaxBuffer: 32 << 20,
		Features:  []string{"MODE E", "PARALLEL", "SBUF", "UTF8", `REST STREAM`},
		Note:      "MODE E 4 streams, 64 MiB ERET",
	}
	one := Probe{Time: t0.Add(time.Hour), Src: epC, Link: Link{Retransmits: -1}}
	var want []Probe
	for _, p := range []Probe{full, one} {
		id, err := s.AddProbe(t.Context(), &p)
		if err != nil {
			t.Fatal(err)
		}
		p.ID = id
		p.Time = p.Time.UTC().Truncate(time.Microsecond)
		want = append([]Probe{p}, want...) // newest first
	}
	tests := []struct {
		name string
		f    Filter
		want []Probe
	}{
		{"all", Filter{}, want},
		{"limit", Filter{Limit: 1}, want[:1]},
		{"host", Filter{Host: epB.Host}, want[1:]},
		{"since", Filter{Since: t0.Add(time.Minute)}, want[:1]},
		{"until", Filter{Until: t0.Add(time.Minute)}, want[1:]},
		{"outcome does not apply", Filter{Outcome: Failed}, want},
		{"nothing", Filter{Host: "elsewhere.org"}, nil},
		{"user and tool do not apply", Filter{User: "alice", Tool: "web"}, want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Probes(t.Context(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("probes\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// writerRecord is the record number i of writer w in the concurrency
// tests.
func writerRecord(w, i int) Record {
	r := full()
	r.Start = t0.Add(time.Duration(w*1000+i) * time.Millisecond)
	r.SrcPath = fmt.Sprintf("w%d/f%d", w, i)
	return r
}

// checkWriters checks that s holds exactly the records of writers
// writers of n records each.
func checkWriters(t *testing.T, s Store, writers, n int) {
	t.Helper()
	rs := records(t, s, Filter{})
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.SrcPath] = true
	}
	if len(rs) != writers*n || len(seen) != writers*n {
		t.Fatalf("%d records, %d distinct, want %d", len(rs), len(seen), writers*n)
	}
	for w := range writers {
		for i := range n {
			if p := writerRecord(w, i).SrcPath; !seen[p] {
				t.Errorf("lost %s", p)
			}
		}
	}
}

const (
	writers          = 8
	recordsPerWriter = 50
)

// testConcurrentWriters has writers goroutines, each with its own Store
// opened at the same moment on the fresh database, add records at once.
func testConcurrentWriters(t *testing.T, dsn string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			s, err := Open(ctx, dsn, nil)
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
				return
			}
			defer s.Close()
			for i := range recordsPerWriter {
				r := writerRecord(w, i)
				if _, err := s.Add(ctx, &r); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	checkWriters(t, open(t, dsn), writers, recordsPerWriter)
}

func testSecondStore(t *testing.T, dsn string) {
	s1 := open(t, dsn)
	r1 := add(t, s1, full())
	s2 := open(t, dsn)
	if got := ids(records(t, s2, Filter{})); !reflect.DeepEqual(got, []int64{r1.ID}) {
		t.Errorf("second store sees %v, want [%d]", got, r1.ID)
	}
	r2 := full()
	r2.Start = r2.Start.Add(time.Second)
	r2 = add(t, s2, r2)
	if got := ids(records(t, s1, Filter{})); !reflect.DeepEqual(got, []int64{r2.ID, r1.ID}) {
		t.Errorf("first store sees %v, want [%d %d]", got, r2.ID, r1.ID)
	}
}

// testNewerSchema opens a database a future ferry has migrated further.
func testNewerSchema(t *testing.T, dsn string) {
	s, err := Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	ss := s.(*sqlStore)
	if _, err := ss.db.ExecContext(t.Context(), "INSERT INTO schema_version (version) VALUES (9999)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(t.Context(), dsn, nil)
	if !errors.Is(err, ErrNewerSchema) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of a newer schema: %v, want ErrNewerSchema", err)
	}
	t.Log(err)
}
