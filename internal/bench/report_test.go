package bench

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

// fakeSamples returns two repetitions of every run of cfg, with rates
// that make the medians easy to check: Ferry 10 and 14, GCT 4 and 6, raw
// 20 and 30 Gbit/s; the machine's cores 1 and 2 busy, 1 % and 2 % stolen.
func fakeSamples(cfg Config) []Sample {
	rates := map[Impl][2]float64{Ferry: {10, 14}, GCT: {4, 6}, Raw: {20, 30}, FerryTar: {20, 28}, S3Client: {5, 7}}
	var out []Sample
	for _, w := range cfg.Workloads {
		for _, w := range w.rows() {
			for _, p := range cfg.Parallel {
				for rep := 1; rep <= 2; rep++ {
					for _, i := range cfg.Impls {
						if !i.Applies(w) {
							continue
						}
						out = append(out, Sample{Workload: w, Impl: i, P: p, Rep: rep, Bytes: cfg.Size,
							Wall: time.Second, Gbps: rates[i][rep-1],
							ClientCPU: time.Duration(rep) * 100 * time.Millisecond, ServerCPU: 300 * time.Millisecond,
							ClientRSS: 10 << 20, ServerRSS: int64(rep) * 20 << 20,
							Machine: cpuShare{Busy: float64(rep), Steal: 0.01 * float64(rep)}})
					}
				}
			}
		}
	}
	return out
}

// TestWriteTableTarS3: the ferry-tar and S3 client columns, their
// ratios to Ferry, n/a where an implementation has no run, and the notes.
func TestWriteTableTarS3(t *testing.T) {
	cfg := Config{Size: 1 << 30, Parallel: []int{4}, Workloads: []Workload{S3, S3Up, SmallFiles}, Impls: []Impl{Ferry, FerryTar, S3Client}}
	var b bytes.Buffer
	if err := WriteTable(&b, cfg, fakeSamples(cfg)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	for _, r := range []string{
		"| workload | p | Ferry Gbit/s | Ferry tar Gbit/s | S3 client Gbit/s | Ferry tar/Ferry | Ferry/S3 client | Ferry CPU s client+server |",
		"| s3 | 4 | 12.00 (10.00–14.00) | n/a | 6.00 (5.00–7.00) | n/a | 2.00 | 0.15+0.30 | n/a | 0.15+0.30 | 10/30 | n/a | 10/30 |",
		"| s3-up | 4 | 12.00 (10.00–14.00) | n/a | 6.00 (5.00–7.00) | n/a | 2.00 |",
		"| smallfiles | 4 | 12.00 (10.00–14.00) | 24.00 (20.00–28.00) | n/a | 2.00 | n/a |",
		"| workload | p | Ferry files/s | Ferry tar files/s | Ferry tar/Ferry | Ferry s | Ferry tar s |",
		"- s3, s3-up: a SeaweedFS server",
		"- Ferry tar: `ferry cp -r -tar`",
	} {
		if !strings.Contains(out, r) {
			t.Errorf("missing %q", r)
		}
	}
}

// TestApplies: which implementation has a run for which workload.
func TestApplies(t *testing.T) {
	for _, w := range Workloads {
		for _, r := range w.rows() {
			for _, i := range Impls {
				want := true
				switch i {
				case Raw:
					want = r == Mem
				case FerryTar:
					want = r == SmallFiles || r == SmallFilesUp
				case S3Client:
					want = r == S3 || r == S3Up
				case GCT:
					want = r != S3 && r != S3Up
				}
				if got := i.Applies(r); got != want {
					t.Errorf("%s.Applies(%s) = %v, want %v", i, r, got, want)
				}
			}
		}
	}
}

func TestWriteTable(t *testing.T) {
	cfg := Config{Size: 4 << 30, Parallel: []int{1, 4}, Workloads: []Workload{Mem, Disk}, Impls: []Impl{Ferry, GCT, Raw}}
	var b bytes.Buffer
	if err := WriteTable(&b, cfg, fakeSamples(cfg)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	if !strings.Contains(out, "4G per run, 2 run(s)") {
		t.Errorf("heading does not give the size and repetitions")
	}
	wantRows := []string{
		"| mem | 1 | 12.00 (10.00–14.00) | 5.00 (4.00–6.00) | 25.00 (20.00–30.00) | 2.40 | 0.48 | 0.15+0.30 | 0.15+0.30 | 0.15+0.30 | 10/30 | 10/30 | 10/30 | 1.50, 2.0 % |",
		"| mem | 4 | 12.00 (10.00–14.00) | 5.00 (4.00–6.00) | 25.00 (20.00–30.00) | 2.40 | 0.48 |",
		"| disk | 1 | 12.00 (10.00–14.00) | 5.00 (4.00–6.00) | n/a | 2.40 | n/a | 0.15+0.30 | 0.15+0.30 | n/a | 10/30 | 10/30 | n/a | 1.50, 2.0 % |",
		"| disk | 4 | 12.00 (10.00–14.00) | 5.00 (4.00–6.00) | n/a | 2.40 | n/a |",
	}
	for _, r := range wantRows {
		if !strings.Contains(out, r) {
			t.Errorf("missing row %q", r)
		}
	}
	var table []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		}
	}
	if len(table) != 2+4 {
		t.Errorf("%d table lines, want a header, an alignment row and 4 rows", len(table))
	}
	for _, l := range table {
		if n := strings.Count(l, "|"); n != 15 {
			t.Errorf("%d bars, want 15 (14 columns): %s", n, l)
		}
	}
}

func TestWriteTableSubset(t *testing.T) {
	// Ferry alone: no ratios; one repetition: no ranges.
	cfg := Config{Size: 8 << 20, Parallel: []int{2}, Workloads: []Workload{Mem}, Impls: []Impl{Ferry}}
	s := []Sample{{Workload: Mem, Impl: Ferry, P: 2, Rep: 1, Bytes: 8 << 20, Wall: time.Second, Gbps: 3.5,
		ClientRSS: 5 << 20, ServerRSS: 6 << 20}}
	var b bytes.Buffer
	if err := WriteTable(&b, cfg, s); err != nil {
		t.Fatal(err)
	}
	if want := "| mem | 2 | 3.50 | 0.00+0.00 | 5/6 | 0.00, 0.0 % |"; !strings.Contains(b.String(), want) {
		t.Errorf("want row %q in\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "Ferry/") {
		t.Errorf("ratio columns without the other implementation:\n%s", b.String())
	}
	if strings.Contains(b.String(), "- disk") {
		t.Errorf("a note on the disk workloads without them:\n%s", b.String())
	}
}

func TestWriteTableDiskUp(t *testing.T) {
	cfg := Config{Size: 1 << 30, Parallel: []int{1, 4}, Workloads: []Workload{DiskUp}, Impls: []Impl{Ferry, GCT, Raw}}
	var b bytes.Buffer
	if err := WriteTable(&b, cfg, fakeSamples(cfg)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| disk-up | 1 | 12.00 (10.00–14.00) | 5.00 (4.00–6.00) | n/a | 2.40 | n/a | 0.15+0.30 | 0.15+0.30 | n/a | 10/30 | 10/30 | n/a | 1.50, 2.0 % |",
		"| disk-up | 4 |",
		"- disk: a random file",
		"- disk-up: the same file uploaded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "- mem:") {
		t.Errorf("a note on mem without it:\n%s", out)
	}
}

func TestWriteTableGSI(t *testing.T) {
	cfg := Config{Size: 1 << 30, Parallel: []int{4}, Workloads: []Workload{GSI}, Impls: []Impl{Ferry, GCT, Raw}}
	samples := fakeSamples(cfg)
	// Unknown peaks are left out of the medians; a cell without any is "?".
	samples[0].ServerRSS = rssUnknown // gsi-dcau ferry rep 1
	samples[0].Machine.Steal = 0.2    // a run of gsi-dcau lost a fifth: "!"
	for i := range samples {
		if samples[i].Workload == GSIPriv && samples[i].Impl == GCT {
			samples[i].ClientRSS = rssUnknown
		}
	}
	for rep, ms := range []time.Duration{10, 30, 20} {
		for _, w := range []Workload{GSILogin, GSILoginDeleg} {
			samples = append(samples,
				Sample{Workload: w, Impl: Ferry, Rep: rep + 1, Wall: ms * time.Millisecond, Machine: cpuShare{Busy: 0.5, Steal: 0.03}},
				Sample{Workload: w, Impl: GCT, Rep: rep + 1, Wall: 2 * ms * time.Millisecond, Machine: cpuShare{Busy: 0.5, Steal: 0.03}})
		}
	}
	var b bytes.Buffer
	if err := WriteTable(&b, cfg, samples); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{
		"1G per run, 2 run(s) per cell",
		"| gsi-dcau | 4 | 12.00 (10.00–14.00) | 5.00 (4.00–6.00) | n/a | 2.40 | n/a | 0.15+0.30 | 0.15+0.30 | n/a | 10/40 | 10/30 | n/a | 1.50, 20.0 % ! |",
		"| gsi-prot-p | 4 | 12.00 (10.00–14.00) | 5.00 (4.00–6.00) | n/a | 2.40 | n/a | 0.15+0.30 | 0.15+0.30 | n/a | 10/30 | ?/30 | n/a | 1.50, 2.0 % |",
		"GSI login: connect to 230, ms, 3 login(s) per cell",
		"at most 20.0 % of the CPU time stolen by the hypervisor in one run",
		"| login | Ferry server ms | GCT server ms | GCT/Ferry | machine: cores busy, max stolen |",
		"| without delegation | 20.0 (10.0–30.0) | 40.0 (20.0–60.0) | 2.00 | 0.50, 3.0 % |",
		"| with delegation | 20.0 (10.0–30.0) | 40.0 (20.0–60.0) | 2.00 | 0.50, 3.0 % |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	var csvOut bytes.Buffer
	if err := WriteCSV(&csvOut, samples); err != nil {
		t.Fatal(err)
	}
	if want := "gsi-dcau,ferry,4,1,1073741824,1.000000,10.000000,0.100000,0.300000,10485760,,1.00,0.2000\n"; !strings.Contains(csvOut.String(), want) {
		t.Errorf("CSV has no record %q:\n%s", want, csvOut.String())
	}
	if want := "gsi-login-deleg,gct,0,3,0,0.040000,0.000000,"; !strings.Contains(csvOut.String(), want) {
		t.Errorf("CSV has no record %q:\n%s", want, csvOut.String())
	}
}

func TestWriteCSV(t *testing.T) {
	cfg := Config{Size: 1 << 20, Parallel: []int{1, 8}, Workloads: []Workload{Mem, Disk}, Impls: []Impl{Ferry, GCT, Raw}}
	samples := fakeSamples(cfg)
	var b bytes.Buffer
	if err := WriteCSV(&b, samples); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(samples) {
		t.Fatalf("%d records, want a header and %d", len(recs), len(samples))
	}
	if got := strings.Join(recs[0], ","); got != strings.Join(csvHeader, ",") {
		t.Errorf("header %q", got)
	}
	if got, want := strings.Join(recs[1], ","), "mem,ferry,1,1,1048576,1.000000,10.000000,0.100000,0.300000,10485760,20971520,1.00,0.0100"; got != want {
		t.Errorf("first record %q, want %q", got, want)
	}
}
