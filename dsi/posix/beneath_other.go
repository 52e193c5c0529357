//go:build !linux

package posix

import (
	"io/fs"
	"os"
)

// Without openat2(2) every operation takes the os.Root path
// (beneath_linux.go has the fast paths).

func rootDir(*os.Root) *os.File { return nil }

func (fsys *FS) openFast(string) (*os.File, int64, bool) { return nil, 0, false }

func (fsys *FS) createFast(string, int, fs.FileMode) (*os.File, bool) { return nil, false }

func (fsys *FS) renameFast(string, string) bool { return false }

func (fsys *FS) lstatFast(string) (fs.FileInfo, error, bool) { return nil, nil, false }

func lstatIn(*os.File, string) (fs.FileInfo, error, bool) { return nil, nil, false }
