package eblock

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/netopt"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// DefaultBlockSize is the payload size of a sender's blocks unless set.
const DefaultBlockSize = 1 << 20

// SendConfig tunes a Send.
type SendConfig struct {
	// BlockSize is the payload of each block; 0 means DefaultBlockSize.
	BlockSize int
	// Base is subtracted from file offsets to make block offsets: a partial
	// transfer (ERET) starts its virtual file at 0 (protocol.md §8.1).
	Base int64
	// Close ends each connection with CLOSE and closes it, instead of
	// keeping it for the next transfer.
	Close bool
	// Sent, when not nil, is increased by the payload bytes of each block
	// once it has been written (performance markers read it).
	Sent *atomic.Int64
	// ConnSent, when longer than i, is increased by the payload bytes of
	// each block written on conns[i] (per-stream progress).
	ConnSent []atomic.Int64
	// EOFCount, when positive, is the connection count the EOF announces
	// instead of len(conns): the receiving stripe also gets connections
	// from other senders (a striped server's data nodes).
	EOFCount int
	// NoEOF leaves the EOF to another sender of the same receiving stripe;
	// every connection ends with EOD only.
	NoEOF bool
	// BeforeClose, when not nil and Close is set, is called with i and
	// conns[i] just before Send closes that connection: the last moment
	// its socket can be read (TCP_INFO). It runs once per connection, on
	// the connection's sending goroutine.
	BeforeClose func(i int, c net.Conn)
}

// blockQueue hands out the blocks of ranges to the sending goroutines.
type blockQueue struct {
	mu     sync.Mutex
	ranges []xfer.Range
	next   int64 // next offset inside ranges[0]
	size   int64
}

func (q *blockQueue) take() (off, n int64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ranges) > 0 {
		r := q.ranges[0]
		if q.next < r.Start {
			q.next = r.Start
		}
		if q.next >= r.End {
			q.ranges = q.ranges[1:]
			continue
		}
		off, n = q.next, min(q.size, r.End-q.next)
		q.next += n
		return off, n, true
	}
	return 0, 0, false
}

// drained reports that take has no block left to give; once true it stays
// true.
func (q *blockQueue) drained() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.ranges {
		if max(q.next, r.Start) < r.End {
			return false
		}
	}
	return true
}

// Send writes the given ranges of src as blocks over conns, each connection
// taking the next block when it is free, then ends the transfer: EOD on every
// connection, and EOF with the EOD count on the first. With an empty ranges
// list only the end headers are sent (an empty file). It returns the payload
// bytes sent. Cancelling ctx stops it by expiring the connections' deadlines.
func Send(ctx context.Context, conns []net.Conn, src io.ReaderAt, ranges []xfer.Range, cfg SendConfig) (int64, error) {
	if len(conns) == 0 {
		return 0, errors.New("eblock: no data connections")
	}
	bs := int64(cfg.BlockSize)
	if bs <= 0 {
		bs = DefaultBlockSize
	}
	q := &blockQueue{ranges: ranges, size: bs}
	// A cancel that raced the end of the previous transfer on these
	// (cached) connections may have expired their write deadline after
	// that transfer succeeded: start afresh, as Receiver.Add does.
	for _, c := range conns {
		c.SetWriteDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.SetWriteDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	var total atomic.Int64
	if len(conns) == 1 {
		// One connection (small files' batches): no goroutine per file.
		err := sendConn(conns[0], 0, src, q, bs, &cfg, &total, 1)
		if ctx.Err() != nil {
			return total.Load(), context.Cause(ctx)
		}
		return total.Load(), err
	}
	// Each connection takes the next block when it has sent the one
	// before; with the kernel's whole send buffer (MBs) to fill, a
	// stream held back by loss would hold that much of the transfer,
	// and the transfer would wait for it at the end.
	for _, c := range conns {
		netopt.SetNotSentLowat(c, int(bs))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		wg.Go(func() {
			errs[i] = sendConn(c, i, src, q, bs, &cfg, &total, len(conns))
			if errs[i] != nil {
				// One broken connection ends the transfer: stop the others.
				for _, o := range conns {
					o.SetWriteDeadline(time.Unix(1, 0))
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return total.Load(), context.Cause(ctx)
	}
	return total.Load(), firstError(errs)
}

// firstError prefers a storage error (the cause) over the connection errors
// it provoked by stopping the others.
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		var se *xfer.StorageError
		if errors.As(err, &se) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func sendConn(c net.Conn, idx int, src io.ReaderAt, q *blockQueue, bs int64, cfg *SendConfig, total *atomic.Int64, nconns int) error {
	carriesEOF := idx == 0 && !cfg.NoEOF
	if cfg.EOFCount > 0 {
		nconns = cfg.EOFCount
	}
	end := Header{Desc: DescEOD}
	if carriesEOF {
		end = Header{Desc: DescEOF | DescEOD, Offset: uint64(nconns)}
	}
	if cfg.Close {
		end.Desc |= DescClose
	}
	sc := scratchPool.Get().(*sendScratch)
	defer scratchPool.Put(sc)
	hdr, endHdr, v := &sc.hdr, &sc.end, &sc.g
	end.Put(endHdr[:])
	rw, zeroCopy := src.(dsi.RangeWriterTo)
	var bp *[]byte // a copy buffer, taken when first needed
	defer func() {
		if bp != nil {
			bufPool.Put(bp)
		}
	}()
	ended := false // the end header went out with the last block
	for {
		off, n, ok := q.take()
		if !ok {
			break
		}
		Header{Count: uint64(n), Offset: uint64(off - cfg.Base)}.Put(hdr[:])
		if bp == nil && (!zeroCopy || n <= smallBlock) {
			bp = bufPool.Get().(*[]byte)
		}
		var err error
		switch {
		case n <= smallBlock:
			// Header, payload and (when this was the last block) the end
			// header in one write: one packet, not three, for the small
			// files of a batch; the copy costs less than the syscalls.
			ended = q.drained()
			err = sendSmall(c, v, src, off, (*bp)[:n], hdr, endHdr, ended)
		case zeroCopy:
			if _, err = c.Write(hdr[:]); err != nil {
				return &xfer.DataError{Err: err}
			}
			if _, err = rw.WriteRangeTo(c, off, n); err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) { // the file is shorter than it was
					return &xfer.StorageError{Err: err}
				}
				return classify(err)
			}
		default:
			err = sendCopy(c, v, src, off, n, (*bp)[:min(bs, int64(len(*bp)))], hdr)
		}
		if err != nil {
			return err
		}
		if cfg.Sent != nil {
			cfg.Sent.Add(n)
		}
		if idx < len(cfg.ConnSent) {
			cfg.ConnSent[idx].Add(n)
		}
		total.Add(n)
	}
	if !ended {
		if _, err := c.Write(endHdr[:]); err != nil {
			return &xfer.DataError{Err: err}
		}
	}
	if cfg.Close {
		if cfg.BeforeClose != nil {
			cfg.BeforeClose(idx, c)
		}
		c.Close()
	}
	return nil
}

// sendSmall sends one block whose payload fits buf, read at off, with its
// header hdr and, when last, the connection's end header behind it.
func sendSmall(c net.Conn, v *gather, src io.ReaderAt, off int64, buf []byte, hdr, end *[HeaderSize]byte, last bool) error {
	if err := readFull(src, buf, off); err != nil {
		return err
	}
	var tail []byte
	if last {
		tail = end[:]
	}
	if err := v.write(c, hdr[:], buf, tail); err != nil {
		return &xfer.DataError{Err: err}
	}
	return nil
}

// sendCopy sends an n-byte block read at off through buf, the header going
// out with the first chunk.
func sendCopy(c net.Conn, v *gather, src io.ReaderAt, off, n int64, buf []byte, hdr *[HeaderSize]byte) error {
	for done := int64(0); done < n; {
		chunk := buf[:min(int64(len(buf)), n-done)]
		if err := readFull(src, chunk, off+done); err != nil {
			return err
		}
		var werr error
		if done == 0 {
			werr = v.write(c, hdr[:], chunk, nil)
		} else {
			_, werr = c.Write(chunk)
		}
		if werr != nil {
			return &xfer.DataError{Err: werr}
		}
		done += int64(len(chunk))
	}
	return nil
}

// sendScratch is what one connection's sender writes from; pooled, so a
// batch of small files allocates none of it per file.
type sendScratch struct {
	hdr, end [HeaderSize]byte
	g        gather
}

var scratchPool = sync.Pool{New: func() any { return new(sendScratch) }}

// gather is a reusable list for one vectored write (writev on a TCP
// connection): WriteTo consumes a net.Buffers, which would otherwise have
// to be built, and allocated, anew for every block.
type gather struct {
	store [3][]byte
	bufs  net.Buffers
}

// write writes a, b and, when not nil, c to conn in one call.
func (g *gather) write(conn net.Conn, a, b, c []byte) error {
	g.bufs = append(g.store[:0], a, b)
	if c != nil {
		g.bufs = append(g.bufs, c)
	}
	_, err := g.bufs.WriteTo(conn)
	g.store = [3][]byte{} // drop the references to the caller's buffers
	return err
}

// readFull fills buf from src at off; a short read is a storage error
// (the file is shorter than it was).
func readFull(src io.ReaderAt, buf []byte, off int64) error {
	m, err := src.ReadAt(buf, off)
	if m < len(buf) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return &xfer.StorageError{Err: err}
	}
	return nil
}
