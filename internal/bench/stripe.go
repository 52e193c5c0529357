package bench

// The striping benchmark ("ferry bench stripe"): how the aggregate rate of
// a third-party copy between two striped servers grows with the number of
// data nodes when each node's own link is the bottleneck.

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/wan"
)

// StripeConfig configures RunStripe.
type StripeConfig struct {
	Ferry    string        // the ferry binary (for Ferry)
	Movers   []int         // data nodes on each side, e.g. 1, 2, 4
	Impls    []Impl        // Ferry, GCT
	Rate     int64         // each host's link, each way, bit/s
	PerMover int64         // bytes a run moves per data node
	Parallel int           // data connections per stripe
	Reps     int           // runs per implementation and node count
	Dir      string        // where the scratch directory goes ("": the temp dir)
	Timeout  time.Duration // bound of one client run
	Progress io.Writer     // progress lines; nil discards
}

// StripeResult is one run.
type StripeResult struct {
	Impl   Impl
	Movers int
	Rep    int
	Bytes  int64
	Wall   time.Duration // of the client, from start to exit
	CPU    cpuShare      // what the machine's CPUs did meanwhile
	Err    string
}

// Mbps is the aggregate rate of the run.
func (r StripeResult) Mbps() float64 { return bitRate(r.Bytes, r.Wall) / 1e6 }

// Ports inside the lab's hosts (each host is its own namespace, so they
// never meet the machine's).
const (
	stripeDataNodePort = 47812
	stripeSourcePort   = 47811
	stripeDestPort     = 47911
)

// RunStripe measures every node count of cfg: for each it builds a lab of
// 2N+1 hosts (host 0: the client and both frontends, which carry only
// control traffic; hosts 1..N: the source's data nodes; N+1..2N: the
// destination's), each host's link limited to cfg.Rate both ways, and runs
// the implementations in turn, cfg.Reps times: a striped source and a
// striped destination with N data nodes each, and a third-party copy of
// N×PerMover bytes between them steered from host 0 (ferry cp -stripe;
// globus-url-copy -stripe). Ferry uses null storage; GCT reads a sparse
// file on tmpfs and writes /dev/null, so no disk is measured. It needs
// root and iproute2.
func RunStripe(ctx context.Context, cfg StripeConfig) ([]StripeResult, error) {
	if len(cfg.Movers) == 0 || len(cfg.Impls) == 0 || cfg.Reps < 1 || cfg.PerMover <= 0 || cfg.Rate < 0 || cfg.Parallel < 1 {
		return nil, errors.New("bench: stripe: want node counts, implementations, reps ≥ 1, a size, a rate ≥ 0 and parallelism ≥ 1")
	}
	for _, n := range cfg.Movers {
		if n < 1 || n > 32 {
			return nil, fmt.Errorf("bench: stripe: %d data nodes (want 1 to 32)", n)
		}
	}
	for _, impl := range cfg.Impls {
		if impl != Ferry && impl != GCT {
			return nil, fmt.Errorf("bench: stripe: implementation %q (want ferry or gct)", impl)
		}
		if impl == Ferry && cfg.Ferry == "" {
			return nil, errors.New("bench: stripe: no ferry binary")
		}
	}
	// GCT's sessions run as nobody: the scratch directory must be open to
	// them. It lives on tmpfs when /dev/shm exists (GCT's source file).
	return inLabScratch(&cfg.Timeout, &cfg.Progress, cfg.Dir, "ferry-stripe-bench-", func(scratch string) ([]StripeResult, error) {
		return (&stripeRunner{cfg: cfg, scratch: scratch}).runAll(ctx)
	})
}

// runAll runs every node count of the configuration.
func (r *stripeRunner) runAll(ctx context.Context) ([]StripeResult, error) {
	if err := writeMode(r.secret(), []byte("ferry-stripe-bench-"+strconv.Itoa(os.Getpid())+"-secret\n"), 0o600); err != nil {
		return nil, err
	}
	var results []StripeResult
	for _, n := range r.cfg.Movers {
		res, err := r.runCount(ctx, n)
		results = append(results, res...)
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

type stripeRunner struct {
	cfg     StripeConfig
	scratch string
}

func (r *stripeRunner) secret() string { return filepath.Join(r.scratch, "secret") }
func (r *stripeRunner) hosts() string  { return filepath.Join(r.scratch, "hosts") }

// runCount runs every implementation and repetition with n data nodes a
// side, in one lab.
func (r *stripeRunner) runCount(ctx context.Context, n int) ([]StripeResult, error) {
	lab, err := wan.StartLab(ctx, wan.LabConfig{Hosts: 2*n + 1, Rate: r.cfg.Rate, Name: "ferrybench", Sysctls: labSysctls()})
	if err != nil {
		return nil, err
	}
	defer lab.Close()
	if err := r.writeHosts(lab); err != nil {
		return nil, err
	}
	size := int64(n) * r.cfg.PerMover
	if slices.Contains(r.cfg.Impls, GCT) {
		src := filepath.Join(r.scratch, "src")
		os.Remove(src)
		if err := writeMode(src, nil, 0o644); err != nil {
			return nil, err
		}
		if err := os.Truncate(src, size); err != nil { // sparse: reads as zeros from memory
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	return labRuns(ctx, r.cfg.Reps, r.cfg.Impls, func(impl Impl, rep int) StripeResult {
		res := StripeResult{Impl: impl, Movers: n, Rep: rep, Bytes: size}
		var err error
		switch impl {
		case Ferry:
			res.Wall, res.CPU, err = r.runFerry(ctx, lab, n, size)
		case GCT:
			res.Wall, res.CPU, err = r.runGCT(ctx, lab, n, size)
		}
		if err != nil {
			res.Err = err.Error()
		}
		if ctx.Err() == nil {
			labRunLine(r.cfg.Progress, fmt.Sprintf("stripe %s n=%d", impl, n), rep, res.Err, size, res.Wall, "", res.CPU)
		}
		return res
	})
}

// writeHosts writes the hosts file GCT's programs see as /etc/hosts: GCT
// looks up the name of the address it listens on, and a lab host has no
// DNS server (see wanRunner.writeHosts).
func (r *stripeRunner) writeHosts(lab *wan.Lab) error {
	name, _ := os.Hostname()
	var b strings.Builder
	fmt.Fprintf(&b, "127.0.0.1 localhost %s\n", name)
	for i := range lab.Hosts() {
		fmt.Fprintf(&b, "%s ferrylab-h%d\n", lab.Addr(i), i)
	}
	return writeMode(r.hosts(), []byte(b.String()), 0o644)
}

// dataNodes lists the data nodes' addresses of one side.
func dataNodes(lab *wan.Lab, n int, dest bool) []string {
	var addrs []string
	for i := 1; i <= n; i++ {
		host := i
		if dest {
			host += n
		}
		addrs = append(addrs, net.JoinHostPort(lab.Addr(host).String(), itoa(stripeDataNodePort)))
	}
	return addrs
}

// runFerry runs one copy between two striped Ferry servers.
func (r *stripeRunner) runFerry(ctx context.Context, lab *wan.Lab, n int, size int64) (time.Duration, cpuShare, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var procs []*server
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for host := 1; host <= 2*n; host++ {
		addr := net.JoinHostPort(lab.Addr(host).String(), itoa(stripeDataNodePort))
		p, err := startServerCmd(sctx, "ferry mover "+addr, prepare(lab.Command(sctx, host, r.cfg.Ferry, "mover",
			"-listen", addr, "-storage", "null", "-secret", r.secret(), "-log-level", "warn")))
		if err != nil {
			return 0, cpuShare{}, err
		}
		procs = append(procs, p)
	}
	var fronts [2]*server
	for k, dest := range []bool{false, true} {
		port := stripeSourcePort
		if dest {
			port = stripeDestPort
		}
		args := []string{"serve", "-listen", net.JoinHostPort(lab.Addr(0).String(), itoa(port)), "-storage", "null",
			"-anonymous", "-allow-foreign-data", "-shutdown-grace", "1s", "-log-level", "info",
			"-movers", strings.Join(dataNodes(lab, n, dest), ","), "-mover-secret", r.secret()}
		if dest {
			args = append(args, "-anonymous-write")
		}
		p, err := startServerCmd(sctx, "ferry serve", prepare(lab.Command(sctx, 0, r.cfg.Ferry, args...)))
		if err != nil {
			return 0, cpuShare{}, err
		}
		procs = append(procs, p)
		fronts[k] = p
	}
	if err := r.waitMoversUp(sctx, lab, fronts, n); err != nil {
		return 0, cpuShare{}, err
	}
	src := fmt.Sprintf("ftp://%s/%d", net.JoinHostPort(lab.Addr(0).String(), itoa(stripeSourcePort)), size)
	dst := fmt.Sprintf("ftp://%s/out", net.JoinHostPort(lab.Addr(0).String(), itoa(stripeDestPort)))
	wall, cpu, err := r.client(ctx, lab, false, r.cfg.Ferry, "cp", "-q", "-stripe", "-p", itoa(r.cfg.Parallel), src, dst)
	if err != nil {
		return 0, cpuShare{}, err
	}
	// The destination's frontend logs what its movers stored.
	if got := storedBytes(fronts[1].log.String()); got != size {
		return 0, cpuShare{}, fmt.Errorf("the destination stored %d bytes, want %d", got, size)
	}
	return wall, cpu, nil
}

// storedLine matches the destination frontend's log line of a store.
var storedLine = regexp.MustCompile(`msg=transfer .*op=STOR .*bytes=(\d+) .*err=<nil>`)

func storedBytes(log string) int64 {
	m := storedLine.FindAllStringSubmatch(log, -1)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64)
	return n
}

// waitMoversUp asks both frontends (SITE STRIPES) until all n movers of
// each are up: the first transfer must not race the links.
func (r *stripeRunner) waitMoversUp(ctx context.Context, lab *wan.Lab, fronts [2]*server, n int) error {
	deadline := time.Now().Add(startTimeout)
	for _, f := range fronts {
		addr := net.JoinHostPort(lab.Addr(0).String(), itoa(f.port))
		for {
			up, err := stripesUp(lab, addr)
			if err == nil && up == n {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: %d of %d movers up at %s after %v (%v)", up, n, addr, startTimeout, err)
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// stripesUp logs in anonymously at addr on lab host 0 and counts the
// movers SITE STRIPES reports up.
func stripesUp(lab *wan.Lab, addr string) (int, error) {
	var conn net.Conn
	if err := lab.Do(0, func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	}); err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var out strings.Builder
	if _, err := io.WriteString(conn, "USER anonymous\r\nPASS bench@\r\nSITE STRIPES\r\nQUIT\r\n"); err != nil {
		return 0, err
	}
	if _, err := io.Copy(&out, conn); err != nil {
		return 0, err
	}
	return strings.Count(out.String(), " up since"), nil
}

// runGCT runs one copy between two striped GCT servers (frontends with
// -r, data nodes with -dn).
func (r *stripeRunner) runGCT(ctx context.Context, lab *wan.Lab, n int, size int64) (time.Duration, cpuShare, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var procs []*server
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	common := func(ip string, port int) []string {
		return []string{"-aa", "-anonymous-user", "nobody", "-p", itoa(port), "-control-interface", ip,
			"-data-interface", ip, "-home-dir", r.scratch, "-disable-usage-stats"}
	}
	for host := 1; host <= 2*n; host++ {
		ip := lab.Addr(host).String()
		p, err := startOnPort(sctx, "gct data node "+ip, prepare(r.gctCommand(sctx, lab, host, gctServer,
			append(common(ip, stripeDataNodePort), "-dn")...)), stripeDataNodePort)
		if err != nil {
			return 0, cpuShare{}, err
		}
		procs = append(procs, p)
	}
	ip := lab.Addr(0).String()
	for _, dest := range []bool{false, true} {
		port := stripeSourcePort
		if dest {
			port = stripeDestPort
		}
		p, err := startOnPort(sctx, "gct frontend", prepare(r.gctCommand(sctx, lab, 0, gctServer,
			append(common(ip, port), "-r", strings.Join(dataNodes(lab, n, dest), ","))...)), port)
		if err != nil {
			return 0, cpuShare{}, err
		}
		procs = append(procs, p)
	}
	src := fmt.Sprintf("ftp://%s%s", net.JoinHostPort(ip, itoa(stripeSourcePort)), filepath.Join(r.scratch, "src"))
	dst := fmt.Sprintf("ftp://%s%s", net.JoinHostPort(ip, itoa(stripeDestPort)), os.DevNull)
	return r.client(ctx, lab, true, gctClient, "-stripe", "-p", itoa(r.cfg.Parallel), src, dst)
}

// startOnPort starts cmd, a server told to listen on port (GCT then
// prints no "Server listening" line), and waits until it does, looking at
// its own namespace's socket table. The caller must call stop.
func startOnPort(ctx context.Context, name string, cmd *exec.Cmd, port int) (*server, error) {
	s := &server{name: name, cmd: cmd, log: &tail{}, exited: make(chan struct{}), port: port}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", name, err)
	}
	s.pid = cmd.Process.Pid
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	if err := waitListeningIn(ctx, s.pid, port, s.exited); err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: %s: %w%s", name, err, s.log.suffix())
	}
	return s, nil
}

// gctCommand runs a GCT program on a lab host with the hosts file of
// writeHosts as /etc/hosts (in a mount namespace of its own).
func (r *stripeRunner) gctCommand(ctx context.Context, lab *wan.Lab, host int, path string, args ...string) *exec.Cmd {
	const script = `mount --bind "$0" /etc/hosts && exec "$@"`
	return lab.Command(ctx, host, "unshare", append([]string{"--mount", "--propagation", "private",
		"sh", "-c", script, r.hosts(), path}, args...)...)
}

// client runs the steering client on host 0 and times it. It also
// returns what the machine's CPUs did meanwhile: every process of the run
// and the bridge and shapers share them, so a run that kept them busy or
// lost them to the hypervisor measured the machine, not the network.
func (r *stripeRunner) client(ctx context.Context, lab *wan.Lab, gct bool, path string, args ...string) (time.Duration, cpuShare, error) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var cmd *exec.Cmd
	if gct {
		cmd = r.gctCommand(cctx, lab, 0, path, args...)
	} else {
		cmd = lab.Command(cctx, 0, path, args...)
	}
	prepare(cmd)
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	cpus := startMachine()
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	cpu := cpus.share()
	if err != nil {
		return 0, cpuShare{}, fmt.Errorf("%s: %w%s", filepath.Base(path), err, out.suffix())
	}
	return wall, cpu, nil
}

// WriteStripeTable writes, for every node count and implementation, the
// median aggregate rate of the steady runs (those that lost less than
// stolenLimit of the CPU to the hypervisor; all runs if none did) and the
// range of all runs, its ratio to one node, and what the machine's CPUs
// did (median cores busy, and the largest share stolen): the reader can
// tell a run the network limited from one the shared cores did. The CSV
// keeps every run.
func WriteStripeTable(w io.Writer, cfg StripeConfig, results []StripeResult) error {
	fmt.Fprintf(w, "Striped third-party copy, each host's link %s each way, %s per data node, -p %d, %d run(s) per cell, %d CPUs\n\n",
		progress.LinkRate(cfg.Rate), progress.Size(cfg.PerMover), cfg.Parallel, cfg.Reps, onlineCPUs())
	fmt.Fprintf(w, "| data nodes a side | ceiling Mbit/s |")
	for _, impl := range cfg.Impls {
		fmt.Fprintf(w, " %s Mbit/s median of steady runs (range of all) | %s ×1 node | %s cores busy, max stolen |", impl, impl, impl)
	}
	fmt.Fprintf(w, "\n|---|---|")
	for range cfg.Impls {
		fmt.Fprintf(w, "---|---|---|")
	}
	fmt.Fprintln(w)
	base := map[Impl]float64{}
	for _, n := range cfg.Movers {
		fmt.Fprintf(w, "| %d | %.0f |", n, float64(n)*float64(cfg.Rate)/1e6)
		for _, impl := range cfg.Impls {
			var rates, steady []float64
			var cpus []cpuShare
			failed := 0
			for _, r := range results {
				if r.Impl == impl && r.Movers == n {
					if r.Err != "" {
						failed++
						continue
					}
					rates = append(rates, r.Mbps())
					if r.CPU.Steal < stolenLimit {
						steady = append(steady, r.Mbps())
					}
					cpus = append(cpus, r.CPU)
				}
			}
			if len(rates) == 0 {
				fmt.Fprintf(w, " failed (%d) | | |", failed)
				continue
			}
			slices.Sort(rates)
			left := len(rates) - len(steady)
			if len(steady) == 0 {
				steady, left = rates, 0
			}
			slices.Sort(steady)
			med := median(steady)
			if _, ok := base[impl]; !ok && n == cfg.Movers[0] {
				base[impl] = med / float64(n)
			}
			cell := fmt.Sprintf(" %.0f (%.0f–%.0f)", med, rates[0], rates[len(rates)-1])
			if left > 0 {
				cell += fmt.Sprintf(", %d with ≥%.0f %% stolen left out", left, 100*stolenLimit)
			}
			if failed > 0 {
				cell += fmt.Sprintf(", %d failed", failed)
			}
			ratio := ""
			if b := base[impl]; b > 0 {
				ratio = fmt.Sprintf("%.2f", med/b)
			}
			fmt.Fprintf(w, "%s | %s | %s |", cell, ratio, summarizeMachine(cpus))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// WriteStripeCSV writes every run of the striping benchmark as a CSV
// record, after a header.
func WriteStripeCSV(w io.Writer, cfg StripeConfig, results []StripeResult) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"impl", "data_nodes", "rep", "rate_per_host_bit_s", "p", "bytes", "wall_s", "mbit_s", "cores_busy", "steal", "error"})
	for _, r := range results {
		rec := []string{string(r.Impl), itoa(r.Movers), itoa(r.Rep + 1), strconv.FormatInt(cfg.Rate, 10), itoa(cfg.Parallel),
			strconv.FormatInt(r.Bytes, 10)}
		rec = append(rec, labRunFields(r.Err, r.Bytes, r.Wall)...)
		cw.Write(append(append(rec, r.CPU.csvFields()...), r.Err))
	}
	cw.Flush()
	return cw.Error()
}

func median(sorted []float64) float64 {
	m := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[m]
	}
	return (sorted[m-1] + sorted[m]) / 2
}
