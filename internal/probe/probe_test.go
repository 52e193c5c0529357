package probe

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/null"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/testutil/ftpserver"
	"github.com/ferrygrid/ferry/server"
)

// serve starts an in-process Ferry server over st on loopback and
// returns its address.
func serve(t *testing.T, st dsi.Storage) string {
	t.Helper()
	return ftpserver.Start(t, server.Config{Storage: st, Anonymous: true, AnonymousWrite: true})
}

func login(t *testing.T, ctx context.Context, addr string) *client.Conn {
	t.Helper()
	c, err := client.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(ctx, "anonymous", "ferry@"); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestProbeFerryServer(t *testing.T) {
	t.Setenv(history.EnvDSN, history.OffDSN)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data"), make([]byte, 48<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, fs)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := login(t, ctx, addr)
	host, port, _ := net.SplitHostPort(addr)
	ep := history.NewEndpoint("ftp", host, atoi(port))
	k := advisor.Kernel{RmemMax: 4 << 20, WmemMax: 2 << 20}
	start := time.Now()
	r, err := Run(ctx, c, Options{Endpoint: ep, Path: "/data", UploadPath: "/probe.tmp", Kernel: &k, MaxBytes: 32 << 20, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe in %v: RTT %v, bandwidth %s, retransmits %d, max buffer %d, note %q",
		time.Since(start), r.Link.RTT, progress.Bits(r.Link.Bandwidth), r.Link.Retransmits, r.MaxBuffer, r.Note)
	if r.Link.RTT <= 0 || len(r.RTTs) != 5 {
		t.Errorf("RTT %v from %d NOOPs", r.Link.RTT, len(r.RTTs))
	}
	if r.Link.Bandwidth <= 0 {
		t.Errorf("bandwidth %v", r.Link.Bandwidth)
	}
	for _, f := range []string{"ERET", "ESTO"} {
		if !slices.ContainsFunc(r.Features, func(s string) bool { return s == f || strings.HasPrefix(s, f+" ") }) {
			t.Errorf("features %q lack %s", r.Features, f)
		}
	}
	if len(r.Bursts) != 2 || r.Bursts[0].Direction != "download" || r.Bursts[1].Direction != "upload" {
		t.Fatalf("bursts %+v", r.Bursts)
	}
	if r.Bursts[0].Bytes <= 0 || r.Bursts[0].Bytes > 32<<20 {
		t.Errorf("download burst moved %d bytes, want 1..32 MiB", r.Bursts[0].Bytes)
	}
	if r.Link.Retransmits < 0 {
		t.Errorf("upload burst measured no retransmits: %+v", r.Bursts[1])
	}
	if r.ServerBuf != 1<<30 || r.MaxBuffer != 2<<20 {
		t.Errorf("server SBUF %d, MaxBuffer %d; want 1 GiB and this kernel's 2 MiB wmem_max", r.ServerBuf, r.MaxBuffer)
	}
	if _, err := os.Stat(filepath.Join(dir, "probe.tmp")); !os.IsNotExist(err) {
		t.Errorf("upload burst file left behind: %v", err)
	}
	if r.Src != ep || r.Time.IsZero() {
		t.Errorf("Src %+v, Time %v", r.Src, r.Time)
	}

	// The connection still works, and the probe survives the history.
	if _, err := c.Pwd(ctx); err != nil {
		t.Fatalf("after the probe: %v", err)
	}
	st, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := st.AddProbe(ctx, &r.Probe)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := st.Probes(ctx, history.Filter{Host: host})
	if err != nil || len(ps) != 1 {
		t.Fatalf("probes read back: %v, %v", ps, err)
	}
	if p := ps[0]; p.ID != id || p.Link.RTT != r.Link.RTT.Truncate(time.Microsecond) && p.Link.RTT != r.Link.RTT ||
		p.Link.Bandwidth != r.Link.Bandwidth || p.MaxBuffer != r.MaxBuffer || !slices.Equal(p.Features, r.Features) {
		t.Errorf("read back %+v, stored %+v", p, r.Probe)
	}
}

// TestProbeDirectory picks the largest file of a directory, here a
// null-storage server's size-named files are not listed, so the root
// has none: the probe says so and still measures RTT and SBUF.
func TestProbeDirectory(t *testing.T) {
	t.Setenv(history.EnvDSN, history.OffDSN)
	dir := t.TempDir()
	for name, n := range map[string]int{"small": 1 << 10, "big": 6 << 20} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := login(t, ctx, serve(t, fs))
	r, err := Run(ctx, c, Options{Path: "/", Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Bursts) != 1 || r.Bursts[0].Path != "/big" || r.Link.Bandwidth <= 0 {
		t.Errorf("bursts %+v, bandwidth %v", r.Bursts, r.Link.Bandwidth)
	}

	// A null server: "/" lists nothing, "/64M" reads as 64 MiB of zeros.
	c = login(t, ctx, serve(t, null.New()))
	r, err = Run(ctx, c, Options{Path: "/", Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Bursts) != 0 || !strings.Contains(r.Note, "no burst") || r.Link.RTT <= 0 {
		t.Errorf("empty root: bursts %+v, note %q, RTT %v", r.Bursts, r.Note, r.Link.RTT)
	}
	r, err = Run(ctx, c, Options{Path: "/64M", Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Bursts) != 1 || r.Link.Bandwidth <= 0 {
		t.Errorf("/64M: bursts %+v, note %q", r.Bursts, r.Note)
	}
}

func TestKernelLimits(t *testing.T) {
	t.Setenv(history.EnvDSN, history.OffDSN)
	old := procSys
	t.Cleanup(func() { procSys = old })
	procSys = t.TempDir()
	write := func(name, s string) {
		p := filepath.Join(procSys, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("net/core/rmem_max", "4194304\n")
	write("net/ipv4/tcp_rmem", "4096\t131072\t33554432\n")
	write("net/ipv4/tcp_wmem", "garbage\n")
	want := advisor.Kernel{RmemMax: 4194304, TCPRmem: [3]int{4096, 131072, 33554432}}
	if got := KernelLimits(); got != want {
		t.Errorf("KernelLimits() = %+v, want %+v", got, want)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestCalibrate(t *testing.T) {
	t.Setenv(history.EnvDSN, history.OffDSN)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := login(t, ctx, serve(t, null.New()))
	srv := history.NewEndpoint("ftp", "127.0.0.1", 2121)
	local := history.Endpoint{Scheme: "file"}
	g := Grid(advisor.Kernel{RmemMax: 4 << 20, WmemMax: 8 << 20})
	if len(g) != 8 || g[1].TCPBuffer != 4<<20 || g[6].Parallel != 16 {
		t.Fatalf("grid %v", g)
	}
	if g0 := Grid(advisor.Kernel{}); g0[1].TCPBuffer != 0 {
		t.Errorf("unknown kernel: big buffer %d, want autotuning", g0[1].TCPBuffer)
	}
	recs, err := Calibrate(ctx, c, CalibrateOptions{Src: srv, Dst: local, Path: "/1G", Grid: g[:4], PerCell: 100 * time.Millisecond, MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if r.Outcome != history.OK || r.Tool != "calibrate" || r.Params.Auto || r.Rate() <= 0 || r.Params.Parallel != g[i].Parallel || r.Src != srv {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	// Upload cells write and then delete.
	up, err := Calibrate(ctx, c, CalibrateOptions{Src: local, Dst: srv, Path: "/x", Upload: true, Grid: g[2:3], PerCell: 100 * time.Millisecond, MaxBytes: 8 << 20})
	if err != nil || len(up) != 1 || up[0].Kind != "upload" || up[0].Bytes <= 0 {
		t.Fatalf("upload: %+v, %v", up, err)
	}
}

func TestRunPair(t *testing.T) {
	t.Setenv(history.EnvDSN, history.OffDSN)
	srcDir, dstDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(srcDir, "data"), make([]byte, 24<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dstDir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	sfs, err := posix.New(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	dfs, err := posix.New(dstDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	src, dst := login(t, ctx, serve(t, sfs)), login(t, ctx, serve(t, dfs))
	a, b := history.NewEndpoint("ftp", "127.0.0.1", 1), history.NewEndpoint("ftp", "127.0.0.2", 2)
	r, err := RunPair(ctx, src, dst, PairOptions{Src: a, Dst: b, SrcPath: "/data", DstDir: "/in", SrcRTT: time.Millisecond, DstRTT: 2 * time.Millisecond, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r.Probe)
	if r.Src != a || r.Dst != b || r.Link.RTT != 2*time.Millisecond || r.Link.Bandwidth <= 0 || r.Link.Retransmits != -1 || len(r.Bursts) != 1 {
		t.Errorf("pair probe %+v", r)
	}
	if left, _ := os.ReadDir(filepath.Join(dstDir, "in")); len(left) != 0 {
		t.Errorf("burst file left: %v", left)
	}
}
