package gct

import (
	"sync"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

var subreaper sync.Once

// AdoptOrphans makes this process the reaper of its orphaned descendants:
// the server's session processes are orphaned when the server is killed,
// and the init of some machines and containers never reaps them, which
// leaves zombies behind.
func AdoptOrphans() {
	subreaper.Do(func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}

// ReapGroup reaps the exited members of process group pgid that were
// adopted; it returns when none is left. Their parent must have been
// reaped already, so that they all have been re-parented to us.
func ReapGroup(pgid int) {
	for range 10000 {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-pgid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
	}
}
