package gctgsi

import (
	"sync"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

var subreaper sync.Once

// adoptOrphans makes this process the reaper of its orphaned
// descendants, so that the session processes of a killed server do not
// stay zombies.
func adoptOrphans() {
	subreaper.Do(func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}

// reapGroup reaps the exited members of process group pgid that were
// adopted.
func reapGroup(pgid int) {
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
