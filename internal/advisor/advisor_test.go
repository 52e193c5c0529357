package advisor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
)

var (
	local  = history.Endpoint{Scheme: "file"}
	srvA   = history.NewEndpoint("gsiftp", "gridftp.a.example.org", 2811)
	srvA2  = history.NewEndpoint("gsiftp", "mover.a.example.org", 2811) // same domain as srvA
	srvB   = history.NewEndpoint("gsiftp", "gridftp.b.example.net", 2811)
	srvC   = history.NewEndpoint("gsiftp", "ftp.c.example.com", 2811)
	t0     = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	kernel = Kernel{RmemMax: 4 << 20, WmemMax: 4 << 20, TCPRmem: [3]int{4096, 131072, 6 << 20}, TCPWmem: [3]int{4096, 16384, 4 << 20}}
)

// rec makes a successful download record of size bytes at rate bytes/s.
func rec(id int64, src history.Endpoint, size int64, rate float64, par, buf int, link history.Link) history.Record {
	d := time.Duration(float64(size) / rate * float64(time.Second))
	return history.Record{
		ID: id, Start: t0.Add(time.Duration(id) * time.Minute), Kind: "download", Tool: "cp",
		Src: src, Dst: local, Size: size, Bytes: size, Duration: d, Outcome: history.OK,
		Params: history.Params{Mode: "E", Parallel: par, TCPBuffer: buf}, Link: link,
	}
}

var (
	lan = history.Link{RTT: 300 * time.Microsecond, Bandwidth: 1e9}
	wan = history.Link{RTT: 50 * time.Millisecond, Bandwidth: 1e9, Retransmits: 10, LossRate: 0.001}
)

func probe(id int64, ep history.Endpoint, l history.Link, maxBuf int) history.Probe {
	return history.Probe{ID: id, Time: t0, Src: ep, Link: l, MaxBuffer: maxBuf, Features: []string{"ERET", "SBUF"}}
}

func TestAdviseBasis(t *testing.T) {
	const G = 1 << 30
	tests := []struct {
		name      string
		in        Input
		basis     Basis
		parallel  int
		records   []int64 // the advice's records, in order; nil: not checked
		reasonHas []string
	}{
		{
			name: "host pair beats faster domain pair",
			in: Input{Src: srvA, Dst: local, Size: G, Records: []history.Record{
				rec(1, srvA, G, 50e6, 4, 0, wan),
				rec(2, srvA2, G, 100e6, 8, 0, wan),
				rec(3, srvB, G, 110e6, 16, 0, wan),
			}},
			basis: HostPair, parallel: 4, records: []int64{1},
			reasonHas: []string{"1 past transfer(s) gridftp.a.example.org → local", "#1"},
		},
		{
			name: "domain pair beats similar link",
			in: Input{Src: srvA, Dst: local, Size: G, Probe: &history.Probe{Link: wan}, Records: []history.Record{
				rec(2, srvA2, G, 60e6, 8, 0, wan),
				rec(3, srvB, G, 110e6, 16, 0, wan),
			}},
			basis: DomainPair, parallel: 8, records: []int64{2},
			reasonHas: []string{"between domains example.org → local"},
		},
		{
			name: "similar link beats model",
			in: Input{Src: srvA, Dst: local, Size: G, Probe: &history.Probe{Link: wan}, Records: []history.Record{
				rec(3, srvB, G, 110e6, 16, 0, wan),
				rec(4, srvC, G, 110e6, 2, 0, lan),
			}},
			basis: SimilarLink, parallel: 16, records: []int64{3},
			reasonHas: []string{"nearest link is gridftp.b.example.net → local"},
		},
		{
			name: "far link: model",
			in: Input{Src: srvA, Dst: local, Size: G, Probe: &history.Probe{Link: wan}, Records: []history.Record{
				rec(4, srvC, G, 110e6, 2, 0, lan),
			}},
			basis: Model, reasonHas: []string{"bandwidth-delay product", "Mathis"},
		},
		{
			name:  "stored probe of the source host",
			in:    Input{Src: srvA, Dst: local, Size: G, Probes: []history.Probe{probe(7, srvA, wan, 0), probe(8, srvB, lan, 0)}},
			basis: Model, reasonHas: []string{"probe #7"},
		},
		{
			name:  "nothing known: defaults",
			in:    Input{Src: srvA, Dst: local, Size: G},
			basis: Default, parallel: DefaultParallel,
			reasonHas: []string{"defaults"},
		},
		{
			name: "failed records are ignored",
			in: Input{Src: srvA, Dst: local, Size: G, Records: []history.Record{
				func() history.Record { r := rec(1, srvA, G, 50e6, 4, 0, wan); r.Outcome = history.Failed; return r }(),
			}},
			basis: Default, parallel: DefaultParallel,
		},
		{
			name: "another client host's local end is not this host pair",
			in: Input{Src: srvA, Dst: local, Size: G, ClientHost: "here", Records: []history.Record{
				func() history.Record { r := rec(1, srvA, G, 50e6, 4, 0, wan); r.ClientHost = "elsewhere"; return r }(),
				func() history.Record { r := rec(2, srvA, G, 40e6, 2, 0, wan); r.ClientHost = "here"; return r }(),
			}},
			basis: HostPair, parallel: 2, records: []int64{2},
		},
		{
			name: "fastest parameter set wins",
			in: Input{Src: srvA, Dst: local, Size: G, Records: []history.Record{
				rec(1, srvA, G, 50e6, 4, 0, wan),
				rec(2, srvA, G, 52e6, 4, 0, wan),
				rec(3, srvA, G, 90e6, 8, 0, wan),
				rec(4, srvA, G, 88e6, 8, 0, wan),
				rec(5, srvA, G, 20e6, 1, 0, wan),
			}},
			basis: HostPair, parallel: 8, records: []int64{4, 3},
			reasonHas: []string{"the fastest of 3 parameter set(s)"},
		},
		{
			name: "file-size similarity: small-file winner not used for big files",
			in: Input{Src: srvA, Dst: local, Size: 10 * G, Records: []history.Record{
				// -p 1 was fastest on 1 MiB files, -p 8 on 10 GiB ones.
				rec(1, srvA, 1<<20, 120e6, 1, 0, wan),
				rec(2, srvA, 1<<20, 118e6, 1, 0, wan),
				rec(3, srvA, 10*G, 100e6, 8, 0, wan),
			}},
			basis: HostPair, parallel: 8,
		},
		{
			name: "file-size similarity: small files",
			in: Input{Src: srvA, Dst: local, Size: 1 << 20, Records: []history.Record{
				rec(1, srvA, 1<<20, 20e6, 1, 0, wan),
				rec(2, srvA, 1<<20, 22e6, 1, 0, wan),
				rec(3, srvA, 10*G, 100e6, 8, 0, wan),
			}},
			basis: HostPair, parallel: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Kernel = kernel
			a := Advise(in)
			if a.Basis != tt.basis {
				t.Fatalf("Basis = %s, want %s (reason: %s)", a.Basis, tt.basis, a.Reason)
			}
			if tt.parallel != 0 && a.Params.Parallel != tt.parallel {
				t.Errorf("Parallel = %d, want %d (reason: %s)", a.Params.Parallel, tt.parallel, a.Reason)
			}
			if tt.records != nil && !slices.Equal(a.Records, tt.records) {
				t.Errorf("Records = %v, want %v", a.Records, tt.records)
			}
			for _, s := range tt.reasonHas {
				if !strings.Contains(a.Reason, s) {
					t.Errorf("Reason %q lacks %q", a.Reason, s)
				}
			}
			if !a.Params.Auto {
				t.Error("Params.Auto not set")
			}
			if a.Basis != Default {
				if a.PredictedRate <= 0 || a.ETA <= 0 {
					t.Errorf("PredictedRate %v, ETA %v: want both > 0", a.PredictedRate, a.ETA)
				}
				if !(a.ETALow <= a.ETA && a.ETA <= a.ETAHigh && a.ETALow < a.ETAHigh) {
					t.Errorf("ETA range %v ≤ %v ≤ %v broken", a.ETALow, a.ETA, a.ETAHigh)
				}
			} else if a.PredictedRate != 0 || a.ETA != 0 {
				t.Errorf("default advice predicts %v, ETA %v", a.PredictedRate, a.ETA)
			}
		})
	}
}

func TestModelLossMeansMoreStreams(t *testing.T) {
	mk := func(loss float64) Advice {
		l := history.Link{RTT: 25 * time.Millisecond, Bandwidth: 1e9, LossRate: loss}
		return Advise(Input{Src: srvA, Dst: local, Size: 1 << 30, Kernel: kernel, Probe: &history.Probe{Link: l}})
	}
	prev := 0
	for _, loss := range []float64{0, 0.0001, 0.001, 0.01} {
		a := mk(loss)
		if a.Basis != Model {
			t.Fatalf("loss %g: Basis %s", loss, a.Basis)
		}
		if a.Params.Parallel < prev {
			t.Errorf("loss %g: -p %d, fewer than %d at less loss", loss, a.Params.Parallel, prev)
		}
		prev = a.Params.Parallel
		t.Logf("loss %g: -p %d -tcp-bs %d rate %.0f limit %s", loss, a.Params.Parallel, a.Params.TCPBuffer, a.PredictedRate, a.Limit)
	}
	if lo, hi := mk(0).Params.Parallel, mk(0.01).Params.Parallel; hi <= lo {
		t.Errorf("1%% loss: -p %d, no more than lossless -p %d", hi, lo)
	}
	if a := mk(0.01); a.Limit != "loss" && a.Params.Parallel != MaxParallel {
		t.Errorf("1%% loss at 25 ms: limit %s with -p %d; want the Mathis bound or the stream cap", a.Limit, a.Params.Parallel)
	}
}

func TestModelBufferGrowsWithBDPAndIsCapped(t *testing.T) {
	mk := func(rtt time.Duration, k Kernel) Advice {
		l := history.Link{RTT: rtt, Bandwidth: 1e9}
		return Advise(Input{Src: srvA, Dst: local, Size: 1 << 30, Kernel: k, Probe: &history.Probe{Link: l}})
	}
	small, big := mk(2*time.Millisecond, Kernel{}), mk(40*time.Millisecond, Kernel{})
	if bs, bb := small.Params.TCPBuffer*small.Params.Parallel, big.Params.TCPBuffer*big.Params.Parallel; bb <= bs {
		t.Errorf("total buffer at 40 ms %d, not above %d at 2 ms", bb, bs)
	}
	if big.BufferCap != "" {
		t.Errorf("no kernel limit known, yet BufferCap %q", big.BufferCap)
	}
	// 1 Gbit/s × 100 ms = 12.5 MB; rmem_max 1 MiB caps every stream.
	k := Kernel{RmemMax: 1 << 20, WmemMax: 8 << 20}
	a := mk(100*time.Millisecond, k)
	if a.Params.TCPBuffer > k.RmemMax {
		t.Errorf("-tcp-bs %d above rmem_max %d", a.Params.TCPBuffer, k.RmemMax)
	}
	if a.BufferCap != "net.core.rmem_max" || !strings.Contains(a.Reason, "net.core.rmem_max") {
		t.Errorf("BufferCap %q, reason %q: want net.core.rmem_max named", a.BufferCap, a.Reason)
	}
	if a.Params.Parallel < 9 {
		t.Errorf("-p %d cannot cover a 12.5 MB BDP with 1 MiB buffers", a.Params.Parallel)
	}
	// An upload is capped by wmem_max instead.
	up := Advise(Input{Src: local, Dst: srvA, Size: 1 << 30, Kernel: Kernel{RmemMax: 8 << 20, WmemMax: 1 << 20},
		Probe: &history.Probe{Link: history.Link{RTT: 100 * time.Millisecond, Bandwidth: 1e9}}})
	if up.BufferCap != "net.core.wmem_max" || up.Params.TCPBuffer > 1<<20 {
		t.Errorf("upload: BufferCap %q, -tcp-bs %d; want wmem_max to cap at 1 MiB", up.BufferCap, up.Params.TCPBuffer)
	}
	// The server's SBUF answer caps too.
	srv := Advise(Input{Src: srvA, Dst: local, Size: 1 << 30, Kernel: Kernel{RmemMax: 64 << 20},
		Probe: &history.Probe{MaxBuffer: 2 << 20, Link: history.Link{RTT: 100 * time.Millisecond, Bandwidth: 1e9}}})
	if srv.Params.TCPBuffer > 2<<20 {
		t.Errorf("-tcp-bs %d above the server's 2 MiB", srv.Params.TCPBuffer)
	}
}

func TestHistoryBufferCappedByKernel(t *testing.T) {
	in := Input{Src: srvA, Dst: local, Size: 1 << 30, Kernel: Kernel{RmemMax: 2 << 20},
		Records: []history.Record{rec(1, srvA, 1<<30, 100e6, 4, 16<<20, wan)}}
	a := Advise(in)
	if a.Params.TCPBuffer != 2<<20 || a.BufferCap != "net.core.rmem_max" {
		t.Errorf("-tcp-bs %d, BufferCap %q; want 2 MiB capped by net.core.rmem_max (%s)", a.Params.TCPBuffer, a.BufferCap, a.Reason)
	}
}

func TestManySmallFiles(t *testing.T) {
	a := Advise(Input{Src: srvA, Dst: local, Size: 100 << 10, Files: 1000, Kernel: kernel, Probe: &history.Probe{Link: wan}})
	if a.Params.Concurrency < 2 || !a.Params.Pipeline {
		t.Errorf("1000 small files: -cc %d -pp %v (%s)", a.Params.Concurrency, a.Params.Pipeline, a.Reason)
	}
	one := Advise(Input{Src: srvA, Dst: local, Size: 100 << 10, Files: 1, Kernel: kernel, Probe: &history.Probe{Link: wan}})
	if one.Params.Concurrency > 1 || one.ETA >= a.ETA {
		t.Errorf("one file: -cc %d, ETA %v (1000 files: %v)", one.Params.Concurrency, one.ETA, a.ETA)
	}
}

func TestStripes(t *testing.T) {
	a := Advise(Input{Src: srvA, Dst: srvB, Size: 1 << 30, Stripes: 4})
	if a.Params.Stripes != 4 || a.Params.Mode != "E" {
		t.Errorf("Stripes %d mode %s", a.Params.Stripes, a.Params.Mode)
	}
}

func TestThirdPartyProbesCombine(t *testing.T) {
	pa := probe(1, srvA, history.Link{RTT: 10 * time.Millisecond, Bandwidth: 10e9}, 0)
	pb := probe(2, srvB, history.Link{RTT: 30 * time.Millisecond, Bandwidth: 1e9, LossRate: 0.001}, 0)
	a := Advise(Input{Src: srvA, Dst: srvB, Size: 1 << 30, Probes: []history.Probe{pa, pb}})
	if a.Basis != Model || !strings.Contains(a.Reason, "probes #1 and #2") {
		t.Fatalf("basis %s: %s", a.Basis, a.Reason)
	}
	if a.PredictedRate > 1e9/8 {
		t.Errorf("predicted %v B/s above the slower end's 1 Gbit/s", a.PredictedRate)
	}
}

// synthetic returns n records spread over 50 servers in 10 domains with
// random parameters, plus the fastest record of srvA's pair forced to a
// known parameter set.
func synthetic(n int) []history.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]history.Record, 0, n)
	for i := range n {
		host := fmt.Sprintf("h%d.d%d.example.edu", i%50, i%10)
		ep := history.NewEndpoint("gsiftp", host, 2811)
		par := []int{1, 2, 4, 8, 16}[rng.IntN(5)]
		rate := 10e6 + float64(par)*5e6*rng.Float64()
		size := int64(1) << (20 + rng.IntN(12))
		link := history.Link{RTT: time.Duration(1+i%50) * time.Millisecond, Bandwidth: 1e9, Retransmits: -1}
		recs = append(recs, rec(int64(i+1), ep, size, rate, par, 0, link))
	}
	return recs
}

func TestAdviseTenThousandRecords(t *testing.T) {
	recs := synthetic(10000)
	target := history.NewEndpoint("gsiftp", "h7.d7.example.edu", 2811)
	// Make -p 12 clearly best on this pair.
	for i := range recs {
		if recs[i].Src.Host == target.Host && i%3 == 0 {
			recs[i].Params.Parallel = 12
			recs[i].Duration = time.Duration(float64(recs[i].Bytes) / 500e6 * float64(time.Second))
		}
	}
	a := Advise(Input{Src: target, Dst: local, Size: 64 << 20, Records: recs, Kernel: kernel})
	if a.Basis != HostPair || a.Params.Parallel != 12 {
		t.Fatalf("basis %s -p %d: %s", a.Basis, a.Params.Parallel, a.Reason)
	}
	for _, id := range a.Records {
		r := recs[id-1]
		if r.Src.Host != target.Host || r.Params.Parallel != 12 {
			t.Errorf("record #%d (%s -p %d) is not of the chosen set", id, r.Src.Host, r.Params.Parallel)
		}
	}
	// Another host of the domain d7 but unseen: domain pair.
	other := history.NewEndpoint("gsiftp", "new.d7.example.edu", 2811)
	if b := Advise(Input{Src: other, Dst: local, Size: 64 << 20, Records: recs}); b.Basis != DomainPair {
		t.Errorf("unseen host of a known domain: basis %s", b.Basis)
	}
	// An unseen domain with a probe like h7's link (7 or 8 ms): similar.
	far := history.NewEndpoint("gsiftp", "x.unseen.org", 2811)
	c := Advise(Input{Src: far, Dst: local, Size: 64 << 20, Records: recs,
		Probe: &history.Probe{Link: history.Link{RTT: 8 * time.Millisecond, Bandwidth: 1e9}}})
	if c.Basis != SimilarLink {
		t.Errorf("unseen domain, probe: basis %s: %s", c.Basis, c.Reason)
	}
}

func BenchmarkAdvise10k(b *testing.B) {
	recs := synthetic(10000)
	far := history.NewEndpoint("gsiftp", "x.unseen.org", 2811)
	in := Input{Src: far, Dst: local, Size: 64 << 20, Files: 10, Records: recs, Kernel: kernel,
		Probe: &history.Probe{Link: history.Link{RTT: 8 * time.Millisecond, Bandwidth: 1e9}}}
	for b.Loop() {
		Advise(in)
	}
}

func TestModelPrefersAutotuning(t *testing.T) {
	k := Kernel{RmemMax: 4 << 20, WmemMax: 4 << 20, TCPRmem: [3]int{4096, 131072, 32 << 20}}
	mk := func(rtt time.Duration, bw float64, k Kernel) Advice {
		return Advise(Input{Src: srvA, Dst: local, Size: 1 << 30, Kernel: k, Probe: &history.Probe{Link: history.Link{RTT: rtt, Bandwidth: bw}}})
	}
	// 1 Gbit/s × 50 ms = 6.25 MB: tcp_rmem's 32 MiB covers it, an
	// explicit buffer (capped at 4 MiB by rmem_max) would not.
	a := mk(50*time.Millisecond, 1e9, k)
	if a.Params.TCPBuffer != 0 || a.Params.Parallel != 1 || a.Limit != "link" {
		t.Errorf("-tcp-bs %d -p %d limit %s: want autotuning, one stream (%s)", a.Params.TCPBuffer, a.Params.Parallel, a.Limit, a.Reason)
	}
	// 10 Gbit/s × 100 ms = 125 MB: several autotuned streams.
	a = mk(100*time.Millisecond, 10e9, k)
	if a.Params.TCPBuffer != 0 || a.Params.Parallel < 5 {
		t.Errorf("-tcp-bs %d -p %d: want autotuning and ≥ 5 streams (%s)", a.Params.TCPBuffer, a.Params.Parallel, a.Reason)
	}
	// A small tcp_rmem and a large rmem_max: explicit buffers.
	k2 := Kernel{RmemMax: 64 << 20, TCPRmem: [3]int{4096, 131072, 1 << 20}}
	a = mk(50*time.Millisecond, 1e9, k2)
	if a.Params.TCPBuffer < 4<<20 {
		t.Errorf("-tcp-bs %d: want an explicit buffer ≥ 4 MiB (%s)", a.Params.TCPBuffer, a.Reason)
	}
	// Both small: the stream cap, and the reason names a sysctl.
	k3 := Kernel{RmemMax: 256 << 10, TCPRmem: [3]int{4096, 131072, 256 << 10}}
	a = mk(200*time.Millisecond, 10e9, k3)
	if a.Params.Parallel != MaxParallel || a.BufferCap == "" || !strings.Contains(a.Reason, "sysctl") && !strings.Contains(a.Reason, "third value") {
		t.Errorf("-p %d BufferCap %q: %s", a.Params.Parallel, a.BufferCap, a.Reason)
	}
}

func TestThirdPartySmallBDPKeepsAutotuning(t *testing.T) {
	p := history.Probe{Src: srvA, Dst: srvB, Link: history.Link{RTT: 5 * time.Millisecond, Bandwidth: 1e9}}
	a := Advise(Input{Src: srvA, Dst: srvB, Size: 1 << 30, Kernel: kernel, Probes: []history.Probe{p}})
	if a.Basis != Model || a.Params.TCPBuffer != 0 {
		t.Errorf("basis %s -tcp-bs %d: want autotuning on the servers (%s)", a.Basis, a.Params.TCPBuffer, a.Reason)
	}
	p.Link.RTT = 200 * time.Millisecond // 25 MB: more than autotuning's 6 MiB default
	a = Advise(Input{Src: srvA, Dst: srvB, Size: 1 << 30, Kernel: kernel, Probes: []history.Probe{p}})
	if a.Params.TCPBuffer*a.Params.Parallel == 0 && a.Params.Parallel < 4 {
		t.Errorf("-p %d -tcp-bs %d for a 25 MB BDP (%s)", a.Params.Parallel, a.Params.TCPBuffer, a.Reason)
	}
}

// TestFarSizesDoNotCount checks that the rates of much smaller files are
// not taken for a large file's: a history of 16 KiB
// copies between these hosts says nothing of a 300 MiB download, which
// falls back to the probe's model (or defaults), while a comparable past
// transfer still counts.
func TestFarSizesDoNotCount(t *testing.T) {
	const small, big = 16 << 10, 300 << 20
	var recs []history.Record
	for i := range 20 {
		recs = append(recs, rec(int64(i+1), srvA, small, 400e3, 1, 0, wan))
	}
	a := Advise(Input{Src: srvA, Dst: local, Size: big, Records: recs, Kernel: kernel})
	if a.Basis != Default || !strings.Contains(a.Reason, "much smaller files") {
		t.Errorf("small files only: basis %s, reason %q; want defaults saying why", a.Basis, a.Reason)
	}
	a = Advise(Input{Src: srvA, Dst: local, Size: big, Records: recs, Kernel: kernel, Probes: []history.Probe{probe(7, srvA, wan, 4<<20)}})
	if a.Basis != Model || a.Params.Parallel < 2 {
		t.Errorf("small files and a probe: basis %s, -p %d (%s); want the model's streams", a.Basis, a.Params.Parallel, a.Reason)
	}
	recs = append(recs, rec(99, srvA, 200<<20, 80e6, 8, 0, wan))
	a = Advise(Input{Src: srvA, Dst: local, Size: big, Records: recs, Kernel: kernel})
	if a.Basis != HostPair || a.Params.Parallel != 8 || !slices.Equal(a.Records, []int64{99}) {
		t.Errorf("with a comparable transfer: basis %s, -p %d, records %v; want host-pair from #99", a.Basis, a.Params.Parallel, a.Records)
	}
	// Small files asked about still learn from small files, and from a
	// larger file alone too: its rate bounds theirs.
	a = Advise(Input{Src: srvA, Dst: local, Size: small, Records: recs, Kernel: kernel})
	if a.Basis != HostPair || a.Params.Parallel != 1 {
		t.Errorf("a small file: basis %s, -p %d; want host-pair -p 1", a.Basis, a.Params.Parallel)
	}
	a = Advise(Input{Src: srvA, Dst: local, Size: small, Records: recs[len(recs)-1:], Kernel: kernel})
	if a.Basis != HostPair || a.ETA <= 0 {
		t.Errorf("a small file after a large one: basis %s, ETA %v; want host-pair with an ETA", a.Basis, a.ETA)
	}
}

// TestReasonHidesOtherUsersHosts: with Input.User, a similar link of
// other users' transfers is described without their hosts; the user's
// own records are named as before.
func TestReasonHidesOtherUsersHosts(t *testing.T) {
	const G = 1 << 30
	theirs := rec(3, srvB, G, 110e6, 16, 0, wan)
	theirs.User = "bob"
	in := Input{Src: srvA, Dst: local, Size: G, Probe: &history.Probe{Link: wan}, Records: []history.Record{theirs}, User: "alice"}
	a := Advise(in)
	if a.Basis != SimilarLink || strings.Contains(a.Reason, srvB.Host) || !strings.Contains(a.Reason, "1 transfer(s) of other users on a similar link") {
		t.Errorf("others' link: basis %s, reason %q", a.Basis, a.Reason)
	}
	mine := theirs
	mine.User = "alice"
	in.Records = []history.Record{mine}
	if a := Advise(in); !strings.Contains(a.Reason, srvB.Host) {
		t.Errorf("own link: reason %q names no host", a.Reason)
	}
}
