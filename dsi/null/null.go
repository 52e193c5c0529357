// Package null is the benchmark DSI back-end, Ferry's counterpart of moving
// /dev/zero to /dev/null with GCT: it stores nothing and reads only zeros.
//
// Any path whose base name is a size ("/1G", "/x/512K", "/4096", "/1GiB")
// reads as a regular file of that many zero bytes; see [ParseSize]. Every
// Create succeeds and the writer discards what it gets, counting the bytes
// (see [FS.BytesWritten]). "/" is an empty directory; other names do not
// exist.
package null

import (
	"context"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// bufSize is the size of the zero buffer and of the pooled read buffers.
const bufSize = 1 << 20

// zeros is the shared source of WriteRangeTo. It is never written: io.Writer
// implementations must not modify the slice they are given.
var zeros [bufSize]byte

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// maxSize is the largest size ParseSize accepts (2^62).
const maxSize = 1 << 62

// FS is the null back-end. It is safe for concurrent use.
type FS struct {
	start   time.Time    // immutable; the ModTime of every entry
	written atomic.Int64 // bytes accepted by writers
}

// New returns a null back-end whose entries carry the current time.
func New() *FS { return &FS{start: time.Now()} }

// BytesWritten returns the total number of bytes written through all
// writers since New.
func (fsys *FS) BytesWritten() int64 { return fsys.written.Load() }

// ParseSize parses a size name: decimal digits with an optional unit K, M,
// G, T, P or E (binary: K is 1<<10), itself optionally followed by "iB" or
// "B"; a bare "B" suffix means bytes. Case is ignored: "1G", "1GiB", "1gb"
// and "1073741824" are equal. Sizes above 2^62 are rejected.
func ParseSize(s string) (int64, bool) {
	s = strings.ToUpper(s)
	switch {
	case strings.HasSuffix(s, "IB"):
		s = s[:len(s)-2]
		if len(s) == 0 || s[len(s)-1] < 'A' || s[len(s)-1] > 'Z' {
			return 0, false // "iB" needs a unit: "10iB" is not a size
		}
	case strings.HasSuffix(s, "B"):
		s = s[:len(s)-1]
	}
	shift := 0
	if len(s) > 0 {
		switch s[len(s)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		case 'P':
			shift = 50
		case 'E':
			shift = 60
		}
		if shift != 0 {
			s = s[:len(s)-1]
		}
	}
	if len(s) == 0 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > maxSize/10 {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		if v > maxSize {
			return 0, false
		}
	}
	if v > maxSize>>shift {
		return 0, false
	}
	return v << shift, true
}

// sizeOf returns the size named by name's base, if it names one.
func sizeOf(name string) (int64, bool) {
	name = path.Clean("/" + name)
	if name == "/" {
		return 0, false
	}
	return ParseSize(path.Base(name))
}

func isRoot(name string) bool { return path.Clean("/"+name) == "/" }

func pathError(op, name string, kind error) error {
	return &fs.PathError{Op: "null: " + op, Path: name, Err: kind}
}

// Stat describes "/" as a directory and size names as read-only files.
func (fsys *FS) Stat(ctx context.Context, name string) (dsi.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return dsi.FileInfo{}, err
	}
	if isRoot(name) {
		return dsi.FileInfo{Name: "/", Mode: fs.ModeDir | 0o755, ModTime: fsys.start, UID: -1, GID: -1}, nil
	}
	size, ok := sizeOf(name)
	if !ok {
		return dsi.FileInfo{}, pathError("stat", name, dsi.ErrNotExist)
	}
	return dsi.FileInfo{
		Name:    path.Base(path.Clean("/" + name)),
		Size:    size,
		Mode:    0o444,
		ModTime: fsys.start,
		UID:     -1,
		GID:     -1,
	}, nil
}

// ReadDir lists "/" as empty.
func (fsys *FS) ReadDir(ctx context.Context, name string) ([]dsi.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if isRoot(name) {
		return []dsi.FileInfo{}, nil
	}
	if _, ok := sizeOf(name); ok {
		return nil, pathError("readdir", name, dsi.ErrNotDir)
	}
	return nil, pathError("readdir", name, dsi.ErrNotExist)
}

// Open opens a size name as that many zero bytes.
func (fsys *FS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if isRoot(name) {
		return nil, pathError("open", name, dsi.ErrIsDir)
	}
	size, ok := sizeOf(name)
	if !ok {
		return nil, pathError("open", name, dsi.ErrNotExist)
	}
	return &Reader{size: size}, nil
}

// Create returns a writer that discards its data, for any name but "/".
func (fsys *FS) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if isRoot(name) {
		return nil, pathError("create", name, dsi.ErrIsDir)
	}
	return &Writer{fsys: fsys}, nil
}

// Mkdir does nothing and succeeds.
func (fsys *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return ctx.Err()
}

// Remove succeeds for size names (there is nothing to remove); "/" gives
// [dsi.ErrIsDir] and other names [dsi.ErrNotExist].
func (fsys *FS) Remove(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if isRoot(name) {
		return pathError("remove", name, dsi.ErrIsDir)
	}
	if _, ok := sizeOf(name); !ok {
		return pathError("remove", name, dsi.ErrNotExist)
	}
	return nil
}

// Rmdir is not supported.
func (fsys *FS) Rmdir(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return pathError("rmdir", name, dsi.ErrNotSupported)
}

// WritesInPlace reports true: nothing is kept to rename.
func (fsys *FS) WritesInPlace() bool { return true }

// Rename is not supported.
func (fsys *FS) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return pathError("rename", from, dsi.ErrNotSupported)
}

// Reader reads zeros. It is safe for concurrent use.
type Reader struct {
	size int64 // immutable
}

// ReadAt fills p with zeros, up to the size.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathError("read", "", dsi.ErrInvalid)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	n := len(p)
	if rest := r.size - off; int64(n) > rest {
		n = int(rest)
	}
	clear(p[:n])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Size returns the size named by the path.
func (r *Reader) Size() int64 { return r.size }

// Close does nothing.
func (r *Reader) Close() error { return nil }

// WriteRangeTo writes n zero bytes to w from a shared buffer, or fewer
// followed by io.ErrUnexpectedEOF when off+n passes the size.
func (r *Reader) WriteRangeTo(w io.Writer, off, n int64) (int64, error) {
	if off < 0 || n < 0 {
		return 0, pathError("read", "", dsi.ErrInvalid)
	}
	want := n
	if avail := max(r.size-off, 0); want > avail {
		want = avail
	}
	var done int64
	for done < want {
		m, err := w.Write(zeros[:min(want-done, bufSize)])
		done += int64(m)
		if err != nil {
			return done, err
		}
		if m == 0 {
			return done, io.ErrShortWrite
		}
	}
	if done < n {
		return done, io.ErrUnexpectedEOF
	}
	return done, nil
}

// Writer discards what it is given and counts it. It is safe for
// concurrent use.
type Writer struct {
	fsys *FS // immutable
}

// WriteAt discards p.
func (w *Writer) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathError("write", "", dsi.ErrInvalid)
	}
	w.fsys.written.Add(int64(len(p)))
	return len(p), nil
}

// Close does nothing.
func (w *Writer) Close() error { return nil }

// ReadRangeFrom reads and discards n bytes from r (n < 0: until io.EOF)
// through a pooled buffer.
func (w *Writer) ReadRangeFrom(r io.Reader, off, n int64) (int64, error) {
	if off < 0 {
		return 0, pathError("write", "", dsi.ErrInvalid)
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var done int64
	defer func() { w.fsys.written.Add(done) }()
	for n < 0 || done < n {
		chunk := int64(len(buf))
		if n >= 0 {
			chunk = min(chunk, n-done)
		}
		m, err := r.Read(buf[:chunk])
		done += int64(m)
		if err == io.EOF {
			if n >= 0 && done < n {
				return done, io.ErrUnexpectedEOF
			}
			return done, nil
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// Interface guards.
var (
	_ dsi.Storage         = (*FS)(nil)
	_ dsi.Reader          = (*Reader)(nil)
	_ dsi.RangeWriterTo   = (*Reader)(nil)
	_ dsi.Writer          = (*Writer)(nil)
	_ dsi.RangeReaderFrom = (*Writer)(nil)
)
