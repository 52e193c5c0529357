package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machineCPU is the machine-wide "cpu" line of /proc/stat, in clock ticks,
// folded into what a benchmark needs to know: whether the cores were the
// limit (busy) and whether the hypervisor took them away (steal).
type machineCPU struct {
	busy  int64 // user, nice, system, irq and softirq (guest time is inside user)
	idle  int64 // idle and iowait
	steal int64 // time the hypervisor ran something else on our vCPUs
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat's contents:
// "cpu user nice system idle iowait irq softirq steal guest guest_nice".
// Kernels before 2.6.11 print fewer fields; the missing ones count as 0.
func parseProcStat(b []byte) (machineCPU, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return machineCPU{}, fmt.Errorf("bench: /proc/stat: %d fields on the cpu line", len(f))
		}
		var v [8]int64
		for i := range v {
			if i+1 >= len(f) {
				break
			}
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil || n < 0 {
				return machineCPU{}, fmt.Errorf("bench: /proc/stat: bad cpu field %q", f[i+1])
			}
			v[i] = n
		}
		user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		return machineCPU{busy: user + nice + system + irq + softirq, idle: idle + iowait, steal: steal}, nil
	}
	return machineCPU{}, errors.New("bench: /proc/stat: no cpu line")
}

func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	return parseProcStat(b)
}

// cpuShare is what the machine's CPUs did between two samples.
type cpuShare struct {
	Busy  float64 // cores busy on average (0 to the number of CPUs)
	Steal float64 // fraction of all CPU time stolen by the hypervisor
}

// shareSince returns what the CPUs did from before to after; cpus is the
// number of CPUs /proc/stat sums over.
func shareSince(before, after machineCPU, cpus int) cpuShare {
	busy, idle, steal := after.busy-before.busy, after.idle-before.idle, after.steal-before.steal
	total := busy + idle + steal
	if total <= 0 || cpus <= 0 {
		return cpuShare{}
	}
	return cpuShare{Busy: float64(busy) / float64(total) * float64(cpus), Steal: float64(steal) / float64(total)}
}

// onlineCPUs is the number of CPUs /proc/stat's cpu line sums over.
func onlineCPUs() int { return runtime.NumCPU() }
