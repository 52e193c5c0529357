package transfer

import (
	"errors"
	"fmt"
	"os"
)

// LeftError is a failed copy that left something behind: a partial file
// here or on a server. Note tells the user what, and how to resume or
// remove it; ferry cp prints it after the error.
type LeftError struct {
	Err  error
	Note string
}

func (e *LeftError) Error() string { return e.Err.Error() }
func (e *LeftError) Unwrap() error { return e.Err }

// OpError is a failed operation: "What: why", where a server's reply is
// shown as one line (see Describe).
type OpError struct {
	What string
	Err  error
}

func (e *OpError) Error() string { return e.What + ": " + Describe(e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// localError is a failure of the local file system: no retry helps.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// destError is the error of creating the temporary file of a download
// to final: it names final, the file the user asked for, not the hidden
// temporary file beside it ("create DST: permission denied").
func destError(final string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return &os.PathError{Op: "create", Path: final, Err: pe.Err}
	}
	return err
}

// ofSize renders n bytes of a file of size bytes (-1: unknown).
func ofSize(n, size int64) string {
	if size < 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d of %d bytes", n, size)
}
