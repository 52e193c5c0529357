// Package reorder turns writes at offsets, arriving in any order from
// any number of goroutines (the blocks of a MODE E upload over parallel
// streams), into one in-order stream that a consumer reads while the
// data still arrives (an ESTO module chain unpacking a tar).
//
// A Buffer is the dsi.Writer the data channel writes into and the
// io.Reader the consumer reads from. A write never waits for the reader:
// a block at or near the read front is kept in memory, up to a bounded
// window; a block beyond the window (or any block once the window is
// full) goes to a temporary spill file and is read back from there when
// its turn comes. Whatever the order the sender chooses, no write can
// block on data that has not arrived, so the two sides cannot deadlock.
//
// The reader sees io.EOF only after Close (the data channel ended
// cleanly) and once every byte from 0 to the furthest one written was
// read: data with holes, or with overlapping writes, ends in an error
// instead. CloseWithError passes a receive failure on to the reader.
// CloseRead (the consumer gave up) turns later writes into no-ops, so
// that the data channel can still be drained to its end, and frees the
// memory and the spill file.
package reorder

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sync"

	"github.com/ferrygrid/ferry/dsi"
)

// DefaultWindow is the memory a Buffer keeps for data not yet read when
// Config.Window is 0.
const DefaultWindow = 32 << 20

// Buffers are taken in power-of-two sizes from minChunk to maxChunk; a
// longer write is kept as several pieces.
const (
	minShift = 14 // 16 KiB
	maxShift = 20 // 1 MiB
	minChunk = 1 << minShift
	maxChunk = 1 << maxShift
	classes  = maxShift - minShift + 1
)

// Each piece waiting for the reader costs about a hundred bytes of
// memory, whatever its size. A Buffer keeps at most basePieces of them
// plus one per minChunk bytes waiting, so that a peer sending tiny
// blocks at scattered offsets ahead of the read front cannot make it
// hold many times the memory the data took on the wire.
const basePieces = 1 << 16

// Errors.
var (
	// ErrOverlap: a write covers bytes already written (or already read).
	ErrOverlap = errors.New("reorder: data overlaps data already written")
	// ErrHoles: the writes ended (Close) with bytes missing before the
	// furthest one written.
	ErrHoles = errors.New("reorder: the data has holes")
	// ErrFragmented: too many small writes wait ahead of the read front.
	ErrFragmented = errors.New("reorder: too many small blocks ahead of the data read")
	// ErrClosed: a write after Close or CloseWithError, or a read after
	// CloseRead.
	ErrClosed = errors.New("reorder: closed")
)

// Config sets up a Buffer. The zero value works.
type Config struct {
	// Window bounds the memory kept for data written but not yet read;
	// 0 means DefaultWindow. What does not fit goes to the spill file.
	Window int64
	// Limit, when above 0, refuses (dsi.ErrInvalid) any byte at or past
	// this offset.
	Limit int64
	// Dir is where the spill file is made ("": os.TempDir), only once
	// something has to be spilled.
	Dir string
}

// piece is a run of written bytes not yet handed to the reader, kept in
// Buffer.pieces by its start.
type piece struct {
	end   int64
	buf   []byte // the bytes, or nil when they are in the spill file
	spill int64  // where they start in the spill file
}

// Buffer reassembles writes at offsets into an in-order stream. WriteAt
// may be called concurrently; Read by one goroutine at a time.
type Buffer struct {
	window, limit int64
	dir           string

	mu     sync.Mutex
	cond   sync.Cond         // on mu: a piece arrived at the front, or an end
	pieces map[int64]piece   // by start; guarded by mu
	front  int64             // where the next piece the reader takes starts; guarded by mu
	last   int64             // start of the memory piece written last (-1: none), to append to
	lastSp int64             // start of the spilled piece recorded last (-1: none), to extend
	held   int64             // bytes of buffers allocated (in pieces, in cur, or free)
	free   [classes][][]byte // buffers to reuse, by size class
	end    int64             // the end of the furthest write
	closed bool              // Close or CloseWithError was called
	werr   error             // CloseWithError's error
	rerr   error             // CloseRead's error: writes are dropped
	spill  *os.File          // made on first need; guarded by mu
	spillN int64             // bytes reserved in the spill file
	taken  int64             // bytes of all the writes kept (not dropped)

	// The reader's current piece, taken out of pieces; only Read uses
	// them (and CloseRead once Read can no longer run).
	cur    piece
	curPos int64 // bytes of cur already read
	curLen int64
	hasCur bool
}

// New makes a Buffer.
func New(cfg Config) *Buffer {
	b := &Buffer{window: cfg.Window, limit: cfg.Limit, dir: cfg.Dir, pieces: map[int64]piece{}, last: -1, lastSp: -1}
	if b.window <= 0 {
		b.window = DefaultWindow
	}
	b.cond.L = &b.mu
	return b
}

var _ dsi.Writer = (*Buffer)(nil)

// WriteAt stores p at offset off. It never waits for the reader. Once
// the reader is closed (CloseRead) it accepts p without keeping it.
func (b *Buffer) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || b.limit > 0 && (off > b.limit || int64(len(p)) > b.limit-off) {
		return 0, fmt.Errorf("reorder: data at %d passes the %d bytes allowed: %w", off, b.limit, dsi.ErrInvalid)
	}
	if len(p) == 0 {
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, ErrClosed
	}
	if b.rerr != nil {
		b.end = max(b.end, off+int64(len(p)))
		return len(p), nil
	}
	if off < b.front {
		return 0, fmt.Errorf("%w: %d bytes at %d, read up to %d", ErrOverlap, len(p), off, b.front)
	}
	// Writes that do not overlap add up to no more than the end of the
	// furthest one: more means some overlap, even when no two start at
	// the same offset. Refused now, so that a peer sending the same
	// range again and again at shifted offsets cannot grow the spill
	// file past the limit (or the memory kept past the window).
	if b.taken+int64(len(p)) > max(b.end, off+int64(len(p))) {
		return 0, fmt.Errorf("%w: %d bytes at %d, with %d bytes taken up to %d", ErrOverlap, len(p), off, b.taken, b.end)
	}
	if len(b.pieces) >= basePieces+int(min((b.taken-b.front)/minChunk, 1<<40)) {
		// dsi.ErrInvalid: refused for what the peer sent, as the limit.
		return 0, fmt.Errorf("%w (%d blocks hold %d bytes): %w", ErrFragmented, len(b.pieces), b.taken-b.front, dsi.ErrInvalid)
	}
	b.taken += int64(len(p))
	b.end = max(b.end, off+int64(len(p)))
	n := 0
	for n < len(p) {
		at := off + int64(n)
		rest := p[n:]
		if _, dup := b.pieces[at]; dup {
			return n, fmt.Errorf("%w: %d bytes at %d", ErrOverlap, len(rest), at)
		}
		// A write that continues the last one appends to its buffer
		// (stream mode writes what each socket read brings).
		if lp, ok := b.pieces[b.last]; ok && lp.buf != nil && lp.end == at && len(lp.buf) < cap(lp.buf) {
			k := copy(lp.buf[len(lp.buf):cap(lp.buf)], rest)
			lp.buf = lp.buf[:len(lp.buf)+k]
			lp.end += int64(k)
			b.pieces[b.last] = lp
			n += k
			continue
		}
		size := min(len(rest), maxChunk)
		if at+int64(size) <= b.front+b.window {
			if buf := b.alloc(size); buf != nil {
				copy(buf, rest[:size])
				b.pieces[at] = piece{end: at + int64(size), buf: buf}
				b.last = at
				n += size
				if at == b.front {
					b.cond.Signal()
				}
				continue
			}
		}
		// Beyond the window: the rest goes to the spill file, written
		// without holding the lock.
		if err := b.spillWrite(rest, at); err != nil {
			return n, err
		}
		n = len(p)
	}
	return n, nil
}

// spillWrite writes p, the data at offset at, to the spill file and
// records it as a piece. b.mu is held on entry and on return, not during
// the write.
func (b *Buffer) spillWrite(p []byte, at int64) error {
	if b.spill == nil {
		f, err := os.CreateTemp(b.dir, "ferry-reorder-*")
		if err != nil {
			return fmt.Errorf("reorder: spill file: %w", err)
		}
		b.spill = f
	}
	f, pos := b.spill, b.spillN
	b.spillN += int64(len(p))
	b.mu.Unlock()
	_, err := f.WriteAt(p, pos)
	b.mu.Lock()
	switch {
	case b.rerr != nil:
		return nil // the reader is gone: dropped
	case err != nil:
		return fmt.Errorf("reorder: spill file: %w", err)
	}
	if _, dup := b.pieces[at]; dup || at < b.front {
		return fmt.Errorf("%w: %d bytes at %d", ErrOverlap, len(p), at)
	}
	// Data that continues the piece spilled last, in the data and in
	// the file, extends it: small blocks in order keep one piece.
	if lp, ok := b.pieces[b.lastSp]; ok && lp.buf == nil && lp.end == at && lp.spill+(lp.end-b.lastSp) == pos {
		lp.end += int64(len(p))
		b.pieces[b.lastSp] = lp
		return nil
	}
	b.pieces[at] = piece{end: at + int64(len(p)), spill: pos}
	b.lastSp = at
	if at == b.front {
		b.cond.Signal()
	}
	return nil
}

// class is the size class of a buffer for n bytes (n <= maxChunk).
func class(n int) int {
	if n <= minChunk {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// alloc returns a buffer of n bytes (n <= maxChunk), reused or new, or
// nil when the window's memory is taken. b.mu is held.
func (b *Buffer) alloc(n int) []byte {
	c := class(n)
	if k := len(b.free[c]); k > 0 {
		buf := b.free[c][k-1]
		b.free[c] = b.free[c][:k-1]
		return buf[:n]
	}
	size := int64(minChunk) << c
	// Free buffers of other sizes make room first.
	for o := range b.free {
		for b.held+size > b.window && len(b.free[o]) > 0 {
			k := len(b.free[o])
			b.held -= int64(cap(b.free[o][k-1]))
			b.free[o][k-1] = nil
			b.free[o] = b.free[o][:k-1]
		}
	}
	if b.held+size > b.window {
		return nil
	}
	b.held += size
	return make([]byte, n, size)
}

// release keeps buf for reuse. b.mu is held.
func (b *Buffer) release(buf []byte) {
	if buf == nil {
		return
	}
	c := class(cap(buf))
	b.free[c] = append(b.free[c], buf[:0])
}

// Read reads the data in order. It waits for the bytes at the read front
// to arrive; it returns io.EOF once Close was called and everything
// written was read, and the error given to CloseWithError as soon as
// there is one.
func (b *Buffer) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !b.hasCur {
		if err := b.take(); err != nil {
			return 0, err
		}
	}
	var k int
	var err error
	if b.cur.buf != nil {
		k = copy(p, b.cur.buf[b.curPos:])
	} else {
		want := min(int64(len(p)), b.curLen-b.curPos)
		k, err = b.spill.ReadAt(p[:want], b.cur.spill+b.curPos)
		if k < int(want) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return k, fmt.Errorf("reorder: spill file: %w", err)
		}
		err = nil
	}
	b.curPos += int64(k)
	if b.curPos == b.curLen {
		b.mu.Lock()
		if b.rerr == nil {
			b.release(b.cur.buf)
		}
		b.mu.Unlock()
		b.cur, b.hasCur = piece{}, false
	}
	return k, err
}

// Ready waits until the first byte the reader will read has arrived, or
// the writes ended, and returns the error they ended with (nil for
// Close), or CloseRead's. A consumer that acts before it reads (makes
// the target directory) calls it first, so that an upload whose data
// channel never brought anything leaves nothing behind.
func (b *Buffer) Ready() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		switch _, ok := b.pieces[b.front]; {
		case b.rerr != nil:
			return b.rerr
		case b.werr != nil:
			return b.werr
		case ok || b.hasCur || b.closed:
			return nil
		}
		b.cond.Wait()
	}
}

// take makes the piece at the read front the current one, waiting for
// it.
func (b *Buffer) take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		switch {
		case b.rerr != nil:
			return b.rerr
		case b.werr != nil:
			return b.werr
		}
		if pc, ok := b.pieces[b.front]; ok {
			delete(b.pieces, b.front)
			if b.last == b.front {
				b.last = -1
			}
			if b.lastSp == b.front {
				b.lastSp = -1
			}
			b.cur, b.curPos, b.curLen, b.hasCur = pc, 0, pc.end-b.front, true
			b.front = pc.end
			return nil
		}
		if b.closed {
			if len(b.pieces) == 0 && b.front == b.end {
				return io.EOF
			}
			return fmt.Errorf("%w (or overlaps): nothing at %d, the furthest write ends at %d", ErrHoles, b.front, b.end)
		}
		b.cond.Wait()
	}
}

// Close tells the reader that the writes are complete: once it has read
// everything, it gets io.EOF (or ErrHoles if bytes are missing). Later
// writes fail.
func (b *Buffer) Close() error { return b.CloseWithError(nil) }

// CloseWithError ends the writes with err: the reader gets err at its
// next read, whatever is still buffered. A nil err is Close.
func (b *Buffer) CloseWithError(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed, b.werr = true, err
	}
	b.cond.Broadcast()
	return nil
}

// CloseRead ends the reading side: later reads fail with err (ErrClosed
// when nil), later writes are accepted and dropped, and the memory and
// spill file are freed. It must not run concurrently with Read.
func (b *Buffer) CloseRead(err error) {
	if err == nil {
		err = ErrClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rerr != nil {
		return
	}
	b.rerr = err
	clear(b.pieces)
	b.free = [classes][][]byte{}
	b.cur, b.hasCur = piece{}, false
	b.held = 0
	if b.spill != nil {
		b.spill.Close()
		os.Remove(b.spill.Name())
	}
	b.cond.Broadcast()
}

// End is the end of the furthest write: with no holes, the number of
// bytes written.
func (b *Buffer) End() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end
}

// CheckArrived returns an error when n bytes arrived (what the data
// channel counted) but the furthest write ends elsewhere: the data has
// holes.
func (b *Buffer) CheckArrived(n int64) error {
	if end := b.End(); end != n {
		return fmt.Errorf("the data has holes: %d bytes arrived, the furthest ends at %d", n, end)
	}
	return nil
}

// Spilled reports how many bytes went to the spill file.
func (b *Buffer) Spilled() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spillN
}
