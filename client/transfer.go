package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/internal/netopt"
)

// RetrieveOptions modifies Retrieve and RetrieveAt. The zero value (or
// nil) retrieves the whole file in stream mode.
type RetrieveOptions struct {
	// Offset is the first byte of the file to retrieve (REST, or the
	// offset of ERET).
	Offset int64

	// Length, when positive, retrieves at most Length bytes starting at
	// Offset: with ERET when the server offers it (always in MODE E),
	// else with REST and by closing the data connection after Length
	// bytes. Zero or negative means up to the end of the file.
	Length int64

	// Parallel, when above 1, makes RetrieveAt use MODE E with that many
	// data connections (OPTS RETR Parallelism=N,N,N;). Retrieve, which
	// writes to a plain io.Writer, always uses stream mode.
	Parallel int

	// ModeE makes RetrieveAt use MODE E even with one data connection.
	ModeE bool

	// StripeBlockSize, when positive, asks a MODE E download for the
	// blocked stripe layout with this block size (OPTS RETR
	// StripeLayout=Blocked;BlockSize=N;), as globus-url-copy -stripe -sbs
	// does.
	StripeBlockSize int64

	// TCPBuffer, when positive, is the TCP buffer size in bytes for the
	// data connections: the server is told with SITE RETRBUFSIZE (a
	// refusal is ignored), and the client's sockets get SO_RCVBUF and
	// SO_SNDBUF before they connect or listen.
	TCPBuffer int

	// Restart lists the byte ranges of the file (file offsets) that the
	// destination already holds; RetrieveAt asks only for the others
	// (REST). In stream mode only the contiguous range starting at Offset
	// counts: the server could not place the pieces after a gap.
	Restart RangeSet

	// Reuse keeps the MODE E data connections for the next transfer in
	// the same direction and reuses connections kept by the previous one
	// (no new PORT; the server answers 125), like globus-url-copy -fast.
	Reuse bool

	// Progress, when not nil, is called about every ProgressInterval
	// while data moves, and once at the end, from another goroutine.
	Progress func(Progress)

	// Committed, when not nil, is called with every range known to be
	// stored at the destination (Restart and what this transfer wrote,
	// in file offsets) about every ProgressInterval and once more when
	// the transfer ends, successfully or not. Only RetrieveAt calls it.
	Committed func(RangeSet)

	// ProgressInterval is the period of Progress and Committed; zero
	// means DefaultProgressInterval.
	ProgressInterval time.Duration

	// Module, when not empty, names a server-side processing module
	// chain ("gzip", "tar,zstd"; docs/modules.md) whose output for the
	// path is retrieved instead of the file: ERET Module="ModuleParams"
	// PATH, as globus-url-copy -smn/-smp sends it. It takes no Length.
	Module       string
	ModuleParams string
}

// StoreOptions modifies Store and StoreAt. The zero value (or nil)
// replaces the whole file in stream mode.
type StoreOptions struct {
	// Size, when positive, is announced with ALLO before the transfer so
	// that the server can reserve the space. StoreAt sets it itself.
	Size int64

	// Append appends to the file (APPE) instead of replacing it. Stream
	// mode only.
	Append bool

	// Offset, when positive, writes the data starting at this offset of
	// the file: REST then STOR in stream mode, ESTO A in MODE E. The
	// server keeps the bytes before it and does not truncate the file.
	Offset int64

	// Parallel, when above 1, makes StoreAt use MODE E with that many
	// data connections. Store always uses stream mode.
	Parallel int

	// ModeE makes StoreAt use MODE E even with one data connection.
	ModeE bool

	// BlockSize is the payload size of the MODE E blocks sent (like
	// globus-url-copy -bs); zero means eblock.DefaultBlockSize.
	BlockSize int

	// Striped asks for striped passive addresses (SPAS) and sends to every
	// stripe: Parallel connections each, the file dealt in blocks of
	// StripeBlockSize (zero: 1 MiB) round-robin, each stripe with its own
	// EOF (a striped server's movers each receive their part).
	Striped         bool
	StripeBlockSize int64

	// TCPBuffer, when positive, is the TCP buffer size in bytes for the
	// data connections: SITE STORBUFSIZE to the server (a refusal is
	// ignored) and SO_SNDBUF/SO_RCVBUF on the client's sockets.
	TCPBuffer int

	// Restart lists the byte ranges of the file (file offsets) already
	// stored on the server; StoreAt sends only the others, with REST so
	// that the server does not truncate the file. In stream mode only the
	// contiguous range starting at Offset counts.
	Restart RangeSet

	// Reuse keeps the MODE E data connections for the next upload and
	// reuses the ones kept by the previous upload (see RetrieveOptions).
	Reuse bool

	// Part, when not empty, makes StoreAt send only the bytes of Part
	// (file offsets, less Restart) as one part of an upload in parts: a
	// MODE E STOR after ALLO of the whole size, REST and PART (Ferry's
	// extension, docs/extensions.md). The server keeps the file aside
	// until the parts cover it, then puts it in place. It needs Offset 0
	// and a server whose FEAT lists PART.
	Part Range

	// Progress is as in RetrieveOptions.
	Progress func(Progress)

	// Acknowledged, when not nil, is called with every range the server
	// has confirmed as stored with 111 range markers (plus Restart), in
	// file offsets, each time a marker arrives. MODE E only: servers send
	// no markers in stream mode.
	Acknowledged func(RangeSet)

	// MarkerInterval, when at least a second, asks the server for 111
	// range markers at that period (TREV RESTART; a refusal is ignored).
	// GCT's default is 5 seconds.
	MarkerInterval time.Duration

	// ProgressInterval is the period of Progress; zero means
	// DefaultProgressInterval.
	ProgressInterval time.Duration

	// Module, when not empty, names a server-side processing module
	// chain that the server runs backwards over the data before storing
	// it ("gzip": the data is gzip-compressed and stored decompressed;
	// "tar": a tar unpacked into the directory path): ESTO
	// Module="ModuleParams" PATH, as globus-url-copy -dmn/-dmp sends it.
	// It takes no Append, Offset, Restart, Part or Striped.
	Module       string
	ModuleParams string
}

// brokenError marks an error after which the control connection's state is
// unknown, so the Conn must be closed.
type brokenError struct {
	err   error
	abort bool // the server accepted a transfer command: send ABOR before closing
}

func (e *brokenError) Error() string { return e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// Retrieve downloads path into w in stream mode and returns the number of
// bytes written. When w is an *os.File, the bytes go from the socket to
// the file inside the kernel (splice). Options for MODE E and Restart are
// ignored; see RetrieveAt.
func (c *Conn) Retrieve(ctx context.Context, path string, w io.Writer, opts *RetrieveOptions) (int64, error) {
	var o RetrieveOptions
	if opts != nil {
		o = *opts
	}
	return c.retrieveStream(ctx, path, w, &o, nil)
}

// retrieveStream is Retrieve; moved, when not nil, counts the bytes as
// they arrive.
func (c *Conn) retrieveStream(ctx context.Context, path string, w io.Writer, o *RetrieveOptions, moved *atomic.Int64) (int64, error) {
	if o.Offset < 0 {
		return 0, fmt.Errorf("client: RETR %s: negative offset %d", path, o.Offset)
	}
	if err := checkRetrieveModule(o); err != nil {
		return 0, err
	}
	var pre []string
	command := "RETR " + path
	limit := int64(-1)
	cut := false // the data connection is closed before the server is done
	switch {
	case o.Module != "":
		command, _ = moduleCommand("ERET", o.Module, o.ModuleParams, path)
		if o.Offset > 0 {
			pre = append(pre, fmt.Sprintf("REST %d", o.Offset))
		}
	case o.Length > 0 && c.hasFeature("ERET"):
		command = fmt.Sprintf("ERET P %d %d %s", o.Offset, o.Length, path)
	case o.Length > 0:
		limit, cut = o.Length, true
		fallthrough
	case o.Offset > 0:
		if o.Offset > 0 {
			pre = append(pre, fmt.Sprintf("REST %d", o.Offset))
		}
	}
	var streams [1]atomic.Int64
	if moved == nil {
		moved = &streams[0]
	}
	cw := newConnWatch(o.Progress)
	m := startMeter(o.Progress, o.ProgressInterval, func() Progress {
		return streamProgress(moved.Load(), cw)
	})
	n, err := c.transfer(ctx, bufferCommand("SITE RETRBUFSIZE", o.TCPBuffer), o.TCPBuffer, pre, command, func(conn net.Conn) (int64, error) {
		defer watchStream(cw, conn)()
		// A stream-mode connection ends with the data: wake for
		// batches, not for every few packets (see netopt.SetRcvLowat).
		netopt.SetRcvLowat(conn, streamRcvLowat)
		return copyCounted(w, conn, limit, moved)
	})
	m.stop()
	var re *ReplyError
	if cut && n == limit && errors.As(err, &re) {
		// We hung up after Length bytes; the server may call that an error.
		err = nil
	}
	return n, err
}

// Store uploads the bytes of r to path in stream mode and returns the
// number of bytes sent. When r is an *os.File (or an *io.LimitedReader of
// one), the bytes go from the file to the socket inside the kernel
// (sendfile). Options for MODE E and Restart are ignored; see StoreAt.
func (c *Conn) Store(ctx context.Context, path string, r io.Reader, opts *StoreOptions) (int64, error) {
	var o StoreOptions
	if opts != nil {
		o = *opts
	}
	return c.storeStream(ctx, path, r, &o)
}

func (c *Conn) storeStream(ctx context.Context, path string, r io.Reader, o *StoreOptions) (int64, error) {
	if err := checkStoreModule(o); err != nil {
		return 0, err
	}
	var pre []string
	if o.Size > 0 {
		pre = append(pre, fmt.Sprintf("ALLO %d", o.Size))
	}
	if o.Offset > 0 {
		pre = append(pre, fmt.Sprintf("REST %d", o.Offset))
	}
	command := "STOR " + path
	if o.Append {
		command = "APPE " + path
	}
	if o.Module != "" {
		command, _ = moduleCommand("ESTO", o.Module, o.ModuleParams, path)
	}
	var moved atomic.Int64
	cw := newConnWatch(o.Progress)
	m := startMeter(o.Progress, o.ProgressInterval, func() Progress {
		return streamProgress(moved.Load(), cw)
	})
	defer m.stop()
	return c.transfer(ctx, bufferCommand("SITE STORBUFSIZE", o.TCPBuffer), o.TCPBuffer, pre, command, func(conn net.Conn) (int64, error) {
		defer watchStream(cw, conn)()
		return copyCounted(conn, r, -1, &moved)
	})
}

// streamProgress is the Progress of a stream-mode transfer that has moved
// n bytes over the connection cw watches.
func streamProgress(n int64, cw *connWatch) Progress {
	p := Progress{Streams: []int64{n}, Bytes: n}
	cw.fill(&p)
	return p
}

// watchStream has cw watch a stream-mode data connection; the function
// it returns takes the last reading, before the connection closes.
func watchStream(cw *connWatch, conn net.Conn) (closing func()) {
	if cw == nil {
		return func() {}
	}
	cw.set([]net.Conn{conn})
	return func() { cw.closing(0, conn) }
}

// bufferCommand returns the SITE command announcing a TCP buffer size, or
// nothing for size 0.
func bufferCommand(site string, size int) []string {
	if size <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s %d", site, size)}
}

// streamRcvLowat is the SO_RCVLOWAT of a stream-mode download's
// connection: on a wide-area link each wake-up of the reader costs a
// goroutine switch and a few system calls, and packets arrive one by one.
const streamRcvLowat = 256 << 10

// countChunk is how many bytes copyCounted moves between counter updates.
const countChunk = 1 << 20

// copyCounted copies from src to dst, at most limit bytes (limit < 0: to
// the end), adding to moved as it goes. It copies in chunks through
// io.CopyN, which keeps the kernel's splice and sendfile paths for
// *os.File and *net.TCPConn.
func copyCounted(dst io.Writer, src io.Reader, limit int64, moved *atomic.Int64) (int64, error) {
	var total int64
	for limit < 0 || total < limit {
		chunk := int64(countChunk)
		if limit >= 0 {
			chunk = min(chunk, limit-total)
		}
		n, err := io.CopyN(dst, src, chunk)
		total += n
		moved.Add(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// transfer runs one stream-mode data transfer: MODE S if the server is in
// MODE E, the commands in soft (negative replies ignored), data connection
// set-up (with socket buffers of buf bytes), the commands in pre (each
// must get 2xx or 3xx), command (must get 1xx), move runs on the data
// connection, then the final reply (must be 2xx).
//
// A negative reply is returned as a *ReplyError and the Conn stays usable.
// Any other failure after command was accepted (ctx done, the copy failed)
// aborts: ABOR, the data connection is reset, the replies are drained for a
// short while, and the Conn is closed.
func (c *Conn) transfer(ctx context.Context, soft []string, buf int, pre []string, command string, move func(net.Conn) (int64, error)) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	for _, l := range append(pre, command) {
		if err := checkLine(l); err != nil {
			return 0, err
		}
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("client: %s: %w", verb(command), context.Cause(ctx))
	}
	w, stop := watchAll(ctx, c.nc)
	c.dataBuf = buf
	d, sent, n, err := c.transferSteps(ctx, w, soft, pre, command, move)
	c.dataBuf = 0
	fired := stop()
	if d != nil && err != nil {
		d.abortData()
	}
	var be *brokenError
	if !errors.As(err, &be) {
		// Success, a negative reply or a failed dial: the control
		// connection is in step.
		if fired {
			_ = c.nc.SetDeadline(time.Time{})
		}
		return n, err
	}
	if sent {
		c.abort(ctx)
	} else {
		c.close()
	}
	if ctx.Err() != nil {
		return n, fmt.Errorf("client: %s: %w", verb(command), context.Cause(ctx))
	}
	return n, be.err
}

// transferSteps is transfer without the clean-up; sent reports whether the
// server accepted command, which makes an abort necessary on failure.
// Errors that leave the control connection out of step are *brokenError.
func (c *Conn) transferSteps(ctx context.Context, w *watcher, soft, pre []string, command string, move func(net.Conn) (int64, error)) (d *dataChan, sent bool, n int64, err error) {
	// A new data channel drops the MODE E connections the server keeps.
	c.dropCache()
	if err := c.setMode(ctx, false); err != nil {
		return nil, false, 0, err
	}
	if err := c.softCommands(ctx, soft); err != nil {
		return nil, false, 0, err
	}
	d, err = c.openData(ctx, w)
	if err != nil {
		return nil, false, 0, err
	}
	for _, line := range pre {
		if err := c.burst(ctx, []step{{line: line, check: accepted}}); err != nil {
			return d, false, 0, err
		}
	}
	var pending *pendingData
	if c.dsec != nil {
		pending = c.secureAsync(ctx, d)
	}
	t, err := c.request(ctx, command)
	var r Reply
	if err == nil {
		r, err = c.rs.next(ctx, t)
	}
	if err == nil && r.Class() != 1 {
		err = &ReplyError{Reply: r}
	}
	if err != nil {
		if pending != nil {
			if _, herr := pending.finish(d, true); herr != nil && !errors.Is(err, context.Cause(ctx)) {
				// The server's refusal is likely the consequence.
				var re *ReplyError
				if errors.As(err, &re) {
					err = fmt.Errorf("%w (server: %w)", herr, err)
				}
			}
		}
		return d, false, 0, err
	}
	var dc net.Conn
	if pending != nil {
		dc, err = pending.finish(d, false)
		if d.conn != nil {
			w.add(d.conn)
		}
		if err != nil {
			return d, true, 0, &brokenError{err: err}
		}
	} else {
		if err := d.accept(ctx); err != nil {
			return d, true, 0, &brokenError{err: err}
		}
		w.add(d.conn)
		dc = d.conn
	}
	n, err = move(dc)
	if err != nil {
		err = fmt.Errorf("client: %s: data connection: %w", verb(command), err)
		if sends(command) && ctx.Err() == nil {
			sent, err = c.replyAfterDataError(ctx, d, t, err)
			return d, sent, n, err
		}
		return d, true, n, &brokenError{err: err}
	}
	if err := closeData(dc, sends(command)); err != nil {
		return d, true, n, &brokenError{err: fmt.Errorf("client: %s: data connection: %w", verb(command), err)}
	}
	d.conn = nil
	r, err = c.rs.next(ctx, t)
	if err != nil {
		return d, true, n, err
	}
	if r.Class() != 2 {
		return d, false, n, &ReplyError{Reply: r}
	}
	return d, false, n, nil
}

// replyAfterDataError ends an upload whose data connection failed with
// err: a receiver that fails (a full disk) drops the data connection and
// says why on the control channel, and its reply ("452 Insufficient
// storage space") tells more than the write error ("connection reset by
// peer"). The connection is reset and the final reply waited for at most
// abortTimeout; a 4xx or 5xx is returned as the *ReplyError, with the
// control connection in step. sent reports whether an abort is still
// needed.
func (c *Conn) replyAfterDataError(ctx context.Context, d *dataChan, t ticket, err error) (sent bool, _ error) {
	d.abortData()
	d.conn = nil
	_ = c.nc.SetReadDeadline(time.Now().Add(abortTimeout))
	r, rerr := c.rs.next(ctx, t)
	if rerr != nil || r.Class() == 1 {
		return true, &brokenError{err: err}
	}
	if ctx.Err() == nil {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	if r.Class() != 2 {
		return false, &ReplyError{Reply: r}
	}
	// The server says complete, yet not every byte was written: in step,
	// but failed.
	return false, err
}

// sends reports whether the client sends the data of a transfer command.
func sends(command string) bool {
	switch strings.ToUpper(verb(command)) {
	case "STOR", "APPE", "ESTO", "STOU":
		return true
	}
	return false
}

// abort ends an interrupted transfer: ABOR, then the replies are read and
// dropped for abortTimeout, and the Conn is closed. When ctx is done (the
// caller gave up: Ctrl-C, a stall, a timeout) the replies get only
// abortGrace: the Conn is closed anyway, and a server that is stuck in
// its storage would otherwise hold the caller for the whole abortTimeout.
func (c *Conn) abort(ctx context.Context) {
	wait := abortTimeout
	if ctx.Err() != nil {
		wait = abortGrace
	}
	_ = c.nc.SetDeadline(time.Now().Add(wait))
	if _, err := c.request(context.Background(), "ABOR"); err == nil {
		c.rs.discard(4)
	}
	c.close()
}
