//go:build !unix

package auth

import "os"

// chownLike does nothing where files have no Unix owner.
func chownLike(f *os.File, fi os.FileInfo) {}
