package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/wan"
)

// IPerf3 is raw TCP with iperf3 as the reference of a WAN grid.
const IPerf3 Impl = "iperf3"

// WANCell is one measurement over an emulated WAN: one implementation
// pulling data from a server through a link of a given latency, loss and
// rate.
type WANCell struct {
	Grid    string        // the ID of the grid it belongs to
	Impl    Impl          // Ferry, GCT or IPerf3
	P       int           // TCP connections; 1 is stream mode
	Buffer  int64         // TCP buffer asked for (-tcp-bs, iperf3 -w); 0: autotuned
	Latency time.Duration // one-way delay
	Loss    float64       // packet loss in percent, on the data (server to client) direction
	Rate    int64         // link rate in bit/s, as Ethernet counts it (framing included)
	Profile string        // the socket-limit profile (see Profiles)
	// Size is the bytes to pull; Duration bounds the transfer: a cell
	// that has not finished by then is stopped and its rate is the bytes
	// moved so far over the time since the client started (see
	// WANResult). A fixed-duration cell asks for more than it can move.
	Size     int64
	Duration time.Duration
	X, S     float64 // the grid's x and series values

	// Auto runs ferry cp without -p and -tcp-bs, whatever P and Buffer
	// say: the client chooses (the tune preset's automatic columns).
	// Explicit passes both even at their defaults (-p 1, -tcp-bs 0), so
	// that a hand-tuned cell stays hand-tuned when the client tunes
	// itself unless told. Neither: -p only above 1, -tcp-bs only above 0
	// (the other presets' cells, as they always ran).
	Auto, Explicit bool
	// History is the transfer history ferry cp uses ($FERRY_HISTORY):
	// "" is "off", so that the user's history neither grows nor steers
	// a cell.
	History string
}

// clampedBuffer is the buffer the harness asks for: Buffer clamped to
// the profile's emulated net.core.rmem_max.
func (c WANCell) clampedBuffer() int64 {
	if clamp := Profiles[c.Profile].Clamp; clamp > 0 && c.Buffer > clamp {
		return clamp
	}
	return c.Buffer
}

// fixedDuration reports whether c is meant to be stopped at Duration.
func (c WANCell) fixedDuration() bool { return c.Size >= openEnded }

// How a cell ended, in WANResult.Ended.
const (
	EndComplete = "complete" // the whole Size arrived: rate = Size / client wall time
	EndStopped  = "stopped"  // stopped at Duration: rate = bytes received / time
	EndFailed   = "failed"   // no rate: see Err
)

// WANResult is the measurement of one cell.
type WANResult struct {
	Cell  WANCell
	Ended string
	Err   string // why the cell failed, or a warning

	// Bytes is what arrived; Elapsed the time from the client's start
	// to its end (complete) or to the count (stopped); Mbps the rate in
	// Mbit/s (10^6). iperf3 counts from its first data to its end.
	Bytes   int64
	Elapsed time.Duration
	Mbps    float64

	BufferAsked int64  // -tcp-bs passed (after the profile's clamp); 0: autotuned
	BufferEff   int64  // what the kernel grants it (capped by the host's rmem_max)
	CC          string // congestion control in effect in the namespaces
	RTT         time.Duration
	Theory      Theory
	Fidelity    wan.Fidelity
	Load1       float64 // the host's 1-minute load average before the cell
	// BusyBefore is how many cores the machine kept busy in a quiet
	// window just before the cell, while the bench itself ran nothing:
	// other work on the host. The load average cannot tell that apart
	// from the previous cell's own client, server and forwarder (about
	// 1.5 cores at 1 Gbit/s on two cores). NaN when unknown.
	BusyBefore float64
	ClientCPU  time.Duration
	ServerCPU  time.Duration
	Published  float64 // Mbit/s, NaN when none (filled in by the report)
	// Tuning is what an automatic ferry cp's on-the-fly tuning did, from
	// the record it left in its history (tune presets); "" otherwise.
	Tuning string
}

// network is the emulated link a cell runs over; *wan.Link is one.
type network interface {
	Addr(s wan.Side) netip.Addr
	Command(ctx context.Context, s wan.Side, name string, args ...string) *exec.Cmd
	Close() (wan.Fidelity, error)
}

// startNetwork starts a link.
type startNetwork func(ctx context.Context, cfg wan.Config) (network, error)

// startWAN starts a link of the emulator.
func startWAN(ctx context.Context, cfg wan.Config) (network, error) {
	l, err := wan.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// WANConfig says what "ferry bench wan" runs.
type WANConfig struct {
	Ferry string    // the ferry binary (needed for Ferry cells)
	Cells []WANCell // in run order (see Preset.Expand)
	// CC is the congestion control of both namespaces: "cubic" (the
	// default; the published stacks used it), "bbr" or "reno".
	CC   string
	Seed int64 // of the emulator's loss; cell i uses Seed+i
	Dir  string
	// Progress receives a line per cell; nil discards them.
	Progress io.Writer
	// OnResult, if set, is called after each cell (to write partial
	// results as they come).
	OnResult func(WANResult)

	start startNetwork // nil: the emulator
}

// wanRunner holds the state of one RunWAN.
type wanRunner struct {
	cfg       WANConfig
	progress  io.Writer
	gctServer string
	gctClient string
	iperf     string
	served    string // GCT's home directory
	rmemMax   int64  // the host's net.core.rmem_max
}

// RunWAN runs the cells one at a time, each on a link of its own, and
// returns a result per cell: a cell that fails is recorded (Ended
// EndFailed) and the run goes on; only a cancelled ctx or a missing
// program ends it early.
func RunWAN(ctx context.Context, cfg WANConfig) ([]WANResult, error) {
	r, done, err := newWANRunner(cfg)
	if err != nil {
		return nil, err
	}
	defer done()
	var results []WANResult
	for i, c := range cfg.Cells {
		if ctx.Err() != nil {
			return results, context.Cause(ctx)
		}
		res := r.runCell(ctx, i, c)
		if ctx.Err() != nil {
			return results, context.Cause(ctx)
		}
		results = append(results, res)
		if cfg.OnResult != nil {
			cfg.OnResult(res)
		}
		fmt.Fprintf(r.progress, "bench: %d/%d %s %-6s p=%-2d bs=%-5s lat=%gms loss=%g%% %s: %s\n",
			i+1, len(cfg.Cells), c.Grid, c.Impl, c.P, VarBuffer.Format(float64(c.Buffer)), VarLatency.value(c), c.Loss,
			res.Ended, res.summary())
	}
	return results, nil
}

// newWANRunner checks cfg (its Cells say which programs are needed) and
// makes the scratch directory, which done removes.
func newWANRunner(cfg WANConfig) (r *wanRunner, done func(), err error) {
	r = &wanRunner{cfg: cfg, progress: cfg.Progress}
	if r.progress == nil {
		r.progress = io.Discard
	}
	if r.cfg.start == nil {
		r.cfg.start = startWAN
	}
	if r.cfg.CC == "" {
		r.cfg.CC = "cubic"
	}
	if err := r.check(); err != nil {
		return nil, nil, err
	}
	scratch, err := os.MkdirTemp(cfg.Dir, "ferry-bench-wan-")
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	done = func() { os.RemoveAll(scratch) }
	// GCT's anonymous sessions run as nobody.
	if err := os.Chmod(scratch, 0o755); err != nil {
		done()
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	if slices.ContainsFunc(cfg.Cells, func(c WANCell) bool { return c.Impl == GCT }) {
		if err := searchable(scratch); err != nil {
			done()
			return nil, nil, fmt.Errorf("bench: %w", err)
		}
	}
	r.served = scratch
	r.rmemMax = readSysctlInt("/proc/sys/net/core/rmem_max")
	return r, done, nil
}

// summary is a result's progress text.
func (res WANResult) summary() string {
	if res.Ended == EndFailed {
		return res.Err
	}
	s := fmt.Sprintf("%.1f Mbit/s (bound %.1f, %s) in %.1fs; idle RTT %.2fms, loss %.3f%%, delay p99 %dµs, cpu fwd %.1fs",
		res.Mbps, res.Theory.Bound, res.Theory.Limit, res.Elapsed.Seconds(), msOf(res.Fidelity.IdleRTT),
		100*res.Fidelity.LossMeasured[wan.ToClient], res.Fidelity.DelayErrP99.Microseconds(), res.Fidelity.CPU.Seconds())
	if v := res.Validity(); len(v) > 0 {
		s += "; CHECK: " + strings.Join(v, ", ")
	}
	if res.Err != "" {
		s += "; " + res.Err
	}
	return s
}

// check finds the programs the cells need.
func (r *wanRunner) check() error {
	impls := map[Impl]bool{}
	for _, c := range r.cfg.Cells {
		if !slices.Contains(WANImpls, c.Impl) {
			return fmt.Errorf("bench: unknown implementation %q (ferry, gct, iperf3)", c.Impl)
		}
		if c.P < 1 || c.P > 64 || c.Size <= 0 || c.Duration <= 0 || c.Rate <= 0 {
			return fmt.Errorf("bench: bad cell %+v", c)
		}
		if _, ok := Profiles[c.Profile]; !ok {
			return fmt.Errorf("bench: unknown profile %q", c.Profile)
		}
		impls[c.Impl] = true
	}
	switch r.cfg.CC {
	case "cubic", "bbr", "reno":
	default:
		return fmt.Errorf("bench: congestion control %q is not one of cubic, bbr, reno", r.cfg.CC)
	}
	var err error
	if impls[Ferry] && r.cfg.Ferry == "" {
		return errors.New("bench: no ferry binary given")
	}
	if impls[GCT] {
		if r.gctServer, err = program("globus-gridftp-server", gctServer); err != nil {
			return err
		}
		if r.gctClient, err = program("globus-url-copy", gctClient); err != nil {
			return err
		}
	}
	if impls[IPerf3] {
		if r.iperf, err = program("iperf3", ""); err != nil {
			return err
		}
	}
	return nil
}

// runCell runs cell i on a link of its own.
func (r *wanRunner) runCell(ctx context.Context, i int, c WANCell) (res WANResult) {
	res = WANResult{Cell: c, Ended: EndFailed, Published: math.NaN(), BufferAsked: c.clampedBuffer()}
	res.BufferEff = EffectiveBuffer(res.BufferAsked, r.rmemMax)
	res.Load1 = loadAverage()
	res.BusyBefore = busyCores(ctx, quietWindow)
	// Calibrate: the emulator takes its own latency off the delay, so that
	// the idle RTT is 2 × Latency, as the papers' emulators set it.
	link, err := r.cfg.start(ctx, wan.Config{Delay: c.Latency, Loss: c.Loss / 100, LossDir: wan.ToClient, Rate: c.Rate,
		Seed: r.cfg.Seed + int64(i), Calibrate: true, Name: "ferrybench"})
	if err != nil {
		res.Err = fmt.Sprintf("starting the link: %v", err)
		return res
	}
	defer func() {
		fid, err := link.Close()
		res.Fidelity = fid
		if err != nil && res.Ended != EndFailed {
			res.Ended, res.Err = EndFailed, fmt.Sprintf("closing the link: %v", err)
		}
		res.RTT = fid.IdleRTT
		if res.RTT <= 0 {
			res.RTT = 2*c.Latency + idleOverhead
		}
		res.Theory = Bounds(TheoryInput{P: c.P, RTT: res.RTT, Loss: c.Loss, Rate: c.Rate,
			Buffer: res.BufferAsked, BufferMax: r.rmemMax, RmemMax: Profiles[c.Profile].RmemMax})
	}()
	if res.CC, err = r.configure(ctx, link, Profiles[c.Profile]); err != nil {
		res.Err = err.Error()
		return res
	}
	switch c.Impl {
	case IPerf3:
		err = r.runIPerf(ctx, link, &res)
	default:
		err = r.runGridFTP(ctx, link, &res)
	}
	if err != nil {
		res.Ended, res.Err = EndFailed, err.Error()
	}
	return res
}

// runIn runs a short command in a side's namespace.
func runIn(ctx context.Context, link network, side wan.Side, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := link.Command(ctx, side, name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", commandLine(name, args), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// sideNames names the sides in messages.
var sideNames = map[wan.Side]string{wan.Client: "client", wan.Server: "server"}

// configure brings up the namespaces' loopback, sets the profile's
// sysctls on each side and the congestion control on both, and returns
// the congestion control in effect.
func (r *wanRunner) configure(ctx context.Context, link network, prof Profile) (string, error) {
	for _, side := range []wan.Side{wan.Client, wan.Server} {
		if _, err := runIn(ctx, link, side, "ip", "link", "set", "lo", "up"); err != nil {
			return "", fmt.Errorf("bench: %s namespace: %w", sideNames[side], err)
		}
		sysctls := prof.Client
		if side == wan.Server {
			sysctls = prof.Server
		}
		args := []string{"-q", "-w"}
		for _, k := range sortedKeys(sysctls) {
			args = append(args, k+"="+sysctls[k])
		}
		if _, err := runIn(ctx, link, side, "sysctl", args...); err != nil {
			return "", fmt.Errorf("bench: %s namespace: %w", sideNames[side], err)
		}
		for _, k := range sortedKeys(sysctls) {
			got, err := runIn(ctx, link, side, "sysctl", "-n", k)
			if err != nil {
				return "", fmt.Errorf("bench: %s namespace: %w", sideNames[side], err)
			}
			if strings.Join(strings.Fields(got), " ") != sysctls[k] {
				return "", fmt.Errorf("bench: %s namespace: %s is %q after setting %q", sideNames[side], k, strings.TrimSpace(got), sysctls[k])
			}
		}
	}
	return r.setCC(ctx, link)
}

// allowedCC is the host's list of congestion controls a network namespace
// may choose as its default.
const allowedCC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"

// ccMu serialises the brief changes of the host's allowed list.
var ccMu sync.Mutex

// setCC sets both namespaces' default congestion control to cfg.CC. A
// namespace may only choose one on the host's allowed list; if it is
// missing, the list is extended for the moment of setting and restored
// at once (the namespaces keep their choice). It returns what is in
// effect; on failure the namespaces' default stays and the result says
// so.
func (r *wanRunner) setCC(ctx context.Context, link network) (string, error) {
	want := r.cfg.CC
	ccMu.Lock()
	defer ccMu.Unlock()
	orig, err := os.ReadFile(allowedCC)
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	allowed := strings.Fields(string(orig))
	if !slices.Contains(allowed, want) {
		if err := os.WriteFile(allowedCC, []byte(strings.Join(append(allowed, want), " ")), 0); err != nil {
			return "", fmt.Errorf("bench: allowing %s for a moment: %w", want, err)
		}
		defer os.WriteFile(allowedCC, orig, 0)
	}
	for _, side := range []wan.Side{wan.Client, wan.Server} {
		if _, err := runIn(ctx, link, side, "sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control="+want); err != nil {
			return "", fmt.Errorf("bench: %s namespace: %w", sideNames[side], err)
		}
	}
	var got []string
	for _, side := range []wan.Side{wan.Client, wan.Server} {
		out, err := runIn(ctx, link, side, "sysctl", "-n", "net.ipv4.tcp_congestion_control")
		if err != nil {
			return "", fmt.Errorf("bench: %s namespace: %w", sideNames[side], err)
		}
		got = append(got, strings.TrimSpace(out))
	}
	if got[0] != want || got[1] != want {
		return "", fmt.Errorf("bench: congestion control is %s/%s, want %s", got[0], got[1], want)
	}
	return want, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// prepare makes cmd, which runs in a namespace, a process group of its
// own that ends with ctx, as command does for local programs.
func prepare(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	return cmd
}

// runGridFTP starts the cell's server in the server namespace and pulls
// the data with its client in the client namespace.
func (r *wanRunner) runGridFTP(ctx context.Context, link network, res *WANResult) error {
	c := res.Cell
	srvAddr := link.Addr(wan.Server)
	var path string
	var args []string
	switch c.Impl {
	case Ferry:
		path = r.cfg.Ferry
		args = []string{"serve", "-listen", net.JoinHostPort(srvAddr.String(), "0"), "-storage", "null",
			"-anonymous", "-log-level", "warn", "-shutdown-grace", "1s"}
	case GCT:
		path = r.gctServer
		args = []string{"-aa", "-anonymous-user", "nobody", "-p", "0",
			"-control-interface", srvAddr.String(), "-data-interface", srvAddr.String(),
			"-home-dir", r.served, "-disable-usage-stats"}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var srvCmd *exec.Cmd
	if c.Impl == GCT {
		if err := r.writeHosts(link); err != nil {
			return err
		}
		srvCmd = r.gctCommand(sctx, link, wan.Server, path, args...)
	} else {
		srvCmd = link.Command(sctx, wan.Server, path, args...)
	}
	srv, err := startServerCmd(sctx, string(c.Impl)+" server", prepare(srvCmd))
	if err != nil {
		return err
	}
	defer srv.stop()
	base := "ftp://" + net.JoinHostPort(srvAddr.String(), itoa(srv.port))
	size := strconv.FormatInt(c.Size, 10)
	args = nil
	switch c.Impl {
	case Ferry:
		path, args = r.cfg.Ferry, append([]string{"cp", "-q"}, ferryTuning(c, res.BufferAsked)...)
		args = append(args, base+"/"+size, os.DevNull)
	case GCT:
		path = r.gctClient
		if c.P > 1 {
			args = append(args, "-p", itoa(c.P))
		}
		if res.BufferAsked > 0 {
			args = append(args, "-tcp-bs", strconv.FormatInt(res.BufferAsked, 10))
		}
		args = append(args, "-len", size, base+"/dev/zero", "file://"+os.DevNull)
	}
	m, err := startMeter(srv, c.Impl == GCT)
	if err != nil {
		return err
	}
	err = r.pull(ctx, link, res, path, args)
	cpu, _, merr := m.end(ctx)
	res.ServerCPU = cpu
	if err != nil {
		return errors.Join(err, srv.alive())
	}
	if merr != nil {
		res.Err = "server CPU: " + merr.Error()
	}
	return nil
}

// ferryTuning returns the -p and -tcp-bs flags of a Ferry cell that asks
// for buffer bytes (see WANCell.Auto and Explicit).
func ferryTuning(c WANCell, buffer int64) []string {
	var args []string
	switch {
	case c.Auto:
	case c.Explicit:
		args = append(args, "-p", itoa(c.P), "-tcp-bs", strconv.FormatInt(buffer, 10))
	default:
		// Hand-set: the published tables mean -p and -tcp-bs as given,
		// or the plain defaults, never the advisor's choice.
		args = append(args, "-auto=false")
		if c.P > 1 {
			args = append(args, "-p", itoa(c.P))
		}
		if buffer > 0 {
			args = append(args, "-tcp-bs", strconv.FormatInt(buffer, 10))
		}
	}
	return args
}

// pull runs the client until it ends or the cell's Duration passes; then
// it counts the bytes the client's sockets received and stops it.
func (r *wanRunner) pull(ctx context.Context, link network, res *WANResult, path string, args []string) error {
	c := res.Cell
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cmd *exec.Cmd
	if c.Impl == GCT {
		cmd = r.gctCommand(cctx, link, wan.Client, path, args...)
	} else {
		cmd = link.Command(cctx, wan.Client, path, args...)
	}
	if c.Impl == Ferry {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, history.EnvDSN+"="+cmp.Or(c.History, history.OffDSN))
	}
	prepare(cmd)
	stderr := &tail{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(c.Duration)
	defer timer.Stop()
	finish := func(err error, elapsed time.Duration) error {
		res.ClientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if err != nil {
			return fmt.Errorf("bench: %s: %w%s", commandLine(path, args), err, stderr.suffix())
		}
		res.Ended, res.Bytes, res.Elapsed = EndComplete, c.Size, elapsed
		res.Mbps = bitRate(res.Bytes, res.Elapsed) / 1e6
		return nil
	}
	select {
	case err := <-done:
		return finish(err, time.Since(start))
	case <-ctx.Done():
		cancel()
		<-done
		return context.Cause(ctx)
	case <-timer.C:
	}
	// The count is of one moment during ss's run: take the middle.
	before := time.Since(start)
	n, cerr := receivedBytes(ctx, link)
	elapsed := before + (time.Since(start)-before)/2
	select {
	case err := <-done: // it ended while the count ran
		if err == nil {
			return finish(nil, elapsed)
		}
	default:
	}
	cancel()
	<-done
	res.ClientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if cerr != nil {
		return cerr
	}
	if c.Size < openEnded {
		res.Err = fmt.Sprintf("stopped after %v before its %s", c.Duration, progress.Size(c.Size))
	}
	res.Ended, res.Bytes, res.Elapsed = EndStopped, n, elapsed
	res.Mbps = bitRate(n, elapsed) / 1e6
	return nil
}

// writeHosts writes the hosts file of GCT's programs: the link's two
// addresses and this host's name. GCT looks up the name of the address it
// listens on; in a namespace without a route to a DNS server the look-up
// fails with EAI_AGAIN (not "no such name"), and the server does not start.
func (r *wanRunner) writeHosts(link network) error {
	name, _ := os.Hostname()
	hosts := fmt.Sprintf("127.0.0.1 localhost %s\n%s ferrybench-client\n%s ferrybench-server\n",
		name, link.Addr(wan.Client), link.Addr(wan.Server))
	if err := writeMode(r.hosts(), []byte(hosts), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// hosts is the path of the hosts file of GCT's programs.
func (r *wanRunner) hosts() string { return filepath.Join(r.served, "hosts") }

// gctCommand runs a GCT program in side's namespace and in a mount
// namespace of its own in which the hosts file of writeHosts is
// /etc/hosts. unshare and sh exec, so the program keeps their PID.
func (r *wanRunner) gctCommand(ctx context.Context, link network, side wan.Side, path string, args ...string) *exec.Cmd {
	const script = `mount --bind "$0" /etc/hosts && exec "$@"`
	return link.Command(ctx, side, "unshare", append([]string{"--mount", "--propagation", "private",
		"sh", "-c", script, r.hosts(), path}, args...)...)
}

// bytesReceived matches the payload counter of a TCP socket in ss -i.
var bytesReceived = regexp.MustCompile(`\bbytes_received:(\d+)`)

// receivedBytes sums the payload bytes received by the TCP sockets of
// the client namespace, which holds only the client.
func receivedBytes(ctx context.Context, link network) (int64, error) {
	out, err := runIn(ctx, link, wan.Client, "ss", "-tinH")
	if err != nil {
		return 0, fmt.Errorf("bench: counting received bytes: %w", err)
	}
	return sumReceived(out), nil
}

// sumReceived sums the bytes_received counters of ss -tin output.
func sumReceived(ss string) int64 {
	var n int64
	for _, m := range bytesReceived.FindAllStringSubmatch(ss, -1) {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		n += v
	}
	return n
}

// msOf returns d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// iperfPort is the iperf3 port in the server namespace, which is new per
// cell.
const iperfPort = 5201

// iperfWAN is the part of iperf3 -J output a WAN cell reads.
type iperfWAN struct {
	End struct {
		SumReceived struct {
			Bytes         int64   `json:"bytes"`
			Seconds       float64 `json:"seconds"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
	Error string `json:"error"`
}

// runIPerf runs iperf3 in reverse (the server sends, as a pull does):
// -n Size for a fixed-size cell, -t Duration for a fixed-duration one,
// with the namespaces' congestion control and -w for an explicit buffer.
func (r *wanRunner) runIPerf(ctx context.Context, link network, res *WANResult) error {
	c := res.Cell
	srvAddr := link.Addr(wan.Server).String()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := prepare(link.Command(sctx, wan.Server, r.iperf, "-s", "-1", "-B", srvAddr, "-p", itoa(iperfPort)))
	log := &tail{}
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	defer func() { cancel(); <-exited }()
	if err := waitListeningIn(ctx, srv.Process.Pid, iperfPort, exited); err != nil {
		return fmt.Errorf("bench: iperf3 server: %w%s", err, log.suffix())
	}
	args := []string{"-c", srvAddr, "-p", itoa(iperfPort), "-R", "-P", itoa(c.P), "-C", res.CC, "-J"}
	if c.fixedDuration() {
		args = append(args, "-t", itoa(int(math.Ceil(c.Duration.Seconds()))))
	} else {
		args = append(args, "-n", strconv.FormatInt(c.Size, 10))
	}
	if res.BufferAsked > 0 {
		args = append(args, "-w", strconv.FormatInt(res.BufferAsked, 10))
	}
	cctx, ccancel := context.WithTimeout(ctx, c.Duration+30*time.Second)
	defer ccancel()
	cmd := prepare(link.Command(cctx, wan.Client, r.iperf, args...))
	out, err := cmd.Output()
	if cmd.ProcessState != nil {
		res.ClientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var v iperfWAN
	if jerr := json.Unmarshal(out, &v); jerr == nil && v.Error != "" {
		return fmt.Errorf("bench: iperf3: %s", v.Error)
	} else if jerr != nil && err == nil {
		err = fmt.Errorf("iperf3 -J output: %w", jerr)
	}
	if err != nil {
		return fmt.Errorf("bench: %s: %w", commandLine(r.iperf, args), err)
	}
	s := v.End.SumReceived
	if s.Bytes <= 0 || s.Seconds <= 0 {
		return fmt.Errorf("bench: iperf3 received %d bytes in %gs", s.Bytes, s.Seconds)
	}
	res.Ended, res.Bytes = EndComplete, s.Bytes
	if c.fixedDuration() {
		res.Ended = EndStopped
	}
	res.Elapsed = time.Duration(s.Seconds * float64(time.Second))
	res.Mbps = s.BitsPerSecond / 1e6
	return nil
}

// waitListeningIn waits until process pid's network namespace has a TCP
// socket listening on port: /proc/PID/net/tcp shows that namespace.
func waitListeningIn(ctx context.Context, pid, port int, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
		if err == nil && listeningOn(b, port) {
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

// listeningOn reports whether a /proc/net/tcp table has a socket
// listening on port, at any address.
func listeningOn(b []byte, port int) bool {
	suffix := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && strings.HasSuffix(f[1], suffix) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// readSysctlInt reads an integer from a /proc/sys file, 0 if it cannot.
func readSysctlInt(name string) int64 {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// quietWindow is how long runCell samples the host's CPUs before a cell.
const quietWindow = 2 * time.Second

// busyOthers is the doubt threshold for BusyBefore: a third of a core kept
// busy by something else while the bench rests is work that competes with
// the cell's forwarder, client and server.
const busyOthers = 0.33

// busyCores returns the cores the machine kept busy over d, NaN if unknown.
func busyCores(ctx context.Context, d time.Duration) float64 {
	before, err := readMachineCPU()
	if err != nil {
		return math.NaN()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return math.NaN()
	case <-t.C:
	}
	after, err := readMachineCPU()
	if err != nil {
		return math.NaN()
	}
	return shareSince(before, after, onlineCPUs()).Busy
}

// loadAverage returns the host's 1-minute load average, NaN if unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// Validity returns what makes the cell's emulation doubtful, by the
// checks of /work/shared/wan.md: a delay error p99 over 0.5 ms, packets
// dropped at a queue, measured loss far from the setting, a busy host
// (other work using more than a third of a core while the bench rested).
func (res WANResult) Validity() []string {
	var out []string
	f := res.Fidelity
	if res.Ended == EndFailed {
		return nil
	}
	if f.DelayErrP99 > 500*time.Microsecond {
		out = append(out, fmt.Sprintf("delay p99 %.2fms", msOf(f.DelayErrP99)))
	}
	if f.QueueDrops > 0 {
		out = append(out, fmt.Sprintf("%d queue drops", f.QueueDrops))
	}
	got, n := 100*f.LossMeasured[wan.ToClient], f.Packets[wan.ToClient]
	switch {
	case res.Cell.Loss == 0 && f.LossDrops[wan.ToClient] > 0:
		out = append(out, fmt.Sprintf("loss %.3f%% without a setting", got))
	case res.Cell.Loss > 0 && n >= 10000 && math.Abs(got-res.Cell.Loss) > 0.25*res.Cell.Loss:
		out = append(out, fmt.Sprintf("loss %.3f%% for %g%%", got, res.Cell.Loss))
	}
	switch {
	case !math.IsNaN(res.BusyBefore) && res.BusyBefore > busyOthers:
		out = append(out, fmt.Sprintf("host busy %.2f cores before", res.BusyBefore))
	case math.IsNaN(res.BusyBefore) && res.Load1 > 1.5:
		out = append(out, fmt.Sprintf("load %.2f before", res.Load1))
	}
	return out
}
