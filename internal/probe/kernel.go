package probe

import (
	"os"
	"strconv"
	"strings"

	"github.com/ferrygrid/ferry/internal/advisor"
)

// procSys is where KernelLimits reads the sysctls; tests change it.
var procSys = "/proc/sys"

// KernelLimits reads this host's TCP buffer limits from /proc/sys:
// net.core.rmem_max and wmem_max, net.ipv4.tcp_rmem and tcp_wmem. A
// value that cannot be read (another OS, a restricted /proc) is zero.
func KernelLimits() advisor.Kernel {
	return advisor.Kernel{
		RmemMax: readInts(procSys + "/net/core/rmem_max")[0],
		WmemMax: readInts(procSys + "/net/core/wmem_max")[0],
		TCPRmem: three(readInts(procSys + "/net/ipv4/tcp_rmem")),
		TCPWmem: three(readInts(procSys + "/net/ipv4/tcp_wmem")),
	}
}

// readInts returns the whitespace-separated integers of a file, at least
// one element (0 when unreadable).
func readInts(name string) []int {
	b, err := os.ReadFile(name)
	if err != nil {
		return []int{0}
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return []int{0}
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return []int{0}
	}
	return out
}

func three(v []int) [3]int {
	var out [3]int
	if len(v) == 3 {
		copy(out[:], v)
	}
	return out
}
