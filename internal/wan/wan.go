package wan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Side names one end of the link.
type Side int

const (
	Client Side = iota // the client namespace
	Server             // the server namespace
)

func (s Side) String() string {
	if s == Client {
		return "client"
	}
	return "server"
}

// Dir names a direction through the link; it indexes Fidelity's arrays.
type Dir int

const (
	ToClient Dir = iota // server to client: the data direction of downloads
	ToServer            // client to server: the data direction of uploads
	Both                // both directions (for Config.LossDir only)
)

func (d Dir) String() string {
	switch d {
	case ToClient:
		return "to-client"
	case ToServer:
		return "to-server"
	case Both:
		return "both"
	}
	return "Dir(" + strconv.Itoa(int(d)) + ")"
}

// Config describes the emulated path. The zero value is a link with no
// delay, no loss and no rate limit.
type Config struct {
	// Delay is the one-way delay added in each direction; the idle
	// round-trip time is twice this plus the forwarder's own latency
	// (Fidelity.IdleRTT measures it).
	Delay time.Duration
	// Loss is the probability (0..1) that a packet in a lossy direction is
	// dropped. Each TCP segment of a sender's GSO super-packet is a packet
	// of its own here, as on a real wire.
	Loss float64
	// LossDir is the direction Loss applies to; the zero value, ToClient,
	// is the data direction of downloads from the server.
	LossDir Dir
	// LossACKs makes the opposite direction of LossDir lossy too, at the
	// same rate (with one-way traffic, that direction carries the ACKs).
	// It changes nothing when LossDir is Both.
	LossACKs bool
	// Rate is the limit in bit/s of each direction, counted as Ethernet
	// would: it is applied with an htb qdisc on each TUN's egress at
	// Rate × 1500/1538 of IP bytes (the 38 bytes of Ethernet framing per
	// full-size frame), so that "1 Gbit/s" tops out at TCP's 941 Mbit/s
	// as on a gigabit NIC. 0 means unlimited.
	Rate int64
	// Seed makes the loss pattern reproducible: each direction draws from
	// its own generator seeded from it.
	Seed int64
	// Sysctls are set in both namespaces before the devices come up, e.g.
	// "net.ipv4.tcp_rmem": "4096 131072 1048576". Only per-namespace
	// settings can be set (net.core.rmem_max, for one, is host-wide).
	Sysctls map[string]string
	// Calibrate makes Start measure the forwarder's own latency with the
	// idle RTT probes and take half of it (at most 0.5 ms) off the delay of
	// each direction, so that the idle RTT comes out at 2 × Delay rather
	// than about 0.3–0.5 ms above it. Fidelity.Compensation says by how
	// much.
	Calibrate bool
	// Name is the prefix of the namespace names, which are
	// NAME-PID-SEQ-c and NAME-PID-SEQ-s; the default is "ferrywan".
	Name string
}

func (c Config) lossy(d Dir) bool {
	if c.Loss <= 0 {
		return false
	}
	return c.LossDir == Both || c.LossDir == d || c.LossACKs
}

func (c Config) validate() error {
	switch {
	case c.Delay < 0 || c.Delay > time.Minute:
		return fmt.Errorf("wan: delay %v out of range 0..1m", c.Delay)
	case !(c.Loss >= 0 && c.Loss <= 1):
		return fmt.Errorf("wan: loss %v out of range 0..1", c.Loss)
	case c.LossDir < ToClient || c.LossDir > Both:
		return fmt.Errorf("wan: bad loss direction %d", c.LossDir)
	case c.Rate < 0:
		return fmt.Errorf("wan: negative rate %d", c.Rate)
	case c.Rate > 0 && c.Rate < 8000:
		return fmt.Errorf("wan: rate %d bit/s is below 8 kbit/s", c.Rate)
	case strings.ContainsAny(c.Name, "/ \t\n") || len(c.Name) > 64:
		return fmt.Errorf("wan: bad namespace prefix %q", c.Name)
	}
	for k := range c.Sysctls {
		if !strings.HasPrefix(k, "net.") {
			return fmt.Errorf("wan: sysctl %q is not a per-namespace net.* setting", k)
		}
	}
	return nil
}

// The addresses of the two ends. Each link has namespaces of its own, so
// every link may use the same pair.
var addrs = [2]netip.Addr{
	Client: netip.AddrFrom4([4]byte{10, 77, 0, 1}),
	Server: netip.AddrFrom4([4]byte{10, 77, 0, 2}),
}

// Link is a running emulated path between two network namespaces.
type Link struct {
	cfg     Config
	ns      [2]string
	fds     [2]int
	fwd     *forwarder
	started time.Time
	idleRTT time.Duration
	// compensation is what calibration took off each direction's delay.
	compensation time.Duration
	stopMu       sync.Mutex
	stop         func() bool // unregisters the context watch; under stopMu

	closeOnce sync.Once
	closed    atomic.Bool
	final     Fidelity
	closeErr  error
}

var seq atomic.Int64

// maxCompensation bounds calibration: more than this is not the
// forwarder's latency but a busy machine, which the report should show.
const maxCompensation = 500 * time.Microsecond

// Start creates the two namespaces, their TUN devices and rate limits and
// the forwarder between them, measures the idle round-trip time, and
// returns once traffic can flow. On error it removes what it made. The
// link lives until Close or until ctx is done, whichever comes first;
// either removes everything. It needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)
// and the ip and tc commands of iproute2.
func Start(ctx context.Context, cfg Config) (l *Link, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = "ferrywan"
	}
	if err := removeStale(cfg.Name); err != nil {
		return nil, fmt.Errorf("wan: removing stale namespaces: %w", err)
	}
	base := fmt.Sprintf("%s-%d-%d", cfg.Name, os.Getpid(), seq.Add(1))
	l = &Link{cfg: cfg, ns: [2]string{Client: base + "-c", Server: base + "-s"}, fds: [2]int{-1, -1}}
	// "return nil, err" has set l to nil by the time this runs.
	link := l
	defer func() {
		if err != nil {
			link.teardown()
			l = nil
		}
	}()
	for _, s := range []Side{Client, Server} {
		if err := addNetns(ctx, l.ns[s]); err != nil {
			l.ns[s] = "" // not ours to delete
			return nil, err
		}
		if err := l.setupSide(ctx, s); err != nil {
			return nil, err
		}
	}
	if l.fwd, err = newForwarder(cfg, l.fds[Client], l.fds[Server]); err != nil {
		return nil, err
	}
	useProcs()
	l.started = time.Now()
	l.fwd.start()
	if l.idleRTT, err = l.probe(ctx); err != nil {
		return nil, err
	}
	if cfg.Calibrate {
		l.compensation = min((l.idleRTT-2*cfg.Delay)/2, cfg.Delay, maxCompensation)
		if l.compensation > 0 {
			for _, d := range l.fwd.dirs {
				d.delay.Store(int64(cfg.Delay - l.compensation))
			}
			if l.idleRTT, err = l.probe(ctx); err != nil {
				return nil, err
			}
		} else {
			l.compensation = 0
		}
	}
	l.fwd.resetStats()
	l.started = time.Now()
	l.fwd.lossOn.Store(true)
	// Under stopMu: the watch may fire at once, and its Close reads stop.
	l.stopMu.Lock()
	l.stop = context.AfterFunc(ctx, func() { l.Close() })
	l.stopMu.Unlock()
	return l, nil
}

// setupSide sets the namespace's sysctls, creates its TUN inside it, and
// gives it its address, route and rate limit.
func (l *Link) setupSide(ctx context.Context, s Side) error {
	keys := slices.Sorted(maps.Keys(l.cfg.Sysctls))
	err := inNetns(ctx, l.ns[s], func() error {
		// No IPv6: its router solicitations and the like would pass
		// through the forwarder and count as traffic.
		for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
			if err := setSysctl(k, "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		for _, k := range keys {
			if err := setSysctl(k, l.cfg.Sysctls[k]); err != nil {
				return err
			}
		}
		fd, err := openTUN()
		l.fds[s] = fd
		return err
	})
	if err != nil {
		return err
	}
	peer := addrs[1-s]
	script := fmt.Sprintf("link set dev lo up\n"+
		"link set dev %[1]s mtu 1500 txqueuelen 1000 up\n"+
		"addr add %[2]s/32 peer %[3]s/32 dev %[1]s\n", tunName, addrs[s], peer)
	if err := run(ctx, script, "ip", "-n", l.ns[s], "-batch", "-"); err != nil {
		return err
	}
	if l.cfg.Rate > 0 {
		kbit := max(l.cfg.Rate*1500/1538/1000, 8)
		script := fmt.Sprintf("qdisc add dev %[1]s root handle 1: htb default 1\n"+
			"class add dev %[1]s parent 1: classid 1:1 htb rate %[2]dkbit\n", tunName, kbit)
		if err := run(ctx, script, "tc", "-n", l.ns[s], "-batch", "-"); err != nil {
			return err
		}
	}
	return nil
}

// teardown stops the forwarder, closes the devices and deletes the
// namespaces, whatever of them exists.
func (l *Link) teardown() error {
	var errs []error
	if l.fwd != nil {
		errs = append(errs, l.fwd.stop())
	}
	for i, fd := range l.fds {
		if fd >= 0 {
			unix.Close(fd)
			l.fds[i] = -1
		}
	}
	for _, ns := range l.ns {
		if ns != "" {
			errs = append(errs, delNetns(ns))
		}
	}
	if l.fwd != nil {
		releaseProcs()
	}
	return errors.Join(errs...)
}

// Namespace is the name of the side's network namespace, for "ip netns
// exec" and the like.
func (l *Link) Namespace(s Side) string { return l.ns[s] }

// Addr is the side's address on the link.
func (l *Link) Addr(s Side) netip.Addr { return addrs[s] }

// Command returns a command that runs name with args inside the side's
// namespace (through "ip netns exec"), with FERRY_WAN_CLIENT_ADDR and
// FERRY_WAN_SERVER_ADDR in its environment.
func (l *Link) Command(ctx context.Context, s Side, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", l.ns[s], name}, args...)...)
	cmd.Env = append(os.Environ(),
		"FERRY_WAN_CLIENT_ADDR="+addrs[Client].String(),
		"FERRY_WAN_SERVER_ADDR="+addrs[Server].String())
	return cmd
}

// Fidelity reports what the link has done so far; after Close, the final
// report.
func (l *Link) Fidelity() Fidelity {
	if l.closed.Load() {
		return l.final
	}
	return l.fidelity()
}

func (l *Link) fidelity() Fidelity {
	f := Fidelity{IdleRTT: l.idleRTT, CPU: l.fwd.cpu(), Wall: time.Since(l.started), Compensation: l.compensation}
	f.RealTime = l.fwd.realtime.Load() == 4
	var hs []*histogram
	for i, d := range l.fwd.dirs {
		f.Packets[i] = d.packets.Load()
		f.Bytes[i] = d.bytes.Load()
		f.LossDrops[i] = d.lossDrops.Load()
		f.QueueDrops += d.queueDrops.Load()
		f.WriteErrors += d.writeErrors.Load()
		if n := f.Packets[i] + f.LossDrops[i]; n > 0 && d.lossy {
			f.LossMeasured[i] = float64(f.LossDrops[i]) / float64(n)
		}
		hs = append(hs, &d.hist)
	}
	qs, m := percentiles(hs, 0.5, 0.99)
	f.DelayErrP50, f.DelayErrP99, f.DelayErrMax = qs[0], qs[1], m
	for _, s := range []Side{Client, Server} {
		n, err := tunTxDrops(context.Background(), l.ns[s])
		if err == nil {
			f.QueueDrops += n
		}
	}
	return f
}

// Close stops the forwarder, removes the devices and namespaces, and
// returns the final report. Only the first call does anything; later ones
// return the same report and error.
func (l *Link) Close() (Fidelity, error) {
	l.closeOnce.Do(func() {
		l.stopMu.Lock()
		stop := l.stop
		l.stopMu.Unlock()
		if stop != nil {
			stop()
		}
		// TUN drops can only be read while the devices exist, and the
		// counters only settle once the forwarder stops: stop it first.
		stopErr := l.fwd.stop()
		l.final = l.fidelity()
		l.closeErr = errors.Join(stopErr, l.teardown())
		l.closed.Store(true)
	})
	return l.final, l.closeErr
}

// tunTxDrops reads how many packets the namespace's TUN dropped because
// the forwarder did not read them in time (its transmit drops).
func tunTxDrops(ctx context.Context, ns string) (uint64, error) {
	var drops uint64
	err := inNetns(ctx, ns, func() error {
		b, err := os.ReadFile("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			name, stats, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(name) != tunName {
				continue
			}
			f := strings.Fields(stats)
			if len(f) < 12 {
				return errors.New("wan: short /proc/net/dev line")
			}
			drops, err = strconv.ParseUint(f[11], 10, 64)
			return err
		}
		return errors.New("wan: no " + tunName + " in /proc/net/dev")
	})
	return drops, err
}

// The forwarder's four locked threads need Ps of their own besides the
// rest of the program: with GOMAXPROCS 2 they starve each other for
// milliseconds. While links run, GOMAXPROCS is at least minProcs.
const minProcs = 8

var procs struct {
	sync.Mutex
	links, saved int
}

func useProcs() {
	procs.Lock()
	defer procs.Unlock()
	if procs.links == 0 {
		procs.saved = 0
		if n := runtime.GOMAXPROCS(0); n < minProcs {
			procs.saved = runtime.GOMAXPROCS(minProcs)
		}
	}
	procs.links++
}

func releaseProcs() {
	procs.Lock()
	defer procs.Unlock()
	procs.links--
	if procs.links == 0 && procs.saved > 0 && runtime.GOMAXPROCS(0) == minProcs {
		runtime.GOMAXPROCS(procs.saved)
	}
}
