package wan

// A Lab is a small local area network of hosts for striping benchmarks
// and tests: every host is a network namespace with one veth (eth0,
// 10.78.0.N/24) into a "switch" namespace that bridges them all. An htb
// qdisc on both ends of each host's veth limits what the host sends and
// what it receives, as a host's own link would; the bridge itself is not
// limited. Nothing reaches the machine's own namespace.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// LabConfig describes a Lab.
type LabConfig struct {
	// Hosts is the number of hosts, 1 to 200.
	Hosts int
	// Rate limits each host's link, each way, in bit/s; 0 is unlimited.
	Rate int64
	// Name prefixes the namespaces' names; "" means "ferrylab". Namespaces
	// of this prefix left by a process that is gone are removed first.
	Name string
	// Sysctls are set in every host namespace, e.g. net.ipv4.tcp_rmem.
	Sysctls map[string]string
}

// Lab is a running set of hosts on one switch.
type Lab struct {
	cfg   LabConfig
	sw    string
	hosts []string

	mu     sync.Mutex
	closed bool
	stop   func() bool
}

var labSeq atomic.Int64

// labName matches our lab namespaces: PREFIX-PID-SEQ-sw or -hN.
var labName = regexp.MustCompile(`^(.+)-([0-9]+)-([0-9]+)-(sw|h[0-9]+)$`)

// StartLab creates the hosts and the switch. On error it removes what it
// made; otherwise everything lives until Close or until ctx is done. It
// needs root and iproute2.
func StartLab(ctx context.Context, cfg LabConfig) (l *Lab, err error) {
	if cfg.Hosts < 1 || cfg.Hosts > 200 {
		return nil, fmt.Errorf("wan: a lab has 1 to 200 hosts, not %d", cfg.Hosts)
	}
	if cfg.Rate < 0 {
		return nil, errors.New("wan: negative rate")
	}
	if cfg.Name == "" {
		cfg.Name = "ferrylab"
	}
	if strings.ContainsAny(cfg.Name, "/ \t") {
		return nil, fmt.Errorf("wan: bad lab name %q", cfg.Name)
	}
	if err := removeStaleMatching(cfg.Name, labName); err != nil {
		return nil, fmt.Errorf("wan: removing stale namespaces: %w", err)
	}
	base := fmt.Sprintf("%s-%d-%d", cfg.Name, os.Getpid(), labSeq.Add(1))
	l = &Lab{cfg: cfg}
	// "return nil, err" has set l to nil by the time this runs.
	lab := l
	defer func() {
		if err != nil {
			lab.teardown()
			l = nil
		}
	}()
	if err := addNetns(ctx, base+"-sw"); err != nil {
		return nil, err
	}
	l.sw = base + "-sw"
	sw := []string{"link set dev lo up", "link add br0 type bridge", "link set dev br0 up"}
	for i := range cfg.Hosts {
		name := fmt.Sprintf("%s-h%d", base, i)
		if err := addNetns(ctx, name); err != nil {
			return nil, err
		}
		l.hosts = append(l.hosts, name)
		sw = append(sw,
			fmt.Sprintf("link add h%d type veth peer name eth0 netns %s", i, name),
			fmt.Sprintf("link set dev h%d master br0", i),
			fmt.Sprintf("link set dev h%d up", i))
	}
	if err := run(ctx, strings.Join(sw, "\n")+"\n", "ip", "-n", l.sw, "-batch", "-"); err != nil {
		return nil, err
	}
	for i, ns := range l.hosts {
		if err := inNetns(ctx, ns, func() error {
			for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
				if err := setSysctl(k, "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
			for k, v := range cfg.Sysctls {
				if err := setSysctl(k, v); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
		script := fmt.Sprintf("link set dev lo up\naddr add %s/24 dev eth0\nlink set dev eth0 up\n", l.Addr(i))
		if err := run(ctx, script, "ip", "-n", ns, "-batch", "-"); err != nil {
			return nil, err
		}
		if cfg.Rate > 0 {
			if err := limit(ctx, ns, "eth0", cfg.Rate); err != nil {
				return nil, err
			}
			if err := limit(ctx, l.sw, fmt.Sprintf("h%d", i), cfg.Rate); err != nil {
				return nil, err
			}
		}
	}
	// Under mu: the watch may fire at once, and its Close reads stop.
	l.mu.Lock()
	l.stop = context.AfterFunc(ctx, func() { l.Close() })
	l.mu.Unlock()
	return l, nil
}

// limit puts an htb rate limit on dev's egress in namespace ns.
func limit(ctx context.Context, ns, dev string, rate int64) error {
	kbit := max(rate/1000, 8)
	script := fmt.Sprintf("qdisc add dev %[1]s root handle 1: htb default 1\n"+
		"class add dev %[1]s parent 1: classid 1:1 htb rate %[2]dkbit\n", dev, kbit)
	return run(ctx, script, "tc", "-n", ns, "-batch", "-")
}

// Hosts is the number of hosts.
func (l *Lab) Hosts() int { return len(l.hosts) }

// Addr is host i's address, 10.78.0.(i+1).
func (l *Lab) Addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 78, 0, byte(i + 1)}) }

// Namespace is host i's network namespace, for "ip netns exec".
func (l *Lab) Namespace(i int) string { return l.hosts[i] }

// Namespaces are the lab's namespaces, the switch's last.
func (l *Lab) Namespaces() []string { return append(append([]string(nil), l.hosts...), l.sw) }

// Command returns a command that runs name with args on host i (through
// "ip netns exec").
func (l *Lab) Command(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", l.hosts[i], name}, args...)...)
}

// Do runs f on an OS thread inside host i's namespace: sockets f opens
// live there.
func (l *Lab) Do(i int, f func() error) error { return inNetns(context.Background(), l.hosts[i], f) }

// Close deletes the namespaces (which removes their devices). Processes
// still running in them lose their network; stop them first.
func (l *Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.stop != nil {
		l.stop()
	}
	return l.teardown()
}

func (l *Lab) teardown() error {
	var errs []error
	for _, ns := range l.hosts {
		errs = append(errs, delNetns(ns))
	}
	if l.sw != "" {
		errs = append(errs, delNetns(l.sw))
	}
	return errors.Join(errs...)
}
