package xfer

import "errors"

// ErrNoDataAddress means a transfer was asked for before the client set up a
// data channel with PASV, EPSV, PORT or EPRT.
var ErrNoDataAddress = errors.New("xfer: no data channel set up; send PASV, EPSV, PORT or EPRT first")

// ErrAborted is the cancellation cause of a transfer stopped by ABOR.
var ErrAborted = errors.New("xfer: transfer aborted by the client")

// DataError reports a failure of the data channel itself: it could not be
// opened (Open), or it broke or stalled while bytes were moving.
type DataError struct {
	Open bool
	Err  error
}

func (e *DataError) Error() string {
	if e.Open {
		return "data channel could not be opened: " + e.Err.Error()
	}
	return "data channel failed: " + e.Err.Error()
}

func (e *DataError) Unwrap() error { return e.Err }

// StorageError reports a failure reading or writing the storage during a transfer.
type StorageError struct{ Err error }

func (e *StorageError) Error() string { return "storage: " + e.Err.Error() }
func (e *StorageError) Unwrap() error { return e.Err }
