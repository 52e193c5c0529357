package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/internal/wan"
)

func init() {
	register(&command{
		name:    "wan",
		summary: "run commands across an emulated wide-area link (delay, loss, rate)",
		usage:   "[flags] -server CMD -client CMD | -check",
		run:     runWAN,
	})
}

const wanHelp = `
"ferry wan" makes two network namespaces joined by an emulated path: a
fixed one-way delay in each direction, seeded random loss per TCP segment
(by default in the server-to-client direction, the data direction of
downloads) and an htb rate limit counted as Ethernet would (1G tops out at
TCP's 941 Mbit/s). The client side is 10.77.0.1 and the server side
10.77.0.2; commands get them as $FERRY_WAN_CLIENT_ADDR and
$FERRY_WAN_SERVER_ADDR. It needs root and iproute2.

It runs -server (with sh -c) in the server namespace, waits until
-wait-port listens there (or for -wait), runs -client in the client
namespace, then stops the server (SIGTERM, then SIGKILL) and prints the
fidelity report: idle RTT against the setting, loss measured against the
setting, the forwarder's delay error (release minus due time), its own
drops and CPU time, and what it forwarded. It exits non-zero, after
cleaning up, if a command fails. For example:

  ferry wan -delay 25ms -loss 1% -rate 1G -seed 1 \
    -server 'iperf3 -s -1' -wait-port 5201 \
    -client 'iperf3 -c $FERRY_WAN_SERVER_ADDR -R -C cubic -t 20'

-check runs a self-test instead: the idle RTT probes and one TCP stream
for -duration (iperf3 if installed, else a built-in stream) in the lossy
direction.
`

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// wanOptions is what "ferry wan" was asked to do.
type wanOptions struct {
	cfg      wan.Config
	server   string
	client   string
	waitPort int
	wait     time.Duration
	timeout  time.Duration
	check    bool
	duration time.Duration
	cc       string
}

func parseWANFlags(e *env, args []string) (*wanOptions, error) {
	fs := newFlagSet(commands["wan"], e)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), wanHelp) }
	o := &wanOptions{}
	fs.DurationVar(&o.cfg.Delay, "delay", 0, "one-way delay `DURATION` added in each direction")
	loss := fs.String("loss", "0", "drop probability `P`, as a percentage (1%) or a fraction (0.01)")
	lossDir := fs.String("loss-dir", "to-client", "lossy `DIRECTION`: to-client, to-server or both")
	fs.BoolVar(&o.cfg.LossACKs, "loss-acks", false, "also drop in the opposite direction (the ACKs) at the same rate")
	rate := fs.String("rate", "0", "`RATE` limit per direction in bit/s, with an optional K, M, G suffix (decimal); 0 is unlimited")
	fs.BoolVar(&o.cfg.Calibrate, "calibrate", false, "take the forwarder's own measured latency (half the idle RTT excess, at most 0.5 ms) off each direction's delay")
	fs.Int64Var(&o.cfg.Seed, "seed", 1, "`SEED` of the loss pattern")
	var sysctls stringList
	fs.Var(&sysctls, "sysctl", "`KEY=VALUE` per-namespace sysctl set on both sides, e.g. net.ipv4.tcp_rmem='4096 131072 4194304' (repeatable)")
	fs.StringVar(&o.cfg.Name, "name", "", "`PREFIX` of the namespace names (default ferrywan)")
	fs.StringVar(&o.server, "server", "", "`CMD` to run (sh -c) in the server namespace")
	fs.StringVar(&o.client, "client", "", "`CMD` to run (sh -c) in the client namespace")
	fs.IntVar(&o.waitPort, "wait-port", 0, "start the client once a TCP `PORT` listens in the server namespace")
	fs.DurationVar(&o.wait, "wait", 500*time.Millisecond, "without -wait-port: `DURATION` to let the server start")
	fs.DurationVar(&o.timeout, "timeout", 0, "time limit `DURATION` for the client command (0: none)")
	fs.BoolVar(&o.check, "check", false, "self-test: idle RTT and one TCP stream through the link; no commands")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "-check: `DURATION` of the stream")
	fs.StringVar(&o.cc, "cc", "cubic", "-check: TCP congestion control `ALG` of the stream (reno, cubic, bbr)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.cfg.Loss, err = wan.ParseLoss(*loss); err != nil {
		return nil, usagef("-loss: %v", err)
	}
	if o.cfg.LossDir, err = wan.ParseDir(*lossDir); err != nil {
		return nil, usagef("-loss-dir: %v", err)
	}
	if o.cfg.Rate, err = wan.ParseRate(*rate); err != nil {
		return nil, usagef("-rate: %v", err)
	}
	for _, kv := range sysctls {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("-sysctl %q: want KEY=VALUE", kv)
		}
		if o.cfg.Sysctls == nil {
			o.cfg.Sysctls = map[string]string{}
		}
		o.cfg.Sysctls[strings.TrimSpace(k)] = v
	}
	switch {
	case o.cfg.Delay < 0:
		return nil, usagef("-delay must not be negative")
	case o.check && (o.server != "" || o.client != ""):
		return nil, usagef("-check runs no commands: drop -server and -client")
	case !o.check && o.client == "":
		return nil, usagef("give -client CMD (and usually -server CMD), or -check")
	case o.waitPort < 0 || o.waitPort > 65535:
		return nil, usagef("-wait-port %d out of range", o.waitPort)
	case o.check && o.duration <= 0:
		return nil, usagef("-duration must be positive")
	}
	return o, nil
}

func runWAN(ctx context.Context, e *env, args []string) error {
	o, err := parseWANFlags(e, args)
	if err != nil {
		return err
	}
	l, err := wan.Start(ctx, o.cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "ferry wan: link up: client %s (%s), server %s (%s), idle RTT %.3f ms\n",
		l.Addr(wan.Client), l.Namespace(wan.Client), l.Addr(wan.Server), l.Namespace(wan.Server),
		float64(l.Fidelity().IdleRTT)/1e6)
	var runErr error
	if o.check {
		runErr = wanCheck(ctx, e, l, o)
	} else {
		runErr = wanRun(ctx, e, l, o)
	}
	f, closeErr := l.Close()
	fmt.Fprintf(e.stdout, "ferry wan: delay %v each way, loss %g %% (%v%s), rate %s, seed %d\n",
		o.cfg.Delay, 100*o.cfg.Loss, o.cfg.LossDir, map[bool]string{true: " and ACKs"}[o.cfg.LossACKs],
		rateString(o.cfg.Rate), o.cfg.Seed)
	wan.WriteReport(e.stdout, o.cfg, f)
	if runErr == nil && ctx.Err() != nil {
		runErr = context.Cause(ctx)
	}
	return errors.Join(runErr, closeErr)
}

func rateString(r int64) string {
	if r == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%g Mbit/s", float64(r)/1e6)
}

// lockedWriter serialises the writes of two commands' output.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

// wanCommand prepares sh -c script in the side's namespace, in a process
// group of its own so that stopping it stops its children too.
func wanCommand(ctx context.Context, e *env, mu *sync.Mutex, l *wan.Link, s wan.Side, script string) *exec.Cmd {
	cmd := l.Command(ctx, s, "sh", "-c", script)
	cmd.Stdout = lockedWriter{mu, e.stdout}
	cmd.Stderr = lockedWriter{mu, e.stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

func wanRun(ctx context.Context, e *env, l *wan.Link, o *wanOptions) error {
	var mu sync.Mutex
	var server *exec.Cmd
	serverDone := make(chan error, 1)
	if o.server != "" {
		server = wanCommand(ctx, e, &mu, l, wan.Server, o.server)
		if err := server.Start(); err != nil {
			return fmt.Errorf("server command: %w", err)
		}
		go func() { serverDone <- server.Wait() }()
		defer stopServer(server, serverDone)
		ready, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		waited := make(chan error, 1)
		go func() {
			if o.waitPort > 0 {
				waited <- l.WaitListening(ready, wan.Server, o.waitPort)
				return
			}
			select {
			case <-time.After(o.wait):
				waited <- nil
			case <-ready.Done():
				waited <- ready.Err()
			}
		}()
		select {
		case err := <-serverDone:
			serverDone <- err
			return fmt.Errorf("server command ended before the client started: %v", err)
		case err := <-waited:
			if err != nil {
				return err
			}
		}
	}
	cctx := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	client := wanCommand(cctx, e, &mu, l, wan.Client, o.client)
	if err := client.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			fmt.Fprintf(e.stderr, "ferry wan: client command: %v\n", err)
			return exitError{code: ee.ExitCode()}
		}
		return fmt.Errorf("client command: %w", err)
	}
	return nil
}

// stopServer ends the server command's process group: SIGTERM, then
// SIGKILL after two seconds.
func stopServer(cmd *exec.Cmd, done chan error) {
	select {
	case <-done:
		return
	default:
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// wanCheck measures one TCP stream through the link in its lossy
// direction (downloads by default): iperf3 if installed, else a built-in
// stream.
func wanCheck(ctx context.Context, e *env, l *wan.Link, o *wanOptions) error {
	if _, err := exec.LookPath("iperf3"); err == nil {
		return wanCheckIperf(ctx, e, l, o)
	}
	fmt.Fprintf(e.stderr, "ferry wan: no iperf3; using the built-in stream\n")
	return wanCheckStream(ctx, e, l, o)
}

func wanCheckIperf(ctx context.Context, e *env, l *wan.Link, o *wanOptions) error {
	const port = 5201
	srvAddr := l.Addr(wan.Server).String()
	server := l.Command(ctx, wan.Server, "iperf3", "-s", "-1", "-B", srvAddr, "-p", strconv.Itoa(port))
	var srvOut strings.Builder
	server.Stdout, server.Stderr = &srvOut, &srvOut
	if err := server.Start(); err != nil {
		return err
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	ready, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := l.WaitListening(ready, wan.Server, port); err != nil {
		return fmt.Errorf("%w: iperf3 server: %s", err, srvOut.String())
	}
	args := []string{"-c", srvAddr, "-p", strconv.Itoa(port), "-J", "-t", strconv.Itoa(int(max(o.duration.Seconds(), 1))), "-C", o.cc}
	if o.cfg.LossDir != wan.ToServer {
		args = append(args, "-R") // the server sends: a download
	}
	out, err := l.Command(ctx, wan.Client, "iperf3", args...).Output()
	if err != nil {
		return fmt.Errorf("iperf3 client: %w: %s", err, out)
	}
	var res struct {
		End struct {
			SumSent struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				Retransmits   int
			} `json:"sum_sent"`
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("iperf3 output: %w", err)
	}
	if res.Error != "" {
		return fmt.Errorf("iperf3: %s", res.Error)
	}
	fmt.Fprintf(e.stdout, "check: iperf3 %s, 1 stream, %v: %.1f Mbit/s received, %d retransmits\n",
		o.cc, o.duration, res.End.SumReceived.BitsPerSecond/1e6, res.End.SumSent.Retransmits)
	return nil
}

// wanCheckStream sends zeros for o.duration over one TCP connection made
// inside the namespaces and reports the rate the receiver saw.
func wanCheckStream(ctx context.Context, e *env, l *wan.Link, o *wanOptions) error {
	sender, receiver := wan.Server, wan.Client
	if o.cfg.LossDir == wan.ToServer {
		sender, receiver = receiver, sender
	}
	var ln net.Listener
	err := l.Do(receiver, func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(l.Addr(receiver), 0).String())
		return err
	})
	if err != nil {
		return err
	}
	defer ln.Close()
	type result struct {
		n   int64
		d   time.Duration
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		start := time.Now()
		n, err := io.Copy(io.Discard, c)
		got <- result{n, time.Since(start), err}
	}()
	var c net.Conn
	err = l.Do(sender, func() (err error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		c, err = d.DialContext(ctx, "tcp", ln.Addr().String())
		return err
	})
	if err != nil {
		return err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, o.cc) })
		}
	}
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(o.duration)
	c.SetWriteDeadline(deadline)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := c.Write(buf); err != nil {
			break
		}
	}
	c.Close()
	r := <-got
	if r.err != nil {
		return r.err
	}
	fmt.Fprintf(e.stdout, "check: built-in stream %s, %v: %.1f Mbit/s received\n", o.cc, o.duration, float64(r.n)*8/r.d.Seconds()/1e6)
	return nil
}
