package dpm

// An ERET of tar or cat alone needs no temporary file: the output's
// layout follows from the directory walk (stat only), so it is laid out
// ahead as a list of segments and made on demand, at any offset, by
// ReadAt. Its size is then exact, and MODE E with parallel streams, REST
// ranges and restart markers work as for a plain file.
//
// A tar segment is one entry: its header (512 bytes, more with a PAX
// record for a long name, encoded by archive/tar exactly as tarPack's
// writer encodes it), the file's data, and zeros up to the next 512-byte
// boundary; after the last, the 1024 zero bytes that end an archive. A
// cat segment is a file's data alone.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// ErrChanged: a file changed (size or modification time) between the
// walk that laid out a module's output and the reading of its data.
var ErrChanged = errors.New("dpm: a file changed while it was being sent")

// segment is one piece of a Layout: an entry's header (tar), then size
// bytes of the file at name, then zeros up to end.
type segment struct {
	off     int64  // where it starts in the output
	end     int64  // where it ends: after its data, padded (tar)
	hdrLen  int64  // header bytes (0: none)
	name    string // the file in the storage ("": a directory, no data)
	tarName string // the entry's name in the archive
	size    int64
	mode    uint32 // permission bits
	mtime   time.Time
	dir     bool
}

// dataEnd is where the segment's data ends in the output.
func (s *segment) dataEnd() int64 { return s.off + s.hdrLen + s.size }

// header is the segment's tar header, as tarPack writes it.
func (s *segment) header() *tar.Header {
	if s.dir {
		return &tar.Header{Typeflag: tar.TypeDir, Name: s.tarName + "/", Mode: int64(s.mode), ModTime: tarTime(s.mtime)}
	}
	return &tar.Header{Typeflag: tar.TypeReg, Name: s.tarName, Size: s.size, Mode: int64(s.mode), ModTime: tarTime(s.mtime)}
}

// headerBytes encodes the segment's header.
func (s *segment) headerBytes() ([]byte, error) {
	var b bytes.Buffer
	if err := tar.NewWriter(&b).WriteHeader(s.header()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Layout is a module's ERET output laid out ahead of reading: a
// dsi.Reader of exact size whose bytes are made on demand from the
// storage. ReadAt may be called concurrently. Its reads are not
// cancelled with the context it was made with: whoever reads stops.
type Layout struct {
	ctx  context.Context // for the storage calls of ReadAt; never cancelled
	st   dsi.Storage
	segs []segment
	size int64

	mu      sync.Mutex
	changed error // the first ErrChanged seen; guarded by mu
}

var _ dsi.Reader = (*Layout)(nil)

// Size is the output's size.
func (l *Layout) Size() int64 { return l.size }

// Close releases nothing: files are opened per read.
func (l *Layout) Close() error { return nil }

// Changed reports the first file found changed since the layout was
// made (an error wrapping ErrChanged), or nil.
func (l *Layout) Changed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

var zeros [tarBlock * 2]byte

// ReadAt fills p with the output's bytes at off.
func (l *Layout) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("dpm: read at %d: %w", off, dsi.ErrInvalid)
	}
	n := 0
	// The segment holding off: the last one starting at or before it.
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].off > off }) - 1
	for n < len(p) && off < l.size {
		for i+1 < len(l.segs) && l.segs[i+1].off <= off {
			i++
		}
		var k int
		var err error
		if i < 0 || off >= l.segs[i].end {
			// The archive's end blocks.
			k = copy(p[n:], zeros[:min(int64(len(zeros)), l.size-off)])
		} else {
			s := &l.segs[i]
			switch rel := off - s.off; {
			case rel < s.hdrLen:
				var h []byte
				if h, err = s.headerBytes(); err == nil && int64(len(h)) != s.hdrLen {
					err = fmt.Errorf("dpm: the header of %q changed length", s.tarName)
				}
				if err == nil {
					k = copy(p[n:], h[rel:])
				}
			case off < s.dataEnd():
				want := min(int64(len(p)-n), s.dataEnd()-off)
				k, err = l.readData(s, p[n:n+int(want)], rel-s.hdrLen)
			default:
				// Padding to the block's end.
				k = copy(p[n:], zeros[:min(int64(len(zeros)), s.end-off)])
			}
		}
		n += k
		off += int64(k)
		if err != nil {
			return n, err
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readData reads len(p) bytes of s's file at off, checking that the file
// is still as the layout saw it.
func (l *Layout) readData(s *segment, p []byte, off int64) (int, error) {
	fi, err := l.st.Stat(l.ctx, s.name)
	if err != nil {
		return 0, err
	}
	// Seconds: a listing and a stat may not give the same precision
	// (S3's ListObjects and HEAD), and a tar header keeps seconds.
	if fi.Size != s.size || !fi.ModTime.Truncate(time.Second).Equal(s.mtime.Truncate(time.Second)) {
		return 0, l.change(s, fi.Size, fi.ModTime)
	}
	r, err := l.st.Open(l.ctx, s.name)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if r.Size() != s.size {
		return 0, l.change(s, r.Size(), fi.ModTime)
	}
	n, err := r.ReadAt(p, off)
	if n < len(p) {
		if err == nil || err == io.EOF {
			return n, l.change(s, off+int64(n), fi.ModTime)
		}
		return n, err
	}
	return n, nil
}

// change records and returns that s's file is now size bytes, modified
// at mtime.
func (l *Layout) change(s *segment, size int64, mtime time.Time) error {
	err := fmt.Errorf("%w: %s is %d bytes, modified %s; it was %d bytes, modified %s, when the transfer began",
		ErrChanged, s.name, size, mtime.UTC().Format(time.RFC3339Nano), s.size, s.mtime.UTC().Format(time.RFC3339Nano))
	l.mu.Lock()
	if l.changed == nil {
		l.changed = err
	}
	l.mu.Unlock()
	return err
}

// layoutBuilder adds segments one after the other.
type layoutBuilder struct {
	l   *Layout
	tar bool
}

func (b *layoutBuilder) add(s segment) error {
	s.off = b.l.size
	if b.tar {
		h, err := s.headerBytes()
		if err != nil {
			return err
		}
		s.hdrLen = int64(len(h))
		s.end = s.off + s.hdrLen + (s.size+tarBlock-1)/tarBlock*tarBlock
	} else {
		s.end = s.off + s.size
	}
	b.l.size = s.end
	b.l.segs = append(b.l.segs, s)
	return nil
}

// tarLayout lays out what tarPack writes for env.Path.
func tarLayout(ctx context.Context, env Env) (*Layout, error) {
	b := &layoutBuilder{l: &Layout{ctx: context.WithoutCancel(ctx), st: env.Storage}, tar: true}
	fi, err := env.Storage.Stat(ctx, env.Path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		err = tarDirLayout(ctx, b, env.Storage, env.Path, "")
	} else if err = notRegular(env.Path, fi); err == nil {
		err = b.add(segment{name: env.Path, tarName: path.Base(env.Path), size: fi.Size, mode: uint32(fi.Mode.Perm()), mtime: fi.ModTime})
	}
	if err != nil {
		return nil, err
	}
	b.l.size += 2 * tarBlock
	return b.l, nil
}

// tarDirLayout walks dir as tarDir does.
func tarDirLayout(ctx context.Context, b *layoutBuilder, st dsi.Storage, dir, rel string) error {
	list, err := st.ReadDir(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Link != "" || e.Mode&fs.ModeSymlink != 0 {
			continue
		}
		name, full := path.Join(rel, e.Name), path.Join(dir, e.Name)
		switch {
		case e.IsDir():
			if err := b.add(segment{tarName: name, mode: uint32(e.Mode.Perm()), mtime: e.ModTime, dir: true}); err != nil {
				return err
			}
			if err := tarDirLayout(ctx, b, st, full, name); err != nil {
				return err
			}
		case e.Mode.IsRegular():
			if err := b.add(segment{name: full, tarName: name, size: e.Size, mode: uint32(e.Mode.Perm()), mtime: e.ModTime}); err != nil {
				return err
			}
		}
	}
	return nil
}

// catLayout lays out what catPack writes for env.Path and env.Params.
func catLayout(ctx context.Context, env Env) (*Layout, error) {
	names, err := catNames(ctx, env)
	if err != nil {
		return nil, err
	}
	b := &layoutBuilder{l: &Layout{ctx: context.WithoutCancel(ctx), st: env.Storage}}
	for _, n := range names {
		fi := n.fi
		if fi == nil {
			st, err := env.Storage.Stat(ctx, n.name)
			if err != nil {
				return nil, err
			}
			if st.IsDir() {
				return nil, fmt.Errorf("dpm: cat: %s: %w", n.name, dsi.ErrIsDir)
			}
			fi = &st
		}
		if err := notRegular(n.name, *fi); err != nil {
			return nil, err
		}
		if err := b.add(segment{name: n.name, size: fi.Size, mtime: fi.ModTime}); err != nil {
			return nil, err
		}
	}
	return b.l, nil
}

// notRegular refuses, as Pack's open does, a file named by the command
// that is no regular file (a FIFO, socket or device): laid out from its
// stat alone it would go out as an empty regular file.
func notRegular(name string, fi dsi.FileInfo) error {
	if !fi.Mode.IsRegular() {
		return fmt.Errorf("dpm: %s: not a regular file: %w", name, dsi.ErrInvalid)
	}
	return nil
}
