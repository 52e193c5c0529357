package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// download is a successful download record from host at rate bytes/s.
func download(id int64, host string, rate float64) history.Record {
	const size = 256 << 20
	return history.Record{
		ID: id, Start: t0.Add(time.Duration(id) * time.Minute), Kind: "download", Tool: "cp",
		Src: history.NewEndpoint("ftp", host, 21), Dst: history.Endpoint{Scheme: "file"},
		Size: size, Bytes: size, Duration: time.Duration(size / rate * float64(time.Second)), Outcome: history.OK,
		Params: history.Params{Mode: "E", Parallel: 4},
	}
}

func urls(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Replica.URL)
	}
	return out
}

func TestRank(t *testing.T) {
	old, recent := t0, t0.Add(time.Hour)
	tests := []struct {
		name  string
		cands []Candidate
		want  []string
	}{
		{
			name: "faster first",
			cands: []Candidate{
				{Replica: Replica{URL: "ftp://slow/f", State: OK}, Rate: 10e6},
				{Replica: Replica{URL: "ftp://fast/f", State: OK}, Rate: 100e6},
			},
			want: []string{"ftp://fast/f", "ftp://slow/f"},
		},
		{
			name: "known rate before unknown",
			cands: []Candidate{
				{Replica: Replica{URL: "ftp://a/f", State: OK}},
				{Replica: Replica{URL: "ftp://b/f", State: Unverified}, Rate: 1e6},
			},
			want: []string{"ftp://b/f", "ftp://a/f"},
		},
		{
			name: "bad left out, missing last",
			cands: []Candidate{
				{Replica: Replica{URL: "ftp://bad/f", State: Bad}, Rate: 1e9},
				{Replica: Replica{URL: "ftp://gone/f", State: Missing}, Rate: 1e8},
				{Replica: Replica{URL: "ftp://ok/f", State: OK}},
			},
			want: []string{"ftp://ok/f", "ftp://gone/f"},
		},
		{
			name: "same rate: ok, then recently verified, then URL",
			cands: []Candidate{
				{Replica: Replica{URL: "ftp://u/f", State: Unverified}},
				{Replica: Replica{URL: "ftp://z/f", State: OK, Verified: old}},
				{Replica: Replica{URL: "ftp://y/f", State: OK, Verified: recent}},
				{Replica: Replica{URL: "ftp://x/f", State: OK, Verified: recent}},
			},
			want: []string{"ftp://x/f", "ftp://y/f", "ftp://z/f", "ftp://u/f"},
		},
		{
			name:  "all bad",
			cands: []Candidate{{Replica: Replica{URL: "ftp://bad/f", State: Bad}}},
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.cands)
			got := urls(Rank(tt.cands))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Rank = %q, want %q", got, tt.want)
			}
			if !slices.EqualFunc(before, tt.cands, func(a, b Candidate) bool { return a.Replica.URL == b.Replica.URL }) {
				t.Error("Rank changed its argument")
			}
		})
	}
}

// TestPredictThenRank ranks replicas by the advisor's predictions from
// the history: the host with the faster past downloads first, a host
// never seen (no evidence) last.
func TestPredictThenRank(t *testing.T) {
	e := Entry{LFN: "/cms/f", Size: 256 << 20, Replicas: []Replica{
		{URL: "ftp://never.example.org/f", State: OK},
		{URL: "ftp://slow.example.com/f", State: OK},
		{URL: "ftp://fast.example.net/f", State: OK},
	}}
	ev := Evidence{Records: []history.Record{
		download(1, "slow.example.com", 5e6),
		download(2, "slow.example.com", 6e6),
		download(3, "fast.example.net", 80e6),
	}}
	cands := Predict(e, history.Endpoint{Scheme: "file"}, ev)
	for _, c := range cands {
		t.Logf("%s: %.0f B/s (%s)", c.Replica.URL, c.Rate, c.Basis)
	}
	if cands[0].Basis != advisor.Default || cands[0].Rate != 0 {
		t.Errorf("unknown host: %+v, want no prediction", cands[0])
	}
	got := urls(Rank(cands))
	want := []string{"ftp://fast.example.net/f", "ftp://slow.example.com/f", "ftp://never.example.org/f"}
	if !slices.Equal(got, want) {
		t.Errorf("ranked %q, want %q", got, want)
	}
}
