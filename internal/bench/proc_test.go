package bench

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// statLine is a /proc/PID/stat line whose command name has spaces and
// parentheses; utime..cstime (fields 14-17) are 1234 56 789 10.
const statLine = "4242 (globus (x) y) S 1 4242 4242 0 -1 4194560 1500 0 0 0 1234 56 789 10 20 0 4 0 9876 123456789 2500 18446744073709551615 1 1 0 0 0 0 0 4096 17 1 0 0 0 0 0\n"

func TestParseStat(t *testing.T) {
	got, err := parseStat([]byte(statLine))
	if err != nil {
		t.Fatal(err)
	}
	want := procCPU{utime: 1234, stime: 56, cutime: 789, cstime: 10}
	if got != want {
		t.Fatalf("parseStat = %+v, want %+v", got, want)
	}
	if d := got.total(); d != 20.89e9 {
		t.Errorf("total = %v, want 20.89s", d)
	}
	// Every prefix that stops before cstime is complete must fail.
	end := strings.Index(statLine, " 789 10 ") + len(" 789 ")
	for i := range end {
		if c, err := parseStat([]byte(statLine[:i])); err == nil {
			t.Errorf("parseStat(%q) = %+v, want an error", statLine[:i], c)
		}
	}
	for _, bad := range []string{
		strings.Replace(statLine, " 1234 ", " -3 ", 1),
		strings.Replace(statLine, " 56 ", " x ", 1),
	} {
		if c, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %+v, want an error", bad, c)
		}
	}
}

const statusText = `Name:	globus-gridftp-
Umask:	0022
State:	S (sleeping)
Pid:	4242
VmPeak:	  250000 kB
VmSize:	  240000 kB
VmHWM:	   10240 kB
VmRSS:	    8192 kB
Threads:	4
`

func TestParseStatus(t *testing.T) {
	m, err := parseStatus([]byte(statusText))
	if err != nil {
		t.Fatal(err)
	}
	if m.hwm != 10240<<10 || m.rss != 8192<<10 || m.peak() != 10240<<10 {
		t.Errorf("parseStatus = %+v (peak %d), want VmHWM 10 MiB, VmRSS 8 MiB", m, m.peak())
	}
	// A zombie has no Vm lines; a status without VmHWM falls back to VmRSS.
	if m, err := parseStatus([]byte("Name:\tx\nState:\tZ (zombie)\n")); err != nil || m != (procMem{}) {
		t.Errorf("zombie status: %+v, %v", m, err)
	}
	if m, err := parseStatus([]byte("VmRSS:\t 4 kB\n")); err != nil || m.peak() != 4096 {
		t.Errorf("VmRSS only: peak %d, %v", m.peak(), err)
	}
	for _, bad := range []string{"VmHWM:\t12 MB\n", "VmRSS:\tlots kB\n", "VmHWM:\t-1 kB\n", "VmHWM:\n"} {
		if m, err := parseStatus([]byte(bad)); err == nil {
			t.Errorf("parseStatus(%q) = %+v, want an error", bad, m)
		}
	}
}

func TestListeningTCP(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0100007F:A000 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
`
	for _, tc := range []struct {
		port int
		want bool
	}{{8080, true}, {22, false}, {0xA000, false}, {1, false}} {
		if got := listeningTCP([]byte(tcp), tc.port); got != tc.want {
			t.Errorf("listeningTCP(%d) = %v, want %v", tc.port, got, tc.want)
		}
	}
}

// TestProcSelf reads this process's files and a child's, so that the
// parsers meet the running kernel's format.
func TestProcSelf(t *testing.T) {
	if _, err := readCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	m, err := readMem(os.Getpid())
	if err != nil || m.rss <= 0 || m.hwm < m.rss {
		t.Fatalf("readMem(self) = %+v, %v", m, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	kids, err := children(os.Getpid())
	if err != nil || !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("children(self) = %v, %v; want it to hold %d", kids, err, cmd.Process.Pid)
	}
	if err := resetPeak(cmd.Process.Pid); err != nil {
		t.Errorf("resetPeak(child): %v", err)
	}
}

// TestPeakOf: a sampled peak wins; without one, wait4's ru_maxrss counts
// only when it exceeds this process's own peak, which exec hands down.
func TestPeakOf(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	self := selfPeak()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if self <= 0 {
		t.Fatalf("selfPeak = %d", self)
	}
	if got := peakOf(5<<20, cmd.ProcessState, self); got != 5<<20 {
		t.Errorf("peakOf(sampled) = %d, want the sample", got)
	}
	// "true" is far smaller than this process: its ru_maxrss is ours.
	if got := peakOf(0, cmd.ProcessState, self); got != rssUnknown {
		t.Errorf("peakOf(no sample) = %d, want unknown", got)
	}
	if got := peakOf(0, cmd.ProcessState, 1); got <= inheritSlack {
		t.Errorf("peakOf(no sample, tiny self) = %d, want ru_maxrss", got)
	}
	if got := peakOf(0, nil, self); got != rssUnknown {
		t.Errorf("peakOf(no state) = %d, want unknown", got)
	}
}
