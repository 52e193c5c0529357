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

// machineMeter measures what the machine's CPUs do between its start and
// a call of share: every process of a run shares them (client, servers,
// the network's forwarding and shapers), so a run that kept them busy or
// lost them to the hypervisor measured the machine, not the software.
type machineMeter struct {
	before machineCPU
	err    error
}

// startMachine starts a machineMeter.
func startMachine() machineMeter {
	before, err := readMachineCPU()
	return machineMeter{before: before, err: err}
}

// share returns what the CPUs did since the start: zero if /proc/stat
// could not be read.
func (m machineMeter) share() cpuShare {
	after, err := readMachineCPU()
	if m.err != nil || err != nil {
		return cpuShare{}
	}
	return shareSince(m.before, after, onlineCPUs())
}

// stolenLimit is the share of CPU time the hypervisor may steal during a
// run for the run to count as steady. On these shared machines steal comes
// in bursts; a run that lost a fifth of its CPU loses throughput too (the
// shapers and forwarding run late), which measures the host, not Ferry.
const stolenLimit = 0.05

// machineSummary is what the machine's CPUs did over a cell's runs.
type machineSummary struct {
	busy  float64 // median cores busy
	steal float64 // the largest share stolen in one run
	n     int     // runs
}

// summarizeMachine returns the summary of the shares of a cell's runs.
func summarizeMachine(shares []cpuShare) machineSummary {
	busy := make([]float64, len(shares))
	var steal float64
	for i, s := range shares {
		busy[i] = s.Busy
		steal = max(steal, s.Steal)
	}
	return machineSummary{busy: Summarize(busy).Median, steal: steal, n: len(shares)}
}

// String renders the summary as "cores busy, max stolen": "1.85, 0.4 %".
func (m machineSummary) String() string {
	return fmt.Sprintf("%.2f, %.1f %%", m.busy, 100*m.steal)
}

// steady reports whether no run of the cell lost stolenLimit or more of
// the CPU to the hypervisor.
func (m machineSummary) steady() bool { return m.steal < stolenLimit }

// csvFields renders a share as CSV fields: cores busy and the stolen
// fraction.
func (s cpuShare) csvFields() []string {
	return []string{strconv.FormatFloat(s.Busy, 'f', 2, 64), strconv.FormatFloat(s.Steal, 'f', 4, 64)}
}
