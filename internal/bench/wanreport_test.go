package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wan"
)

// sampleResults makes results for two points of bbc-reduced (p = 1 at
// 10 and 30 ms) by hand, one of them failed: the report's input, not a
// measurement.
func sampleResults(t *testing.T) (Preset, []WANResult) {
	t.Helper()
	p, _ := PresetByName("bbc-reduced")
	var results []WANResult
	for _, c := range p.Expand(nil) {
		if c.P != 1 || (c.X != 10 && c.X != 30) {
			continue
		}
		r := WANResult{Cell: c, Ended: EndStopped, CC: "cubic", BufferAsked: 0, Load1: 0.2,
			RTT: 2*c.Latency + 300*time.Microsecond, Elapsed: c.Duration, Bytes: int64(c.X) * 1e8}
		r.Mbps = bitRate(r.Bytes, r.Elapsed) / 1e6
		r.Theory = Bounds(TheoryInput{P: c.P, RTT: r.RTT, Rate: c.Rate, RmemMax: 4 << 20})
		r.Fidelity = wan.Fidelity{IdleRTT: r.RTT, DelayErrP50: 35 * time.Microsecond, DelayErrP99: 120 * time.Microsecond,
			CPU: 5 * time.Second, Wall: c.Duration + time.Second}
		r.Fidelity.Packets[wan.ToClient] = 100000
		if c.Impl == GCT && c.X == 30 {
			r = WANResult{Cell: c, Ended: EndFailed, Err: "bench: globus-url-copy: exit status 1:\nerror: connection refused"}
		}
		if c.Impl == Ferry && c.X == 30 {
			r.Fidelity.QueueDrops = 7
		}
		results = append(results, r)
	}
	if len(results) != 6 {
		t.Fatalf("%d sample results, want 6", len(results))
	}
	return p, results
}

func TestWriteWANCSV(t *testing.T) {
	p, results := sampleResults(t)
	p.Join(results)
	var b bytes.Buffer
	if err := WriteWANCSV(&b, results); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(results) {
		t.Fatalf("%d records, want %d", len(recs), 1+len(results))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for i, r := range recs[1:] {
		res := results[i]
		if len(r) != len(wanCSVHeader) {
			t.Fatalf("record %d has %d fields", i, len(r))
		}
		get := func(h string) string { return r[col[h]] }
		if get("grid") != "5.2-reduced" || get("impl") != string(res.Cell.Impl) || get("ended") != res.Ended {
			t.Errorf("record %d: %v", i, r)
		}
		if get("size_bytes") != "" || get("duration_limit_s") != "15.0" && get("duration_limit_s") != "25.0" {
			t.Errorf("record %d: a fixed-duration cell: size %q, limit %q", i, get("size_bytes"), get("duration_limit_s"))
		}
		wantPub := map[string]string{"10": "766.35", "30": "305.41"}[get("one_way_latency_ms")[:2]]
		if get("published_mbit_s") != wantPub {
			t.Errorf("record %d: published %q, want %q", i, get("published_mbit_s"), wantPub)
		}
		if res.Ended == EndFailed {
			if get("mbit_s") != "" || !strings.Contains(get("error"), "connection refused") {
				t.Errorf("failed record %d: rate %q, error %q", i, get("mbit_s"), get("error"))
			}
			continue
		}
		// 10 ms: 1e9 bytes in 15 s = 533.33 Mbit/s.
		if get("one_way_latency_ms") == "10.000" && get("mbit_s") != "533.33" {
			t.Errorf("record %d: mbit_s %q, want 533.33", i, get("mbit_s"))
		}
		if get("theory_mathis_mbit_s") != "" || get("limit") == "" || get("cc") != "cubic" || get("delay_err_p99_ms") != "0.120" {
			t.Errorf("record %d: theory/fidelity fields %v", i, r)
		}
		if res.Fidelity.QueueDrops > 0 && !strings.Contains(get("checks"), "7 queue drops") {
			t.Errorf("record %d: checks %q, want the queue drops", i, get("checks"))
		}
	}
}

func TestWriteWANMarkdown(t *testing.T) {
	p, results := sampleResults(t)
	p.Join(results)
	var b strings.Builder
	meta := ReportMeta{Command: "ferry bench wan -preset bbc-reduced -out x", Start: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), CC: "cubic"}
	if err := WriteWANMarkdown(&b, p, results, meta, true); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	t.Log(md)
	for _, want := range []string{
		"# Ferry and GCT over an emulated WAN: preset bbc-reduced",
		"`ferry bench wan -preset bbc-reduced -out x`",
		"| parallel TCP connections (-p) \\ one-way latency (ms) | 1 | 10 | 30 | 50 |",
		"| 1 |  | 533 | 960 |  |",       // Ferry: 1e9 and 3e9 bytes in 15 and 25 s (the report does not judge)
		"| 1 |  | 533 | failed |  |",    // GCT
		"| 4 | 920 | 864 | 764 | 541 |", // published, every cell
		"Ferry / GCT (above 1: Ferry faster):\n\n| parallel TCP connections (-p) \\ one-way latency (ms) | 1 | 10 | 30 | 50 |\n| --- | --: | --: | --: | --: |\n| 1 |  | 1.00 |  |  |",
		"gct at one-way latency (ms) 30, parallel TCP connections (-p) 1 failed: bench: globus-url-copy: exit status 1:",
		"ferry at one-way latency (ms) 30, parallel TCP connections (-p) 1: 7 queue drops",
		"![BBC WHP 178 Table 5.2 (reduced): rate vs latency per parallelism (optimised)](5.2-reduced.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Theory: 0.66 × 4 MiB per 20.3 ms = 1091 > link: L; per 60.3 ms: 367 W.
	if !strings.Contains(md, "| 1 |  | 941 L | 367 W |  |") {
		t.Errorf("report lacks the theory row")
	}
}

func TestWriteWANOutputs(t *testing.T) {
	p, results := sampleResults(t)
	dir := t.TempDir()
	if err := WriteWANOutputs(dir, p, results, ReportMeta{Start: time.Now(), CC: "cubic"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bbc-reduced.csv", "bbc-reduced.md", "5.2-reduced.svg", "5.2-reduced.png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "5.2-reduced.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("PNG: %v", err)
	}
}

// svgPath is a path element of an SVG document: its data and style.
type svgPath struct{ D, Style string }

// checkSVG parses an SVG document to its end and returns its paths and
// texts.
func checkSVG(t *testing.T, doc []byte) (paths []svgPath, texts []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 && (tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg") {
				t.Errorf("root element %v", tok.Name)
			}
			if tok.Name.Local == "path" {
				var p svgPath
				for _, a := range tok.Attr {
					switch a.Name.Local {
					case "d":
						p.D = a.Value
					case "style":
						p.Style = a.Value
					}
				}
				paths = append(paths, p)
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if depth != 0 {
		t.Errorf("unbalanced SVG: depth %d at the end", depth)
	}
	return paths, texts
}

// svgColor is c as the SVG writes it.
func svgColor(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// lines returns the stroked paths of colour c, and markers the number of
// paths filled with it.
func lines(paths []svgPath, c color.RGBA) (lines []svgPath, markers int) {
	for _, p := range paths {
		switch {
		case strings.Contains(p.Style, "stroke:"+svgColor(c)):
			lines = append(lines, p)
		case strings.Contains(p.Style, "fill:"+svgColor(c)):
			markers++
		}
	}
	return lines, markers
}

func TestPlotSVGAndPNG(t *testing.T) {
	p, results := sampleResults(t)
	p.Join(results)
	pl := p.Grids[0].Plot(results)
	pl.Title += " <&> check" // escaping
	svg, paths, texts := renderSVG(t, pl)
	all := strings.Join(texts, "|")
	for _, want := range []string{"one-way latency (ms)", "rate (Mbit/s)", "p = 1", "p = 4", "p = 8", "Ferry", "GCT", "published", "iperf3", "<&> check", "|0|", "|50|", "|800|", "|1000|"} {
		if !strings.Contains("|"+all+"|", want) {
			t.Errorf("SVG texts lack %q: %s", want, all)
		}
	}
	// p = 1: Ferry (10, 30 ms), iperf3 (10, 30) and published (1, 10,
	// 30, 50) are lines; GCT has one point (a marker, no line). The
	// legend adds a line per S value and per source.
	blue, markers := lines(paths, Palette[0])
	if len(blue) != 3+1 || markers != 2+1+2+4 {
		t.Errorf("p = 1: %d lines, %d markers; want 4 (3 and the legend's) and 9", len(blue), markers)
	}
	for _, d := range []Dash{Dashed, Dotted, DashDot} {
		if !strings.Contains(svg, "stroke-dasharray:"+dashArray(d)) {
			t.Errorf("no line drawn %v (dash array %s)", d, dashArray(d))
		}
	}

	img := renderPNG(t, pl)
	if img.Bounds() != image.Rect(0, 0, plotW, plotH) {
		t.Errorf("PNG bounds %v", img.Bounds())
	}
	// The first series' colour is drawn in the plot area, left of the
	// legend, and the y axis' labels (dark) at the left edge.
	if !hasColor(img, image.Rect(60, 0, plotW-legendW, plotH), Palette[0], 0) {
		t.Error("PNG has no line of the first series")
	}
	if !hasColor(img, image.Rect(0, 40, 60, plotH-40), black, 0x40) {
		t.Error("PNG has no y tick labels")
	}
	if !hasColor(img, image.Rect(plotW-legendW, 0, plotW, plotH), Palette[2], 0) {
		t.Error("PNG has no legend")
	}
}

// renderSVG draws pl as SVG and returns the document, its paths and its
// texts.
func renderSVG(t *testing.T, pl *Plot) (string, []svgPath, []string) {
	t.Helper()
	var b bytes.Buffer
	if err := pl.SVG(&b); err != nil {
		t.Fatal(err)
	}
	paths, texts := checkSVG(t, b.Bytes())
	return b.String(), paths, texts
}

// renderPNG draws pl as PNG and decodes it.
func renderPNG(t *testing.T, pl *Plot) image.Image {
	t.Helper()
	var b bytes.Buffer
	if err := pl.PNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// dashArray is the SVG dash array of d.
func dashArray(d Dash) string {
	var parts []string
	for _, v := range d.pattern() {
		parts = append(parts, strconv.FormatFloat(float64(px(v)), 'g', 5, 64))
	}
	return strings.Join(parts, ",")
}

// hasColor reports whether r of img has a pixel within tol of c in each
// channel.
func hasColor(img image.Image, r image.Rectangle, c color.RGBA, tol int) bool {
	near := func(a uint32, b uint8) bool { return abs(int(a>>8)-int(b)) <= tol }
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, c.R) && near(pg, c.G) && near(pb, c.B) {
				return true
			}
		}
	}
	return false
}

func abs(n int) int { return max(n, -n) }

func TestPlotLogAxisAndGaps(t *testing.T) {
	pl := &Plot{Title: "buffers", XLabel: "TCP buffer", YLabel: "Mbit/s", XLog: true, XFormat: VarBuffer.Format,
		Series: []Series{{Color: Palette[1], Dash: Dashed, Points: []Point{{4096, 1}, {8192, math.NaN()}, {16384, 3}, {65536, 4}}}}}
	_, paths, texts := renderSVG(t, pl)
	for _, want := range []string{"4K", "8K", "16K", "32K", "64K"} {
		if !strings.Contains("|"+strings.Join(texts, "|")+"|", "|"+want+"|") {
			t.Errorf("log axis lacks tick %q: %v", want, texts)
		}
	}
	// Broken at the NaN: 4K alone (a marker), then 16K to 64K, dashed.
	red, markers := lines(paths, Palette[1])
	if len(red) != 1 || strings.Count(red[0].D, "L") != 1 || markers != 3 {
		t.Errorf("lines %v and %d markers; want one line of two points and 3 markers", red, markers)
	}
	if len(red) > 0 && !strings.Contains(red[0].Style, "stroke-dasharray:"+dashArray(Dashed)) {
		t.Errorf("dashed series drawn %q", red[0].Style)
	}
	img := renderPNG(t, pl)
	if !hasColor(img, img.Bounds(), Palette[1], 0) {
		t.Error("PNG has no line of the series")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 941, 6, []float64{0, 200, 400, 600, 800, 1000}},
		{0, 50, 8, []float64{0, 10, 20, 30, 40, 50}},
		{0, 5, 8, []float64{0, 1, 2, 3, 4, 5}},
		{0, 8.18, 6, []float64{0, 2, 4, 6, 8, 10}},
	} {
		if got := niceTicks(tc.lo, tc.hi, tc.n); !slicesEqual(got, tc.want) {
			t.Errorf("niceTicks(%g, %g, %d) = %v, want %v", tc.lo, tc.hi, tc.n, got, tc.want)
		}
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

func TestSumReceived(t *testing.T) {
	// ss -tinH: a socket's line, then its info line.
	out := `ESTAB 0 0 10.77.0.1:40000 10.77.0.2:2811
	 cubic wscale:7,7 rto:204 rtt:20.5/0.2 bytes_sent:120 bytes_received:640 segs_out:9
ESTAB 0 0 10.77.0.1:40002 10.77.0.2:50000
	 cubic wscale:7,7 rto:204 rtt:21/1 bytes_acked:1 bytes_received:123456789 segs_in:85262
ESTAB 0 0 10.77.0.1:40004 10.77.0.2:50001
	 cubic bytes_received:1000000
`
	if got, want := sumReceived(out), int64(640+123456789+1000000); got != want {
		t.Errorf("sumReceived = %d, want %d", got, want)
	}
	if got := sumReceived(""); got != 0 {
		t.Errorf("sumReceived of nothing = %d", got)
	}
}

func TestListeningOn(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 02004D0A:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 02004D0A:0B03 01004D0A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
`
	if !listeningOn([]byte(table), 5201) {
		t.Error("5201 (0x1451) is listening")
	}
	if listeningOn([]byte(table), 2819) {
		t.Error("2819 (0x0B03) is established, not listening")
	}
}

func TestWriteWANMarkdownList(t *testing.T) {
	p, _ := PresetByName("linden")
	p.Grids = p.Grids[:1]
	var results []WANResult
	for _, c := range p.Expand([]Impl{Ferry, GCT}) {
		r := WANResult{Cell: c, Ended: EndComplete, Bytes: c.Size, Elapsed: 10 * time.Second}
		if c.Impl == GCT {
			r.Elapsed = 20 * time.Second
		}
		r.Mbps = bitRate(r.Bytes, r.Elapsed) / 1e6
		r.Theory = Bounds(TheoryInput{P: c.P, RTT: 2 * c.Latency, Rate: c.Rate, Buffer: c.clampedBuffer(), BufferMax: 4 << 20, RmemMax: 1 << 20})
		results = append(results, r)
	}
	p.Join(results)
	var b strings.Builder
	if err := WriteWANMarkdown(&b, p, results, ReportMeta{Start: time.Now()}, true); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	// 256 MiB in 10 s = 214.7 Mbit/s; in 20 s 107.4; bounds: 0.66 MiB
	// per 55 ms = 100.7 (W); 16 × 1.32 × 131071 per 55 ms = 403.1 (W).
	for _, want := range []string{
		"| parallel TCP connections (-p) | Ferry | GCT | published | theory | Ferry / GCT |",
		"| 1 | 215 | 107 | 4.00 | 101 W | 2.00 |",
		"| 16 | 215 | 107 | 84.0 | 403 W | 2.00 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "![") {
		t.Error("a plot link for a grid of two configurations")
	}
}

// The idle-host check looks at what else ran while the bench rested, not
// at the load average that the previous cell itself left behind.
func TestValidityBusyHost(t *testing.T) {
	for _, tc := range []struct {
		load1, busy float64
		want        string
	}{
		{load1: 1.9, busy: 0.05, want: ""},
		{load1: 0.3, busy: 0.8, want: "host busy 0.80 cores before"},
		{load1: 1.9, busy: math.NaN(), want: "load 1.90 before"},
		{load1: 0.4, busy: math.NaN(), want: ""},
	} {
		r := WANResult{Ended: EndComplete, Load1: tc.load1, BusyBefore: tc.busy}
		if got := strings.Join(r.Validity(), "; "); got != tc.want {
			t.Errorf("load1 %.2f, busy %.2f: checks %q, want %q", tc.load1, tc.busy, got, tc.want)
		}
	}
}
