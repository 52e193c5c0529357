//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package tune

import "time"

// ProcessCPU is the CPU time this process has used so far; zero here,
// where the system does not say.
func ProcessCPU() time.Duration { return 0 }
