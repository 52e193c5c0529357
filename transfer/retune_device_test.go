package transfer

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
)

// TestRetuneIntoDevice: an automatic download into a device that takes
// writes at any offset (/dev/null, as the WAN bench downloads) is
// re-tuned in parts as a file is; into a FIFO it is moved whole, in
// order.
func TestRetuneIntoDevice(t *testing.T) {
	s := startServer(t)
	const size = 24 << 20
	writeFile(t, filepath.Join(s.dir, "big"), randomData(t, size))
	e := &Engine{History: openStore(t), Tool: "test", Getenv: retuneEnv(4 << 20)}
	o := Options{Length: -1, Auto: true}

	res, err := e.Copy(t.Context(), Request{Src: s.loc("big"), Dst: LocalLocation(os.DevNull), Options: o}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != size {
		t.Errorf("moved %d bytes, want %d", res.Bytes, size)
	}
	if parts := tuningParts(t, res.Tuning, size); len(parts) < 3 {
		t.Errorf("%d parts into %s, want several: %q", len(parts), os.DevNull, res.Tuning)
	}

	f, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if positioned(w) {
		t.Error("a pipe takes positioned writes?")
	}
	w.Close()
	if !positioned(mustOpen(t, os.DevNull)) {
		t.Errorf("%s takes no positioned writes?", os.DevNull)
	}
}

func mustOpen(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestRetuneWanted: which automatic downloads are moved in re-tuned
// parts.
func TestRetuneWanted(t *testing.T) {
	c := &copier{e: &Engine{Getenv: func(string) string { return "" }}}
	for _, tc := range []struct {
		name string
		ch   *AutoChoice
		size int64
		want bool
	}{
		{"not automatic", nil, 1 << 30, false},
		{"stream mode", &AutoChoice{}, 1 << 30, false},
		{"large", &AutoChoice{ModeE: true}, DefaultRetuneMin, true},
		{"under the floor", &AutoChoice{ModeE: true}, retuneFloor - 1, false},
		{"mid-size, no ETA (empty history)", &AutoChoice{ModeE: true}, retuneFloor, true},
		{"mid-size, quick", &AutoChoice{ModeE: true, ETA: time.Second}, retuneFloor, false},
		{"mid-size, slow", &AutoChoice{ModeE: true, ETA: retuneMinTime}, retuneFloor, true},
		{"wide-area default at the stream limit, large", &AutoChoice{ModeE: true, Parallel: wanStreams, Basis: "default"}, DefaultRetuneMin, true},
		{"wide-area default at the stream limit, mid-size", &AutoChoice{ModeE: true, Parallel: wanStreams, Basis: "default"}, DefaultRetuneMin - 1, false},
		{"history at the stream limit", &AutoChoice{ModeE: true, Parallel: retuneMaxStreams, Basis: "host-pair"}, 1 << 30, false},
		{"history below the stream limit", &AutoChoice{ModeE: true, Parallel: 8, Basis: "host-pair"}, 1 << 30, true},
	} {
		if got := c.retuneWanted(tc.ch, tc.size); got != tc.want {
			t.Errorf("%s: retuneWanted = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWANDefault: with nothing known, a large file over a wide-area
// round trip starts at the stream limit; a LAN, a small file or any
// evidence keeps the advisor's choice.
func TestWANDefault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		basis advisor.Basis
		rtt   time.Duration
		size  int64
		local bool
		want  int
	}{
		{"wide, large, nothing known", advisor.Default, 20 * time.Millisecond, 1 << 30, false, wanStreams},
		{"at the threshold", advisor.Default, wanRTT, wanMinSize, false, wanStreams},
		{"this host, slow loopback", advisor.Default, 20 * time.Millisecond, 1 << 30, true, 4},
		{"LAN", advisor.Default, 200 * time.Microsecond, 1 << 30, false, 4},
		{"RTT unknown", advisor.Default, 0, 1 << 30, false, 4},
		{"small", advisor.Default, 20 * time.Millisecond, wanMinSize - 1, false, 4},
		{"history", advisor.HostPair, 20 * time.Millisecond, 1 << 30, false, 4},
		{"a probe", advisor.Model, 20 * time.Millisecond, 1 << 30, false, 4},
	} {
		a := advisor.Advice{Basis: tc.basis, Params: history.Params{Mode: "E", Parallel: 4}}
		why := wanDefault(&a, tc.rtt, tc.size, tc.local)
		if a.Params.Parallel != tc.want || (why != "") != (tc.want == wanStreams) {
			t.Errorf("%s: -p %d (%q), want -p %d", tc.name, a.Params.Parallel, why, tc.want)
		}
	}
}

// TestSteadyRate: a part's steady rate runs from its first progress
// report past the start to its end, and is unknown when that span is
// too short.
func TestSteadyRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		el    time.Duration
		warm  time.Duration // 0: no report
		warmB int64
		k     int64
		want  float64
	}{
		{"no report", 2 * time.Second, 0, 0, 100e6, 0},
		{"from the report to the end", 3 * time.Second, time.Second, 10e6, 210e6, 100e6},
		{"span too short", 2 * time.Second, 1900 * time.Millisecond, 10e6, 20e6, 0},
		{"nothing after the report", 3 * time.Second, time.Second, 10e6, 10e6, 0},
	} {
		var at time.Time
		if tc.warm > 0 {
			at = t0.Add(tc.warm)
		}
		if got := steadyRate(t0, tc.el, at, tc.warmB, tc.k); got != tc.want {
			t.Errorf("%s: steadyRate = %g, want %g", tc.name, got, tc.want)
		}
	}
}
