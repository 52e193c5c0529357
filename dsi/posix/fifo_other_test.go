//go:build !unix

package posix_test

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs") }
