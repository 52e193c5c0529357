//go:build unix

package posix

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// linkCount returns the number of hard links of fi's file; 1 when unknown.
func linkCount(fi fs.FileInfo) uint64 {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return uint64(st.Nlink)
	case *unix.Stat_t:
		return uint64(st.Nlink)
	}
	return 1
}
