package posix

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/ferrygrid/ferry/dsi"
)

// bufSize is the size of the pooled copy buffers used when no zero-copy
// path applies.
const bufSize = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// errNegativeOffset is the cause for a negative offset or length.
var errNegativeOffset = errors.New("negative offset or length")

// Reader is an open file being read. Its methods are safe for concurrent
// use; it never uses the file's shared position.
type Reader struct {
	f    *os.File // immutable
	name string   // the DSI name, for errors
	size int64    // size at open
}

// ReadAt reads len(p) bytes at off (see [io.ReaderAt]).
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &Error{Op: "read", Path: r.name, Kind: dsi.ErrInvalid, Err: errNegativeOffset}
	}
	n, err := r.f.ReadAt(p, off)
	return n, ioErr("read", r.name, err)
}

// Size returns the file's size when it was opened.
func (r *Reader) Size() int64 { return r.size }

// Close closes the file.
func (r *Reader) Close() error { return ioErr("close", r.name, r.f.Close()) }

// WriteRangeTo writes the n bytes at off to w. When w is a socket (it
// implements syscall.Conn) the data moves with sendfile(2) at an explicit
// offset; otherwise it is copied with pread(2) through a pooled buffer. It is
// safe to call concurrently. A file shorter than off+n gives
// io.ErrUnexpectedEOF after what there was has been written.
func (r *Reader) WriteRangeTo(w io.Writer, off, n int64) (int64, error) {
	if off < 0 || n < 0 {
		return 0, &Error{Op: "sendfile", Path: r.name, Kind: dsi.ErrInvalid, Err: errNegativeOffset}
	}
	if n == 0 {
		return 0, nil
	}
	var done int64
	if sc, ok := w.(syscall.Conn); ok {
		m, handled, err := r.sendfile(sc, off, n)
		if handled {
			return m, ioErr("sendfile", r.name, err)
		}
		// Not supported for this pair of descriptors; copy the rest.
		done = m
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for done < n {
		chunk := int64(len(buf))
		if rest := n - done; rest < chunk {
			chunk = rest
		}
		m, err := r.f.ReadAt(buf[:chunk], off+done)
		if m > 0 {
			wm, werr := w.Write(buf[:m])
			done += int64(wm)
			if werr != nil {
				return done, werr
			}
			if wm < m {
				return done, io.ErrShortWrite
			}
		}
		if err == io.EOF {
			if int64(m) < chunk {
				return done, io.ErrUnexpectedEOF
			}
		} else if err != nil {
			return done, ioErr("read", r.name, err)
		}
	}
	return done, nil
}

// Writer is an open file being written. WriteAt and ReadRangeFrom are safe
// for concurrent use with disjoint ranges. With direct IO (see
// [DirectIO]) the aligned parts of large writes bypass the page cache.
type Writer struct {
	f    *os.File // immutable
	name string   // the DSI name, for errors
	// mu serializes ReadRangeFrom's writes into f: the streams of a
	// MODE E upload (see SharedFile).
	mu  sync.Mutex
	dio *direct // the direct-IO side; nil when off. Immutable pointer.
}

// WriteAt writes p at off (see [io.WriterAt]).
func (w *Writer) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &Error{Op: "write", Path: w.name, Kind: dsi.ErrInvalid, Err: errNegativeOffset}
	}
	if d := w.dio.use(w.f, int64(len(p))); d != nil {
		n, err := d.writeDirect(w.f, p, off)
		return n, ioErr("write", w.name, err)
	}
	n, err := w.f.WriteAt(p, off)
	return n, ioErr("write", w.name, err)
}

// Close closes the file (and its direct-IO descriptor) and returns the
// first error.
func (w *Writer) Close() error {
	derr := w.dio.close()
	if err := w.f.Close(); err != nil {
		return ioErr("close", w.name, err)
	}
	return ioErr("close", w.name, derr)
}

// ReadRangeFrom reads from r until n bytes have been read (n < 0: until
// io.EOF) and writes them at off. When r is a socket (it implements
// syscall.Conn) the data moves with splice(2) through a pipe, at an explicit
// file offset; otherwise it is copied through a pooled buffer with
// pwrite(2). With direct IO in use it is read into pooled aligned
// buffers instead and written mostly with O_DIRECT. Safe to call
// concurrently for disjoint ranges. Fewer than n bytes before io.EOF
// gives io.ErrUnexpectedEOF.
func (w *Writer) ReadRangeFrom(r io.Reader, off, n int64) (int64, error) {
	if off < 0 {
		return 0, &Error{Op: "splice", Path: w.name, Kind: dsi.ErrInvalid, Err: errNegativeOffset}
	}
	var m int64
	var err error
	// A range too short to hold a direct run of minDirectWrite bytes
	// wherever it starts is spliced: through a user buffer it would be
	// copied once more, to go through the page cache all the same.
	if d := w.dio.use(w.f, max(n, 0)); d != nil && (n < 0 || n >= minDirectWrite+2*d.align) {
		m, err = d.readDirect(w.f, r, off, n)
	} else {
		m, err = readRangeAt(w.f, &w.mu, r, off, n)
	}
	if err == nil {
		return m, nil // without the errors.As below, which allocates
	}
	var fe *fileOpError
	if errors.As(err, &fe) {
		return m, ioErr(fe.op, w.name, fe.err)
	}
	return m, err
}

// splice is the zero-copy path of ReadRangeFrom.
func (w *Writer) splice(sc syscall.Conn, off, n int64) (int64, bool, error) {
	return splice(w.f, &w.mu, sc, off, n)
}

// ioErr wraps an error of an open file. io.EOF, io.ErrUnexpectedEOF and nil
// pass unchanged so that callers can compare them; errnos get their DSI
// sentinel.
func ioErr(op, name string, err error) error {
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var errno syscall.Errno
	var kind error
	if errors.As(err, &errno) {
		kind = errnoKind(errno)
	} else if errors.Is(err, os.ErrClosed) {
		kind = dsi.ErrInvalid
	}
	var pe *os.PathError
	var se *os.SyscallError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &se):
		// Keep the syscall name: "sendfile: broken pipe".
	}
	return &Error{Op: op, Path: name, Kind: kind, Err: err}
}

// Interface guards.
var (
	_ dsi.Reader          = (*Reader)(nil)
	_ dsi.RangeWriterTo   = (*Reader)(nil)
	_ dsi.Writer          = (*Writer)(nil)
	_ dsi.RangeReaderFrom = (*Writer)(nil)
)
