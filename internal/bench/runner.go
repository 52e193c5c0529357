package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/internal/wan"
)

// host is the servers' address: loopback, or the server side of the
// emulated WAN.
func (r *runner) host() string {
	if r.link != nil {
		return r.link.Addr(wan.Server).String()
	}
	return "127.0.0.1"
}

// in returns the command line that runs path with args on side s: as is
// over loopback, else through "ip netns exec" in the side's namespace
// (which executes the program in place: its process is the one started).
func (r *runner) in(s wan.Side, path string, args []string) (string, []string) {
	if r.link == nil {
		return path, args
	}
	return "ip", append([]string{"netns", "exec", r.link.Namespace(s), path}, args...)
}

// sampleEvery is how often the peak RSS of clients, of GCT's session
// processes and of iperf3's server is read.
const sampleEvery = 20 * time.Millisecond

// sessionExit bounds how long GCT's session processes may take to end
// after the client has exited.
const sessionExit = 10 * time.Second

// run makes one run of impl on workload w with parallelism p.
func (r *runner) run(ctx context.Context, w Workload, impl Impl, p int) (Sample, error) {
	if w.small() {
		return r.runSmall(ctx, w, impl, p)
	}
	s := Sample{Workload: w, Impl: impl, P: p, Bytes: r.cfg.Size}
	var err error
	if w.s3() {
		return s, r.runS3(ctx, &s)
	}
	switch impl {
	case Ferry, GCT:
		err = r.runGridFTP(ctx, &s)
	case Raw:
		err = r.runRaw(ctx, &s)
	default:
		err = fmt.Errorf("bench: unknown implementation %q", impl)
	}
	return s, err
}

// runGridFTP runs ferry cp or globus-url-copy against its server.
func (r *runner) runGridFTP(ctx context.Context, s *Sample) error {
	srv, err := r.server(ctx, s.Impl, s.Workload)
	if err != nil {
		return err
	}
	if err := srv.alive(); err != nil {
		return err
	}
	scheme, env := "ftp", []string(nil)
	if s.Workload.gsi() {
		scheme, env = "gsiftp", r.gsi.clientEnv()
	}
	base := scheme + "://" + net.JoinHostPort("127.0.0.1", itoa(srv.port))
	size := strconv.FormatInt(s.Bytes, 10)
	// Both clients delegate and ask for DCAU A by default; -dcpriv adds
	// PBSZ and PROT P.
	var sec []string
	if s.Workload == GSIPriv {
		sec = []string{"-dcpriv"}
	}
	// The disk workloads' copy: a new local file (Disk) or a new file in
	// the served directory (DiskUp), removed after the run.
	var dest string
	switch s.Workload {
	case Disk:
		dest = filepath.Join(r.dest, fmt.Sprintf("%s-p%d.dat", s.Impl, s.P))
	case DiskUp:
		dest = filepath.Join(r.served, fmt.Sprintf("up-%s-p%d.dat", s.Impl, s.P))
	}
	if dest != "" {
		os.Remove(dest)
		defer os.Remove(dest)
	}
	// Parallelism 1 is each client's default, stream mode; -p N selects
	// MODE E with N connections (globus-url-copy -p 1 would be MODE E too).
	var path string
	var args []string
	switch s.Impl {
	case Ferry:
		// -auto=false: the cells measure -p as given, not the advisor.
		path, args = r.cfg.Ferry, []string{"cp", "-q", "-auto=false"}
		if s.P > 1 {
			args = append(args, "-p", itoa(s.P))
		}
		args = append(args, sec...)
		switch s.Workload {
		case Disk:
			args = append(args, base+"/"+sourceName, dest)
		case DiskUp: // Ferry's server is rooted at the served directory
			args = append(args, "file://"+r.source, base+"/"+filepath.Base(dest))
		default:
			args = append(args, base+"/"+size, os.DevNull)
		}
	case GCT:
		path = r.gctClient
		if s.P > 1 {
			args = append(args, "-p", itoa(s.P))
		}
		args = append(args, sec...)
		switch s.Workload {
		case Disk:
			args = append(args, base+r.source, "file://"+dest)
		case DiskUp:
			args = append(args, "file://"+r.source, base+dest)
		default:
			args = append(args, "-len", size, base+"/dev/zero", "file://"+os.DevNull)
		}
	}
	m, err := startMeter(srv, s.Impl == GCT)
	if err != nil {
		return err
	}
	u, _, cerr := runClient(ctx, r.cfg.Timeout, env, path, args...)
	s.ServerCPU, s.ServerRSS, err = m.end(ctx)
	if cerr != nil {
		return errors.Join(cerr, srv.alive())
	}
	if err != nil {
		return err
	}
	s.Wall, s.ClientCPU, s.ClientRSS, s.Machine = u.wall, u.cpu, u.rss, u.machine
	s.Gbps = bitRate(s.Bytes, s.Wall) / 1e9
	if dest != "" {
		fi, err := os.Stat(dest)
		if err != nil {
			return fmt.Errorf("bench: the copy: %w", err)
		}
		if fi.Size() != s.Bytes {
			return fmt.Errorf("bench: the copy %s has %d bytes, want %d", dest, fi.Size(), s.Bytes)
		}
	}
	return nil
}

// serverRole names the server impl uses for workload w: Ferry has one
// per workload (null storage, posix storage, GSI with null storage); GCT
// has an anonymous one, which serves /dev/zero and the served directory,
// and a GSI one.
func serverRole(impl Impl, w Workload) string {
	switch {
	case w.gsi():
		return string(impl) + "-gsi"
	case w == SmallFilesUp:
		return serverRole(impl, SmallFiles)
	case w.s3() && impl == S3Client:
		return "weed" // no server of its own
	case w == S3Up:
		return serverRole(impl, S3)
	case w == SmallFiles3PT, w == smallFiles3PTDest:
		return string(impl) + "-" + string(w)
	case impl == Ferry:
		return string(impl) + "-" + string(w)
	}
	return string(impl)
}

// server returns the server impl uses for workload w, starting it on
// first use.
func (r *runner) server(ctx context.Context, impl Impl, w Workload) (*server, error) {
	role := serverRole(impl, w)
	if s := r.servers[role]; s != nil {
		return s, nil
	}
	var path string
	var args, env []string
	switch {
	case w.gsi() && (impl == Ferry || impl == GCT):
		path, args, env = r.gsiServerArgs(impl)
	case impl == Ferry || impl == FerryTar:
		path = r.cfg.Ferry
		args = []string{"serve", "-listen", net.JoinHostPort(r.host(), "0"), "-anonymous", "-log-level", "warn", "-shutdown-grace", "2s"}
		if w.small() || w == DiskUp || w.s3() {
			args[3] = "-anonymous-write"
		}
		if impl == FerryTar {
			args = append(args, "-allowed-modules", "tar")
		}
		if w == SmallFiles3PT || w == smallFiles3PTDest {
			// The source connects to the other server (PORT), and the
			// destination takes that connection: neither comes from
			// the client, so no bounce protection between the two.
			args = append(args, "-allow-foreign-data")
		}
		switch {
		case w == Mem:
			args = append(args, "-storage", "null")
		case w.s3():
			args = append(args, r.s3.serveArgs()...)
			env = r.s3.env()
		default:
			args = append(args, "-root", r.served)
		}
		args = append(args, r.cfg.FerryServeFlags...)
	case impl == GCT:
		path = r.gctServer
		args = []string{"-aa", "-anonymous-user", "nobody", "-p", "0",
			"-control-interface", r.host(), "-data-interface", r.host(),
			"-home-dir", r.served, "-disable-usage-stats"}
	default:
		return nil, fmt.Errorf("bench: %s has no server", impl)
	}
	path, args = r.in(wan.Server, path, args)
	fmt.Fprintf(r.progress, "bench: starting %s\n", commandLine(path, args))
	s, err := startServer(ctx, role, r.served, env, path, args...)
	if err != nil {
		return nil, err
	}
	r.servers[role] = s
	return s, nil
}

// meter measures a server process across one run: its CPU time (its own
// and that of the children it reaped) and its peak RSS.
type meter struct {
	srv  *server
	cpu0 procCPU

	// For a server with a process per session (GCT): the children present
	// before the run, and the watch on the others.
	perSession bool
	before     []int
	watch      *peakWatch
}

// startMeter starts measuring srv. With perSession the server forks a
// process per session, whose peak RSS is sampled; otherwise the server's
// own VmHWM is reset.
func startMeter(srv *server, perSession bool) (*meter, error) {
	m := &meter{srv: srv, perSession: perSession}
	var err error
	if perSession {
		if m.before, err = children(srv.pid); err != nil {
			return nil, err
		}
		m.watch = watchPeak(m.sessions)
	} else if err = resetPeak(srv.pid); err != nil {
		return nil, fmt.Errorf("bench: resetting the peak RSS of %s: %w", srv.name, err)
	}
	if m.cpu0, err = readCPU(srv.pid); err != nil {
		m.stopWatch()
		return nil, err
	}
	return m, nil
}

// sessions returns the server's children that were not there before.
func (m *meter) sessions() []int {
	pids, _ := children(m.srv.pid)
	return slices.DeleteFunc(pids, func(p int) bool { return slices.Contains(m.before, p) })
}

// stopWatch stops the watch of the session processes and returns their
// peak RSS: rssUnknown if no sample saw one alive (the master reaps them,
// so wait4 cannot tell either).
func (m *meter) stopWatch() int64 {
	if m.watch == nil {
		return rssUnknown
	}
	if p := m.watch.stop(); p > 0 {
		return p
	}
	return rssUnknown
}

// end finishes the measurement once the client has exited: for a
// per-session server it waits until the session processes have been
// reaped, so that their CPU time shows in the server's cutime and cstime.
func (m *meter) end(ctx context.Context) (time.Duration, int64, error) {
	defer m.stopWatch()
	if m.perSession {
		deadline := time.Now().Add(sessionExit)
		for {
			pids := m.sessions()
			if len(pids) == 0 {
				break
			}
			// A session outlives its client a little (globus-url-copy
			// closes the connection without QUIT), so this sample sees
			// the session's whole peak.
			m.watch.sampleOf(pids)
			if time.Now().After(deadline) {
				return 0, 0, fmt.Errorf("bench: %s: session processes %v still running %v after the client exited", m.srv.name, pids, sessionExit)
			}
			select {
			case <-ctx.Done():
				return 0, 0, context.Cause(ctx)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	cpu1, err := readCPU(m.srv.pid)
	if err != nil {
		return 0, 0, err
	}
	cpu := cpu1.total() - m.cpu0.total()
	if m.perSession {
		return cpu, m.stopWatch(), nil
	}
	mem, err := readMem(m.srv.pid)
	if err != nil {
		return 0, 0, err
	}
	return cpu, mem.peak(), nil
}

// peakWatch samples the peak RSS (VmHWM) of a changing set of processes
// every sampleEvery and keeps the largest. VmHWM only grows while a
// program runs, so a sample misses at most what grew since the last one.
type peakWatch struct {
	pids   func() []int
	peak   atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// watchPeak starts watching the processes pids returns; it samples once
// before it returns.
func watchPeak(pids func() []int) *peakWatch {
	w := &peakWatch{pids: pids}
	w.sample()
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.wg.Go(func() {
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.sample()
			}
		}
	})
	return w
}

// sample reads the peaks of the processes pids returns once.
func (w *peakWatch) sample() { w.sampleOf(w.pids()) }

// sampleOf reads the peaks of pids once. Processes that have gone are
// skipped: a zombie has no memory lines. It is safe for concurrent use.
func (w *peakWatch) sampleOf(pids []int) {
	for _, pid := range pids {
		mem, err := readMem(pid)
		if err != nil {
			continue
		}
		for v := w.peak.Load(); mem.peak() > v && !w.peak.CompareAndSwap(v, mem.peak()); v = w.peak.Load() {
		}
	}
}

// stop stops the watch and returns the peak. It may be called more than
// once.
func (w *peakWatch) stop() int64 {
	w.cancel()
	w.wg.Wait()
	return w.peak.Load()
}

// iperfResult is the part of iperf3's -J output the benchmark reads.
type iperfResult struct {
	End struct {
		SumSent struct {
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_sent"`
	} `json:"end"`
	Error string `json:"error"`
}

// runRaw runs an iperf3 server for one test and an iperf3 client with p
// streams, sending s.Bytes with 1 MiB writes.
func (r *runner) runRaw(ctx context.Context, s *Sample) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout+time.Minute)
	defer cancel()
	srvArgs := []string{"-s", "-1", "-B", "127.0.0.1", "-p", itoa(port)}
	srv := command(sctx, r.iperf, srvArgs...)
	log := &tail{}
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	watch := watchPeak(func() []int { return []int{srv.Process.Pid} })
	self := selfPeak()
	defer watch.stop()
	var waitErr error
	exited := make(chan struct{}) // closed once waitErr is set
	go func() {
		waitErr = srv.Wait()
		close(exited)
	}()
	defer func() {
		cancel() // kills the server unless it has exited
		<-exited
	}()
	if err := waitListening(ctx, port, exited); err != nil {
		return fmt.Errorf("bench: %s: %w%s", commandLine(r.iperf, srvArgs), err, log.suffix())
	}
	u, out, err := runClient(ctx, r.cfg.Timeout, nil, r.iperf, "-c", "127.0.0.1", "-p", itoa(port),
		"-P", itoa(s.P), "-l", "1M", "-n", strconv.FormatInt(s.Bytes, 10), "-J")
	var res iperfResult
	if jerr := json.Unmarshal(out, &res); jerr == nil && res.Error != "" {
		err = errors.Join(err, fmt.Errorf("bench: iperf3: %s", res.Error))
	} else if err == nil && jerr != nil {
		err = fmt.Errorf("bench: iperf3 -J output: %w", jerr)
	}
	if err != nil {
		return err
	}
	t := time.NewTimer(sessionExit)
	defer t.Stop()
	select {
	case <-exited:
		if waitErr != nil {
			return fmt.Errorf("bench: iperf3 server: %w%s", waitErr, log.suffix())
		}
	case <-t.C:
		return fmt.Errorf("bench: the iperf3 server did not exit %v after its test", sessionExit)
	}
	su := usageOf(srv.ProcessState, 0)
	su.rss = peakOf(watch.stop(), srv.ProcessState, self)
	// The rate is the sender's: when -n ends a test, iperf3's receiver
	// summary leaves out what was still in flight (at 2 MiB, often half).
	if res.End.SumSent.Bytes < s.Bytes || res.End.SumSent.BitsPerSecond <= 0 {
		return fmt.Errorf("bench: iperf3 sent %d bytes at %v bit/s, want %d bytes",
			res.End.SumSent.Bytes, res.End.SumSent.BitsPerSecond, s.Bytes)
	}
	s.Wall, s.ClientCPU, s.ClientRSS, s.Machine = u.wall, u.cpu, u.rss, u.machine
	s.ServerCPU, s.ServerRSS = su.cpu, su.rss
	s.Gbps = res.End.SumSent.BitsPerSecond / 1e9
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening polls /proc/net/tcp until something listens on
// 127.0.0.1:port. It does not connect: iperf3 -s -1 would take a probe
// connection for its one test.
func waitListening(ctx context.Context, port int, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			return err
		}
		if listeningTCP(b, port) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on port %d after %v", port, startTimeout)
		}
		select {
		case <-exited:
			return errors.New("exited before listening")
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
