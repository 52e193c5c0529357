package tune

import (
	"bytes"
	"os"
	"strconv"
)

// HostCPU returns the CPU time, in clock ticks, that all of this host's
// CPUs spent busy and in total so far (the first line of /proc/stat:
// busy is everything but idle and iowait; steal counts as busy, as the
// CPU was not there for this host's work). ok is false when unknown.
func HostCPU() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// inside user already).
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total, total > 0
}
