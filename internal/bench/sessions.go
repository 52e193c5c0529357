package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SessionsConfig configures "ferry bench sessions": many logged-in idle
// control sessions on one server, and NOOP round trips on a few other
// sessions meanwhile.
type SessionsConfig struct {
	// Ferry is the ferry binary whose serve is measured.
	Ferry string
	// Impls are the servers measured, in order: Ferry, GCT.
	Impls []Impl
	// Sessions is how many idle sessions to log in to each server.
	Sessions int
	// GCTMax caps the idle sessions of GCT's server, which forks a process
	// per session; 0 means Sessions.
	GCTMax int
	// MinAvailable stops opening sessions once the machine's MemAvailable
	// falls below it (bytes); 0 means a quarter of MemTotal.
	MinAvailable int64
	// Active is how many sessions send the NOOPs; NOOPs is how many they
	// send in all, one at a time each.
	Active, NOOPs int
	// Concurrency is how many logins are in flight at once.
	Concurrency int
	// Timeout bounds each login and each NOOP round trip.
	Timeout time.Duration
	// Dir is where the scratch directory is made; "" means os.TempDir.
	Dir string
	// Progress receives progress lines; nil discards.
	Progress io.Writer
}

// SessionsResult is what one server did.
type SessionsResult struct {
	Impl    Impl
	Target  int    // idle sessions asked for
	Idle    int    // idle sessions logged in
	Stopped string // why fewer than Target were opened; "" if none stopped it
	Procs   int    // server processes at the end (GCT: one per session)

	LoginErrors int           // connections or logins that failed
	LoginWall   time.Duration // time to log in all Idle sessions
	LoginP50    time.Duration // one login (connect to 230), median
	LoginP99    time.Duration

	// Server memory before the idle sessions (after the active ones logged
	// in) and with them. RSS sums VmRSS over the server's processes, PSS
	// sums Pss of smaps_rollup (shared pages split between processes); Go
	// is the heap in use plus goroutine stacks (Ferry only, -1 unknown).
	RSS0, RSS1 int64
	PSS0, PSS1 int64
	Go0, Go1   int64

	NOOPs       int // NOOP round trips timed
	NOOPErrors  int
	NOOPP50     time.Duration
	NOOPP99     time.Duration
	NOOPMax     time.Duration
	IdleErrors  int // idle sessions that did not answer a last NOOP
	StolenShare float64
}

// PerSession returns the memory per idle session of a before/after pair,
// NaN when unknown.
func (r SessionsResult) PerSession(before, after int64) float64 {
	if r.Idle == 0 || before < 0 || after < 0 {
		return math.NaN()
	}
	return float64(after-before) / float64(r.Idle)
}

// Errors is every failure counted.
func (r SessionsResult) Errors() int { return r.LoginErrors + r.NOOPErrors + r.IdleErrors }

func (c *SessionsConfig) fill() error {
	if c.Sessions < 1 || c.Active < 1 || c.NOOPs < 1 || c.Concurrency < 1 || c.Timeout <= 0 {
		return errors.New("bench: sessions, active sessions, NOOPs, concurrency and timeout must be positive")
	}
	if len(c.Impls) == 0 {
		c.Impls = []Impl{Ferry, GCT}
	}
	for _, i := range c.Impls {
		if i != Ferry && i != GCT {
			return fmt.Errorf("bench: sessions: unknown implementation %q (ferry, gct)", i)
		}
	}
	if c.GCTMax <= 0 {
		c.GCTMax = c.Sessions
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.MinAvailable == 0 {
		total, _, err := memInfo()
		if err != nil {
			return err
		}
		c.MinAvailable = total / 4
	}
	return nil
}

// RunSessions measures each server of cfg.Impls in turn; it returns the
// results of the servers measured before an error.
func RunSessions(ctx context.Context, cfg SessionsConfig) ([]SessionsResult, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	// Every session is a descriptor here and in the server, which
	// inherits the limit.
	if err := raiseNoFile(cfg.Sessions + cfg.Active + 256); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(cfg.Dir, "ferry-bench-sessions-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(scratch)
	// GCT's sessions run as nobody and must reach their home directory.
	if err := os.Chmod(scratch, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var out []SessionsResult
	for _, impl := range cfg.Impls {
		r, err := runSessions(ctx, cfg, impl, scratch)
		if err != nil {
			return out, fmt.Errorf("bench: sessions %s: %w", impl, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// raiseNoFile raises this process's RLIMIT_NOFILE to its hard limit and
// fails if that is below need.
func raiseNoFile(need int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return fmt.Errorf("bench: raising RLIMIT_NOFILE: %w", err)
		}
	}
	if lim.Cur < uint64(need) {
		return fmt.Errorf("bench: RLIMIT_NOFILE is %d, want at least %d (ulimit -n)", lim.Cur, need)
	}
	return nil
}

func runSessions(ctx context.Context, cfg SessionsConfig, impl Impl, scratch string) (SessionsResult, error) {
	res := SessionsResult{Impl: impl, Target: cfg.Sessions, Go0: -1, Go1: -1}
	if impl == GCT {
		res.Target = min(cfg.Sessions, cfg.GCTMax)
	}
	root := filepath.Join(scratch, string(impl))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return res, err
	}
	var path string
	var args []string
	metricsPort := 0
	switch impl {
	case Ferry:
		var err error
		if metricsPort, err = freePort(); err != nil {
			return res, err
		}
		path = cfg.Ferry
		args = []string{"serve", "-listen", "127.0.0.1:0", "-anonymous", "-storage", "null",
			"-log-level", "warn", "-shutdown-grace", "2s", "-idle-timeout", "1h",
			"-max-sessions", "0", "-max-sessions-per-source", "0",
			"-metrics", net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))}
	case GCT:
		var err error
		if path, err = program("globus-gridftp-server", gctServer); err != nil {
			return res, err
		}
		args = []string{"-aa", "-anonymous-user", "nobody", "-p", "0",
			"-control-interface", "127.0.0.1", "-data-interface", "127.0.0.1",
			"-home-dir", root, "-disable-usage-stats", "-control-idle-timeout", "3600"}
	}
	fmt.Fprintf(cfg.Progress, "bench: starting %s\n", commandLine(path, args))
	srv, err := startServer(ctx, string(impl), root, nil, path, args...)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.port))
	d := &dialer{addr: addr, timeout: cfg.Timeout}

	// The active sessions first, so that the memory before the idle ones
	// includes everything but them.
	var active []*ftpConn
	defer func() {
		for _, c := range active {
			c.conn.Close()
		}
	}()
	for range cfg.Active {
		c, _, err := d.login(ctx, true)
		if err != nil {
			return res, fmt.Errorf("active session: %w%s", err, srv.log.suffix())
		}
		active = append(active, c)
	}
	// One warm-up round trip each.
	for _, c := range active {
		if _, err := c.noop(cfg.Timeout); err != nil {
			return res, fmt.Errorf("warm-up NOOP: %w", err)
		}
	}
	settle()
	m0, err := measureServer(srv, impl, metricsPort)
	if err != nil {
		return res, err
	}
	res.RSS0, res.PSS0, res.Go0 = m0.rss, m0.pss, m0.goMem

	cpu0, cpuErr := readMachineCPU()
	idle, err := openIdle(ctx, cfg, d, srv, &res)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	if err != nil {
		return res, err
	}
	res.Idle = len(idle)
	settle()
	m1, err := measureServer(srv, impl, metricsPort)
	if err != nil {
		return res, err
	}
	res.RSS1, res.PSS1, res.Go1, res.Procs = m1.rss, m1.pss, m1.goMem, m1.procs

	fmt.Fprintf(cfg.Progress, "bench: %s: %d idle sessions; %d NOOPs on %d others\n", impl, len(idle), cfg.NOOPs, cfg.Active)
	lat, errs := noopLoad(active, cfg.NOOPs, cfg.Timeout)
	res.NOOPs, res.NOOPErrors = len(lat)+errs, errs
	if len(lat) > 0 {
		slices.Sort(lat)
		res.NOOPP50, res.NOOPP99, res.NOOPMax = quantile(lat, 0.5), quantile(lat, 0.99), lat[len(lat)-1]
	}
	// The idle sessions must still be there: one NOOP each.
	res.IdleErrors = checkIdle(ctx, idle, cfg)
	if cpu1, err := readMachineCPU(); err == nil && cpuErr == nil {
		res.StolenShare = shareSince(cpu0, cpu1, onlineCPUs()).Steal
	}
	if err := srv.alive(); err != nil {
		return res, err
	}
	return res, nil
}

// settle gives a server's memory a moment to show what it holds (sessions
// whose 230 was sent are still returning to their reads).
func settle() { time.Sleep(time.Second) }

// openIdle logs in res.Target idle sessions, cfg.Concurrency at a time,
// until done or until something stops it: the machine's free memory, a run
// of failures, or the server's death. It records login times and errors in
// res, and why it stopped in res.Stopped.
func openIdle(ctx context.Context, cfg SessionsConfig, d *dialer, srv *server, res *SessionsResult) ([]net.Conn, error) {
	var (
		mu       sync.Mutex
		conns    []net.Conn
		times    []time.Duration
		failRun  int
		stopped  string
		firstErr error
	)
	stop := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stopped != ""
	}
	next := make(chan struct{})
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				c, took, err := d.login(ctx, false)
				mu.Lock()
				if err != nil {
					res.LoginErrors++
					if firstErr == nil {
						firstErr = err
					}
					if failRun++; failRun >= 16 && stopped == "" {
						stopped = fmt.Sprintf("16 failed logins in a row (first: %v)", firstErr)
					}
				} else {
					failRun = 0
					conns = append(conns, c.conn)
					times = append(times, took)
				}
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	minAvail := cfg.MinAvailable
	lastCheck := time.Time{}
	for i := 0; i < res.Target && !stop(); i++ {
		if ctx.Err() != nil {
			break
		}
		if time.Since(lastCheck) > 200*time.Millisecond {
			lastCheck = time.Now()
			if _, avail, err := memInfo(); err == nil && avail < minAvail {
				mu.Lock()
				stopped = fmt.Sprintf("MemAvailable %d MiB below the floor of %d MiB", avail>>20, minAvail>>20)
				mu.Unlock()
				break
			}
			if err := srv.alive(); err != nil {
				mu.Lock()
				stopped = "server exited"
				mu.Unlock()
				break
			}
		}
		if i > 0 && i%1000 == 0 {
			fmt.Fprintf(cfg.Progress, "bench: %s: %d sessions\n", res.Impl, i)
		}
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	res.LoginWall = time.Since(start)
	res.Stopped = stopped
	if len(times) > 0 {
		slices.Sort(times)
		res.LoginP50, res.LoginP99 = quantile(times, 0.5), quantile(times, 0.99)
	}
	if err := ctx.Err(); err != nil {
		return conns, context.Cause(ctx)
	}
	return conns, nil
}

// noopLoad sends n NOOPs over the active sessions, each session one at a
// time, and returns the round-trip times and the number of failures.
func noopLoad(active []*ftpConn, n int, timeout time.Duration) ([]time.Duration, int) {
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	var wg sync.WaitGroup
	for i, c := range active {
		share := n / len(active)
		if i < n%len(active) {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range share {
				took, err := c.noop(timeout)
				mu.Lock()
				if err != nil {
					errs++
				} else {
					lat = append(lat, took)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return lat, errs
}

// checkIdle sends one NOOP on each idle session and counts those that do
// not answer 200.
func checkIdle(ctx context.Context, idle []net.Conn, cfg SessionsConfig) int {
	var mu sync.Mutex
	bad := 0
	next := make(chan net.Conn)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				fc := &ftpConn{conn: c, r: textproto.NewReader(bufio.NewReaderSize(c, 256))}
				if _, err := fc.noop(cfg.Timeout); err != nil {
					mu.Lock()
					bad++
					mu.Unlock()
				}
			}
		}()
	}
	for _, c := range idle {
		if ctx.Err() != nil {
			break
		}
		next <- c
	}
	close(next)
	wg.Wait()
	return bad
}

// quantile returns the q quantile of sorted d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(d))+0.999999) - 1
	return d[max(0, min(i, len(d)-1))]
}

// dialer makes logged-in control sessions.
type dialer struct {
	addr    string
	timeout time.Duration
}

// ftpConn is a control connection and its reply reader.
type ftpConn struct {
	conn net.Conn
	r    *textproto.Reader
}

// login connects and logs in anonymously; it returns the session and how
// long that took. keep keeps the reply reader (for later commands).
func (d *dialer) login(ctx context.Context, keep bool) (*ftpConn, time.Duration, error) {
	start := time.Now()
	nd := net.Dialer{Timeout: d.timeout}
	conn, err := nd.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, 0, err
	}
	conn.SetDeadline(start.Add(d.timeout))
	c := &ftpConn{conn: conn, r: textproto.NewReader(bufio.NewReaderSize(conn, 512))}
	fail := func(err error) (*ftpConn, time.Duration, error) {
		conn.Close()
		return nil, 0, err
	}
	if err := c.expect(220); err != nil {
		return fail(err)
	}
	if err := c.cmd("USER anonymous", 331); err != nil {
		return fail(err)
	}
	if err := c.cmd("PASS bench@example.org", 230); err != nil {
		return fail(err)
	}
	took := time.Since(start)
	conn.SetDeadline(time.Time{})
	if !keep {
		c.r = nil
	}
	return c, took, nil
}

// expect reads one reply and wants code.
func (c *ftpConn) expect(code int) error {
	got, msg, err := c.r.ReadResponse(0)
	if err != nil && got == 0 {
		return err
	}
	if got != code {
		return fmt.Errorf("got %d %q, want %d", got, msg, code)
	}
	return nil
}

// cmd sends line and wants the reply code.
func (c *ftpConn) cmd(line string, code int) error {
	if _, err := io.WriteString(c.conn, line+"\r\n"); err != nil {
		return err
	}
	return c.expect(code)
}

// noop times one NOOP round trip.
func (c *ftpConn) noop(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	c.conn.SetDeadline(start.Add(timeout))
	defer c.conn.SetDeadline(time.Time{})
	if err := c.cmd("NOOP", 200); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// serverMem is a server's memory at one moment.
type serverMem struct {
	rss, pss, goMem int64
	procs           int
}

// measureServer sums the memory of the server and (GCT) its session
// processes; for Ferry it also reads the Go heap and stacks in use from
// its metrics.
func measureServer(srv *server, impl Impl, metricsPort int) (serverMem, error) {
	m := serverMem{goMem: -1}
	pids := []int{srv.pid}
	if impl == GCT {
		kids, err := children(srv.pid)
		if err != nil {
			return m, err
		}
		pids = append(pids, kids...)
	}
	for _, pid := range pids {
		pm, err := readMem(pid)
		if err != nil {
			continue // a session process that just ended
		}
		pss, err := readPSS(pid)
		if err != nil {
			continue
		}
		m.rss += pm.rss
		m.pss += pss
		m.procs++
	}
	if impl == Ferry && metricsPort > 0 {
		if g, err := goMemory(metricsPort); err == nil {
			m.goMem = g
		}
	}
	return m, nil
}

// readPSS returns the Pss of /proc/PID/smaps_rollup in bytes.
func readPSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	return kBField(string(b), "Pss")
}

// kBField returns the value of a "Key:   123 kB" line of text in bytes.
func kBField(text, key string) (int64, error) {
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		num, unit, _ := strings.Cut(strings.TrimSpace(v), " ")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || unit != "kB" {
			return 0, fmt.Errorf("bench: bad %s line %q", key, strings.TrimSpace(line))
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("bench: no %s line", key)
}

// memInfo returns the machine's MemTotal and MemAvailable in bytes.
func memInfo() (total, avail int64, err error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	if total, err = kBField(string(b), "MemTotal"); err != nil {
		return 0, 0, err
	}
	if avail, err = kBField(string(b), "MemAvailable"); err != nil {
		return 0, 0, err
	}
	return total, avail, nil
}

// goMemory reads go_memstats_heap_inuse_bytes plus
// go_memstats_stack_inuse_bytes from a ferry serve's metrics.
func goMemory(port int) (int64, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	cl := http.Client{Timeout: 10 * time.Second, Transport: tr}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return goMemoryOf(string(b))
}

// goMemoryOf sums the heap and stack metrics of a Prometheus text page.
func goMemoryOf(page string) (int64, error) {
	var sum int64
	found := 0
	for line := range strings.Lines(page) {
		name, val, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || (name != "go_memstats_heap_inuse_bytes" && name != "go_memstats_stack_inuse_bytes") {
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: metrics: bad %s %q", name, val)
		}
		sum += int64(f)
		found++
	}
	if found != 2 {
		return 0, errors.New("bench: metrics: no go_memstats_heap_inuse_bytes and go_memstats_stack_inuse_bytes")
	}
	return sum, nil
}

// WriteSessionsTable writes the results as a Markdown table.
func WriteSessionsTable(w io.Writer, cfg SessionsConfig, results []SessionsResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Idle control sessions on one server (127.0.0.1, %s): each logged in anonymously, then %d NOOPs over %d other sessions.\n\n",
		host(), cfg.NOOPs, cfg.Active)
	b.WriteString("| server | idle sessions | procs | RSS KiB/session | PSS KiB/session | Go heap+stack KiB/session | login p50 ms | login p99 ms | logins/s | NOOP p50 ms | NOOP p99 ms | NOOP max ms | errors | stolen CPU |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		rate := 0.0
		if r.LoginWall > 0 {
			rate = float64(r.Idle) / r.LoginWall.Seconds()
		}
		idle := itoa(r.Idle)
		if r.Idle < r.Target {
			idle += " of " + itoa(r.Target)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %.2f | %.2f | %.0f | %.3f | %.3f | %.3f | %d | %.1f%% |\n",
			r.Impl.label(), idle, r.Procs,
			kib(r.PerSession(r.RSS0, r.RSS1)), kib(r.PerSession(r.PSS0, r.PSS1)), kib(r.PerSession(r.Go0, r.Go1)),
			ms(r.LoginP50), ms(r.LoginP99), rate, ms(r.NOOPP50), ms(r.NOOPP99), ms(r.NOOPMax), r.Errors(), 100*r.StolenShare)
	}
	for _, r := range results {
		if r.Stopped != "" {
			fmt.Fprintf(&b, "\n%s stopped at %d sessions: %s.\n", r.Impl.label(), r.Idle, r.Stopped)
		}
		if r.Errors() > 0 {
			fmt.Fprintf(&b, "\n%s errors: %d logins, %d NOOPs, %d idle sessions that did not answer a last NOOP.\n", r.Impl.label(), r.LoginErrors, r.NOOPErrors, r.IdleErrors)
		}
	}
	b.WriteString("\nMemory per session is (after the idle logins − before) / idle sessions, summed over the server's processes; PSS splits shared pages among GCT's forked session processes.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// kib formats bytes as KiB with one decimal, or "-" when unknown (NaN).
func kib(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v/1024)
}
