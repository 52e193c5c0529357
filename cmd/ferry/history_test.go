package main

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	hist "github.com/ferrygrid/ferry/internal/history"
)

// historyDB writes a few records and a probe to a new SQLite file and
// returns its path.
func historyDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.db")
	st, err := hist.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dtn := hist.NewEndpoint("gsiftp", "dtn1.example.org", 2811)
	local := hist.NewEndpoint("file", "", 0)
	start := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	recs := []hist.Record{
		{Start: start, End: start.Add(10 * time.Second), Kind: "upload", Tool: "cp", Src: local, Dst: dtn,
			SrcPath: "/data/a.h5", DstPath: "/store/a.h5", Size: 1 << 30, Bytes: 1 << 30, Duration: 10 * time.Second,
			Outcome: hist.OK, Params: hist.Params{Mode: "E", Parallel: 8, TCPBuffer: 16 << 20},
			Link: hist.Link{RTT: 20 * time.Millisecond, Retransmits: 3}, StreamRates: []float64{1.5e7, 1.25e7}},
		{Start: start.Add(time.Hour), End: start.Add(time.Hour + time.Second), Kind: "download", Tool: "cp",
			Src: dtn, Dst: local, SrcPath: "/store/b, \"quoted\".h5", DstPath: "/data/b.h5", Size: -1, Bytes: 4096,
			Duration: time.Second, Outcome: hist.Failed, Error: "426 Connection closed; transfer aborted",
			Params: hist.Params{Mode: "S", Parallel: 1}, Link: hist.Link{Retransmits: -1}},
	}
	for i := range recs {
		if _, err := st.Add(t.Context(), &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	p := hist.Probe{Time: start, Src: dtn, Link: hist.Link{RTT: 21 * time.Millisecond, Bandwidth: 9.4e9, Retransmits: 0},
		MaxBuffer: 32 << 20, Features: []string{"PARALLEL", "SBUF"}, Note: "MODE E 4 streams"}
	if _, err := st.AddProbe(t.Context(), &p); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHistoryTable(t *testing.T) {
	db := historyDB(t)
	r := ok(t, "history", "-history", db)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("history:\n%s", r.stdout)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^START +KIND +SRC → DST +SIZE +RATE +-P +BUFFER +OUTCOME$`),
		regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  download +dtn1\.example\.org:/store/b, "quoted"\.h5 → /data/b\.h5 +\? +4\.00 KiB/s +1 +default +failed: 426 Connection closed; transfer aborted$`),
		regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  upload +/data/a\.h5 → dtn1\.example\.org:/store/a\.h5 +1\.00 GiB +102 MiB/s +8 +16M +ok$`),
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d: %q, want %s", i, lines[i], re)
		}
	}
	if got := time.Date(2026, 3, 14, 16, 9, 26, 0, time.UTC).Local().Format("2006-01-02 15:04:05"); !strings.HasPrefix(lines[1], got) {
		t.Errorf("start %q, want the local time %s", lines[1], got)
	}

	r = ok(t, "history", "-history", db, "-failed")
	if n := strings.Count(r.stdout, "\n"); n != 2 || !strings.Contains(r.stdout, "failed") {
		t.Errorf("-failed:\n%s", r.stdout)
	}
	r = ok(t, "history", "-history", db, "-n", "1")
	if n := strings.Count(r.stdout, "\n"); n != 2 || !strings.Contains(r.stdout, "download") {
		t.Errorf("-n 1:\n%s", r.stdout)
	}
	r = ok(t, "history", "-history", db, "-host", "elsewhere.org")
	if n := strings.Count(r.stdout, "\n"); n != 1 {
		t.Errorf("-host elsewhere.org:\n%s", r.stdout)
	}
	r = ok(t, "history", "-history", db, "-since", "2026-03-14T15:30:00Z")
	if n := strings.Count(r.stdout, "\n"); n != 2 || !strings.Contains(r.stdout, "download") {
		t.Errorf("-since:\n%s", r.stdout)
	}

	r = ok(t, "history", "links", "-history", db)
	if !regexp.MustCompile(`(?m)^local → dtn1\.example\.org +1 +0 +1\.00 GiB +102 MiB/s +102 MiB/s +8 +16M +20ms +`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^dtn1\.example\.org → local +1 +1 +4\.00 KiB +- +- +- +- +- +`).MatchString(r.stdout) {
		t.Errorf("links:\n%s", r.stdout)
	}
	r = ok(t, "history", "probes", "-history", db)
	if !regexp.MustCompile(`(?m)^\S+ \S+  dtn1\.example\.org +21ms +9\.40 Gbit/s +0 +32M +MODE E 4 streams$`).MatchString(r.stdout) {
		t.Errorf("probes:\n%s", r.stdout)
	}
}

func TestHistoryJSON(t *testing.T) {
	db := historyDB(t)
	r := ok(t, "history", "-history", db, "-json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	up := recs[1]
	for key, want := range map[string]any{
		"kind": "upload", "start": "2026-03-14T15:09:26Z", "src_path": "/data/a.h5", "size": float64(1 << 30),
		"duration_s": 10.0, "outcome": "ok", "stream_rates": []any{1.5e7, 1.25e7},
		"dst":    map[string]any{"scheme": "gsiftp", "host": "dtn1.example.org", "port": 2811.0, "domain": "example.org"},
		"params": map[string]any{"mode": "E", "parallel": 8.0, "tcp_buffer": float64(16 << 20), "block_size": 0.0, "concurrency": 0.0, "pipeline": false, "stripes": 0.0, "dcau": "", "prot": "", "auto": false},
		"link":   map[string]any{"rtt_s": 0.02, "bandwidth_bps": 0.0, "retransmits": 3.0, "loss_rate": 0.0},
	} {
		if !reflect.DeepEqual(up[key], want) {
			t.Errorf("%s = %#v, want %#v", key, up[key], want)
		}
	}
	if got := recs[0]["stream_rates"]; !reflect.DeepEqual(got, []any{}) {
		t.Errorf("no stream rates: %#v, want []", got)
	}

	r = ok(t, "history", "links", "-history", db, "-json")
	var links []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &links); err != nil || len(links) != 2 {
		t.Fatalf("links: %v:\n%s", err, r.stdout)
	}
	if l := links[0]; l["transfers"] != 1.0 || l["failures"] != 1.0 || l["last"] != "2026-03-14T16:09:26Z" {
		t.Errorf("links[0] = %v", l)
	}
	r = ok(t, "history", "probes", "-history", db, "-json")
	var probes []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &probes); err != nil || len(probes) != 1 {
		t.Fatalf("probes: %v:\n%s", err, r.stdout)
	}
	if p := probes[0]; !reflect.DeepEqual(p["features"], []any{"PARALLEL", "SBUF"}) || p["max_buffer"] != float64(32<<20) {
		t.Errorf("probe = %v", p)
	}
	// Nothing is an empty array.
	if r := ok(t, "history", "-history", db, "-json", "-host", "elsewhere.org"); r.stdout != "[]\n" {
		t.Errorf("no records: %q", r.stdout)
	}
}

func TestHistoryCSV(t *testing.T) {
	db := historyDB(t)
	r := ok(t, "history", "-history", db, "-csv")
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows:\n%s", len(rows), r.stdout)
	}
	header := strings.Join(rows[0], ",")
	const want = "id,start,end,kind,tool,src_scheme,src_host,src_port,src_domain,dst_scheme,dst_host,dst_port,dst_domain," +
		"src_path,dst_path,size,bytes,duration_s,rate,outcome,error," +
		"params_mode,params_parallel,params_tcp_buffer,params_block_size,params_concurrency,params_pipeline,params_stripes,params_dcau,params_prot,params_auto," +
		"link_rtt_s,link_bandwidth_bps,link_retransmits,link_loss_rate,stream_rates,predicted_eta_s,tuning,client_host,user"
	if header != want {
		t.Errorf("header\n%s\nwant\n%s", header, want)
	}
	col := func(row []string, name string) string { return row[slices.Index(rows[0], name)] }
	if down := rows[1]; col(down, "src_path") != `/store/b, "quoted".h5` || col(down, "size") != "-1" || col(down, "outcome") != "failed" {
		t.Errorf("row 1: %q", down)
	}
	if up := rows[2]; col(up, "stream_rates") != "1.5e+07;1.25e+07" || col(up, "params_parallel") != "8" || col(up, "start") != "2026-03-14T15:09:26Z" {
		t.Errorf("row 2: %q", up)
	}

	r = ok(t, "history", "links", "-history", db, "-csv")
	if rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll(); err != nil || len(rows) != 3 || rows[0][0] != "src_scheme" {
		t.Errorf("links: %v:\n%s", err, r.stdout)
	}
	r = ok(t, "history", "probes", "-history", db, "-csv")
	if rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll(); err != nil || len(rows) != 2 || rows[1][len(rows[1])-1] != "MODE E 4 streams" {
		t.Errorf("probes: %v:\n%s", err, r.stdout)
	}
}

func TestHistoryUsage(t *testing.T) {
	db := historyDB(t)
	for _, args := range [][]string{
		{"history", "-history", db, "-json", "-csv"},
		{"history", "bogus"},
		{"history", "-history", db, "links"},
		{"history", "probes", "-history", db, "-failed"},
		{"history", "-history", db, "-since", "yesterday"},
		{"history", "-history", db, "-n", "-1"},
	} {
		if r := ferry(t, nil, args...); r.code != 2 {
			t.Errorf("ferry %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// Off lists nothing.
	if r := ok(t, "history", "-history", "off", "-json"); r.stdout != "[]\n" {
		t.Errorf("-history off: %q", r.stdout)
	}
	t.Setenv(hist.EnvDSN, db)
	if r := ok(t, "history", "-n", "0"); strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("$%s: %q", hist.EnvDSN, r.stdout)
	}
}

func TestHistorySince(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.Local)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"90m", now.Add(-90 * time.Minute)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"1.5d", now.Add(-36 * time.Hour)},
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.Local)},
		{"2026-03-01T08:30", time.Date(2026, 3, 1, 8, 30, 0, 0, time.Local)},
		{"2026-03-01 08:30:15", time.Date(2026, 3, 1, 8, 30, 15, 0, time.Local)},
		{"2026-03-01T08:30:15Z", time.Date(2026, 3, 1, 8, 30, 15, 0, time.UTC)},
	}
	for _, tt := range tests {
		got, err := parseSince(tt.in, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5m", "d", "2026-13-01"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) succeeded", bad)
		}
	}
}
