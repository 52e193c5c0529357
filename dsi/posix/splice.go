package posix

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// splicedBytes counts the bytes splice(2) has moved into files.
var splicedBytes atomic.Int64

// SplicedBytes returns how many bytes this process has moved from sockets
// into files with splice(2), by ReadRangeFrom and SpliceAt together. It
// only grows; tests and metrics read it to see that the zero-copy path
// was taken.
func SplicedBytes() int64 { return splicedBytes.Load() }

// SpliceAt reads from r until n bytes have been read (n < 0: until io.EOF)
// and writes them to f at off, without using or moving f's file offset.
// When r is a socket (it implements syscall.Conn) the bytes move inside
// the kernel with splice(2) through a pipe; otherwise, or when the pair
// of descriptors does not allow it, they are copied through a pooled
// buffer with pwrite(2). It is safe to call concurrently for disjoint
// ranges of f. Fewer than n bytes before io.EOF give io.ErrUnexpectedEOF;
// a failure writing f is an *os.PathError, one reading r is returned as
// it is.
//
// It is ReadRangeFrom for files opened outside a DSI, such as the client's
// download destination.
func SpliceAt(f *os.File, r io.Reader, off, n int64) (int64, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "splice", Path: f.Name(), Err: errNegativeOffset}
	}
	m, err := readRangeAt(f, nil, r, off, n)
	var fe *fileOpError
	if errors.As(err, &fe) {
		return m, &os.PathError{Op: fe.op, Path: f.Name(), Err: fe.err}
	}
	return m, err
}

// fileOpError is a failure of the zero-copy path or of writing the file,
// as opposed to one of reading the source; op names the system call.
type fileOpError struct {
	op  string
	err error
}

func (e *fileOpError) Error() string { return e.op + ": " + e.err.Error() }
func (e *fileOpError) Unwrap() error { return e.err }

// SharedFile is a file that several goroutines fill at once (the streams
// of a MODE E download): ReadRangeFrom moves the bytes from the socket
// concurrently, but writes them into the file one call at a time. The
// kernel takes the file's lock for each write anyway; waiting for it in
// the kernel spins (a CPU-second per GiB with four streams on this
// machine's ext4), waiting here sleeps.
type SharedFile struct {
	f  *os.File
	mu sync.Mutex
}

// NewSharedFile returns the SharedFile of f; the caller keeps owning f.
func NewSharedFile(f *os.File) *SharedFile { return &SharedFile{f: f} }

// ReadRangeFrom is SpliceAt into the shared file.
func (s *SharedFile) ReadRangeFrom(r io.Reader, off, n int64) (int64, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "splice", Path: s.f.Name(), Err: errNegativeOffset}
	}
	m, err := readRangeAt(s.f, &s.mu, r, off, n)
	var fe *fileOpError
	if errors.As(err, &fe) {
		return m, &os.PathError{Op: fe.op, Path: s.f.Name(), Err: fe.err}
	}
	return m, err
}

// readRangeAt is ReadRangeFrom and SpliceAt without their error wrapping:
// failures of splice(2) or of writing f are *fileOpError. When mu is not
// nil, every write into f holds it.
func readRangeAt(f *os.File, mu *sync.Mutex, r io.Reader, off, n int64) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	var done int64
	if sc, ok := r.(syscall.Conn); ok {
		m, handled, err := splice(f, mu, sc, off, n)
		if handled {
			if err != nil && err != io.ErrUnexpectedEOF {
				err = &fileOpError{op: "splice", err: err}
			}
			return m, err
		}
		done = m
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for n < 0 || done < n {
		chunk := int64(len(buf))
		if n >= 0 && n-done < chunk {
			chunk = n - done
		}
		m, err := io.ReadFull(r, buf[:chunk])
		if m > 0 {
			if mu != nil {
				mu.Lock()
			}
			_, werr := f.WriteAt(buf[:m], off+done)
			if mu != nil {
				mu.Unlock()
			}
			if werr != nil {
				return done, writeFailed(werr)
			}
			done += int64(m)
		}
		if more, err := readEnded(err, n); !more {
			return done, err
		}
	}
	return done, nil
}

// writeFailed is the error of a range copy whose write failed, without
// the path (the caller's error names the file).
func writeFailed(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fileOpError{op: "write", err: err}
}

// readEnded says whether a range copy of n bytes (n < 0: until EOF) goes
// on after its read of the source returned err, and if not, what it
// returns: nothing at the end of an unbounded copy, io.ErrUnexpectedEOF
// at an early end of a bounded one, else err.
func readEnded(err error, n int64) (more bool, _ error) {
	switch {
	case err == nil:
		return true, nil
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if n < 0 {
			return false, nil
		}
		return false, io.ErrUnexpectedEOF
	default:
		return false, err
	}
}
