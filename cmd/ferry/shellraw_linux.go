//go:build linux

package main

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// makeRaw puts the terminal fd into x/term's raw mode (no echo, no line
// buffering, Ctrl-C/Ctrl-Z/Ctrl-\ as bytes) with output processing
// switched back on: the shell's commands print "\n" while the terminal is
// raw, for the key reader to see Ctrl-C. restore puts the old mode back.
func makeRaw(fd int) (restore func(), err error) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	restore = func() { term.Restore(fd, old) }
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err == nil {
		t.Oflag |= unix.OPOST
		err = unix.IoctlSetTermios(fd, unix.TCSETS, t)
	}
	if err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// watchResize calls f when the terminal's size changes, until stop.
func watchResize(f func()) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGWINCH)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ch:
				f()
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}
