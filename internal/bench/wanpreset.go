package bench

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ferrygrid/ferry/internal/progress"
)

// GigabitRate is a 1 Gbit/s Ethernet link. The emulator's rate counts
// as Ethernet does: it lets through the IP bytes that fit when each
// 1500-byte packet also carries 38 bytes of framing (975.3 Mbit/s of IP
// packets, 941.5 Mbit/s of TCP payload).
const GigabitRate int64 = 1_000_000_000

// openEnded is the size a fixed-duration cell asks for: more than any
// cell moves before its Duration stops it.
const openEnded int64 = 1 << 40

// Var is a parameter a grid varies: along the x axis or between series.
type Var string

// The parameters of a cell a grid can vary.
const (
	VarNone     Var = ""
	VarLatency  Var = "latency"  // one-way latency, ms
	VarLoss     Var = "loss"     // packet loss, percent
	VarBuffer   Var = "buffer"   // TCP buffer asked for, bytes
	VarParallel Var = "parallel" // TCP connections
	VarSize     Var = "size"     // file size, bytes
)

// Label is the axis or table label of v.
func (v Var) Label() string {
	switch v {
	case VarLatency:
		return "one-way latency (ms)"
	case VarLoss:
		return "packet loss (%)"
	case VarBuffer:
		return "TCP buffer (-tcp-bs)"
	case VarParallel:
		return "parallel TCP connections (-p)"
	case VarSize:
		return "file size"
	}
	return ""
}

// Format renders a value of v for tables and ticks: sizes in binary
// units, the others as numbers.
func (v Var) Format(x float64) string {
	switch v {
	case VarBuffer, VarSize:
		if x == 0 {
			return "auto"
		}
		return progress.Size(int64(x))
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// value returns the value of v in cell c.
func (v Var) value(c WANCell) float64 {
	switch v {
	case VarLatency:
		return float64(c.Latency) / float64(time.Millisecond)
	case VarLoss:
		return c.Loss
	case VarBuffer:
		return float64(c.Buffer)
	case VarParallel:
		return float64(c.P)
	case VarSize:
		return float64(c.Size)
	}
	return 0
}

// Profile is a set of socket limits, set per network namespace, as the
// papers set them in sysctl.conf. net.core.rmem_max and wmem_max are
// host-wide and read-only in a namespace: a profile whose original had a
// smaller rmem_max than the host has the harness clamp the buffer it asks
// for (-tcp-bs, iperf3 -w) to Clamp instead, which is what rmem_max does
// to a request; autotuning is bounded by tcp_rmem and tcp_wmem alone.
type Profile struct {
	Name           string
	Client, Server map[string]string // sysctls of each side's namespace
	Clamp          int64             // largest -tcp-bs passed on; 0: no clamp (the host's rmem_max still caps it)
	RmemMax        int64             // the client's (receiver's) tcp_rmem maximum
	About          string
}

// The sysctl values of the profiles (BBC WHP 178, section 5.1).
var (
	limits1M  = map[string]string{"net.ipv4.tcp_rmem": "4096 87380 1048576", "net.ipv4.tcp_wmem": "4096 16384 1048576"}
	limits4M  = map[string]string{"net.ipv4.tcp_rmem": "4096 87380 4194304", "net.ipv4.tcp_wmem": "4096 65536 4194304"}
	limits16M = map[string]string{"net.ipv4.tcp_rmem": "4096 87380 16777216", "net.ipv4.tcp_wmem": "4096 65536 16777216"}
	limits64K = map[string]string{"net.ipv4.tcp_rmem": "4096 65536 65536", "net.ipv4.tcp_wmem": "4096 65536 65536"}
)

// Profiles are the socket-limit profiles by name.
var Profiles = map[string]Profile{
	"unoptimised": {Name: "unoptimised", Client: limits1M, Server: limits4M, Clamp: 131071, RmemMax: 1 << 20,
		About: "BBC 5.1: receiver (client) tcp_rmem/tcp_wmem max 1 MB, rmem_max 128 KB (as a clamp of -tcp-bs); sender (server) 4 MB"},
	"optimised": {Name: "optimised", Client: limits4M, Server: limits4M, RmemMax: 4 << 20,
		About: "BBC 5.2, 5.4: both ends tcp_rmem/tcp_wmem max 4 MB (rmem_max: the host's)"},
	"optimised-16m": {Name: "optimised-16m", Client: limits16M, Server: limits16M, RmemMax: 16 << 20,
		About: "BBC 5.3: both ends tcp_rmem/tcp_wmem max 16 MB; -tcp-bs beyond the host's rmem_max is capped by the kernel"},
	"legacy-64k": {Name: "legacy-64k", Client: limits64K, Server: limits64K, Clamp: 65536, RmemMax: 64 << 10,
		About: "2001-era hosts (Cannataro, INFN): tcp_rmem/tcp_wmem max 64 KB, buffers clamped to 64 KB"},
}

// Grid is a table of cells of a preset: the cells vary X along a table's
// columns (a plot's x axis) and S between its rows (a plot's lines).
type Grid struct {
	ID, Title string
	// PublishedTable is the table of the published measurements the
	// cells are compared with (see Grid.Published), or "".
	PublishedTable string
	X, S           Var
	// Points are the cells without an implementation, in run order.
	Points []WANCell
	// RefS selects the points that iperf3 also runs, as the raw TCP
	// reference: those whose S value is RefS, or, if S is VarNone, the
	// first point. NoRef: none.
	RefS  float64
	NoRef bool
	// NoPlot leaves the grid out of the plots: its points differ in more
	// than X (Lindén's two configurations).
	NoPlot bool
}

// Preset is a named set of grids.
type Preset struct {
	Name, About string
	Grids       []Grid
	// Tune, if set, makes the preset a tune preset: its cells are chosen
	// as it runs (RunTune), and Grids is empty.
	Tune *TuneSpec
}

// latencies are the one-way latencies of the BBC tables, in ms.
var (
	bbcLatencies   = []float64{1, 5, 10, 15, 20, 30, 40, 50}
	bbcParallelism = []float64{1, 2, 4, 6, 8, 10, 12}
	bbcLosses      = []float64{0, 0.25, 0.5, 1, 2, 3, 4, 5}
	bbcBuffers     = []float64{256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20}
)

// millis returns x milliseconds.
func millis(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// steadyFor is how long a fixed-duration cell runs: cubic needs longer to
// settle at long round trips (/work/shared/wan.md).
func steadyFor(latency time.Duration) time.Duration {
	if 2*latency >= 50*time.Millisecond {
		return 25 * time.Second
	}
	return 15 * time.Second
}

// sized makes c a fixed-size cell of size bytes: it runs to the end,
// stopped only after three times what its theoretical bound needs plus
// 30 s (at most 5 minutes).
func sized(c WANCell, size int64) WANCell {
	c.Size = size
	prof := Profiles[c.Profile]
	t := Bounds(TheoryInput{P: c.P, RTT: 2*c.Latency + idleOverhead, Loss: c.Loss, Rate: c.Rate,
		Buffer: c.clampedBuffer(), RmemMax: prof.RmemMax})
	need := time.Duration(float64(size) * 8 / (t.Bound * 1e6) * float64(time.Second))
	c.Duration = min(3*need+30*time.Second, 5*time.Minute)
	return c
}

// timed makes c a fixed-duration cell.
func timed(c WANCell, d time.Duration) WANCell {
	c.Size, c.Duration = openEnded, d
	return c
}

// cross returns the points of base with S (rows, outer) and X (columns,
// inner) set to each pair of values, made by set.
func cross(base WANCell, x, s Var, xs, ss []float64, set func(WANCell) WANCell) []WANCell {
	var out []WANCell
	for _, sv := range ss {
		for _, xv := range xs {
			c := base.with(s, sv).with(x, xv)
			c.X, c.S = xv, sv
			out = append(out, set(c))
		}
	}
	return out
}

// with returns c with v set to x.
func (c WANCell) with(v Var, x float64) WANCell {
	switch v {
	case VarLatency:
		c.Latency = millis(x)
	case VarLoss:
		c.Loss = x
	case VarBuffer:
		c.Buffer = int64(x)
	case VarParallel:
		c.P = int(x)
	case VarSize:
		c.Size = int64(x)
	}
	return c
}

// steady is the set function of fixed-duration BBC-style cells.
func steady(c WANCell) WANCell { return timed(c, steadyFor(c.Latency)) }

// bbcGrid is one of the BBC tables 5.1, 5.2 (latency × parallelism).
func bbcGrid(table, profile string, lats, ps []float64) Grid {
	base := WANCell{Grid: table, Rate: GigabitRate, Profile: profile, P: 1}
	return Grid{ID: table, Title: "BBC WHP 178 Table " + table + ": rate vs latency per parallelism (" + profile + ")",
		PublishedTable: table, X: VarLatency, S: VarParallel, RefS: ps[0],
		Points: cross(base, VarLatency, VarParallel, lats, ps, steady)}
}

func bbc53() Grid {
	base := WANCell{Grid: "5.3", Rate: GigabitRate, Profile: "optimised-16m", P: 4}
	return Grid{ID: "5.3", Title: "BBC WHP 178 Table 5.3: rate vs latency per TCP buffer (p = 4)",
		PublishedTable: "5.3", X: VarLatency, S: VarBuffer, RefS: 2 << 20,
		Points: cross(base, VarLatency, VarBuffer, bbcLatencies, bbcBuffers, steady)}
}

func bbc54() Grid {
	// The paper does not state the latency; its single-stream column
	// follows the Mathis bound at about 0.35 ms RTT, the emulator's idle
	// RTT without added delay: no delay is added.
	base := WANCell{Grid: "5.4", Rate: GigabitRate, Profile: "optimised", P: 1}
	return Grid{ID: "5.4", Title: "BBC WHP 178 Table 5.4: rate vs packet loss per parallelism (no added latency)",
		PublishedTable: "5.4", X: VarLoss, S: VarParallel, RefS: 1,
		Points: cross(base, VarLoss, VarParallel, bbcLosses, bbcParallelism, func(c WANCell) WANCell { return timed(c, 20*time.Second) })}
}

// infnLink is the INFN Torino–Napoli path: 8 Mbit/s. The slides give no
// RTT; 30 ms is assumed (their optimum of 32 KB at one stream is about
// rate × RTT).
func infnLink(grid string) WANCell {
	return WANCell{Grid: grid, Rate: 8_000_000, Latency: 15 * time.Millisecond, Profile: "legacy-64k", P: 1}
}

func infnGrids() []Grid {
	thirty := func(c WANCell) WANCell { return timed(c, 30*time.Second) }
	kb := []float64{4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10}
	return []Grid{
		{ID: "infn-streams", Title: "INFN: rate vs streams, 8 Mbit/s, 30 ms RTT (30 s each)", X: VarParallel,
			Points: cross(infnLink("infn-streams"), VarParallel, VarNone, []float64{1, 2, 4, 8, 16, 32, 64}, []float64{0}, thirty)},
		{ID: "infn-buffer", Title: "INFN: rate vs TCP buffer at 1 and 8 streams, 8 Mbit/s, 30 ms RTT (30 s each)", X: VarBuffer, S: VarParallel, RefS: 1,
			Points: cross(infnLink("infn-buffer"), VarBuffer, VarParallel, kb, []float64{1, 8}, thirty)},
		{ID: "infn-size", Title: "INFN: rate vs file size at 8 streams, 8 Mbit/s, 30 ms RTT", X: VarSize, S: VarParallel, RefS: 8,
			Points: cross(infnLink("infn-size"), VarSize, VarParallel, []float64{1 << 20, 10 << 20, 50 << 20, 100 << 20}, []float64{8},
				func(c WANCell) WANCell { return sized(c, c.Size) })},
	}
}

// cannataroLink returns one of the three paths of Cannataro et al.
func cannataroLink(grid string, rate int64, rtt time.Duration) WANCell {
	return WANCell{Grid: grid, Rate: rate, Latency: rtt / 2, Profile: "legacy-64k", P: 1, Buffer: 32 << 10}
}

func cannataroGrids() []Grid {
	a := func(g string) WANCell { return cannataroLink(g, 4_700_000, 31500*time.Microsecond) }
	b := func(g string) WANCell { return cannataroLink(g, 1_600_000, 80*time.Millisecond) }
	c := func(g string) WANCell { return cannataroLink(g, 1_700_000, 125*time.Millisecond) }
	mb16 := func(c WANCell) WANCell { return sized(c, 16<<20) }
	bySize := func(c WANCell) WANCell { return sized(c, c.Size) }
	kb := func(xs ...float64) []float64 {
		for i := range xs {
			xs[i] *= 1 << 10
		}
		return xs
	}
	return []Grid{
		{ID: "cannataro-a-buffer", Title: "Cannataro Fig. 1a: 16 MB, 4.7 Mbit/s, 31.5 ms RTT: rate vs TCP buffer per sockets",
			X: VarBuffer, S: VarParallel, RefS: 1,
			Points: cross(a("cannataro-a-buffer"), VarBuffer, VarParallel, kb(1, 2, 4, 8, 16, 32, 64), []float64{1, 4, 16, 64}, mb16)},
		{ID: "cannataro-a-size", Title: "Cannataro Fig. 2: 32 KB buffer, 4.7 Mbit/s, 31.5 ms RTT: rate vs file size per sockets",
			X: VarSize, S: VarParallel, RefS: 1,
			Points: cross(a("cannataro-a-size"), VarSize, VarParallel, kb(32, 128, 512, 2048, 8192, 32768), []float64{1, 4, 16}, bySize)},
		{ID: "cannataro-b-sockets", Title: "Cannataro Fig. 3a: 16 MB, 1.6 Mbit/s, 80 ms RTT: rate vs sockets per TCP buffer",
			X: VarParallel, S: VarBuffer, RefS: 64 << 10,
			Points: cross(b("cannataro-b-sockets"), VarParallel, VarBuffer, []float64{1, 4, 16, 64}, kb(8, 64), mb16)},
		{ID: "cannataro-c-size", Title: "Cannataro Fig. 6: 32 KB buffer, 1.7 Mbit/s, 125 ms RTT: rate vs file size per sockets",
			X: VarSize, S: VarParallel, RefS: 1,
			Points: cross(c("cannataro-c-size"), VarSize, VarParallel, kb(32, 128, 512, 2048, 8192), []float64{1, 2, 16}, bySize)},
	}
}

// lindenGrid is Lindén's example: 256 MB over 1 Gbit/s at 55 ms RTT,
// globus-url-copy's defaults against -p 16 -tcp-bs 2000000.
func lindenGrid(profile string) Grid {
	id := "linden-" + profile
	base := WANCell{Grid: id, Rate: GigabitRate, Latency: 27500 * time.Microsecond, Profile: profile}
	var pts []WANCell
	for _, pb := range [][2]int64{{1, 0}, {16, 2000000}} {
		c := base
		c.P, c.Buffer, c.X = int(pb[0]), pb[1], float64(pb[0])
		pts = append(pts, sized(c, 256<<20))
	}
	return Grid{ID: id, Title: "Lindén: 256 MB, 1 Gbit/s, 55 ms RTT: defaults vs -p 16 -tcp-bs 2000000 (" + profile + ")",
		PublishedTable: "linden", X: VarParallel, NoPlot: true, Points: pts}
}

// bbcReduced is Table 5.2 at 3 × 4 cells.
func bbcReduced() Grid {
	g := bbcGrid("5.2", "optimised", []float64{1, 10, 30, 50}, []float64{1, 4, 8})
	g.ID, g.Title = "5.2-reduced", "BBC WHP 178 Table 5.2 (reduced): rate vs latency per parallelism (optimised)"
	for i := range g.Points {
		g.Points[i].Grid = g.ID
	}
	return g
}

// ciGrid is two short cells for the test suite: fixed duration, the
// path of the BBC grids.
func ciGrid() Grid {
	c := WANCell{Grid: "ci", Rate: 100_000_000, Latency: 5 * time.Millisecond, Loss: 0.1, P: 2, Profile: "optimised", X: 2}
	return Grid{ID: "ci", Title: "CI: 4 s, 100 Mbit/s, 10 ms RTT, 0.1 % loss, p = 2", X: VarParallel, NoRef: true,
		Points: []WANCell{timed(c, 4*time.Second)}}
}

// Presets are the named grids of "ferry bench wan -preset".
var Presets = []Preset{
	{Name: "bbc-5.1", About: "BBC Table 5.1: 7 parallelisms × 8 latencies, un-optimised limits", Grids: []Grid{bbcGrid("5.1", "unoptimised", bbcLatencies, bbcParallelism)}},
	{Name: "bbc-5.2", About: "BBC Table 5.2: 7 parallelisms × 8 latencies, 4 MB limits", Grids: []Grid{bbcGrid("5.2", "optimised", bbcLatencies, bbcParallelism)}},
	{Name: "bbc-5.3", About: "BBC Table 5.3: 6 TCP buffers × 8 latencies at p = 4, 16 MB limits", Grids: []Grid{bbc53()}},
	{Name: "bbc-5.4", About: "BBC Table 5.4: 7 parallelisms × 8 loss rates, 4 MB limits", Grids: []Grid{bbc54()}},
	{Name: "bbc-reduced", About: "BBC Table 5.2 at p = 1, 4, 8 and latency 1, 10, 30, 50 ms", Grids: []Grid{bbcReduced()}},
	{Name: "infn", About: "INFN Torino–Napoli (8 Mbit/s): streams, TCP buffer and file size sweeps", Grids: infnGrids()},
	{Name: "cannataro", About: "Cannataro et al.: three slow links, buffers 1–64 KB, 1–64 sockets, 32 KB–32 MB files", Grids: cannataroGrids()},
	{Name: "linden", About: "Lindén: 256 MB at 55 ms RTT, defaults vs -p 16 -tcp-bs 2000000, un-optimised and optimised limits",
		Grids: []Grid{lindenGrid("unoptimised"), lindenGrid("optimised")}},
	{Name: "ci", About: "two short cells (Ferry, GCT) for the test suite", Grids: []Grid{ciGrid()}},
	{Name: "tune", About: "automatic tuning: best hand-tuned -p/-tcp-bs vs no flags (empty history, ten records) vs GCT; BBC links, 1 Gbit/s",
		Tune: tuneSpec()},
	{Name: "tune-ci", About: "one short row of the tune preset for the test suite", Tune: tuneCISpec()},
}

// PresetByName returns the preset called name.
func PresetByName(name string) (Preset, error) {
	for _, p := range Presets {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	return Preset{}, fmt.Errorf("bench: unknown preset %q (one of %v)", name, names)
}

// WANImpls are the implementations of a WAN cell, in run order.
var WANImpls = []Impl{Ferry, GCT, IPerf3}

// Expand returns the cells of p for the implementations impls (nil: all),
// in run order: each point runs every GridFTP implementation, the first
// one alternating from point to point so that drift affects both alike,
// and then iperf3 where the grid takes it as the reference.
func (p Preset) Expand(impls []Impl) []WANCell {
	if impls == nil {
		impls = WANImpls
	}
	var out []WANCell
	n := 0
	for _, g := range p.Grids {
		for _, pt := range g.Points {
			order := []Impl{Ferry, GCT}
			if n%2 == 1 {
				order = []Impl{GCT, Ferry}
			}
			n++
			for _, impl := range order {
				if slices.Contains(impls, impl) {
					c := pt
					c.Impl = impl
					out = append(out, c)
				}
			}
			if slices.Contains(impls, IPerf3) && g.reference(pt) {
				c := pt
				c.Impl = IPerf3
				out = append(out, c)
			}
		}
	}
	return out
}

// reference reports whether iperf3 runs point c of g.
func (g Grid) reference(c WANCell) bool {
	switch {
	case g.NoRef || len(g.Points) == 0:
		return false
	case g.S == VarNone:
		return c.X == g.Points[0].X
	}
	return c.S == g.RefS
}

// EstimatedTime is how long cells take to run, roughly: each fixed-size
// cell at its theoretical bound, each fixed-duration cell its duration,
// plus set-up and the servers' start per cell.
func EstimatedTime(cells []WANCell) time.Duration {
	var d time.Duration
	for _, c := range cells {
		d += 2 * time.Second
		if c.Size >= openEnded {
			d += c.Duration
			continue
		}
		t := Bounds(TheoryInput{P: c.P, RTT: 2*c.Latency + idleOverhead, Loss: c.Loss, Rate: c.Rate,
			Buffer: c.clampedBuffer(), RmemMax: Profiles[c.Profile].RmemMax})
		d += min(c.Duration, time.Duration(float64(c.Size)*8/(t.Bound*1e6)*float64(time.Second)))
	}
	return d
}
