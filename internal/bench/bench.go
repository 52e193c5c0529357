package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/wan"
)

// Workload is what a run moves.
type Workload string

// The workloads a Config selects.
const (
	Mem  Workload = "mem"  // memory to memory: zeros to /dev/null
	Disk Workload = "disk" // a page-cached file to a new local file
	// DiskUp is Disk the other way: a page-cached local file uploaded to
	// a new file in the server's directory.
	DiskUp Workload = "disk-up"
	// GSI is the secured cases, over gsiftp:// with a test PKI: the GSI
	// login time (rows GSILogin, GSILoginDeleg) and memory-to-memory
	// throughput with authenticated data channels (rows GSIDCAU,
	// GSIPriv).
	GSI Workload = "gsi"
)

// The rows of the GSI workload: a Sample's Workload is one of these, never
// GSI itself.
const (
	GSIDCAU       Workload = "gsi-dcau"        // DCAU A, PROT C: authenticated, clear data channels
	GSIPriv       Workload = "gsi-prot-p"      // DCAU A, PROT P (-dcpriv): encrypted data channels
	GSILogin      Workload = "gsi-login"       // connect to 230, without delegation
	GSILoginDeleg Workload = "gsi-login-deleg" // connect to 230, with delegation
)

// rows returns the throughput rows of workload w, in report order.
func (w Workload) rows() []Workload {
	if w == GSI {
		return []Workload{GSIDCAU, GSIPriv}
	}
	return []Workload{w}
}

// gsi reports whether w is the GSI workload or one of its rows.
func (w Workload) gsi() bool {
	switch w {
	case GSI, GSIDCAU, GSIPriv, GSILogin, GSILoginDeleg:
		return true
	}
	return false
}

// Impl is the software that moves the bytes.
type Impl string

// The implementations.
const (
	Ferry Impl = "ferry" // ferry serve + ferry cp
	GCT   Impl = "gct"   // globus-gridftp-server + globus-url-copy
	Raw   Impl = "raw"   // iperf3: the raw TCP ceiling (mem only)
	// FerryTar is ferry cp -r -tar against ferry serve -allowed-modules
	// tar: the smallfiles tree as one tar stream (ERET tar to download,
	// ESTO tar to upload) instead of file by file (smallfiles and
	// smallfiles-up only).
	FerryTar Impl = "ferry-tar"
	// S3Client is the S3 workloads' yardstick: the aws CLI straight to
	// the S3 server (s3 and s3-up only).
	S3Client Impl = "s3"
)

// Workloads and Impls list the known values in report order. The default
// run of "ferry bench loopback" leaves out GSI.
var (
	Workloads = []Workload{Mem, Disk, DiskUp, GSI, SmallFiles, SmallFilesUp, SmallFiles3PT, S3, S3Up}
	Impls     = []Impl{Ferry, GCT, Raw, FerryTar, S3Client}
)

// disk reports whether w reads or writes a file: Disk or DiskUp.
func (w Workload) disk() bool { return w == Disk || w == DiskUp }

// Applies reports whether impl has a run for workload: raw TCP has only
// the memory-to-memory run, ferry cp -r -tar only the smallfiles download
// and upload, the S3 client only the S3 workloads, where GCT (which has no
// S3 storage) has none.
func (i Impl) Applies(w Workload) bool {
	switch i {
	case Raw:
		return w == Mem
	case FerryTar:
		return w == SmallFiles || w == SmallFilesUp
	case S3Client:
		return w.s3()
	case GCT:
		return !w.s3()
	}
	return true
}

// needed reports whether impl has a run for some workload of c.
func (c *Config) needed(impl Impl) bool {
	return slices.Contains(c.Impls, impl) && slices.ContainsFunc(c.Workloads, func(w Workload) bool {
		return slices.ContainsFunc(w.rows(), impl.Applies)
	})
}

// runs reports whether some implementation of c has a run for workload
// w.
func (c *Config) runs(w Workload) bool {
	return slices.ContainsFunc(c.Impls, func(i Impl) bool { return slices.ContainsFunc(w.rows(), i.Applies) })
}

// workloadNames and implNames list the known values for error messages.
const (
	workloadNames = "mem, disk, disk-up, gsi, smallfiles, smallfiles-up, smallfiles-3pt, s3, s3-up"
	implNames     = "ferry, gct, raw, ferry-tar, s3"
)

// Config says what to measure. Size, Ferry and at least one entry of each
// list are required; the zero value of the other fields is a default.
type Config struct {
	Ferry     string     // the ferry binary to benchmark
	Size      int64      // bytes per run
	Parallel  []int      // parallelism levels, each >= 1
	Reps      int        // runs per implementation and cell; 0 means 3
	Workloads []Workload // in report order
	Impls     []Impl     // in run order within a repetition

	// Dir is where the scratch directory (served files and destinations)
	// is made; "" means os.TempDir(). The scratch directory is removed at
	// the end; Dir is not.
	Dir string

	// Timeout bounds each client run; 0 means 10 minutes.
	Timeout time.Duration

	// Logins is how many GSI logins are timed per implementation, with
	// and without delegation (workload GSI); 0 means 20.
	Logins int

	// Files and FileSize shape the smallfiles workload's tree; 0 means
	// DefaultSmallFiles and DefaultSmallFileSize. There, parallelism is
	// the number of sessions (globus-url-copy -cc).
	Files    int
	FileSize int64

	// WANDelay, when positive, runs the servers and clients on the two
	// sides of an emulated wide-area link (internal/wan) with this
	// one-way delay, instead of over loopback: servers in the server
	// namespace, clients in the client namespace. Only the smallfiles
	// workloads run there.
	WANDelay time.Duration
	// WANCongestion, when not empty, is the TCP congestion control of
	// both namespaces of the emulated WAN (net.ipv4.tcp_congestion_control,
	// e.g. cubic); else the system's default.
	WANCongestion string

	// Weed is the SeaweedFS binary of the S3 workloads; "" means
	// $FERRY_WEED, else weed on $PATH, else the one the tests built
	// (internal/testutil/s3server). AWS is the aws CLI of the S3 client;
	// "" means aws on $PATH, installed with apt-get when missing.
	Weed, AWS string

	// FerryServeFlags are appended to every ferry serve the loopback
	// benchmark starts (a server option under test, e.g. -direct-io).
	FerryServeFlags []string

	// Progress receives a line per step and per run; nil discards them.
	Progress io.Writer
}

// Sample is the measurement of one run.
type Sample struct {
	Workload Workload // a row: never GSI, but GSIDCAU, GSILogin...
	Impl     Impl
	P        int // parallelism; 0 for a login
	Rep      int // 1-based repetition (for a login: the login's number)
	Bytes    int64

	// Wall is the client process's time from start to exit. For a login
	// (GSILogin, GSILoginDeleg), which moves no bytes, it is the time from
	// connect to the 230 reply, and every other field is zero.
	Wall time.Duration
	// Gbps is the throughput in Gbit/s (10^9): Bytes over Wall, except
	// for raw TCP, where it is the rate iperf3's sender reports (from the
	// test's start to its last write; no process start-up or control
	// exchange).
	Gbps float64

	ClientCPU, ServerCPU time.Duration // user + system time
	// ClientRSS and ServerRSS are the peak resident sets in bytes, or -1
	// when unknown: a process so short-lived that it ended before its
	// first sample (see the package documentation).
	ClientRSS, ServerRSS int64

	// Machine is what the machine's CPUs did while the client ran (for a
	// login: across all the logins of its row): cores busy and the share
	// the hypervisor stole.
	Machine cpuShare
}

// Paths of the GCT programs; LookPath is tried first.
const (
	gctServer = "/usr/sbin/globus-gridftp-server"
	gctClient = "/usr/bin/globus-url-copy"
)

// sourceName is the file the disk workloads copy, in the served directory:
// Disk downloads it, DiskUp uploads it.
const sourceName = "source.dat"

// runner holds the state of one Run.
type runner struct {
	cfg       Config
	progress  io.Writer
	ferryPar  bool // the ferry binary's cp accepts -p
	gctServer string
	gctClient string
	iperf     string

	scratch string // removed at the end
	served  string // world-readable; served by ferry -root and GCT
	dest    string // destinations of the disk runs
	source  string // served/sourceName, once written

	servers map[string]*server // by role: "ferry-mem", "ferry-disk", "ferry-gsi", "gct", "gct-gsi"
	gsi     *gsiSetup          // the GSI workload's PKI, once made
	link    *wan.Link          // with Config.WANDelay: the emulated path; else nil

	weed, aws string   // the S3 workloads' programs, once found
	s3        *s3Setup // the S3 server, once started
}

// Run measures every (workload, parallelism, implementation) cfg selects,
// cfg.Reps times, alternating implementations within each repetition. It
// returns the samples in run order, including those taken before an
// error. Servers and scratch files are gone when Run returns.
func Run(ctx context.Context, cfg Config) (samples []Sample, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, progress: cfg.Progress, servers: map[string]*server{}}
	if r.progress == nil {
		r.progress = io.Discard
	}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if err := r.makeScratch(); err != nil {
		return nil, err
	}
	if cfg.WANDelay > 0 {
		wcfg := wan.Config{Delay: cfg.WANDelay, Calibrate: true, Name: "ferrybench"}
		if cfg.WANCongestion != "" {
			wcfg.Sysctls = map[string]string{"net.ipv4.tcp_congestion_control": cfg.WANCongestion}
		}
		if r.link, err = wan.Start(ctx, wcfg); err != nil {
			os.RemoveAll(r.scratch)
			return nil, fmt.Errorf("bench: %w", err)
		}
		unhosts, err := netnsHosts(r.link)
		if err != nil {
			r.link.Close()
			os.RemoveAll(r.scratch)
			return nil, err
		}
		defer unhosts()
		fmt.Fprintf(r.progress, "bench: emulated WAN up: %v one way, idle RTT %.2f ms, TCP congestion control %s\n",
			cfg.WANDelay, float64(r.link.Fidelity().IdleRTT)/1e6, congestionControl(r.link))
	}
	defer func() {
		for _, s := range r.servers {
			s.stop()
		}
		if r.link != nil {
			if _, lerr := r.link.Close(); lerr != nil && err == nil {
				err = fmt.Errorf("bench: closing the emulated WAN: %w", lerr)
			}
		}
		if rerr := os.RemoveAll(r.scratch); rerr != nil && err == nil {
			err = fmt.Errorf("bench: removing the scratch directory: %w", rerr)
		}
	}()
	for _, w := range cfg.Workloads {
		if w.disk() || w.s3() && cfg.runs(w) {
			if err := r.writeSource(ctx); err != nil {
				return samples, err
			}
		}
		if w.s3() && cfg.runs(w) {
			if err := r.startS3(ctx); err != nil {
				return samples, err
			}
		}
		if w.small() {
			if err := r.writeTree(ctx); err != nil {
				return samples, err
			}
		}
		if w == GSI {
			if err := r.makeGSI(); err != nil {
				return samples, err
			}
			cpus := startMachine()
			logins, err := r.logins(ctx)
			share := cpus.share()
			for i := range logins {
				logins[i].Machine = share
			}
			samples = append(samples, logins...)
			if err != nil {
				return samples, err
			}
		}
		for _, row := range w.rows() {
			for _, p := range cfg.Parallel {
				for rep := 1; rep <= cfg.Reps; rep++ {
					for _, impl := range cfg.Impls {
						if !impl.Applies(row) {
							continue
						}
						if err := context.Cause(ctx); ctx.Err() != nil {
							return samples, err
						}
						s, err := r.run(ctx, row, impl, p)
						if err != nil {
							return samples, fmt.Errorf("%s p=%d run %d %s: %w", row, p, rep, impl, err)
						}
						s.Rep = rep
						samples = append(samples, s)
						fmt.Fprintf(r.progress, "bench: %-10s p=%-2d run %d/%d %-5s %7.2f Gbit/s  %6.2fs  cpu %.2f+%.2fs  rss %s/%s MiB  machine %.2f cores, %.1f%% stolen%s\n",
							row, p, rep, cfg.Reps, impl, s.Gbps, s.Wall.Seconds(), s.ClientCPU.Seconds(), s.ServerCPU.Seconds(),
							rssMiB(s.ClientRSS), rssMiB(s.ServerRSS), s.Machine.Busy, 100*s.Machine.Steal, filesPerSecond(cfg, s))
					}
				}
			}
		}
	}
	return samples, nil
}

// fill validates cfg and sets the defaults.
func (c *Config) fill() error {
	switch {
	case c.Size <= 0:
		return errors.New("bench: Size must be positive")
	case len(c.Parallel) == 0 || len(c.Workloads) == 0 || len(c.Impls) == 0:
		return errors.New("bench: no parallelism, workload or implementation selected")
	case c.Reps < 0 || c.Logins < 0 || c.Files < 0 || c.FileSize < 0:
		return errors.New("bench: Reps and Logins must not be negative")
	case c.WANDelay < 0 || c.WANDelay > time.Second:
		return errors.New("bench: the emulated WAN's delay must be 0 to 1s")
	}
	if c.WANDelay > 0 {
		for _, w := range c.Workloads {
			if !w.small() {
				return fmt.Errorf("bench: workload %s does not run over the emulated WAN (only smallfiles, smallfiles-up, smallfiles-3pt)", w)
			}
		}
	}
	for _, p := range c.Parallel {
		if p < 1 || p > 64 {
			return fmt.Errorf("bench: parallelism %d is not in 1..64", p)
		}
	}
	for _, w := range c.Workloads {
		if !slices.Contains(Workloads, w) {
			return fmt.Errorf("bench: unknown workload %q (%s)", w, workloadNames)
		}
	}
	for _, i := range c.Impls {
		if !slices.Contains(Impls, i) {
			return fmt.Errorf("bench: unknown implementation %q (%s)", i, implNames)
		}
	}
	if hasDup(c.Parallel) || hasDup(c.Workloads) || hasDup(c.Impls) {
		return errors.New("bench: a parallelism, workload or implementation is listed twice")
	}
	if c.Reps == 0 {
		c.Reps = 3
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logins == 0 {
		c.Logins = 20
	}
	return nil
}

// hasDup reports whether s has a value twice.
func hasDup[T comparable](s []T) bool {
	seen := map[T]bool{}
	for _, v := range s {
		if seen[v] {
			return true
		}
		seen[v] = true
	}
	return false
}

// cpHasParallel matches the -p flag in the usage text of "ferry cp -h".
var cpHasParallel = regexp.MustCompile(`(?m)^\s+-p\b`)

// check finds the programs the selected implementations need.
func (r *runner) check(ctx context.Context) error {
	var err error
	if r.cfg.needed(Ferry) || r.cfg.needed(FerryTar) {
		if r.cfg.Ferry == "" {
			return errors.New("bench: no ferry binary given")
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, r.cfg.Ferry, "cp", "-h").CombinedOutput()
		if err != nil {
			return fmt.Errorf("bench: %s cp -h: %w\n%s", r.cfg.Ferry, err, out)
		}
		r.ferryPar = cpHasParallel.Match(out)
		if !r.ferryPar && slices.ContainsFunc(r.cfg.Parallel, func(p int) bool { return p > 1 }) {
			return fmt.Errorf("bench: %s: ferry cp has no -p flag (parallel streams) yet; run with -p 1", r.cfg.Ferry)
		}
	}
	if r.cfg.needed(GCT) {
		if r.gctServer, err = program("globus-gridftp-server", gctServer); err != nil {
			return err
		}
		if r.gctClient, err = program("globus-url-copy", gctClient); err != nil {
			return err
		}
	}
	if r.cfg.needed(Raw) {
		if r.iperf, err = program("iperf3", ""); err != nil {
			return err
		}
	}
	return r.checkS3(ctx)
}

// program finds an installed program by name, else at fallback.
func program(name, fallback string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if fallback != "" {
		if _, err := os.Stat(fallback); err == nil {
			return fallback, nil
		}
	}
	return "", fmt.Errorf("bench: %s is not installed (\"make deps\" installs it); leave its implementation out with -impls", name)
}

// makeScratch makes the scratch directory. GCT's anonymous sessions run as
// user nobody, so the served directory must be reachable and readable by
// everyone, and all its ancestors searchable.
func (r *runner) makeScratch() error {
	dir := r.cfg.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	scratch, err := os.MkdirTemp(dir, "ferry-bench-")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	r.scratch = scratch
	r.served = filepath.Join(scratch, "served")
	r.dest = filepath.Join(scratch, "dest")
	for _, d := range []string{r.served, r.dest} {
		if err = os.Mkdir(d, 0o755); err != nil {
			break
		}
	}
	if err == nil {
		err = os.Chmod(scratch, 0o755)
	}
	if err == nil {
		err = os.Chmod(r.served, 0o777)
	}
	if err == nil && r.cfg.needed(GCT) {
		err = searchable(scratch)
	}
	if err != nil {
		os.RemoveAll(scratch)
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// searchable returns an error unless every ancestor of dir lets others
// search it.
func searchable(dir string) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is not searchable by others (mode %v); GCT's sessions run as nobody: choose another -dir", d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// writeSource writes the disk workload's source file once, with random
// bytes from a seeded ChaCha8 (so that no layer can compress or skip them),
// and reads it back so that the runs find it in the page cache.
func (r *runner) writeSource(ctx context.Context) error {
	if r.source != "" {
		return nil
	}
	name := filepath.Join(r.served, sourceName)
	fmt.Fprintf(r.progress, "bench: writing the %s source file %s\n", progress.Size(r.cfg.Size), name)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	var seed [32]byte
	copy(seed[:], "ferry bench loopback")
	_, err = io.CopyN(f, &ctxReader{ctx: ctx, r: rand.NewChaCha8(seed)}, r.cfg.Size)
	if err == nil {
		// Flushed now, the file's writeback cannot compete with the runs.
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o644) // whatever the umask
	}
	if err == nil {
		err = warm(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("bench: source file: %w", err)
	}
	r.source = name
	return nil
}

// warm reads a file once to bring it into the page cache.
func warm(ctx context.Context, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, &ctxReader{ctx: ctx, r: f})
	return err
}

// ctxReader stops reading when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// filesPerSecond renders a smallfiles run's rate, or "" for the others.
func filesPerSecond(cfg Config, s Sample) string {
	if !s.Workload.small() {
		return ""
	}
	return fmt.Sprintf("  %.0f files/s", float64(cfg.smallFiles())/max(s.Wall.Seconds(), 1e-9))
}

// bitRate returns n bytes over d in bit/s. The loopback report divides
// it by 1e9 (Gbit/s), the WAN and stripe reports by 1e6 (Mbit/s).
func bitRate(n int64, d time.Duration) float64 {
	return float64(n) * 8 / max(d.Seconds(), 1e-9)
}

// mib returns n bytes in MiB.
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// rssMiB renders a peak RSS in MiB: "?" when unknown (negative).
func rssMiB(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f", mib(n))
}

// itoa is strconv.Itoa, for argument lists.
func itoa(n int) string { return strconv.Itoa(n) }
