//go:build !linux

package main

import "errors"

// makeRaw is only implemented on Linux; elsewhere the shell reads plain
// lines from the terminal, as in script mode.
func makeRaw(int) (restore func(), err error) {
	return nil, errors.New("ferry shell: line editing is only implemented on Linux")
}

func watchResize(func()) (stop func()) { return func() {} }
