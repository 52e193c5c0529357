//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tune

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process has used so
// far (getrusage RUSAGE_SELF); zero when the system does not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
