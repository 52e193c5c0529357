package probe

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// TestProbeGCT probes GCT's globus-gridftp-server: it answers SBUF with
// 200 whatever the size (protocol.md §10) and lists neither SBUF nor
// MODE E in FEAT, but ERET and ESTO work.
func TestProbeGCT(t *testing.T) {
	if _, err := os.Stat(gct.Binary); err != nil {
		t.Skipf("GCT server not installed: %v", err)
	}
	t.Setenv(history.EnvDSN, history.OffDSN)
	dir := gct.Dir(t)
	name := filepath.Join(dir, "data")
	if err := os.WriteFile(name, make([]byte, 24<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := gct.Start(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := login(t, ctx, addr)
	k := advisor.Kernel{RmemMax: 4 << 20, WmemMax: 4 << 20}
	r, err := Run(ctx, c, Options{Path: name, UploadPath: filepath.Join(dir, "up"), Kernel: &k, MaxBytes: 16 << 20, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GCT: RTT %v, %s, retransmits %d, SBUF %d, features %q; %s", r.Link.RTT, progress.Bits(r.Link.Bandwidth), r.Link.Retransmits, r.ServerBuf, r.Features, r.Note)
	if r.Link.RTT <= 0 || r.Link.Bandwidth <= 0 || len(r.Bursts) != 2 || r.Link.Retransmits < 0 {
		t.Errorf("probe %+v", r)
	}
	if r.ServerBuf != 1<<30 || r.MaxBuffer != 4<<20 {
		t.Errorf("SBUF %d, MaxBuffer %d: want 1 GiB accepted, the kernel's 4 MiB", r.ServerBuf, r.MaxBuffer)
	}
	if _, err := os.Stat(filepath.Join(dir, "up")); !os.IsNotExist(err) {
		t.Errorf("upload file left: %v", err)
	}
	if _, err := c.Pwd(ctx); err != nil {
		t.Fatalf("after the probe: %v", err)
	}
}
