//go:build unix

package auth

import (
	"os"
	"syscall"
)

// chownLike gives f the owner and group of fi, where the caller may (only
// root may give a file away; others keep their own).
func chownLike(f *os.File, fi os.FileInfo) {
	if st, isStat := fi.Sys().(*syscall.Stat_t); isStat {
		f.Chown(int(st.Uid), int(st.Gid))
	}
}
