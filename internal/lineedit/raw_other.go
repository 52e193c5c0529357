//go:build !linux

package lineedit

import "errors"

// MakeRaw is only implemented on Linux; elsewhere callers fall back to
// reading lines without editing.
func MakeRaw(fd int) (restore func() error, err error) {
	return nil, errors.New("lineedit: raw mode is not supported on this system")
}
