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

	"github.com/ferrygrid/ferry/internal/progress"
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
	case FerryTar:
		return "Ferry tar"
	case S3Client:
		return "S3 client"
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
		// An unknown peak RSS (negative) is left out of the summary.
		if s.ClientRSS >= 0 {
			cr = append(cr, mib(s.ClientRSS))
		}
		if s.ServerRSS >= 0 {
			sr = append(sr, mib(s.ServerRSS))
		}
	}
	return cell{Summarize(g), Summarize(cc), Summarize(sc), Summarize(cr), Summarize(sr)}
}

// na marks a cell without data.
const na = "n/a"

// spread renders a summary as its median and range with prec decimals:
// "12.34 (11.90–12.80)"; one sample is its value alone.
func spread(s Summary, prec int) string {
	switch {
	case s.N == 0:
		return na
	case s.N == 1:
		return fmt.Sprintf("%.*f", prec, s.Median)
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Median, prec, s.Min, prec, s.Max)
}

// peakMiB renders a peak RSS summary's median: "?" without data.
func peakMiB(s Summary) string {
	if s.N == 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f", s.Median)
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
		if s.Workload != GSILogin && s.Workload != GSILoginDeleg {
			reps = max(reps, s.Rep)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### ferry bench loopback: %s per run, %d run(s) per cell\n\n", progress.Size(cfg.Size), reps)
	where := host()
	if cfg.WANDelay > 0 {
		where = strings.Replace(where, "Loopback", fmt.Sprintf("Emulated WAN (%v one way)", cfg.WANDelay), 1)
	}
	fmt.Fprintf(&b, "%s. Medians, with the range (min–max) of the runs in parentheses; %s.\n\n", where, stolenOverall(samples))
	head := []string{"workload", "p"}
	for _, i := range cfg.Impls {
		head = append(head, i.label()+" Gbit/s")
	}
	hasFerry, hasGCT, hasRaw := slices.Contains(cfg.Impls, Ferry), slices.Contains(cfg.Impls, GCT), slices.Contains(cfg.Impls, Raw)
	hasTar, hasS3 := slices.Contains(cfg.Impls, FerryTar), slices.Contains(cfg.Impls, S3Client)
	if hasFerry && hasGCT {
		head = append(head, "Ferry/GCT")
	}
	if hasFerry && hasRaw {
		head = append(head, "Ferry/raw")
	}
	if hasFerry && hasTar {
		head = append(head, "Ferry tar/Ferry")
	}
	if hasFerry && hasS3 {
		head = append(head, "Ferry/S3 client")
	}
	for _, i := range cfg.Impls {
		head = append(head, i.label()+" CPU s client+server")
	}
	for _, i := range cfg.Impls {
		head = append(head, i.label()+" peak RSS MiB client/server")
	}
	head = append(head, machineHead)
	row(&b, head)
	align := []string{"---", "--:"}
	for range head[2:] {
		align = append(align, "--:")
	}
	row(&b, align)
	var rows []Workload
	for _, w := range cfg.Workloads {
		rows = append(rows, w.rows()...)
	}
	for _, wl := range rows {
		for _, p := range cfg.Parallel {
			cells := map[Impl]cell{}
			for _, i := range cfg.Impls {
				cells[i] = summarize(samples, wl, i, p)
			}
			r := []string{string(wl), strconv.Itoa(p)}
			for _, i := range cfg.Impls {
				r = append(r, spread(cells[i].gbps, 2))
			}
			if hasFerry && hasGCT {
				r = append(r, ratio(cells[Ferry].gbps, cells[GCT].gbps))
			}
			if hasFerry && hasRaw {
				r = append(r, ratio(cells[Ferry].gbps, cells[Raw].gbps))
			}
			if hasFerry && hasTar {
				r = append(r, ratio(cells[FerryTar].gbps, cells[Ferry].gbps))
			}
			if hasFerry && hasS3 {
				r = append(r, ratio(cells[Ferry].gbps, cells[S3Client].gbps))
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
				r = append(r, peakMiB(c.clientRSS)+"/"+peakMiB(c.serverRSS))
			}
			r = append(r, machineCell(samples, func(s Sample) bool { return s.Workload == wl && s.P == p }))
			row(&b, r)
		}
	}
	hasGSI := slices.Contains(cfg.Workloads, GSI)
	b.WriteString("\n")
	// A note per workload of the table (GSI's rows are mem over gsiftp://).
	if slices.Contains(cfg.Workloads, Mem) || hasGSI {
		b.WriteString(`- mem: Ferry's null storage (a path named by the size reads as zeros) to ` + "`ferry cp … /dev/null`" + `; GCT's
  /dev/zero to ` + "`globus-url-copy -len SIZE … file:///dev/null`" + `; raw TCP is ` + "`iperf3 -P p -l 1M -n SIZE`" + `.
`)
	}
	if slices.ContainsFunc(cfg.Workloads, Workload.disk) {
		b.WriteString(`- disk: a random file, in the page cache, downloaded to a new local file (removed after each run).
`)
	}
	if slices.Contains(cfg.Workloads, DiskUp) {
		b.WriteString(`- disk-up: the same file uploaded (` + "`ferry cp file:///… ftp://…`" + `, ` + "`globus-url-copy file:///… ftp://…`" + `) to a new
  file in the server's directory (removed after each run).
`)
	}
	if slices.ContainsFunc(cfg.Workloads, Workload.s3) {
		b.WriteString(`- s3, s3-up: a SeaweedFS server (` + "`weed mini`" + `, data in the scratch directory) on loopback with a bucket; s3
  downloads the random file, put there as an object, to a new local file, s3-up uploads the page-cached file to a
  new object (removed after each run). Ferry: ` + "`ferry cp [-p p]`" + ` against ` + "`ferry serve -storage s3`" + ` on the bucket;
  S3 client: ` + "`aws s3 cp`" + ` straight to weed's S3 gateway with max_concurrent_requests p and 8 MiB parts (ferry
  serve's part size). Server CPU and peak RSS: weed's, plus ferry serve's for Ferry (the sum of both peaks).
`)
	}
	if hasGSI {
		b.WriteString(`- gsi-dcau, gsi-prot-p: mem over gsiftp:// with a test PKI, a proxy and a grid-mapfile (GSI servers: ` + "`ferry serve -storage null -cert … -gridmap …`" + `
  and ` + "`globus-gridftp-server`" + ` as root, mapping to a local account); both clients delegate and use DCAU A;
  gsi-dcau is PROT C (authenticated, clear data channels), gsi-prot-p is PROT P (` + "`-dcpriv`" + `: TLS-encrypted).
`)
	}
	b.WriteString(`- p = 1 is stream mode (MODE S; neither client gets -p); p > 1 is MODE E with p data connections (-p p).
- Gbit/s is 10^9 bit/s: bytes over the client process's wall time (start-up and login included); raw TCP
  is iperf3's sender rate (its receiver's summary misses the bytes in flight when the test ends).
- CPU: user+system seconds, client from wait4, server from /proc/PID/stat across the run (GCT: its master
  plus the session processes it reaped).
- Peak RSS: VmHWM from /proc. Ferry's server: read after the run, reset before it through clear_refs;
  clients, iperf3's server and GCT's session processes: sampled every 20 ms (the largest value). A client or
  iperf3 server that ended before its first sample: wait4's ru_maxrss when it exceeds the benchmark's own
  peak (exec inherits that), else unknown; "?" when no run of the cell had a value.
`)
	b.WriteString(machineNote)
	if hasGSI {
		writeLogins(&b, cfg, samples)
	}
	if slices.ContainsFunc(cfg.Workloads, Workload.small) {
		writeSmall(&b, cfg, samples)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSmall writes the table of the smallfiles workloads in files per
// second (the Gbit/s of the main table say little of them).
func writeSmall(b *strings.Builder, cfg Config, samples []Sample) {
	where := "loopback"
	if cfg.WANDelay > 0 {
		where = fmt.Sprintf("an emulated WAN, %v one way (idle RTT %v), servers and clients in its two network namespaces", cfg.WANDelay, 2*cfg.WANDelay)
		if cfg.WANCongestion != "" {
			where += ", TCP " + cfg.WANCongestion
		}
	}
	fmt.Fprintf(b, "\n#### Many small files: %d files of %s over %s\n\n", cfg.smallFiles(), progress.Size(cfg.smallFileSize()), where)
	var impls []Impl
	for _, i := range cfg.Impls {
		if i.Applies(SmallFiles) {
			impls = append(impls, i)
		}
	}
	head := []string{"workload", "p"}
	for _, i := range impls {
		head = append(head, i.label()+" files/s")
	}
	hasFerry, hasGCT, hasTar := slices.Contains(impls, Ferry), slices.Contains(impls, GCT), slices.Contains(impls, FerryTar)
	if hasFerry && hasGCT {
		head = append(head, "Ferry/GCT")
	}
	if hasFerry && hasTar {
		head = append(head, "Ferry tar/Ferry")
	}
	for _, i := range impls {
		head = append(head, i.label()+" s")
	}
	head = append(head, machineHead)
	row(b, head)
	align := []string{"---", "--:"}
	for range head[2:] {
		align = append(align, "--:")
	}
	row(b, align)
	// Files per second scale with Gbit/s: the bytes of every run are the same.
	perFile := 1e9 / 8 / float64(cfg.smallFileSize())
	scale := func(s Summary, k float64) Summary {
		return Summary{Median: s.Median * k, Min: s.Min * k, Max: s.Max * k, N: s.N}
	}
	for _, w := range cfg.Workloads {
		if !w.small() {
			continue
		}
		for _, p := range cfg.Parallel {
			cells := map[Impl]Summary{}
			for _, i := range impls {
				cells[i] = summarize(samples, w, i, p).gbps
			}
			r := []string{string(w), strconv.Itoa(p)}
			for _, i := range impls {
				c := scale(cells[i], perFile)
				if c.N == 0 {
					r = append(r, na)
				} else {
					r = append(r, fmt.Sprintf("%.0f (%.0f–%.0f)", c.Median, c.Min, c.Max))
				}
			}
			if hasFerry && hasGCT {
				r = append(r, ratio(cells[Ferry], cells[GCT]))
			}
			if hasFerry && hasTar {
				r = append(r, ratio(cells[FerryTar], cells[Ferry]))
			}
			for _, i := range impls {
				c := cells[i]
				if c.N == 0 || c.Median == 0 {
					r = append(r, na)
					continue
				}
				r = append(r, fmt.Sprintf("%.2f", float64(cfg.smallFiles())/(c.Median*perFile)))
			}
			r = append(r, machineCell(samples, func(s Sample) bool { return s.Workload == w && s.P == p }))
			row(b, r)
		}
	}
	b.WriteString(`
- Download (smallfiles): ` + "`ferry cp -q -r -cc p ftp://…/small/ DIR/`" + ` against ` + "`ferry serve`" + ` (pipelined batches, Ferry's
  default) vs ` + "`globus-url-copy -r -cd -cc p -pp -fast ftp://…/small/ file://DIR/`" + ` against ` + "`globus-gridftp-server`" + `;
  upload (smallfiles-up) the same the other way. Each client is a process of its own; wall time from its
  start to its exit (logins and listing included); s is the median wall time. Machine: as in the table above.
`)
	if hasTar {
		b.WriteString(`- Ferry tar: ` + "`ferry cp -r -tar`" + ` against ` + "`ferry serve -allowed-modules tar`" + `: the whole tree as one tar stream over one
  stream-mode data connection (ERET tar downloads it, ESTO tar uploads it; p does not apply), packed and unpacked
  on the fly on the client's side; the server packs an ERET into a temporary file before it sends it, and
  receives an ESTO into one before it unpacks it. Ferry tar/Ferry above 1 means the tar stream is faster.
`)
	}
}

// writeLogins writes the GSI login table: median and range of the login
// times of each server, without and with delegation.
func writeLogins(b *strings.Builder, cfg Config, samples []Sample) {
	var impls []Impl
	for _, i := range cfg.Impls {
		if i.Applies(GSILogin) {
			impls = append(impls, i)
		}
	}
	if len(impls) == 0 {
		return
	}
	n := 0
	for _, s := range samples {
		if s.Workload == GSILogin {
			n = max(n, s.Rep)
		}
	}
	fmt.Fprintf(b, "\n#### GSI login: connect to 230, ms, %d login(s) per cell\n\n", n)
	head := []string{"login"}
	for _, i := range impls {
		head = append(head, i.label()+" server ms")
	}
	hasBoth := slices.Contains(impls, Ferry) && slices.Contains(impls, GCT)
	if hasBoth {
		head = append(head, "GCT/Ferry")
	}
	head = append(head, machineHead)
	row(b, head)
	align := []string{"---"}
	for range head[1:] {
		align = append(align, "--:")
	}
	row(b, align)
	for _, wl := range []Workload{GSILogin, GSILoginDeleg} {
		name := "without delegation"
		if wl == GSILoginDeleg {
			name = "with delegation"
		}
		r := []string{name}
		times := map[Impl]Summary{}
		for _, i := range impls {
			var v []float64
			for _, s := range samples {
				if s.Workload == wl && s.Impl == i {
					v = append(v, ms(s.Wall))
				}
			}
			times[i] = Summarize(v)
			r = append(r, spread(times[i], 1)) // ms
		}
		if hasBoth {
			r = append(r, ratio(times[GCT], times[Ferry]))
		}
		r = append(r, machineCell(samples, func(s Sample) bool { return s.Workload == wl }))
		row(b, r)
	}
	b.WriteString(`
- The same client, Ferry's library (` + "`client.Dial`" + ` with GSI, then ` + "`USER :globus-mapping:`" + `), against each server:
  the time from before the TCP connect to the 230 reply (TLS handshake, the ADAT round trips, the grid-mapfile
  look-up and, for GCT, its fork of a session process). With delegation the server makes a key pair and the
  client signs a proxy for it; without, the client sends '0' instead of 'D'. The servers' logins alternate,
  after one untimed login each. GCT/Ferry above 1 means Ferry logs in faster. Machine: across all the logins
  of the row.
`)
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

// machineHead is the heading of the column of what the machine's CPUs
// did during a row's runs.
const machineHead = "machine: cores busy, max stolen"

// machineNote explains machineHead's column.
var machineNote = fmt.Sprintf(`- Machine: what this machine's CPUs did while each client ran, from /proc/stat: the median number of cores
  busy (of %d; every process of the run shares them) and the largest share of CPU time the hypervisor stole
  in one run of the row, all implementations together. "!" marks a row where a run lost %.0f %% or more: its
  numbers measure the host as much as the software.
`, onlineCPUs(), 100*stolenLimit)

// machineCell renders what the machine's CPUs did over the samples that
// match: "1.85, 0.4 %", with " !" when a run lost stolenLimit or more.
func machineCell(samples []Sample, match func(Sample) bool) string {
	var shares []cpuShare
	for _, s := range samples {
		if match(s) {
			shares = append(shares, s.Machine)
		}
	}
	if len(shares) == 0 {
		return na
	}
	m := summarizeMachine(shares)
	if !m.steady() {
		return m.String() + " !"
	}
	return m.String()
}

// stolenOverall says the largest share stolen in any run of samples.
func stolenOverall(samples []Sample) string {
	var steal float64
	for _, s := range samples {
		steal = max(steal, s.Machine.Steal)
	}
	return fmt.Sprintf("at most %.1f %% of the CPU time stolen by the hypervisor in one run", 100*steal)
}

// csvHeader is the first record WriteCSV writes.
var csvHeader = []string{"workload", "impl", "p", "rep", "bytes", "wall_s", "gbit_s",
	"client_cpu_s", "server_cpu_s", "client_peak_rss_bytes", "server_peak_rss_bytes", "cores_busy", "steal"}

// WriteCSV writes every sample as a CSV record, after a header. An
// unknown peak RSS is an empty field; a GSI login's wall_s is its login
// time, with p 0 and the other numbers 0.
func WriteCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	rss := func(n int64) string { // empty when unknown
		if n < 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	for _, s := range samples {
		cw.Write(append([]string{string(s.Workload), string(s.Impl), strconv.Itoa(s.P), strconv.Itoa(s.Rep),
			strconv.FormatInt(s.Bytes, 10), f(s.Wall.Seconds()), f(s.Gbps),
			f(s.ClientCPU.Seconds()), f(s.ServerCPU.Seconds()),
			rss(s.ClientRSS), rss(s.ServerRSS)}, s.Machine.csvFields()...))
	}
	cw.Flush()
	return cw.Error()
}
