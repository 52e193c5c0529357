package posix

// Direct IO for uploads (issue 17).
//
// An upload written through the page cache costs a copy into freshly
// allocated page-cache folios, and on a virtual machine whose guest
// memory is faulted in by the host on first touch that copy, not the
// disk, bounds the rate. With direct IO on, a Writer opens a second
// descriptor of its file with O_DIRECT and writes through it every part
// of a write whose file offset, length and buffer address are aligned
// to the file system's direct-IO alignment (at least a page); the rest
// (a block's unaligned head and tail, the file's last bytes) goes
// through the ordinary descriptor. Since a direct write covers whole
// aligned pages and the writes of one upload never cover the same bytes,
// no page is ever written both ways, and the file's size is what the
// highest write made it, whichever descriptor wrote it.
//
// A Writer decides once whether its file takes direct IO: on a system
// without O_DIRECT, a file system that refuses it (statx reports no
// alignment, the open fails, or the first direct write fails with
// EINVAL) it writes everything through the page cache, silently.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// DirectIO says when a Writer bypasses the page cache (O_DIRECT).
type DirectIO int

const (
	// DirectIOOff always writes through the page cache (the default
	// until the bench says when direct writes pay on a disk: see
	// DirectIOThreshold).
	DirectIOOff DirectIO = iota
	// DirectIOAuto writes uploads directly once they are large: when the
	// size announced at Create (ALLO) or the bytes written so far reach
	// DirectIOThreshold.
	DirectIOAuto
	// DirectIOOn writes every upload directly when the file system can.
	DirectIOOn
)

// DirectIOThreshold is the upload size from which DirectIOAuto writes
// directly. Small files gain nothing (their pages are few, and a
// direct write waits for the disk); to be tuned by measurement.
const DirectIOThreshold = 256 << 20

// String returns "auto", "on" or "off".
func (d DirectIO) String() string {
	switch d {
	case DirectIOAuto:
		return "auto"
	case DirectIOOn:
		return "on"
	case DirectIOOff:
		return "off"
	}
	return fmt.Sprintf("DirectIO(%d)", int(d))
}

// ParseDirectIO parses "auto", "on" or "off".
func ParseDirectIO(s string) (DirectIO, error) {
	for _, d := range []DirectIO{DirectIOOff, DirectIOAuto, DirectIOOn} {
		if s == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("posix: direct IO %q: want auto, on or off", s)
}

// Options tunes a back-end made by NewWithOptions. The zero value is
// what New uses.
type Options struct {
	// DirectIO says when uploads bypass the page cache; the zero value
	// is DirectIOOff.
	DirectIO DirectIO
}

// minAlign is the least alignment of a direct write: a page, so that a
// direct write never shares a page with a buffered one.
var minAlign = int64(max(4096, os.Getpagesize()))

// minDirectWrite is the least run written directly: a direct write
// waits for the disk, and below this a run of small ones (small MODE E
// blocks) would be slower than the page cache. To be tuned by
// measurement.
const minDirectWrite = 128 << 10

// dioBufSize is the size of the aligned buffers ReadRangeFrom reads a
// socket into when writing directly: a default MODE E block (1 MiB)
// and then some, so that a block is one direct write.
const dioBufSize = 4 << 20

// dioPool holds dioBufSize buffers whose first byte is aligned to
// minAlign (direct IO alignments larger than a page are not used).
var dioPool = sync.Pool{New: func() any { b := alignedBuf(dioBufSize, int(minAlign)); return &b }}

// alignedBuf returns n bytes starting at an address that is a multiple
// of align.
func alignedBuf(n, align int) []byte {
	b := make([]byte, n+align)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align)); r != 0 {
		skip = align - r
	}
	return b[skip : skip+n : skip+n]
}

// directBytes counts the bytes written with O_DIRECT.
var directBytes atomic.Int64

// DirectBytes returns how many bytes this process has written into
// files with O_DIRECT. It only grows; tests and metrics read it to see
// whether the direct path was taken.
func DirectBytes() int64 { return directBytes.Load() }

// Direct IO states of a Writer.
const (
	dioUndecided   = iota // not tried yet
	dioActive             // fd is open and used
	dioUnavailable        // never: off, refused or failed
)

// direct is a Writer's direct-IO side.
type direct struct {
	mode      DirectIO
	announced int64        // the size given at Create, or -1
	written   atomic.Int64 // bytes handed to the Writer so far (auto)
	state     atomic.Int32 // dioUndecided, dioActive or dioUnavailable

	mu    sync.Mutex // guards the decision (enable)
	f     *os.File   // the O_DIRECT descriptor; set before state is dioActive
	align int64      // immutable once state is dioActive
}

// newDirect returns the direct-IO side of a Writer for a file whose
// size is announced to be size (-1: unknown), or nil when mode is
// DirectIOOff.
func newDirect(mode DirectIO, size int64) *direct {
	if mode == DirectIOOff || !directSupported {
		return nil
	}
	return &direct{mode: mode, announced: size}
}

// use returns the direct side when a write of n bytes is to use it,
// opening the O_DIRECT descriptor of f on the first such write; nil
// means all through the page cache.
func (d *direct) use(f *os.File, n int64) *direct {
	if d == nil {
		return nil
	}
	switch d.state.Load() {
	case dioActive:
		return d
	case dioUnavailable:
		return nil
	}
	total := d.written.Add(n)
	if d.mode == DirectIOAuto && d.announced < DirectIOThreshold && total < DirectIOThreshold {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state.Load() == dioUndecided {
		df, align, err := openDirect(f)
		if err != nil {
			d.state.Store(dioUnavailable)
			return nil
		}
		d.f, d.align = df, align
		d.state.Store(dioActive)
	}
	if d.state.Load() != dioActive {
		return nil
	}
	return d
}

// active reports whether writes go direct (tests).
func (d *direct) active() bool { return d != nil && d.state.Load() == dioActive }

// close closes the O_DIRECT descriptor, if one was opened.
func (d *direct) close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}

// splitAligned splits a write of n bytes at file offset off, from a
// buffer starting at address addr, into a head and a tail that go
// through the page cache and a middle, mid bytes from head on, that goes
// direct: the largest run starting and ending at multiples of align.
// mid is 0 when the buffer's address at head is not aligned too.
func splitAligned(off int64, n int, addr uintptr, align int64) (head, mid int) {
	head = int((align - off%align) % align)
	if head >= n {
		return n, 0
	}
	if (addr+uintptr(head))%uintptr(align) != 0 {
		return n, 0
	}
	mid = int(int64(n-head) / align * align)
	if mid == 0 {
		return n, 0
	}
	return head, mid
}

// writeDirect writes p at off, its aligned middle through the O_DIRECT
// descriptor and the rest through f. A direct write the file system
// refuses (EINVAL) turns direct IO off for the Writer and is written
// through f instead.
func (d *direct) writeDirect(f *os.File, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	head, mid := splitAligned(off, len(p), uintptr(unsafe.Pointer(&p[0])), d.align)
	if mid < minDirectWrite {
		return f.WriteAt(p, off)
	}
	done := 0
	if head > 0 {
		m, err := f.WriteAt(p[:head], off)
		done += m
		if err != nil {
			return done, err
		}
	}
	m, err := d.f.WriteAt(p[head:head+mid], off+int64(head))
	directBytes.Add(int64(m))
	done += m
	if err != nil {
		if !errors.Is(err, syscall.EINVAL) {
			return done, err
		}
		// Refused after all: everything through the page cache from
		// now on; this write's rest too.
		d.state.Store(dioUnavailable)
		m, err := f.WriteAt(p[done:head+mid], off+int64(done))
		done += m
		if err != nil {
			return done, err
		}
	}
	if done < len(p) {
		m, err := f.WriteAt(p[done:], off+int64(done))
		done += m
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// readDirect is ReadRangeFrom with direct IO: it reads r into pooled
// aligned buffers, placed so that file offsets aligned to d.align land at
// aligned addresses, and writes each buffer with writeDirect. No
// splice: spliced pages sit at any offset, and they are what costs (they
// go through the page cache).
func (d *direct) readDirect(f *os.File, r io.Reader, off, n int64) (int64, error) {
	bp := dioPool.Get().(*[]byte)
	defer dioPool.Put(bp)
	buf := *bp
	var done int64
	for n < 0 || done < n {
		pos := off + done
		head := int(pos % d.align)
		chunk := int64(len(buf) - head)
		if n >= 0 && n-done < chunk {
			chunk = n - done
		}
		m, err := io.ReadFull(r, buf[head:head+int(chunk)])
		if m > 0 {
			if _, werr := d.writeDirect(f, buf[head:head+m], pos); werr != nil {
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
