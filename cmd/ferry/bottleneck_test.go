package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNLBVerdict judges sender accounts: the largest share wins, and a
// transfer without measurements or too short to judge is undetermined.
func TestNLBVerdict(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		v    *senderView
		want string
	}{
		{&senderView{span: 2 * s, conns: 1, busy: s / 2}, "source read"},
		{&senderView{span: 2 * s, conns: 2, busy: 4 * s, rwnd: 3 * s}, "destination write"},
		{&senderView{span: 2 * s, conns: 2, busy: 4 * s, rwnd: s, sndbuf: s}, "network"},
		{&senderView{span: s, conns: 0}, "undetermined (no data connection"},
		{&senderView{span: 50 * time.Millisecond, conns: 1, busy: time.Millisecond}, "undetermined (the transfer took 50ms"},
		{nil, "undetermined (because)"},
	} {
		r := nlbReport{view: tc.v, why: "because"}
		if got := r.verdict(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.v, got, tc.want)
		}
		var b bytes.Buffer
		r.write(&b)
		if !strings.HasSuffix(b.String(), "Bottleneck: "+r.verdict()+"\n") {
			t.Errorf("%+v: report %q", tc.v, b.String())
		}
	}
}

// TestParseXferStats reads SITE XFERSTATS' facts and refuses a reply
// that lacks one or has a bad number.
func TestParseXferStats(t *testing.T) {
	v, ok := parseXferStats("Bytes=100;Elapsed=2000000;Streams=2;Measured=2;Busy=3000000;RwndLimited=1000;SndbufLimited=5;")
	if !ok || v.bytes != 100 || v.span != 2*time.Second || v.conns != 2 || v.busy != 3*time.Second || v.rwnd != time.Millisecond || v.sndbuf != 5*time.Microsecond {
		t.Errorf("parsed %+v, %v", v, ok)
	}
	for _, bad := range []string{"", "Bytes=1;Elapsed=1;", "Bytes=x;Elapsed=1;Measured=1;Busy=1;RwndLimited=1;SndbufLimited=1;", "Bytes=-1;Elapsed=1;Measured=1;Busy=1;RwndLimited=1;SndbufLimited=1;"} {
		if _, ok := parseXferStats(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// nlbVerdict is the Bottleneck line of out.
func nlbVerdict(t *testing.T, out string) string {
	t.Helper()
	for l := range strings.Lines(out) {
		if v, found := strings.CutPrefix(l, "Bottleneck: "); found {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Bottleneck line in %q", out)
	return ""
}

// TestCpNLBSlowSource downloads from a Ferry server whose storage reads
// at 8 MiB/s: the server reports (SITE XFERSTATS) that its sockets had
// nothing to send most of the time, so the source read limits.
func TestCpNLBSlowSource(t *testing.T) {
	s := startFerrySrv(t)
	data := seededData(8<<20, 3)
	writeServed(t, filepath.Join(s.dir, "f"), data)
	s.slow.Store(true)
	dst := filepath.Join(t.TempDir(), "f")
	r := ok(t, "cp", "-nlb", "-auto=false", s.url+"/f", dst)
	t.Logf("%s", r.stdout)
	if v := nlbVerdict(t, r.stdout); v != "source read" {
		t.Errorf("verdict %q, want source read:\n%s", v, r.stdout)
	}
	if !strings.Contains(r.stdout, "the source server's TCP accounting") {
		t.Errorf("report does not say who measured: %q", r.stdout)
	}
	if b, err := os.ReadFile(dst); err != nil || !bytes.Equal(b, data) {
		t.Errorf("copy differs: %v", err)
	}
}

// slowWriter takes rate bytes per second: a slow destination.
type slowWriter struct {
	w    io.Writer
	rate int
}

func (s slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Duration(len(p)) * time.Second / time.Duration(s.rate))
	return s.w.Write(p)
}

// slowSource gives rate bytes per second: a slow source.
type slowSource struct {
	r    io.Reader
	rate int
}

func (s slowSource) Read(p []byte) (int, error) {
	p = p[:min(len(p), 64<<10)]
	n, err := s.r.Read(p)
	time.Sleep(time.Duration(n) * time.Second / time.Duration(s.rate))
	return n, err
}

// TestCpNLBSlowDestination downloads to a standard output that takes
// 32 MiB/s: the server's sockets waited for the client's window, so the
// destination write limits; the report goes to stderr, stdout holding
// the data.
func TestCpNLBSlowDestination(t *testing.T) {
	s := startFerrySrv(t)
	// More than the sockets' buffers hold (loopback: several MiB), or
	// the server's part ends before the slow writer matters.
	data := seededData(32<<20, 4)
	writeServed(t, filepath.Join(s.dir, "f"), data)
	var out, errOut bytes.Buffer
	code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: slowWriter{&out, 32 << 20}, stderr: &errOut}, []string{"cp", "-nlb", "-auto=false", s.url + "/f", "-"})
	t.Logf("%s", errOut.String())
	if code != 0 || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("exit %d, %d bytes out: %s", code, out.Len(), errOut.String())
	}
	if v := nlbVerdict(t, errOut.String()); v != "destination write" {
		t.Errorf("verdict %q, want destination write", v)
	}
}

// TestCpNLBUploadSlowSource uploads from a standard input that gives
// 8 MiB/s: the client's own sockets had nothing to send most of the
// time.
func TestCpNLBUploadSlowSource(t *testing.T) {
	s := startFerrySrv(t)
	data := seededData(8<<20, 5)
	var out, errOut bytes.Buffer
	code := runMain(t.Context(), &env{stdin: slowSource{bytes.NewReader(data), 8 << 20}, stdout: &out, stderr: &errOut}, []string{"cp", "-nl-bottleneck", "-auto=false", "-", s.url + "/up"})
	t.Logf("%s", out.String())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if v := nlbVerdict(t, out.String()); v != "source read" {
		t.Errorf("verdict %q, want source read", v)
	}
	if !strings.Contains(out.String(), "the client's TCP accounting") {
		t.Errorf("report does not say who measured: %q", out.String())
	}
	if b, err := os.ReadFile(filepath.Join(s.dir, "up")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("upload differs: %v", err)
	}
}

// TestCpNLBThirdParty copies between two Ferry servers, the source's
// storage slow: the client sees no data, the source server reports.
func TestCpNLBThirdParty(t *testing.T) {
	a, b := startFerrySrv(t), startFerrySrv(t)
	data := seededData(8<<20, 8)
	writeServed(t, filepath.Join(a.dir, "f"), data)
	a.slow.Store(true)
	r := ok(t, "cp", "-nlb", "-auto=false", a.url+"/f", b.url+"/f")
	if v := nlbVerdict(t, r.stdout); v != "source read" {
		t.Errorf("verdict %q, want source read:\n%s", v, r.stdout)
	}
	if got, err := os.ReadFile(filepath.Join(b.dir, "f")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("copy differs: %v", err)
	}
}

// TestGUCNLB: the drop-in's -nlb prints the report on stdout, as
// globus-url-copy does.
func TestGUCNLB(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	s := startFerrySrv(t)
	writeServed(t, filepath.Join(s.dir, "f"), seededData(8<<20, 6))
	s.slow.Store(true)
	code, stdout, stderr := runGUCOut(t, "-nlb", s.url+"/f", "file://"+filepath.Join(t.TempDir(), "f"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if v := nlbVerdict(t, stdout); v != "source read" {
		t.Errorf("verdict %q, want source read: %s", v, stdout)
	}
}

// TestCpNLBGCT downloads from GCT's server, which has no SITE
// XFERSTATS: the copy succeeds and the report says why it cannot tell.
func TestCpNLBGCT(t *testing.T) {
	s := startGCT(t)
	writeServed(t, filepath.Join(s.dir, "f"), seededData(1<<20, 7))
	r := ok(t, "cp", "-nlb", "-auto=false", s.url+"/f", filepath.Join(t.TempDir(), "f"))
	if v := nlbVerdict(t, r.stdout); !strings.HasPrefix(v, "undetermined (the source server does not report its side") {
		t.Errorf("verdict %q", v)
	}
}

// TestCpNLBManyFiles: a job of many files copies as without -nlb and
// says that it gets no report.
func TestCpNLBManyFiles(t *testing.T) {
	s := startFerrySrv(t)
	if err := os.Mkdir(filepath.Join(s.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		writeServed(t, filepath.Join(s.dir, "d", n), []byte(n))
	}
	dst := t.TempDir()
	r := ok(t, "cp", "-nlb", "-r", s.url+"/d/", dst+"/")
	if strings.Contains(r.stdout, "Bottleneck:") || !strings.Contains(r.stderr, "-nlb reports on a single-file copy only") {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "b")); err != nil || string(b) != "b" {
		t.Errorf("b: %q, %v", b, err)
	}
}

// TestCpNLBWAN downloads over the WAN emulator at 40 Mbit/s (internal/wan
// through ferry wan): the server's sockets had data in flight and an
// open window, so the network limits.
func TestCpNLBWAN(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry and copies over the WAN emulator")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ferry")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	data := seededData(8<<20, 9)
	if err := os.WriteFile(filepath.Join(root, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "d")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdout: &stdout, stderr: &stderr}, []string{"wan",
		"-delay", "5ms", "-rate", "40M",
		"-server", "exec " + bin + " serve -listen 0.0.0.0:2811 -root " + root + " -anonymous",
		"-wait-port", "2811",
		"-client", "NETRC=/nonexistent " + bin + " cp -nlb -auto=false -history off ftp://$FERRY_WAN_SERVER_ADDR:2811/f " + dst})
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	if got := mustRead(t, dst); !bytes.Equal(got, data) {
		t.Fatalf("the copy differs from the source")
	}
	if v := nlbVerdict(t, stdout.String()); v != "network" {
		t.Errorf("verdict %q, want network", v)
	}
}
