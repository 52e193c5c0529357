package bench

// The replica benchmark ("ferry bench replicas"): one file held by
// several Ferry servers behind links of different rates. Is the fastest
// replica the one a single-source copy of the logical name chooses, and
// does a download from all of them at once reach the sum of the links?

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/wan"
)

// ReplicasConfig configures RunReplicas.
type ReplicasConfig struct {
	Ferry    string        // the ferry binary
	Rates    []int64       // each replica's link, each way, bit/s
	Size     int64         // the file's size
	Reps     int           // runs of each mode
	Kill     bool          // also the killed mode
	Dir      string        // where the scratch directory goes ("": /dev/shm, else the temp dir)
	Timeout  time.Duration // bound of one client run
	Progress io.Writer     // progress lines; nil discards
}

// The modes of a replicas run.
const (
	// ReplicaSingle: ferry cp lfn:/PATH, from the replica it ranks best.
	ReplicaSingle = "single"
	// ReplicaMulti: ferry cp -sources N lfn:/PATH, from all at once.
	ReplicaMulti = "multi"
	// ReplicaKilled: as multi, with the fastest replica's server
	// killed a quarter of the way through.
	ReplicaKilled = "killed"
)

// ReplicasResult is one run.
type ReplicasResult struct {
	Mode  string
	Rep   int
	Bytes int64
	Wall  time.Duration // of the client, from start to exit
	// Read is the bytes the client says it read from each replica (in
	// the order of ReplicasConfig.Rates): a single-source copy reads
	// all from the one it chose.
	Read      []int64
	Identical bool     // the copy is byte for byte the file
	CPU       cpuShare // what the machine's CPUs did meanwhile
	Err       string
}

// Mbps is the run's rate.
func (r ReplicasResult) Mbps() float64 { return bitRate(r.Bytes, r.Wall) / 1e6 }

// Chosen is the index of the replica a single-source run read from, or
// -1.
func (r ReplicasResult) Chosen() int {
	for i, n := range r.Read {
		if n > 0 {
			return i
		}
	}
	return -1
}

// replicaPort is the servers' port inside their hosts.
const replicaPort = 47821

// replicaLFN is the logical name of the file.
const replicaLFN = "lfn:/bench/f"

// RunReplicas builds a lab of len(Rates)+1 hosts: host i (i <
// len(Rates)) a ferry serve holding the file behind a link limited to
// Rates[i] each way, the last host the client (its link unlimited). It
// registers the replicas in a catalogue (CRC32C: a checksum that costs
// little next to the transfer), probes each server once (ferry probe,
// which the ranking reads from the history), and then runs, Reps times,
// a single-source copy of the name, a multi-source one from all replicas
// and (with Kill) a multi-source one whose fastest replica is killed
// during the copy, each into a file on tmpfs compared with the original.
// It needs root and iproute2.
func RunReplicas(ctx context.Context, cfg ReplicasConfig) ([]ReplicasResult, error) {
	if cfg.Ferry == "" || len(cfg.Rates) < 2 || len(cfg.Rates) > 16 || cfg.Size <= 0 || cfg.Reps < 1 {
		return nil, errors.New("bench: replicas: want a ferry binary, 2 to 16 rates, a size and reps ≥ 1")
	}
	for _, r := range cfg.Rates {
		if r <= 0 {
			return nil, errors.New("bench: replicas: every replica's rate must be positive")
		}
	}
	return inLabScratch(&cfg.Timeout, &cfg.Progress, cfg.Dir, "ferry-replicas-bench-", func(scratch string) ([]ReplicasResult, error) {
		return (&replicasRunner{cfg: cfg, scratch: scratch}).runAll(ctx)
	})
}

// runAll starts the lab and its servers, registers the replicas and runs
// every mode, Reps times.
func (r *replicasRunner) runAll(ctx context.Context) ([]ReplicasResult, error) {
	cfg := r.cfg
	if err := r.writeSource(); err != nil {
		return nil, err
	}
	lab, err := wan.StartLab(ctx, wan.LabConfig{Hosts: len(cfg.Rates) + 1, Name: "ferryrep", Sysctls: labSysctls()})
	if err != nil {
		return nil, err
	}
	defer lab.Close()
	r.lab = lab
	for i, rate := range cfg.Rates {
		if err := r.shape(ctx, i, rate); err != nil {
			return nil, err
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.servers = make([]*server, len(cfg.Rates))
	defer func() {
		for _, s := range r.servers {
			if s != nil {
				s.stop()
			}
		}
	}()
	for i := range cfg.Rates {
		if err := r.startServer(sctx, i); err != nil {
			return nil, err
		}
	}
	if err := r.register(ctx); err != nil {
		return nil, err
	}
	modes := []string{ReplicaSingle, ReplicaMulti}
	if cfg.Kill {
		modes = append(modes, ReplicaKilled)
	}
	return labRuns(ctx, cfg.Reps, modes, func(mode string, rep int) ReplicasResult {
		res := r.run(sctx, mode, rep)
		if ctx.Err() == nil {
			labRunLine(cfg.Progress, "replicas "+mode, rep, res.Err, res.Bytes, res.Wall, fmt.Sprintf("read %v; ", res.Read), res.CPU)
		}
		return res
	})
}

type replicasRunner struct {
	cfg     ReplicasConfig
	scratch string
	lab     *wan.Lab
	servers []*server // by replica; used by one goroutine only
}

func (r *replicasRunner) source() string  { return filepath.Join(r.scratch, "srv", "f") }
func (r *replicasRunner) history() string { return filepath.Join(r.scratch, "history.db") }
func (r *replicasRunner) out() string     { return filepath.Join(r.scratch, "out") }
func (r *replicasRunner) client() int     { return len(r.cfg.Rates) }

// url is replica i's URL of the file.
func (r *replicasRunner) url(i int) string {
	return "ftp://" + net.JoinHostPort(r.lab.Addr(i).String(), itoa(replicaPort)) + "/f"
}

// writeSource writes the file: random bytes, so that a range read from
// the wrong offset shows.
func (r *replicasRunner) writeSource() error {
	if err := os.MkdirAll(filepath.Dir(r.source()), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	f, err := os.Create(r.source())
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	rng := rand.NewChaCha8([32]byte{'f', 'e', 'r', 'r', 'y'})
	if _, err := io.CopyN(f, rng, r.cfg.Size); err != nil {
		f.Close()
		return fmt.Errorf("bench: writing the source: %w", err)
	}
	return f.Close()
}

// shape limits replica i's link to rate each way: htb on its own veth
// end (what it sends) and on the switch's end (what it receives).
func (r *replicasRunner) shape(ctx context.Context, i int, rate int64) error {
	nss := r.lab.Namespaces()
	sw := nss[len(nss)-1]
	kbit := max(rate/1000, 8)
	for _, link := range []struct{ ns, dev string }{{r.lab.Namespace(i), "eth0"}, {sw, "h" + itoa(i)}} {
		script := fmt.Sprintf("qdisc add dev %[1]s root handle 1: htb default 1\n"+
			"class add dev %[1]s parent 1: classid 1:1 htb rate %[2]dkbit\n", link.dev, kbit)
		cmd := exec.CommandContext(ctx, "tc", "-n", link.ns, "-batch", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bench: tc in %s: %w: %s", link.ns, err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// startServer starts (or restarts) replica i's server.
func (r *replicasRunner) startServer(ctx context.Context, i int) error {
	addr := net.JoinHostPort(r.lab.Addr(i).String(), itoa(replicaPort))
	s, err := startServerCmd(ctx, "ferry serve "+addr, prepare(r.lab.Command(ctx, i, r.cfg.Ferry, "serve",
		"-listen", addr, "-root", filepath.Dir(r.source()), "-anonymous", "-log-level", "warn", "-shutdown-grace", "1s")))
	if err != nil {
		return err
	}
	r.servers[i] = s
	return nil
}

// ferry runs the ferry client on the client host with the catalogue's
// history, bounded by the timeout, and returns its stderr.
func (r *replicasRunner) ferry(ctx context.Context, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	cmd := r.clientCmd(cctx, args...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ferry %s: %w: %s", args[0], err, lastLines(out.String(), 5))
	}
	return out.String(), nil
}

func (r *replicasRunner) clientCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := prepare(r.lab.Command(ctx, r.client(), r.cfg.Ferry, args...))
	cmd.Env = append(os.Environ(), "FERRY_HISTORY="+r.history(), "NETRC="+filepath.Join(r.scratch, "no-netrc"))
	return cmd
}

// register adds the replicas to the catalogue and probes each server,
// so that the ranking has evidence of every link.
func (r *replicasRunner) register(ctx context.Context) error {
	args := []string{"replica", "add", "-checksum-alg", "CRC32C", replicaLFN}
	for i := range r.cfg.Rates {
		args = append(args, r.url(i))
	}
	if _, err := r.ferry(ctx, args...); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for i := range r.cfg.Rates {
		if _, err := r.ferry(ctx, "probe", r.url(i)); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// singleFrom matches the -v line of a single-source copy: "lfn:/P (URL) -> DST: ...".
var singleFrom = regexp.MustCompile(`(?m)^lfn:\S+ \((\S+)\) -> .* verified$`)

// multiRead matches a reader's -v line of a multi-source copy: "  URL: N bytes (RATE/s)".
var multiRead = regexp.MustCompile(`(?m)^\s+(\S+): (\d+) bytes \(`)

// run runs one copy of mode.
func (r *replicasRunner) run(ctx context.Context, mode string, rep int) ReplicasResult {
	res := ReplicasResult{Mode: mode, Rep: rep, Bytes: r.cfg.Size, Read: make([]int64, len(r.cfg.Rates))}
	os.Remove(r.out())
	defer os.Remove(r.out())
	args := []string{"cp", "-v", replicaLFN, r.out()}
	if mode != ReplicaSingle {
		args = []string{"cp", "-v", "-sources", itoa(len(r.cfg.Rates)), replicaLFN, r.out()}
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	cmd := r.clientCmd(cctx, args...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cpus := startMachine()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.Err = err.Error()
		return res
	}
	killed := -1
	if mode == ReplicaKilled {
		killed = r.fastest()
		// A quarter of the way through at the sum of the links.
		var sum int64
		for _, rate := range r.cfg.Rates {
			sum += rate
		}
		t := time.NewTimer(time.Duration(float64(r.cfg.Size*8) / float64(sum) / 4 * float64(time.Second)))
		select {
		case <-t.C:
			// SIGKILL, not stop's SIGTERM: a server shutting down
			// gracefully would finish its transfers first.
			_ = syscall.Kill(-r.servers[killed].pid, syscall.SIGKILL)
			r.servers[killed].stop()
		case <-cctx.Done():
			t.Stop()
		}
	}
	err := cmd.Wait()
	res.Wall = time.Since(start)
	res.CPU = cpus.share()
	if killed >= 0 {
		if serr := r.startServer(ctx, killed); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		res.Err = fmt.Sprintf("ferry cp: %v: %s", err, lastLines(out.String(), 5))
		return res
	}
	index := map[string]int{}
	for i := range r.cfg.Rates {
		index[r.url(i)] = i
	}
	if mode == ReplicaSingle {
		if m := singleFrom.FindStringSubmatch(out.String()); m != nil {
			if i, ok := index[m[1]]; ok {
				res.Read[i] = r.cfg.Size
			}
		}
	} else {
		for _, m := range multiRead.FindAllStringSubmatch(out.String(), -1) {
			if i, ok := index[m[1]]; ok {
				res.Read[i], _ = strconv.ParseInt(m[2], 10, 64)
			}
		}
	}
	same, err := sameFile(r.source(), r.out())
	if err != nil {
		res.Err = err.Error()
		return res
	}
	res.Identical = same
	if !same {
		res.Err = "the copy differs from the file"
	}
	return res
}

// fastest is the index of the replica of the highest rate.
func (r *replicasRunner) fastest() int {
	best := 0
	for i, rate := range r.cfg.Rates {
		if rate > r.cfg.Rates[best] {
			best = i
		}
	}
	return best
}

// sameFile reports whether the files a and b hold the same bytes.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, fmt.Errorf("bench: %w", err)
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, fmt.Errorf("bench: %w", err)
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == ea, nil
		}
		if ea != nil {
			return false, fmt.Errorf("bench: %w", ea)
		}
		if eb != nil {
			return false, fmt.Errorf("bench: %w", eb)
		}
	}
}

// lastLines is the last n lines of s, joined by "; ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// ReplicasCeiling is what mode can reach at most: the fastest link for a
// single source, the sum of the links otherwise, bit/s.
func ReplicasCeiling(cfg ReplicasConfig, mode string) float64 {
	if mode == ReplicaSingle {
		return float64(slices.Max(cfg.Rates))
	}
	var sum int64
	for _, r := range cfg.Rates {
		sum += r
	}
	return float64(sum)
}

// WriteReplicasTable writes a Markdown table of the runs of each mode:
// the median rate and range, its ratio to the mode's ceiling (the
// fastest link for a single source, the sum for a multi-source one),
// which replica a single source chose and what each replica gave a
// multi-source copy, whether every copy was identical, and what the
// machine's CPUs did; then the two measured claims.
func WriteReplicasTable(w io.Writer, cfg ReplicasConfig, results []ReplicasResult) error {
	links := make([]string, len(cfg.Rates))
	for i, r := range cfg.Rates {
		links[i] = progress.LinkRate(r)
	}
	fmt.Fprintf(w, "One file of %s on %d Ferry servers behind links of %s (each way), client link unlimited, %d run(s) per mode, %d CPUs\n\n",
		progress.Size(cfg.Size), len(cfg.Rates), strings.Join(links, ", "), cfg.Reps, onlineCPUs())
	fmt.Fprintln(w, "| mode | ceiling Mbit/s | Mbit/s median (range) | × ceiling | read from each replica (median MiB) | identical | cores busy, max stolen |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	modes := []string{ReplicaSingle, ReplicaMulti, ReplicaKilled}
	var multiRatio float64
	chosen, singles := 0, 0
	best := slices.Index(cfg.Rates, slices.Max(cfg.Rates))
	for _, mode := range modes {
		var rates []float64
		var cpus []cpuShare
		reads := make([][]float64, len(cfg.Rates))
		failed, identical, ran := 0, 0, 0
		for _, r := range results {
			if r.Mode != mode {
				continue
			}
			ran++
			if r.Err != "" {
				failed++
				continue
			}
			if r.Identical {
				identical++
			}
			rates = append(rates, r.Mbps())
			cpus = append(cpus, r.CPU)
			for i, n := range r.Read {
				reads[i] = append(reads[i], float64(n)/(1<<20))
			}
			if mode == ReplicaSingle {
				singles++
				if r.Chosen() == best {
					chosen++
				}
			}
		}
		if ran == 0 {
			continue
		}
		name := mode
		switch mode {
		case ReplicaSingle:
			name = "single source (ferry cp lfn:)"
		case ReplicaMulti:
			name = fmt.Sprintf("multi-source (ferry cp -sources %d lfn:)", len(cfg.Rates))
		case ReplicaKilled:
			name = fmt.Sprintf("multi-source, the %s replica killed at ¼", links[best])
		}
		ceiling := ReplicasCeiling(cfg, mode) / 1e6
		if len(rates) == 0 {
			fmt.Fprintf(w, "| %s | %.0f | failed (%d) | | | | |\n", name, ceiling, failed)
			continue
		}
		slices.Sort(rates)
		med := median(rates)
		if mode == ReplicaMulti {
			multiRatio = med / ceiling
		}
		per := make([]string, len(reads))
		for i, rs := range reads {
			slices.Sort(rs)
			per[i] = fmt.Sprintf("%s: %.0f", links[i], median(rs))
		}
		cell := fmt.Sprintf("%.0f (%.0f–%.0f)", med, rates[0], rates[len(rates)-1])
		if failed > 0 {
			cell += fmt.Sprintf(", %d failed", failed)
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %.2f | %s | %d of %d | %s |\n", name, ceiling, cell, med/ceiling,
			strings.Join(per, ", "), identical, ran, summarizeMachine(cpus))
	}
	fmt.Fprintln(w)
	if singles > 0 {
		fmt.Fprintf(w, "- The single source chosen was the %s replica in %d of %d runs.\n", links[best], chosen, singles)
	}
	if multiRatio > 0 {
		verdict := "holds"
		if multiRatio < 0.9 {
			verdict = "does NOT hold"
		}
		fmt.Fprintf(w, "- The multi-source download reached %.2f × the sum of the links (≥ 0.9 wanted: %s).\n", multiRatio, verdict)
	}
	return nil
}

// WriteReplicasCSV writes every run as a CSV record, after a header.
func WriteReplicasCSV(w io.Writer, cfg ReplicasConfig, results []ReplicasResult) error {
	cw := csv.NewWriter(w)
	header := []string{"mode", "rep", "bytes", "wall_s", "mbit_s", "identical"}
	for _, rate := range cfg.Rates {
		header = append(header, "read_from_"+strconv.FormatInt(rate, 10))
	}
	cw.Write(append(header, "cores_busy", "steal", "error"))
	for _, r := range results {
		rec := append([]string{r.Mode, itoa(r.Rep + 1), strconv.FormatInt(r.Bytes, 10)}, labRunFields(r.Err, r.Bytes, r.Wall)...)
		rec = append(rec, strconv.FormatBool(r.Identical))
		for i := range cfg.Rates {
			var n int64
			if i < len(r.Read) {
				n = r.Read[i]
			}
			rec = append(rec, strconv.FormatInt(n, 10))
		}
		cw.Write(append(append(rec, r.CPU.csvFields()...), r.Err))
	}
	cw.Flush()
	return cw.Error()
}
