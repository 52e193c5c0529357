package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCpAutoWAN runs ferry cp without tuning flags over the WAN emulator
// (internal/wan through ferry wan: 10 ms each way, so 20 ms RTT, 0.5 %
// loss towards the client, 100 Mbit/s), twice: the advisor must choose
// MODE E with more than one stream, record the copies as automatic, and
// predict the second copy's duration from the first. It asserts no
// speed.
func TestCpAutoWAN(t *testing.T) {
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
	data := randomData(t, 12<<20)
	if err := os.WriteFile(filepath.Join(root, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "history.db")
	down1, down2 := filepath.Join(dir, "d1"), filepath.Join(dir, "d2")
	src := "ftp://$FERRY_WAN_SERVER_ADDR:2811/f"
	cp := func(dst string) string {
		return "NETRC=/nonexistent XDG_STATE_HOME=" + dir + " " + bin + " cp -v -history " + db + " " + src + " " + dst
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdout: &stdout, stderr: &stderr}, []string{"wan",
		"-delay", "10ms", "-loss", "0.5%", "-rate", "100M",
		"-server", "exec " + bin + " serve -listen 0.0.0.0:2811 -root " + root + " -anonymous",
		"-wait-port", "2811",
		"-client", cp(down1) + " && " + cp(down2)})
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	for _, d := range []string{down1, down2} {
		if got := mustRead(t, d); !bytes.Equal(got, data) {
			t.Fatalf("%s differs from the source", d)
		}
	}
	if n := strings.Count(stdout.String()+stderr.String(), "auto: -p "); n != 2 {
		t.Errorf("%d auto notes, want 2", n)
	}
	recs := historyRecords(t, db) // newest first
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for i, r := range recs {
		if p := r.Params; !p.Auto || p.Mode != "E" || p.Parallel < 2 || r.Outcome != "ok" {
			t.Errorf("record %d: %s, params %+v, want auto, MODE E, -p > 1", i, r.Outcome, p)
		}
	}
	if recs[0].PredictedETA <= 0 {
		t.Errorf("second copy: predicted ETA %v, want one from the first copy's record", recs[0].PredictedETA)
	}
	t.Logf("second copy: -p %d, predicted %.2fs, took %.2fs", recs[0].Params.Parallel, recs[0].PredictedETA, recs[0].Duration)
}
