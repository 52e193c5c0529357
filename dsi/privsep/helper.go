//go:build unix

package privsep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// Serve is the helper's side: it answers the requests of one [FS] arriving
// on conn (the helper's end of the socket pair, a SOCK_SEQPACKET Unix
// socket), serving the directory root through dsi/posix with the rights of
// the calling process. It returns nil when the other end closes the
// connection, and an error when root cannot be served, ctx ends, or a
// packet is malformed (the conversation is then over). Requests with a name
// that is not clean and absolute are refused with [dsi.ErrInvalid]. The
// caller keeps ownership of conn.
//
// `ferry privsep-helper` is this function on descriptor 3.
func Serve(ctx context.Context, conn *os.File, root string) error {
	c, err := net.FileConn(conn)
	if err != nil {
		return fmt.Errorf("privsep: helper socket: %w", err)
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok || uc.LocalAddr().Network() != "unixpacket" {
		return errors.New("privsep: helper socket is not a SOCK_SEQPACKET Unix socket")
	}
	fsys, err := posix.New(root)
	if err != nil {
		return fmt.Errorf("privsep: %w", err)
	}
	h := &helper{conn: uc, roots: map[uint32]*posix.FS{baseRoot: fsys}}
	defer h.closeRoots()
	stop := context.AfterFunc(ctx, func() { uc.Close() })
	defer stop()

	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, maxInFlight)
	buf := make([]byte, maxPacket+1)
	oob := make([]byte, syscall.CmsgSpace(4))
	for {
		n, oobn, flags, _, err := uc.ReadMsgUnix(buf, oob)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil:
			return fmt.Errorf("privsep: helper: %w", err)
		case oobn != 0 || flags&syscall.MSG_CTRUNC != 0:
			closeRights(oob[:oobn])
			return fmt.Errorf("%w: descriptors in a request", errMalformed)
		case flags&syscall.MSG_TRUNC != 0:
			return fmt.Errorf("%w: packet over %d bytes", errMalformed, maxPacket)
		}
		hd, body, err := parseHeader(buf[:n])
		if err != nil {
			return err
		}
		if hd.flags != 0 {
			return fmt.Errorf("%w: flags %#x in a request", errMalformed, hd.flags)
		}
		req := append([]byte(nil), body...)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			h.handle(hd, req)
		}()
	}
}

// closeRights closes every descriptor in a control message.
func closeRights(oob []byte) {
	msgs, _ := syscall.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		fds, _ := syscall.ParseUnixRights(&m)
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}
}

// helper serves requests; its methods run concurrently, one per request.
type helper struct {
	conn *net.UnixConn // writes are atomic per packet

	mu       sync.Mutex
	roots    map[uint32]*posix.FS // guarded by mu; baseRoot is the served directory
	lastRoot uint32               // guarded by mu
}

// errUnknownRoot answers a request naming a root the helper does not have.
var errUnknownRoot = fmt.Errorf("privsep: unknown root: %w", dsi.ErrInvalid)

// root returns the root numbered id.
func (h *helper) root(id uint32) (*posix.FS, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.roots[id]; r != nil {
		return r, nil
	}
	return nil, errUnknownRoot
}

// addRoot numbers a new root.
func (h *helper) addRoot(r *posix.FS) uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		h.lastRoot++
		if _, used := h.roots[h.lastRoot]; h.lastRoot != baseRoot && !used {
			h.roots[h.lastRoot] = r
			return h.lastRoot
		}
	}
}

// releaseRoot forgets and closes root id; the served directory stays.
func (h *helper) releaseRoot(id uint32) error {
	h.mu.Lock()
	r := h.roots[id]
	if id != baseRoot {
		delete(h.roots, id)
	}
	h.mu.Unlock()
	switch {
	case r == nil:
		return errUnknownRoot
	case id == baseRoot:
		return fmt.Errorf("privsep: release of the served root: %w", dsi.ErrInvalid)
	}
	return r.Close()
}

// closeRoots closes every root, once no request runs.
func (h *helper) closeRoots() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, r := range h.roots {
		r.Close()
		delete(h.roots, id)
	}
}

// errBadRequest answers a request whose body does not decode.
var errBadRequest = fmt.Errorf("privsep: bad request: %w", dsi.ErrInvalid)

// handle answers one request. Failures to send mean the server has gone;
// the read loop notices that by itself.
func (h *helper) handle(hd header, body []byte) {
	ctx := context.Background()
	d := decoder{b: body}
	reply := appendHeader(make([]byte, 0, 256), header{op: hd.op, id: hd.id})
	// Every request but hello starts with the number of the root its
	// names resolve in. (A body too short for it fails d.end below.)
	var rootID uint32
	var fsys *posix.FS
	var err error
	if hd.op != opHello {
		rootID = d.u32("root")
		fsys, err = h.root(rootID)
	}
	op := hd.op
	if err != nil {
		op = 0 // answered below with err
	}
	switch op {
	case 0:
	case opHello:
		if err = d.end(); err == nil {
			reply = appendU32(appendU32(reply, uint32(os.Getuid())), uint32(os.Getgid()))
		}
	case opStat:
		name := d.name("name")
		if err = d.end(); err == nil {
			var fi dsi.FileInfo
			if fi, err = fsys.Stat(ctx, name); err == nil {
				reply = appendFileInfo(reply, fi)
			}
		}
	case opReadDir:
		name := d.name("name")
		if err = d.end(); err == nil {
			var list []dsi.FileInfo
			if list, err = fsys.ReadDir(ctx, name); err == nil {
				h.sendDir(hd, list)
				return
			}
		}
	case opOpen:
		name := d.name("name")
		if err = d.end(); err == nil {
			var r dsi.Reader
			if r, err = fsys.Open(ctx, name); err == nil {
				defer r.Close()
				h.send(reply, r.(*posix.Reader).File())
				return
			}
		}
	case opCreate:
		name := d.name("name")
		flags := d.u8("flags")
		opts := dsi.CreateOptions{Truncate: flags&createTruncate != 0, NoFollow: flags&createNoFollow != 0, Size: d.i64("size")}
		opts.Perm = fs.FileMode(d.u32("perm")).Perm()
		if err = d.end(); err == nil {
			var w dsi.Writer
			if w, err = fsys.Create(ctx, name, opts); err == nil {
				defer w.Close()
				h.send(reply, w.(*posix.Writer).File())
				return
			}
		}
	case opMkdir:
		name := d.name("name")
		perm := fs.FileMode(d.u32("perm")).Perm()
		if err = d.end(); err == nil {
			err = fsys.Mkdir(ctx, name, perm)
		}
	case opRemove:
		name := d.name("name")
		if err = d.end(); err == nil {
			err = fsys.Remove(ctx, name)
		}
	case opRmdir:
		name := d.name("name")
		if err = d.end(); err == nil {
			err = fsys.Rmdir(ctx, name)
		}
	case opRename:
		from, to := d.name("from"), d.name("to")
		if err = d.end(); err == nil {
			err = fsys.Rename(ctx, from, to)
		}
	case opChmod:
		name := d.name("name")
		mode := fs.FileMode(d.u32("mode")).Perm()
		if err = d.end(); err == nil {
			err = fsys.Chmod(ctx, name, mode)
		}
	case opChtimes:
		name := d.name("name")
		mtime := d.time("mtime")
		if err = d.end(); err == nil {
			err = fsys.Chtimes(ctx, name, mtime)
		}
	case opSub:
		name := d.name("name")
		if err = d.end(); err == nil {
			var sub dsi.Storage
			if sub, err = fsys.Sub(ctx, name); err == nil {
				reply = appendU32(reply, h.addRoot(sub.(*posix.FS)))
			}
		}
	case opRelease:
		if err = d.end(); err == nil {
			err = h.releaseRoot(rootID)
		}
	default:
		err = errBadRequest
	}
	if errors.Is(err, errMalformed) {
		err = errBadRequest
	}
	if err != nil {
		reply = appendError(appendHeader(reply[:0], header{op: hd.op, flags: flagError, id: hd.id}), err)
	}
	h.send(reply, nil)
}

// send writes one packet, with file's descriptor when file is not nil.
func (h *helper) send(p []byte, file *os.File) {
	if file != nil {
		rc, err := file.SyscallConn()
		if err != nil {
			return
		}
		rc.Control(func(fd uintptr) {
			h.conn.WriteMsgUnix(p, syscall.UnixRights(int(fd)), nil)
		})
		return
	}
	h.conn.WriteMsgUnix(p, nil, nil)
}

// sendDir writes a listing in as many packets as it needs.
func (h *helper) sendDir(hd header, list []dsi.FileInfo) {
	start := func() []byte {
		p := appendHeader(make([]byte, 0, maxPacket), header{op: hd.op, id: hd.id})
		return appendU32(p, 0) // count, patched below
	}
	p, count := start(), uint32(0)
	var enc []byte
	for _, fi := range list {
		enc = appendFileInfo(enc[:0], fi)
		if len(p)+len(enc) > maxPacket {
			p[2] |= flagMore
			putCount(p, count)
			h.send(p, nil)
			p, count = start(), 0
		}
		p = append(p, enc...)
		count++
	}
	putCount(p, count)
	h.send(p, nil)
}

func putCount(p []byte, n uint32) {
	p[headerLen], p[headerLen+1], p[headerLen+2], p[headerLen+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
}
