// Package dsi is Ferry's Data Storage Interface: the one contract between the
// GridFTP machinery (protocol interpreter and data movers) and whatever holds
// the bytes.
//
// The shape follows the Globus DSI (GCT gridftp/server/src/globus_gridftp_server.h):
// storage is addressed by offset, because extended block mode (MODE E,
// GFD.020 §3.4) delivers blocks out of order over many streams, and every
// blocking call takes a context first so that ABOR, QUIT and shutdown reach
// the back-end.
//
// Paths handed to a Storage are always clean, slash-separated and absolute
// within the storage ("/", "/a/b.dat"); the caller (the PI) has already
// resolved "." and ".." against the session's working directory. A back-end
// must still never let a path or a symbolic link reach outside its own root,
// and one with symbolic links implements [Subber], so that a home made with
// [Sub] confines links as well as names.
//
// The required interface is small; optional capabilities are one-method
// interfaces that callers discover with a type assertion (see Chmoder,
// Chtimeser, Subber, RangeWriterTo, RangeReaderFrom).
//
// Errors: back-ends return (or wrap) the sentinels below so that one place in
// the PI can map them to FTP reply codes.
package dsi

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"
)

// Sentinel errors. Back-ends wrap these (errors.Is must hold); ErrNotExist,
// ErrExist and ErrPermission are the io/fs sentinels so that os errors match.
var (
	ErrNotExist     = fs.ErrNotExist
	ErrExist        = fs.ErrExist
	ErrPermission   = fs.ErrPermission
	ErrIsDir        = errors.New("dsi: is a directory")
	ErrNotDir       = errors.New("dsi: not a directory")
	ErrNotEmpty     = errors.New("dsi: directory not empty")
	ErrInvalid      = errors.New("dsi: invalid argument")
	ErrNoSpace      = errors.New("dsi: no space left")
	ErrReadOnly     = errors.New("dsi: read-only storage")
	ErrNotSupported = errors.New("dsi: operation not supported")
)

// FileInfo describes one entry. Stat follows symbolic links; the Link field
// then holds the link's target as written in the link, and Lstat-like
// information is not available through Stat.
type FileInfo struct {
	// Name is the entry's base name ("/" for the root).
	Name string
	// Size in bytes; for directories whatever the back-end reports.
	Size int64
	// Mode holds the type bits (fs.ModeDir, fs.ModeSymlink) and permissions.
	Mode fs.FileMode
	// ModTime is the modification time.
	ModTime time.Time
	// Owner and Group are names when known, else the numeric ids as text, else "".
	Owner, Group string
	// UID and GID are the numeric ids, or -1 when unknown.
	UID, GID int
	// Unique identifies the underlying object (GCT: "<hex dev>-<hex inode>"); "" when unknown.
	Unique string
	// Link is the target of a symbolic link when the entry was reached
	// through one (as listed by ReadDir or Stat of a link); "" otherwise.
	// A back-end leaves it empty when the target is an absolute path or
	// climbs out of the storage's root: such text describes the host, not
	// the storage.
	Link string
}

// IsDir reports whether the entry is a directory.
func (fi FileInfo) IsDir() bool { return fi.Mode.IsDir() }

// CreateOptions says how Create opens a file for writing.
type CreateOptions struct {
	// Truncate empties an existing file first (plain STOR). Without it an
	// existing file keeps its content and writes land at their offsets
	// (STOR after REST, ESTO, MODE E restart).
	Truncate bool
	// Size is the expected final size if known (ALLO), or -1. A back-end may
	// use it to preallocate; it must not rely on it.
	Size int64
	// Perm is the permission for a newly created file; 0 means 0644.
	Perm fs.FileMode
	// NoFollow refuses (ErrInvalid) a name whose last element is a
	// symbolic link, instead of writing where it points: for files the
	// server names itself (an upload's part file), which a local user
	// could otherwise plant as a link to someone else's file.
	NoFollow bool
}

// Storage is the required back-end interface. Implementations must be safe
// for concurrent use by many sessions.
type Storage interface {
	// Stat describes the entry at name, following symbolic links.
	Stat(ctx context.Context, name string) (FileInfo, error)
	// ReadDir lists the directory at name, sorted by name, without "." and "..".
	// Entries that are symbolic links describe their target (as Stat), with Link set;
	// a dangling link is listed with its own Lstat information and Mode&fs.ModeSymlink.
	ReadDir(ctx context.Context, name string) ([]FileInfo, error)
	// Open opens a file for reading. Opening a directory fails with ErrIsDir.
	Open(ctx context.Context, name string) (Reader, error)
	// Create opens (creating if needed) a file for writing at offsets.
	Create(ctx context.Context, name string, opts CreateOptions) (Writer, error)
	// Mkdir makes one directory; ErrExist if it exists, ErrNotExist if the parent is missing.
	Mkdir(ctx context.Context, name string, perm fs.FileMode) error
	// Remove deletes a file (or symbolic link); a directory gives ErrIsDir.
	Remove(ctx context.Context, name string) error
	// Rmdir deletes an empty directory; ErrNotEmpty otherwise, ErrNotDir for a file.
	Rmdir(ctx context.Context, name string) error
	// Rename moves from to to, replacing a file at to.
	Rename(ctx context.Context, from, to string) error
}

// Reader is an open file being read. ReadAt may be called concurrently from
// several goroutines (one per MODE E stream).
type Reader interface {
	io.ReaderAt
	io.Closer
	// Size is the file's size when it was opened.
	Size() int64
}

// Writer is an open file being written. WriteAt may be called concurrently
// with disjoint ranges. Close reports the first deferred error (a failed
// flush); a transfer is complete only if Close returned nil.
type Writer interface {
	io.WriterAt
	io.Closer
}

// Subber is an optional Storage capability, required of every back-end in
// which a name can lead somewhere its text does not say (symbolic links):
// Sub returns a Storage whose root is the directory dir and in which no
// name and no link resolves outside that directory. It fails when it
// cannot promise that: dir is missing, not a directory, or reached through
// a symbolic link. Use the function [Sub], which adds the rules every
// sub-tree shares, rather than calling the method directly.
type Subber interface {
	Sub(ctx context.Context, dir string) (Storage, error)
}

// InPlaceWriter is an optional Storage capability. A back-end that cannot
// rename (or that discards what it is given) reports true, and the server
// then writes uploads straight into their targets instead of into a part
// file renamed into place at the end.
type InPlaceWriter interface {
	WritesInPlace() bool
}

// WritesInPlace reports whether s is an InPlaceWriter that writes in place.
func WritesInPlace(s Storage) bool {
	w, ok := s.(InPlaceWriter)
	return ok && w.WritesInPlace()
}

// Chmoder is an optional Storage capability (SITE CHMOD).
type Chmoder interface {
	Chmod(ctx context.Context, name string, mode fs.FileMode) error
}

// Chtimeser is an optional Storage capability (MFMT, SITE UTIME).
type Chtimeser interface {
	Chtimes(ctx context.Context, name string, mtime time.Time) error
}

// RangeWriterTo is an optional Reader capability: write n bytes starting at
// off to w in the cheapest way the back-end knows (sendfile(2) from a file
// to a TCP socket, a shared zero page for the null back-end). It must be
// safe to call concurrently for different ranges. It returns the bytes
// written; fewer than n only with an error (io.ErrUnexpectedEOF when the
// file is shorter).
type RangeWriterTo interface {
	WriteRangeTo(w io.Writer, off, n int64) (int64, error)
}

// RangeReaderFrom is an optional Writer capability: read from r until n bytes
// have been read (n < 0: until io.EOF) and store them starting at off, in
// the cheapest way the back-end knows (splice(2) from a socket). Safe to call
// concurrently for disjoint ranges. A short read before n bytes is
// io.ErrUnexpectedEOF.
type RangeReaderFrom interface {
	ReadRangeFrom(r io.Reader, off, n int64) (int64, error)
}
