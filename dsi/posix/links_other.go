//go:build !unix

package posix

import "io/fs"

// linkCount returns 1: hard links are not counted here.
func linkCount(fs.FileInfo) uint64 { return 1 }
