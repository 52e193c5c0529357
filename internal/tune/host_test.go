package tune

import (
	"runtime"
	"testing"
	"time"
)

// TestHostCPU: the host's counters move forward, and a busy loop on
// this CPU shows as busy time.
func TestHostCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, _, ok := HostCPU(); ok {
			t.Fatal("HostCPU known off Linux")
		}
		return
	}
	b0, t0, ok := HostCPU()
	if !ok {
		t.Fatal("HostCPU unknown on Linux")
	}
	end := time.Now().Add(300 * time.Millisecond)
	for n := 0; time.Now().Before(end); n++ {
		_ = n * n
	}
	b1, t1, ok := HostCPU()
	if !ok || t1 <= t0 || b1 <= b0 || b1-b0 > t1-t0 {
		t.Fatalf("busy %d → %d, total %d → %d", b0, b1, t0, t1)
	}
}
