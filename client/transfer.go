package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// RetrieveOptions modifies Retrieve. The zero value (or nil) retrieves the
// whole file.
type RetrieveOptions struct {
	// Offset is the first byte of the file to retrieve (REST, or the
	// offset of ERET).
	Offset int64

	// Length, when positive, retrieves at most Length bytes starting at
	// Offset: with ERET when the server offers it, else with REST and by
	// closing the data connection after Length bytes. Zero or negative
	// means up to the end of the file.
	Length int64
}

// StoreOptions modifies Store. The zero value (or nil) replaces the whole
// file.
type StoreOptions struct {
	// Size, when positive, is announced with ALLO before the transfer so
	// that the server can reserve the space.
	Size int64

	// Append appends to the file (APPE) instead of replacing it.
	Append bool

	// Offset, when positive, writes the data starting at this offset of
	// the file (REST, then STOR): the server keeps the bytes before it and
	// does not truncate the file.
	Offset int64
}

// brokenError marks an error after which the control connection's state is
// unknown, so the Conn must be closed.
type brokenError struct{ err error }

func (e *brokenError) Error() string { return e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// exchange sends one command and reads one reply, without a watch of its
// own (the caller's watch covers it). Errors are *brokenError.
func (c *Conn) exchange(line string) (Reply, error) {
	err := c.send(line)
	var r Reply
	if err == nil {
		r, err = c.readReply()
	}
	if err != nil {
		return Reply{}, &brokenError{fmt.Errorf("client: %s: %w", verb(line), err)}
	}
	return r, nil
}

// Retrieve downloads path into w and returns the number of bytes written.
// When w is an *os.File, the bytes go from the socket to the file inside
// the kernel (splice).
func (c *Conn) Retrieve(ctx context.Context, path string, w io.Writer, opts *RetrieveOptions) (int64, error) {
	var o RetrieveOptions
	if opts != nil {
		o = *opts
	}
	if o.Offset < 0 {
		return 0, fmt.Errorf("client: RETR %s: negative offset %d", path, o.Offset)
	}
	var pre []string
	command := "RETR " + path
	limit := int64(-1)
	cut := false // the data connection is closed before the server is done
	switch {
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
	n, err := c.transfer(ctx, pre, command, func(conn *net.TCPConn) (int64, error) {
		if limit >= 0 {
			// io.LimitedReader keeps the splice path of *os.File.ReadFrom.
			return io.Copy(w, &io.LimitedReader{R: conn, N: limit})
		}
		return io.Copy(w, conn)
	})
	var re *ReplyError
	if cut && n == limit && errors.As(err, &re) {
		// We hung up after Length bytes; the server may call that an error.
		err = nil
	}
	return n, err
}

// Store uploads the bytes of r to path and returns the number of bytes
// sent. When r is an *os.File (or an *io.LimitedReader of one), the bytes
// go from the file to the socket inside the kernel (sendfile).
func (c *Conn) Store(ctx context.Context, path string, r io.Reader, opts *StoreOptions) (int64, error) {
	var o StoreOptions
	if opts != nil {
		o = *opts
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
	return c.transfer(ctx, pre, command, func(conn *net.TCPConn) (int64, error) {
		return io.Copy(conn, r)
	})
}

// transfer runs one data transfer: data connection set-up, the commands in
// pre (each must get 2xx or 3xx), command (must get 1xx), move runs on the
// data connection, then the final reply (must be 2xx).
//
// A negative reply is returned as a *ReplyError and the Conn stays usable.
// Any other failure after command was accepted (ctx done, the copy failed)
// aborts: ABOR, the data connection is reset, the replies are drained for a
// short while, and the Conn is closed.
func (c *Conn) transfer(ctx context.Context, pre []string, command string, move func(*net.TCPConn) (int64, error)) (int64, error) {
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
	d, sent, n, err := c.transferSteps(ctx, w, pre, command, move)
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
		c.abort()
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
func (c *Conn) transferSteps(ctx context.Context, w *watcher, pre []string, command string, move func(*net.TCPConn) (int64, error)) (d *dataChan, sent bool, n int64, err error) {
	d, err = c.openData(ctx, w)
	if err != nil {
		return nil, false, 0, err
	}
	for _, line := range pre {
		r, err := c.exchange(line)
		if err != nil {
			return d, false, 0, err
		}
		if cl := r.Class(); cl != 2 && cl != 3 {
			return d, false, 0, &ReplyError{Reply: r}
		}
	}
	r, err := c.exchange(command)
	if err != nil {
		return d, false, 0, err
	}
	if r.Class() != 1 {
		return d, false, 0, &ReplyError{Reply: r}
	}
	if err := d.accept(); err != nil {
		return d, true, 0, &brokenError{err}
	}
	w.add(d.conn)
	n, err = move(d.conn)
	if err != nil {
		return d, true, n, &brokenError{fmt.Errorf("client: %s: data connection: %w", verb(command), err)}
	}
	if err := d.conn.Close(); err != nil {
		return d, true, n, &brokenError{fmt.Errorf("client: %s: data connection: %w", verb(command), err)}
	}
	d.conn = nil
	r, err = c.readReply()
	if err != nil {
		return d, true, n, &brokenError{fmt.Errorf("client: %s: %w", verb(command), err)}
	}
	if r.Class() != 2 {
		return d, false, n, &ReplyError{Reply: r}
	}
	return d, false, n, nil
}

// abort ends an interrupted transfer: ABOR, then the replies are read and
// dropped for abortTimeout, and the Conn is closed.
func (c *Conn) abort() {
	_ = c.nc.SetDeadline(time.Now().Add(abortTimeout))
	if c.send("ABOR") == nil {
		for range 4 {
			if _, err := c.readReply(); err != nil {
				break
			}
		}
	}
	c.close()
}
