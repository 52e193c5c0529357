package dtp

// Stream mode (RFC 959 §3.4.1): the file's bytes in order over one TCP
// connection; the sender closing the connection marks the end of the file.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/eblock"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// bufSize is the copy buffer for paths the kernel cannot short-cut.
const bufSize = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// sendRanges returns the file byte ranges of a size-byte source a sender
// must send, in order: the window [Offset, Offset+Length) clipped to the
// file, minus what the receiver already has (Restart, in window coordinates).
func sendRanges(req *xfer.Request, size int64) []xfer.Range {
	start, end := req.Offset, size
	if start < 0 {
		start = 0
	}
	if req.Length >= 0 && start+req.Length < end && start+req.Length >= start {
		end = start + req.Length
	}
	if start >= end {
		return nil
	}
	window := xfer.Range{Start: start, End: end}
	if req.Restart.Len() == 0 {
		return []xfer.Range{window}
	}
	// Restart ranges are virtual-file offsets: shift the window instead.
	virtual := xfer.Range{Start: start - req.Offset, End: end - req.Offset}
	missing := req.Restart.Missing(virtual)
	for i := range missing {
		missing[i].Start += req.Offset
		missing[i].End += req.Offset
	}
	return missing
}

// sendStream sends the requested ranges of src through w (conn, or a
// wrapper that counts), then ends the stream by half-closing conn the way
// sec's style wants.
func sendStream(ctx context.Context, conn net.Conn, w io.Writer, sec *dcsec.Config, req *xfer.Request, src dsi.Reader) (int64, error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var total int64
	for _, r := range sendRanges(req, src.Size()) {
		var n int64
		var err error
		switch rw, ok := src.(dsi.RangeWriterTo); {
		case req.Type == xfer.TypeASCII:
			n, err = sendASCII(w, src, r)
		case ok:
			n, err = rw.WriteRangeTo(w, r.Start, r.Len())
		default:
			n, err = sendCopy(w, src, r)
		}
		total += n
		if err != nil {
			return total, classify(ctx, err)
		}
	}
	style := dcsec.GSI
	if sec != nil {
		style = sec.Style
	}
	if err := dcsec.CloseWrite(conn, style); err != nil {
		return total, classify(ctx, err)
	}
	return total, nil
}

// sendCopy is the portable path: pread into a pooled buffer, then write.
func sendCopy(w io.Writer, src io.ReaderAt, r xfer.Range) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var total int64
	for off := r.Start; off < r.End; {
		chunk := buf[:min(int64(len(buf)), r.End-off)]
		n, err := src.ReadAt(chunk, off)
		if n > 0 {
			if _, werr := w.Write(chunk[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
			off += int64(n)
		}
		if err != nil && (err != io.EOF || off < r.End) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return total, &xfer.StorageError{Err: err}
		}
	}
	return total, nil
}

// sendASCII converts bare LF to CRLF (TYPE A). It returns file bytes consumed.
func sendASCII(w io.Writer, src io.ReaderAt, r xfer.Range) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	in := (*bp)[:bufSize/2]
	out := make([]byte, 0, bufSize) // TYPE A is rare and small; one buffer per transfer is fine
	var total int64
	prev := byte(0)
	for off := r.Start; off < r.End; {
		n, err := src.ReadAt(in[:min(int64(len(in)), r.End-off)], off)
		out = out[:0]
		for _, c := range in[:n] {
			if c == '\n' && prev != '\r' {
				out = append(out, '\r')
			}
			out = append(out, c)
			prev = c
		}
		if len(out) > 0 {
			if _, werr := w.Write(out); werr != nil {
				return total, werr
			}
		}
		total += int64(n)
		off += int64(n)
		if err != nil && (err != io.EOF || off < r.End) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return total, &xfer.StorageError{Err: err}
		}
	}
	return total, nil
}

func receiveStream(ctx context.Context, conn net.Conn, req *xfer.Request, dst dsi.Writer) (int64, error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var n int64
	var err error
	switch rf, ok := dst.(dsi.RangeReaderFrom); {
	case req.Type == xfer.TypeASCII:
		n, err = receiveASCII(conn, dst, req.StoreOffset)
	case ok:
		n, err = rf.ReadRangeFrom(conn, req.StoreOffset, -1)
	default:
		n, err = receiveCopy(conn, dst, req.StoreOffset)
	}
	if err != nil {
		return n, classify(ctx, err)
	}
	return n, nil
}

func receiveCopy(r io.Reader, dst io.WriterAt, off int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := dst.WriteAt(buf[:n], off+total); werr != nil {
				return total, &xfer.StorageError{Err: werr}
			}
			total += int64(n)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// receiveASCII turns CRLF into LF (TYPE A). It returns bytes stored.
func receiveASCII(r io.Reader, dst io.WriterAt, off int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	in := (*bp)[:bufSize/2]
	out := make([]byte, 0, bufSize/2+1)
	var total int64
	pendingCR := false
	for {
		n, err := r.Read(in)
		out = out[:0]
		for _, c := range in[:n] {
			if pendingCR {
				pendingCR = false
				if c != '\n' {
					out = append(out, '\r')
				}
			}
			if c == '\r' {
				pendingCR = true
				continue
			}
			out = append(out, c)
		}
		if err == io.EOF && pendingCR {
			out = append(out, '\r')
		}
		if len(out) > 0 {
			if _, werr := dst.WriteAt(out, off+total); werr != nil {
				return total, &xfer.StorageError{Err: werr}
			}
			total += int64(len(out))
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// classify turns an error from a data path into the transfer error the PI
// maps to a reply: the cancellation cause (ABOR), a data-channel failure, or
// a storage failure.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var se *xfer.StorageError
	var de *xfer.DataError
	if errors.As(err, &se) || errors.As(err, &de) {
		return err
	}
	var oe *net.OpError
	var rhe tls.RecordHeaderError // a peer breaking TLS mid-transfer
	var ae tls.AlertError
	if errors.Is(err, eblock.ErrProtocol) || errors.As(err, &oe) || errors.As(err, &rhe) || errors.As(err, &ae) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ETIMEDOUT) {
		return &xfer.DataError{Err: err}
	}
	return &xfer.StorageError{Err: err}
}
