package s3

import (
	"os"

	"golang.org/x/sys/unix"
)

// punchHole frees the disk blocks of [off, off+n) of the spill file f;
// a file system that cannot keeps them until the file is closed.
func punchHole(f *os.File, off, n int64) {
	unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
