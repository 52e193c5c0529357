package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
)

func init() {
	register(&command{
		name:    "cp",
		summary: "copy a file between GridFTP/FTP servers, local files and stdin/stdout",
		usage:   "[flags] SRC DST",
		run:     runCp,
	})
}

const cpHelp = `
SRC and DST are each one of
  ftp://[user[:password]@]host[:port]/path   a file on a server (port 21 by
                                             default; /~/path is relative to
                                             the login directory)
  file:///abs/path or a plain path           a local file
  -                                          standard input or output
If DST is an existing local directory or ends in "/", SRC's base name is
appended. Credentials come from the URL, else from ~/.netrc ($NETRC), else
the login is anonymous.

A download never leaves a partial file that looks complete: a new file is
removed on failure, and an existing file is replaced only when the whole
file has arrived. With -off/-len the destination is written at the same
offset (like globus-url-copy), in place.

Server to server copies are not third-party transfers yet: the bytes are
streamed through this client over two connections.
`

// cpFlags are the flags of ferry cp.
type cpFlags struct {
	active  bool
	verbose bool
	quiet   bool
	off     int64
	length  int64
}

func runCp(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["cp"], e)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), cpHelp) }
	var f cpFlags
	fs.BoolVar(&f.active, "active", false, "active data connections: the client listens (EPRT/PORT)")
	fs.BoolVar(&f.verbose, "v", false, "print the bytes copied and the rate to stderr")
	fs.BoolVar(&f.quiet, "q", false, "print nothing but errors (overrides -v)")
	fs.Int64Var(&f.off, "off", 0, "copy from this byte offset of SRC, to the same offset of DST")
	fs.Int64Var(&f.length, "len", -1, "copy at most this many bytes (-1: to the end)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want SRC DST")
	}
	if f.off < 0 {
		return usagef("-off must not be negative")
	}
	if f.length == 0 || f.length < -1 {
		return usagef("-len must be positive (or -1 for all)")
	}
	src, err := parseLocation(fs.Arg(0))
	if err != nil {
		return usagef("%v", err)
	}
	dst, err := parseLocation(fs.Arg(1))
	if err != nil {
		return usagef("%v", err)
	}
	if err := resolveDestination(src, &dst); err != nil {
		return err
	}
	c := &copier{env: e, flags: f, opts: clientOptions{active: f.active}}
	start := time.Now()
	n, err := c.copy(ctx, src, dst)
	if err != nil {
		return err
	}
	if f.verbose && !f.quiet {
		d := time.Since(start)
		fmt.Fprintf(e.stderr, "%s -> %s: %d bytes in %v (%s/s)\n", src, dst, n, d.Round(time.Millisecond), humanBytes(float64(n)/max(d.Seconds(), 1e-6)))
	}
	return nil
}

// resolveDestination appends SRC's base name to a destination that is a
// directory: an existing local directory, or any path ending in "/".
func resolveDestination(src location, dst *location) error {
	var isDir bool
	switch dst.kind {
	case locLocal:
		isDir = strings.HasSuffix(dst.path, "/") || strings.HasSuffix(dst.path, string(filepath.Separator))
		if fi, err := os.Stat(dst.path); err == nil && fi.IsDir() {
			isDir = true
		}
	case locRemote:
		isDir = strings.HasSuffix(dst.path, "/")
	}
	if !isDir {
		return nil
	}
	var base string
	switch src.kind {
	case locLocal:
		base = filepath.Base(src.path)
	case locRemote:
		base = path.Base(src.path)
	}
	if base == "" || base == "." || base == "/" || base == ".." || base == string(filepath.Separator) {
		return usagef("%s is a directory; name the destination file", dst)
	}
	switch dst.kind {
	case locLocal:
		dst.path = filepath.Join(dst.path, base)
	case locRemote:
		dst.path += base
	}
	dst.display = strings.TrimSuffix(dst.display, "/") + "/" + base
	return nil
}

// copier runs one ferry cp.
type copier struct {
	env   *env
	flags cpFlags
	opts  clientOptions
}

// limit returns the RetrieveOptions.Length / io limit of the flags: 0 for
// "to the end".
func (c *copier) limit() int64 { return max(c.flags.length, 0) }

func (c *copier) copy(ctx context.Context, src, dst location) (int64, error) {
	switch {
	case src.kind == locRemote && dst.kind == locRemote:
		return c.remoteToRemote(ctx, src, dst)
	case src.kind == locRemote:
		return c.download(ctx, src, dst)
	case dst.kind == locRemote:
		return c.upload(ctx, src, dst)
	default:
		return c.localCopy(ctx, src, dst)
	}
}

// openSource opens a local or standard-input source, positioned at -off
// and limited to -len. size is the number of bytes it will give, or -1.
// An *os.File stays an *os.File (or an *io.LimitedReader of one), so that
// the copy can use sendfile or copy_file_range.
func (c *copier) openSource(src location) (r io.Reader, size int64, done func(), err error) {
	off, n := c.flags.off, c.limit()
	if src.kind == locStdio {
		if off > 0 {
			if _, err := io.CopyN(io.Discard, c.env.stdin, off); err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, nil, &opError{what: "read standard input", err: err}
			}
		}
		r = c.env.stdin
		if n > 0 {
			r = &io.LimitedReader{R: r, N: n}
		}
		return r, -1, func() {}, nil
	}
	f, err := os.Open(src.path)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = fmt.Errorf("%s is a directory", src.path)
	}
	if err == nil && off > 0 {
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	size = -1
	if fi.Mode().IsRegular() {
		size = max(fi.Size()-off, 0)
		if n > 0 {
			size = min(size, n)
		}
	}
	r = f
	if n > 0 {
		r = &io.LimitedReader{R: f, N: n}
	}
	return r, size, func() { f.Close() }, nil
}

// localCopy copies between local files and standard input and output.
func (c *copier) localCopy(ctx context.Context, src, dst location) (int64, error) {
	r, _, done, err := c.openSource(src)
	if err != nil {
		return 0, err
	}
	defer done()
	sink, err := c.openSink(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(sink.w, ctxReader{ctx, r})
	if err == nil {
		err = sink.commit()
	}
	if err != nil {
		sink.abort()
		return n, &opError{what: fmt.Sprintf("copy %s to %s", src, dst), err: err}
	}
	return n, nil
}

// ctxReader stops a local copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// upload stores a local file or standard input on a server.
func (c *copier) upload(ctx context.Context, src, dst location) (int64, error) {
	r, size, done, err := c.openSource(src)
	if err != nil {
		return 0, err
	}
	defer done()
	conn, err := connect(ctx, dst, c.opts)
	if err != nil {
		return 0, err
	}
	defer hangUp(ctx, conn)
	n, err := conn.Store(ctx, dst.path, r, &client.StoreOptions{Size: size, Offset: c.flags.off})
	if err != nil {
		return n, &opError{what: "upload to " + dst.String(), err: err}
	}
	return n, nil
}

// download retrieves a file from a server into a local file or standard
// output.
func (c *copier) download(ctx context.Context, src, dst location) (int64, error) {
	conn, err := connect(ctx, src, c.opts)
	if err != nil {
		return 0, err
	}
	defer hangUp(ctx, conn)
	sink, err := c.openSink(dst)
	if err != nil {
		return 0, err
	}
	n, err := conn.Retrieve(ctx, src.path, sink.w, &client.RetrieveOptions{Offset: c.flags.off, Length: c.limit()})
	if err == nil {
		if err = sink.commit(); err != nil {
			err = &opError{what: "write " + dst.String(), err: err}
		}
	} else {
		err = &opError{what: "download " + src.String(), err: err}
	}
	if err != nil {
		sink.abort()
		return n, err
	}
	return n, nil
}

// remoteToRemote streams a file from one server to another through this
// client: RETR on one connection feeds STOR on the other through a pipe.
func (c *copier) remoteToRemote(ctx context.Context, src, dst location) (int64, error) {
	sconn, err := connect(ctx, src, c.opts)
	if err != nil {
		return 0, err
	}
	defer hangUp(ctx, sconn)
	dconn, err := connect(ctx, dst, c.opts)
	if err != nil {
		return 0, err
	}
	defer hangUp(ctx, dconn)

	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := sconn.Retrieve(tctx, src.path, pw, &client.RetrieveOptions{Offset: c.flags.off, Length: c.limit()})
		if err != nil {
			err = &opError{what: "download " + src.String(), err: err}
			cancel(err)
		}
		// A failed download must not look like the end of the file.
		pw.CloseWithError(err)
	})
	n, err := dconn.Store(tctx, dst.path, pr, &client.StoreOptions{Offset: c.flags.off})
	if err != nil {
		err = &opError{what: "upload to " + dst.String(), err: err}
		cancel(err)
	}
	pr.CloseWithError(errors.New("upload ended"))
	wg.Wait()
	switch {
	case ctx.Err() != nil:
		return n, context.Cause(ctx)
	case context.Cause(tctx) != nil && !errors.Is(context.Cause(tctx), context.Canceled):
		// The first failure; the other side's error is its consequence.
		return n, context.Cause(tctx)
	}
	return n, nil
}

// sink is a local destination being written.
type sink struct {
	w      io.Writer
	f      *os.File // nil for standard output
	temp   string   // a temporary file renamed to final by commit
	final  string
	remove bool // remove the file on abort (we created it)
}

// openSink opens a local destination or standard output. A new file is
// created (and removed by abort); an existing regular file is replaced by
// a temporary file renamed over it by commit, unless -off/-len ask for an
// update in place; other existing files (devices, FIFOs) are written
// directly.
func (c *copier) openSink(dst location) (*sink, error) {
	if dst.kind == locStdio {
		return &sink{w: c.env.stdout}, nil
	}
	partial := c.flags.off > 0 || c.flags.length > 0
	open := func(flags int) (*sink, error) {
		f, err := os.OpenFile(dst.path, flags, 0o666)
		if err != nil {
			return nil, err
		}
		s := &sink{w: f, f: f, remove: flags&os.O_EXCL != 0}
		if partial && c.flags.off > 0 {
			if _, err := f.Seek(c.flags.off, io.SeekStart); err != nil {
				s.abort()
				return nil, err
			}
		}
		return s, nil
	}
	fi, err := os.Stat(dst.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return open(os.O_WRONLY | os.O_CREATE | os.O_EXCL)
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", dst.path)
	case !fi.Mode().IsRegular() || partial:
		return open(os.O_WRONLY)
	}
	dir, base := filepath.Split(dst.path)
	f, err := os.CreateTemp(dir, "."+base+".ferry-*")
	if err != nil {
		return nil, err
	}
	s := &sink{w: f, f: f, temp: f.Name(), final: dst.path, remove: true}
	if err := f.Chmod(fi.Mode().Perm()); err != nil {
		s.abort()
		return nil, err
	}
	return s, nil
}

// commit finishes a successful copy.
func (s *sink) commit() error {
	if s.f == nil {
		return nil
	}
	var err error
	if s.temp != "" {
		err = s.f.Sync()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && s.temp != "" {
		err = os.Rename(s.temp, s.final)
	}
	if err != nil {
		if s.remove {
			os.Remove(s.f.Name())
		}
		return err
	}
	return nil
}

// abort drops a failed copy: a file we created is removed.
func (s *sink) abort() {
	if s.f == nil {
		return
	}
	s.f.Close()
	if s.remove {
		os.Remove(s.f.Name())
	}
}

// humanBytes formats a byte count (or rate) with a binary unit.
func humanBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
