package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// label is an implementation's name in the table.
func (i Impl) label() string {
	switch i {
	case Ferry:
		return "Ferry"
	case GCT:
		return "GCT"
	case Raw:
		return "raw TCP"
	}
	return string(i)
}

// cell is the samples of one implementation in one (workload, p) row.
type cell struct {
	gbps, clientCPU, serverCPU, clientRSS, serverRSS Summary
}

// summarize returns the cell of the samples matching w, impl and p.
func summarize(samples []Sample, w Workload, impl Impl, p int) cell {
	var g, cc, sc, cr, sr []float64
	for _, s := range samples {
		if s.Workload != w || s.Impl != impl || s.P != p {
			continue
		}
		g = append(g, s.Gbps)
		cc = append(cc, s.ClientCPU.Seconds())
		sc = append(sc, s.ServerCPU.Seconds())
		cr = append(cr, mib(s.ClientRSS))
		sr = append(sr, mib(s.ServerRSS))
	}
	return cell{Summarize(g), Summarize(cc), Summarize(sc), Summarize(cr), Summarize(sr)}
}

// na marks a cell without data.
const na = "n/a"

// rate renders a throughput summary: "12.34 (11.90–12.80)".
func rate(s Summary) string {
	switch {
	case s.N == 0:
		return na
	case s.N == 1:
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

// ratio renders the ratio of two medians.
func ratio(a, b Summary) string {
	if a.N == 0 || b.N == 0 || b.Median == 0 {
		return na
	}
	return fmt.Sprintf("%.2f", a.Median/b.Median)
}

// WriteTable writes the Markdown report of samples: a heading, one table
// row per (workload, parallelism) of cfg in its order, with a column group
// per implementation of cfg, and notes on how each number was taken.
func WriteTable(w io.Writer, cfg Config, samples []Sample) error {
	reps := 0
	for _, s := range samples {
		reps = max(reps, s.Rep)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### ferry bench loopback: %s per run, %d run(s) per cell\n\n", FormatSize(cfg.Size), reps)
	fmt.Fprintf(&b, "%s. Medians, with the range (min–max) of the runs in parentheses.\n\n", host())
	head := []string{"workload", "p"}
	for _, i := range cfg.Impls {
		head = append(head, i.label()+" Gbit/s")
	}
	hasFerry, hasGCT, hasRaw := slices.Contains(cfg.Impls, Ferry), slices.Contains(cfg.Impls, GCT), slices.Contains(cfg.Impls, Raw)
	if hasFerry && hasGCT {
		head = append(head, "Ferry/GCT")
	}
	if hasFerry && hasRaw {
		head = append(head, "Ferry/raw")
	}
	for _, i := range cfg.Impls {
		head = append(head, i.label()+" CPU s client+server")
	}
	for _, i := range cfg.Impls {
		head = append(head, i.label()+" peak RSS MiB client/server")
	}
	row(&b, head)
	align := []string{"---", "--:"}
	for range head[2:] {
		align = append(align, "--:")
	}
	row(&b, align)
	for _, wl := range cfg.Workloads {
		for _, p := range cfg.Parallel {
			cells := map[Impl]cell{}
			for _, i := range cfg.Impls {
				cells[i] = summarize(samples, wl, i, p)
			}
			r := []string{string(wl), strconv.Itoa(p)}
			for _, i := range cfg.Impls {
				r = append(r, rate(cells[i].gbps))
			}
			if hasFerry && hasGCT {
				r = append(r, ratio(cells[Ferry].gbps, cells[GCT].gbps))
			}
			if hasFerry && hasRaw {
				r = append(r, ratio(cells[Ferry].gbps, cells[Raw].gbps))
			}
			for _, i := range cfg.Impls {
				c := cells[i]
				if c.gbps.N == 0 {
					r = append(r, na)
					continue
				}
				r = append(r, fmt.Sprintf("%.2f+%.2f", c.clientCPU.Median, c.serverCPU.Median))
			}
			for _, i := range cfg.Impls {
				c := cells[i]
				if c.gbps.N == 0 {
					r = append(r, na)
					continue
				}
				r = append(r, fmt.Sprintf("%.0f/%.0f", c.clientRSS.Median, c.serverRSS.Median))
			}
			row(&b, r)
		}
	}
	b.WriteString(`
- mem: Ferry's null storage (a path named by the size reads as zeros) to ` + "`ferry cp … /dev/null`" + `; GCT's
  /dev/zero to ` + "`globus-url-copy -len SIZE … file:///dev/null`" + `; raw TCP is ` + "`iperf3 -P p -l 1M -n SIZE`" + `.
- disk: a random file, in the page cache, copied to a new local file (removed after each run).
- p = 1 is stream mode (MODE S; neither client gets -p); p > 1 is MODE E with p data connections (-p p).
- Gbit/s is 10^9 bit/s: bytes over the client process's wall time (start-up and login included); raw TCP
  is iperf3's sender rate (its receiver's summary misses the bytes in flight when the test ends).
- CPU: user+system seconds, client from wait4, server from /proc/PID/stat across the run (GCT: its master
  plus the session processes it reaped).
- Peak RSS: VmHWM from /proc. Ferry's server: read after the run, reset before it through clear_refs;
  clients, iperf3's server and GCT's session processes: sampled every 20 ms (the largest value).
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// row writes one Markdown table row.
func row(b *strings.Builder, cells []string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// host describes the machine in one sentence fragment.
func host() string {
	s := fmt.Sprintf("Loopback on %d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		s += ", Linux " + strings.TrimSpace(string(rel))
	}
	return s
}

// csvHeader is the first record WriteCSV writes.
var csvHeader = []string{"workload", "impl", "p", "rep", "bytes", "wall_s", "gbit_s",
	"client_cpu_s", "server_cpu_s", "client_peak_rss_bytes", "server_peak_rss_bytes"}

// WriteCSV writes every sample as a CSV record, after a header.
func WriteCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	for _, s := range samples {
		cw.Write([]string{string(s.Workload), string(s.Impl), strconv.Itoa(s.P), strconv.Itoa(s.Rep),
			strconv.FormatInt(s.Bytes, 10), f(s.Wall.Seconds()), f(s.Gbps),
			f(s.ClientCPU.Seconds()), f(s.ServerCPU.Seconds()),
			strconv.FormatInt(s.ClientRSS, 10), strconv.FormatInt(s.ServerRSS, 10)})
	}
	cw.Flush()
	return cw.Error()
}
