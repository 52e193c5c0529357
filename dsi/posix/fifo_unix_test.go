//go:build unix

package posix_test

import "syscall"

func mkfifo(name string) error { return syscall.Mkfifo(name, 0o644) }
