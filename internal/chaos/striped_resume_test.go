package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStripedUploadResumeAfterServerKill reproduces the defect the full
// kill run found (docs/bench/chaos.md): a striped upload (ferry cp
// -stripe) whose frontend is SIGKILLed after the client recorded
// acknowledged ranges never completes. The resumed STOR carries REST, but
// the frontend's request has no Restart ranges, so it compares the bytes
// the stripes moved with the whole ALLO size and answers 426 "the stripes
// ended after N of the M bytes announced"; the 111 markers meanwhile
// acknowledged every byte, so each further run sends nothing and fails
// the same way. Fixed: internal/pi's planStore puts the REST ranges in
// MODE E requests, and internal/stripe checks ALLO less them.
func TestStripedUploadResumeAfterServerKill(t *testing.T) {
	scratch := t.TempDir()
	h := &harness{cfg: Config{Ferry: ferryBin, StepBound: 60 * time.Second}, scratch: scratch}
	t.Cleanup(func() {
		for i := len(h.cleanup) - 1; i >= 0; i-- {
			h.cleanup[i]()
		}
	})
	home := filepath.Join(scratch, "home")
	state := filepath.Join(home, "state")
	h.env = append(os.Environ(), "HOME="+home, "NETRC="+filepath.Join(home, "none"), "XDG_STATE_HOME="+state)
	s, err := h.startSite("striped", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Large enough that an idle machine's loopback cannot finish it
	// before the first 111 marker (a second in) and the kill after it:
	// 1 GiB once finished first under the test suite's load.
	const size = 2 << 30
	src := filepath.Join(scratch, "src.bin")
	want, err := writeRandom(src, size, 9)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"cp", "-stripe", "-p", "2", "-stall-timeout", "20s", src, s.url("f.bin")}
	first := make(chan runResult, 1)
	go func() { first <- runCmd(t.Context(), ferryBin, h.env, time.Minute, nil, nil, args...) }()
	// Kill the frontend once the client's state lists acknowledged ranges.
	part := filepath.Join(s.root, ".f.bin.ferry-part")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no acknowledged ranges within 30s")
		}
		select {
		case res := <-first:
			t.Fatalf("the first run ended before the kill: %v: %s", res.err, res.out)
		default:
		}
		fi, err := os.Stat(part)
		states, _ := filepath.Glob(filepath.Join(state, "ferry", "resume", "*"))
		if err == nil && fi.Size() > size/4 && len(states) > 0 {
			if b, _ := os.ReadFile(states[0]); len(b) > 0 && containsRange(string(b)) {
				break
			}
		}
	}
	s.serve.kill()
	if err := s.serve.restartOn(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	res := <-first
	t.Logf("first run: %v", res.err)
	if err := s.waitUp(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for attempt := range 3 {
		res = runCmd(t.Context(), ferryBin, h.env, time.Minute, nil, nil, args...)
		if res.err == nil {
			break
		}
		t.Logf("run %d: %v: %s", attempt+2, res.err, res.out)
	}
	if res.err != nil {
		t.Fatalf("the upload never completed")
	}
	if sum, _, err := fileSum(filepath.Join(s.root, "f.bin")); err != nil || sum != want {
		t.Fatalf("the upload differs: %v", err)
	}
}

// containsRange reports whether a resume state file lists a range (its
// line "ranges START-END...").
func containsRange(s string) bool {
	_, after, ok := strings.Cut(s, "\nranges ")
	return ok && after != "" && after[0] >= '0' && after[0] <= '9'
}
