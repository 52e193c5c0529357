package main

import (
	"errors"
	"fmt"
)

// leftError is a failed copy that left something behind: a partial file
// here or on a server. note tells the user what, and how to resume or
// remove it; a single ferry cp prints it after the error.
type leftError struct {
	err  error
	note string
}

func (e *leftError) Error() string { return e.err.Error() }
func (e *leftError) Unwrap() error { return e.err }

// withNote returns err for ferry CMD to print; a leftError's note is
// printed after it on a line of its own, and the exit status is 1.
func withNote(e *env, cmd string, err error) error {
	var le *leftError
	if !errors.As(err, &le) {
		return err
	}
	fmt.Fprintf(e.stderr, "ferry %s: %v\n", cmd, err)
	fmt.Fprintf(e.stderr, "ferry %s: %s\n", cmd, le.note)
	return exitError{code: 1}
}

// ofSize renders n bytes of a file of size bytes (-1: unknown).
func ofSize(n, size int64) string {
	if size < 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d of %d bytes", n, size)
}
