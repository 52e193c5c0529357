//go:build !linux

package posix

import (
	"errors"
	"os"
)

// directSupported: O_DIRECT is Linux-only here.
const directSupported = false

// openDirect always fails: no direct IO on this system.
func openDirect(*os.File) (*os.File, int64, error) {
	return nil, 0, errors.New("no direct IO on this system")
}
