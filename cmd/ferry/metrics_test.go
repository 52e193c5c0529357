package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ftpclient "github.com/ferrygrid/ferry/client"
)

// startServe runs ferry serve in this process with args (after -listen
// 127.0.0.1:0) and returns the lines it printed up to "Server listening
// at", and that address. The server stops at the end of the test.
func startServe(t *testing.T, args ...string) (lines []string, addr string) {
	t.Helper()
	return startCommand(t, "Server listening at ", append([]string{"serve", "-listen", "127.0.0.1:0"}, args...)...)
}

// startCommand runs ferry with args in this process and returns the lines
// it printed up to the one starting with ready, and the rest of that line.
// The command is stopped at the end of the test.
func startCommand(t *testing.T, ready string, args ...string) (lines []string, rest string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, &env{stdin: strings.NewReader(""), stdout: pw, stderr: io.Discard}, args)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("%s exited %d", args[0], code)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop", args[0])
		}
	})
	br := bufio.NewReader(pr)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%s's output: %q, %v", args[0], lines, err)
		}
		lines = append(lines, strings.TrimSpace(line))
		if a, found := strings.CutPrefix(line, ready); found {
			go io.Copy(io.Discard, br)
			return lines, strings.TrimSpace(a)
		}
	}
}

// metricsAddr is the HOST:PORT of the "Metrics at" line among lines.
func metricsAddr(t *testing.T, lines []string) string {
	t.Helper()
	for _, l := range lines {
		if u, found := strings.CutPrefix(l, "Metrics at "); found {
			parsed, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			return parsed.Host
		}
	}
	t.Fatalf("no metrics address in %q", lines)
	return ""
}

// upload stores size bytes as name on the server at addr, anonymously.
func upload(t *testing.T, addr, name string, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ftpclient.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ctx, "anonymous", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, name, bytes.NewReader(make([]byte, size)), nil); err != nil {
		t.Fatal(err)
	}
	c.Quit(ctx)
}

// scrape returns the metrics text at http://addr/metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestMetricsStriped: a striped server counts its movers up and down,
// and ferry mover -metrics counts the transfers it moves.
func TestMetricsStriped(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a secret of the frontend and its movers"), 0o600); err != nil {
		t.Fatal(err)
	}
	mlines, moverAddr := startCommand(t, "Mover listening at ", "mover", "-listen", "127.0.0.1:0", "-root", dir,
		"-secret", secret, "-metrics", "127.0.0.1:0")
	lines, addr := startServe(t, "-root", dir, "-anonymous-write", "-movers", moverAddr, "-mover-secret", secret,
		"-run-as-mapped-user=false", "-metrics", "127.0.0.1:0")
	serveMetrics, moverMetrics := metricsAddr(t, lines), metricsAddr(t, mlines)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(scrape(t, serveMetrics), `ferry_movers{state="up"} 1`); {
		if time.Now().After(deadline) {
			t.Fatalf("the mover is not up:\n%s", scrape(t, serveMetrics))
		}
		time.Sleep(50 * time.Millisecond)
	}
	upload(t, addr, "/striped", 54321)
	body := scrape(t, moverMetrics)
	for _, want := range []string{
		`ferry_transfer_bytes_total{direction="upload",mode="stream"} 54321`,
		`ferry_transfers_total{direction="upload",mode="stream",outcome="ok"} 1`,
		`ferry_data_connections_total{direction="upload",mode="stream"} 1`,
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in the mover's metrics", want)
		}
	}
	if body := scrape(t, serveMetrics); !strings.Contains(body, `ferry_transfer_bytes_total{direction="upload",mode="stream"} 54321`) {
		t.Errorf("the frontend did not count the upload:\n%s", body)
	}
}

// TestMetricsEndpoint: ferry serve -metrics serves the server's metrics,
// with the Go and process collectors, and counts an upload.
func TestMetricsEndpoint(t *testing.T) {
	lines, addr := startServe(t, "-storage", "memory", "-anonymous-write", "-metrics", "127.0.0.1:0")
	maddr := metricsAddr(t, lines)
	upload(t, addr, "/f", 4321)
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`ferry_transfer_bytes_total{direction="upload",mode="stream"} 4321`,
		`ferry_transfers_total{direction="upload",mode="stream",outcome="ok"} 1`,
		`ferry_logins_total{auth="anonymous"} 1`,
		`ferry_replies_total{code="226"} 1`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("no %q in /metrics", want)
		}
	}
}

// TestPrometheusScrapesServe starts the real Prometheus server (scripts/
// deps.sh installs it) with a config that scrapes ferry serve -metrics
// every second, makes an upload, and asks Prometheus's HTTP API until the
// bytes counter shows it.
func TestPrometheusScrapesServe(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("the prometheus server is not installed: run scripts/deps.sh (make deps), which installs the Debian package prometheus")
	}
	lines, addr := startServe(t, "-storage", "memory", "-anonymous-write", "-metrics", "127.0.0.1:0")
	target := metricsAddr(t, lines)
	prom := startPrometheus(t, bin, target)

	const size = 1234567
	upload(t, addr, "/scraped", size)
	query := `sum(ferry_transfer_bytes_total{direction="upload"})`
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for {
		v, err := promQuery(prom, query)
		if err == nil && v == strconv.Itoa(size) {
			break
		}
		last = fmt.Sprintf("value %q, err %v", v, err)
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus never saw the upload's %d bytes: %s", size, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if v, err := promQuery(prom, `ferry_transfers_total{direction="upload",mode="stream",outcome="ok"}`); err != nil || v != "1" {
		t.Errorf("transfers: %q, %v", v, err)
	}
	checkDashboard(t, prom)
}

// checkDashboard has Prometheus evaluate every query of the Grafana
// dashboard (docs/grafana-ferry.json), its variables replaced: each must
// be valid PromQL over metrics that exist.
func checkDashboard(t *testing.T, prom string) {
	b, err := os.ReadFile("../../docs/grafana-ferry.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana-ferry.json: %v", err)
	}
	vars := strings.NewReplacer("$__rate_interval", "1m", "$job", ".*", "$instance", ".*")
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			n++
			q := vars.Replace(tg.Expr)
			if _, err := promQuery(prom, q); err != nil && !strings.Contains(err.Error(), " samples") {
				t.Errorf("panel %q: %v", p.Title, err)
			}
			for _, name := range metricNames(q) {
				if v, err := promQuery(prom, "count("+name+")"); err != nil {
					t.Errorf("panel %q: metric %s: %q, %v", p.Title, name, v, err)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d queries in the dashboard", n)
	}
}

// metricNames are the ferry_, go_ and process_ metric names in a query
// that every server has: not those of striped servers (ferry_movers) nor
// of servers running as root (ferry_privsep_).
func metricNames(q string) []string {
	var names []string
	for _, f := range strings.FieldsFunc(q, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		switch {
		case strings.HasPrefix(f, "ferry_movers"), strings.HasPrefix(f, "ferry_privsep_"):
		case strings.HasPrefix(f, "ferry_"), strings.HasPrefix(f, "go_"), strings.HasPrefix(f, "process_"):
			names = append(names, f)
		}
	}
	return names
}

// startPrometheus runs Prometheus with temporary storage on a free port,
// scraping target (HOST:PORT) every second, and returns its address. It
// is stopped (SIGTERM, then killed) at the end of the test.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	err := os.WriteFile(config, fmt.Appendf(nil, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ferry
    static_configs:
      - targets: ['%s']
`, target), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus:\n%s", log.String())
		}
	})
	// Ready once its API answers.
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited: %v\n%s", err, log.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready in 60s\n%s", log.String())
		}
	}
}

// promQuery evaluates an instant query that yields one sample and returns
// its value as Prometheus prints it.
func promQuery(addr, query string) (string, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value []any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	if r.Status != "success" {
		return "", fmt.Errorf("query %s: %s", query, r.Error)
	}
	if len(r.Data.Result) != 1 || len(r.Data.Result[0].Value) != 2 {
		return "", fmt.Errorf("query %s: %d samples", query, len(r.Data.Result))
	}
	v, _ := r.Data.Result[0].Value[1].(string)
	return v, nil
}

// TestMetricsConnectionCap: many idle connections to the metrics endpoint
// hold at most maxMetricsConns of the server's descriptors (the rest wait
// in the listen queue), and the FTP server still accepts and logs in.
func TestMetricsConnectionCap(t *testing.T) {
	bin := ferryBinary(t)
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-storage", "memory", "-anonymous", "-metrics", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var metricsHost, addr string
	br := bufio.NewReader(stdout)
	for addr == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("ferry serve's output: %v", err)
		}
		if u, found := strings.CutPrefix(strings.TrimSpace(line), "Metrics at "); found {
			p, _ := url.Parse(u)
			metricsHost = p.Host
		}
		if a, found := strings.CutPrefix(line, "Server listening at "); found {
			addr = strings.TrimSpace(a)
		}
	}
	go io.Copy(io.Discard, br)
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		return len(ents)
	}
	scrape(t, metricsHost)
	before := fds()
	const n = 100
	for range n {
		c, err := net.Dial("tcp", metricsHost)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(500 * time.Millisecond) // let the server accept what it will
	after := fds()
	t.Logf("server descriptors: %d before, %d with %d idle metrics connections", before, after, n)
	if after-before > maxMetricsConns+4 {
		t.Fatalf("%d idle metrics connections took %d descriptors of the server, want at most about %d", n, after-before, maxMetricsConns)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := ftpclient.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ctx, "anonymous", "x"); err != nil {
		t.Fatalf("FTP login with the metrics endpoint full: %v", err)
	}
}
