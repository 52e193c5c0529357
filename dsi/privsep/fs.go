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
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// Options adjusts [StartOptions]. The zero value is the safe default.
type Options struct {
	// AllowRoot permits an account with uid 0. Without it such an account
	// is refused: acting as root through a helper is rarely what a
	// grid-mapfile meant.
	AllowRoot bool
	// Stderr receives the helper's standard error (its message when it
	// fails); nil means the server's os.Stderr.
	Stderr io.Writer
}

// ErrClosed is wrapped by every call on an FS after Close.
var ErrClosed = errors.New("privsep: storage closed")

// ErrHelperExited is wrapped by every pending and later call once the
// helper process has gone away (it crashed, was killed, or broke the
// protocol).
var ErrHelperExited = errors.New("privsep: helper process ended")

// FS is a [dsi.Storage] whose operations run in a helper process as
// another user. Open and Create return files opened by the helper and
// passed back, so reads and writes (including sendfile and splice) happen
// in this process without further round trips. It is safe for concurrent
// use; readers and writers stay usable after Close.
type FS struct {
	conn    *net.UnixConn
	account string // for error messages

	// proc is the helper, or nil when Serve runs in this process (tests);
	// exited is closed once it has been waited for, and waitErr is then
	// its exit status.
	proc    *exec.Cmd
	exited  chan struct{}
	waitErr error

	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // readLoop and the process waiter

	mu      sync.Mutex
	nextID  uint32           // guarded by mu
	pending map[uint32]*call // guarded by mu
	err     error            // guarded by mu; set once, fails every later call
}

// call is one request waiting for its reply.
type call struct {
	op      byte
	done    chan result // buffered 1; receives exactly one result, under FS.mu
	entries []dsi.FileInfo
}

// result is a reply: its body (an error reply when remote is set), the
// descriptor passed with it, or a local error.
type result struct {
	body    []byte
	remote  bool
	file    *os.File
	entries []dsi.FileInfo
	err     error
}

// release closes a descriptor nobody will use.
func (r result) release() {
	if r.file != nil {
		r.file.Close()
	}
}

// newFS starts serving the client end conn of a socket pair. proc, when not
// nil, is the helper process: it is waited for by FS.
func newFS(conn *net.UnixConn, proc *exec.Cmd, account string) *FS {
	f := &FS{
		conn:    conn,
		account: account,
		proc:    proc,
		exited:  make(chan struct{}),
		pending: make(map[uint32]*call),
	}
	if proc != nil {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.waitErr = proc.Wait()
			close(f.exited)
		}()
	} else {
		close(f.exited)
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.readLoop()
	}()
	return f
}

// readLoop owns the read side of conn: it routes replies to their calls
// and, on the first error, fails every pending call and every later one.
func (f *FS) readLoop() {
	buf := make([]byte, maxPacket+1)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := f.conn.ReadMsgUnix(buf, oob)
		var file *os.File
		if err == nil {
			file, err = takeFile(oob[:oobn], flags)
		}
		if err == nil && flags&syscall.MSG_TRUNC != 0 {
			err = fmt.Errorf("%w: packet over %d bytes", errMalformed, maxPacket)
		}
		if err == nil {
			err = f.deliver(buf[:n], file)
		}
		if err != nil {
			if file != nil {
				file.Close()
			}
			f.fail(err)
			return
		}
	}
}

// takeFile returns the one descriptor passed with a packet, or nil. More
// than one, or a truncated control message, is a protocol error.
func takeFile(oob []byte, flags int) (*os.File, error) {
	if len(oob) == 0 {
		if flags&syscall.MSG_CTRUNC != 0 {
			return nil, fmt.Errorf("%w: truncated control message", errMalformed)
		}
		return nil, nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	var fds []int
	for _, m := range msgs {
		rights, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		fds = append(fds, rights...)
	}
	if len(fds) != 1 || flags&syscall.MSG_CTRUNC != 0 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		if len(fds) == 0 && flags&syscall.MSG_CTRUNC == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %d descriptors in one packet", errMalformed, len(fds))
	}
	return os.NewFile(uintptr(fds[0]), "privsep"), nil
}

// deliver hands one packet to its call. A packet for a call that was
// abandoned (its context ended) is dropped, closing its descriptor.
func (f *FS) deliver(p []byte, file *os.File) error {
	h, body, err := parseHeader(p)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.pending[h.id]
	if c == nil {
		if file != nil {
			file.Close()
		}
		if h.op == opSub && h.flags&flagError == 0 {
			// The caller gave up waiting; the helper opened the
			// root all the same.
			d := decoder{b: body}
			if id := d.u32("root"); d.end() == nil && id != baseRoot {
				f.releaseLater(id)
			}
		}
		return nil
	}
	if h.op != c.op {
		return fmt.Errorf("%w: reply op %d to request op %d", errMalformed, h.op, c.op)
	}
	wantFile := (c.op == opOpen || c.op == opCreate) && h.flags&flagError == 0
	if (file != nil) != wantFile {
		return fmt.Errorf("%w: descriptor mismatch for op %d", errMalformed, c.op)
	}
	if h.flags&flagMore != 0 && (c.op != opReadDir || h.flags&flagError != 0) {
		return fmt.Errorf("%w: continued reply for op %d", errMalformed, c.op)
	}
	if h.flags&flagError == 0 && c.op == opReadDir {
		d := decoder{b: body}
		for range int(d.u32("count")) {
			if d.err != nil || len(c.entries) >= maxEntries {
				return fmt.Errorf("%w: directory listing too long or bad", errMalformed)
			}
			c.entries = append(c.entries, d.fileInfo())
		}
		if err := d.end(); err != nil {
			return err
		}
		if h.flags&flagMore != 0 {
			return nil
		}
	}
	delete(f.pending, h.id)
	// The caller decodes error replies: it knows the op and the name.
	c.done <- result{
		body:    append([]byte(nil), body...),
		remote:  h.flags&flagError != 0,
		file:    file,
		entries: c.entries,
	}
	return nil
}

// fail records the end of the conversation and fails every pending call.
func (f *FS) fail(cause error) {
	var err error
	switch {
	case errors.Is(cause, net.ErrClosed):
		err = ErrClosed
	default:
		// The helper closing its end normally means it exited: wait a
		// moment for the status so that the error can say how.
		select {
		case <-f.exited:
		case <-time.After(time.Second):
		}
		status := f.waitStatus()
		if errors.Is(cause, errMalformed) {
			err = fmt.Errorf("%w (account %q): %w", ErrHelperExited, f.account, cause)
		} else {
			err = fmt.Errorf("%w (account %q): %s", ErrHelperExited, f.account, status)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
	for id, c := range f.pending {
		delete(f.pending, id)
		c.done <- result{err: f.err}
	}
}

// waitStatus describes how the helper ended, for error messages.
func (f *FS) waitStatus() string {
	select {
	case <-f.exited:
		if f.proc == nil {
			return "connection closed"
		}
		if f.waitErr != nil {
			return f.waitErr.Error()
		}
		return "exit status 0"
	default:
		return "connection closed"
	}
}

// roundTrip sends one request and waits for its reply, the end of ctx, or
// the end of the helper. An error reply is returned as *Error.
func (f *FS) roundTrip(ctx context.Context, op byte, name string, args []byte) (result, error) {
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	c := &call{op: op, done: make(chan result, 1)}
	f.mu.Lock()
	if f.err != nil {
		err := f.err
		f.mu.Unlock()
		return result{}, err
	}
	f.nextID++
	id := f.nextID
	f.pending[id] = c
	f.mu.Unlock()

	p := appendHeader(make([]byte, 0, headerLen+len(args)), header{op: op, id: id})
	p = append(p, args...)
	if _, _, err := f.conn.WriteMsgUnix(p, nil, nil); err != nil {
		f.abandon(id, c)
		f.mu.Lock()
		ferr := f.err
		f.mu.Unlock()
		if ferr != nil {
			return result{}, ferr
		}
		if errors.Is(err, net.ErrClosed) {
			return result{}, ErrClosed
		}
		return result{}, fmt.Errorf("%w (account %q): %w", ErrHelperExited, f.account, err)
	}
	select {
	case r := <-c.done:
		if r.remote {
			err := decodeError(r.body, opNames[op], name)
			if errors.Is(err, errMalformed) {
				f.protocolError(err)
				return result{}, f.currentErr()
			}
			return result{}, err
		}
		return r, r.err
	case <-ctx.Done():
		f.abandon(id, c)
		return result{}, context.Cause(ctx)
	}
}

// abandon forgets call id; a reply that arrived meanwhile is released.
func (f *FS) abandon(id uint32, c *call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pending[id]; ok {
		delete(f.pending, id)
		return
	}
	// Delivered (or failed) under mu before we got it: the result waits.
	select {
	case r := <-c.done:
		r.release()
	default:
	}
}

var opNames = [...]string{
	opHello:   "hello",
	opStat:    "stat",
	opReadDir: "readdir",
	opOpen:    "open",
	opCreate:  "create",
	opMkdir:   "mkdir",
	opRemove:  "remove",
	opRmdir:   "rmdir",
	opRename:  "rename",
	opChmod:   "chmod",
	opChtimes: "chtimes",
	opSub:     "sub",
	opRelease: "release",
}

// checkName refuses names the helper would refuse, before sending.
func checkName(op, name string) error {
	if len(name) > maxString || !validName(name) {
		return &Error{Op: op, Path: name, Kind: dsi.ErrInvalid, Text: op + " " + clip(name, 256) + ": invalid name"}
	}
	return nil
}

// simple runs an op whose reply has an empty body.
func (f *FS) simple(ctx context.Context, op byte, name string, args []byte) error {
	if err := checkName(opNames[op], name); err != nil {
		return err
	}
	r, err := f.roundTrip(ctx, op, name, args)
	if err != nil {
		return err
	}
	if len(r.body) != 0 {
		f.protocolError(fmt.Errorf("%w: %d-byte reply to %s", errMalformed, len(r.body), opNames[op]))
		return f.currentErr()
	}
	return nil
}

// protocolError ends the conversation after a bad reply.
func (f *FS) protocolError(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = fmt.Errorf("%w (account %q): %w", ErrHelperExited, f.account, err)
	}
	f.mu.Unlock()
	f.conn.Close() // readLoop ends; the helper sees end of file and exits
}

// Err reports why f can serve no more (the helper ended, or Close was
// called), nil while it can.
func (f *FS) Err() error {
	if err := f.currentErr(); err != nil {
		return err
	}
	if f.proc == nil {
		return nil
	}
	select {
	case <-f.exited:
		return fmt.Errorf("%w (account %q): %s", ErrHelperExited, f.account, f.waitStatus())
	default:
		return nil
	}
}

func (f *FS) currentErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// hello checks that the helper speaks this protocol and runs as uid and
// gid.
func (f *FS) hello(ctx context.Context, uid, gid uint32) error {
	r, err := f.roundTrip(ctx, opHello, "/", nil)
	if err != nil {
		return err
	}
	d := decoder{b: r.body}
	gotUID, gotGID := d.u32("uid"), d.u32("gid")
	if err := d.end(); err != nil {
		return err
	}
	if gotUID != uid || gotGID != gid {
		return fmt.Errorf("privsep: helper runs as uid %d gid %d, want %d %d", gotUID, gotGID, uid, gid)
	}
	return nil
}

// req starts the arguments of a request on root about name.
func req(root uint32, name string) []byte { return appendString(appendU32(nil, root), name) }

// Stat describes the entry at name as the account sees it.
func (f *FS) Stat(ctx context.Context, name string) (dsi.FileInfo, error) {
	return f.stat(ctx, baseRoot, name)
}

func (f *FS) stat(ctx context.Context, root uint32, name string) (dsi.FileInfo, error) {
	if err := checkName("stat", name); err != nil {
		return dsi.FileInfo{}, err
	}
	r, err := f.roundTrip(ctx, opStat, name, req(root, name))
	if err != nil {
		return dsi.FileInfo{}, err
	}
	d := decoder{b: r.body}
	fi := d.fileInfo()
	if err := d.end(); err != nil {
		f.protocolError(err)
		return dsi.FileInfo{}, f.currentErr()
	}
	return fi, nil
}

// ReadDir lists the directory at name as the account sees it.
func (f *FS) ReadDir(ctx context.Context, name string) ([]dsi.FileInfo, error) {
	return f.readDir(ctx, baseRoot, name)
}

func (f *FS) readDir(ctx context.Context, root uint32, name string) ([]dsi.FileInfo, error) {
	if err := checkName("readdir", name); err != nil {
		return nil, err
	}
	r, err := f.roundTrip(ctx, opReadDir, name, req(root, name))
	if err != nil {
		return nil, err
	}
	if r.entries == nil {
		r.entries = []dsi.FileInfo{}
	}
	return r.entries, nil
}

// Open opens a regular file for reading with the account's rights. The
// returned *posix.Reader reads the passed descriptor directly and
// implements [dsi.RangeWriterTo] with sendfile(2).
func (f *FS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	return f.open(ctx, baseRoot, name)
}

func (f *FS) open(ctx context.Context, root uint32, name string) (dsi.Reader, error) {
	if err := checkName("open", name); err != nil {
		return nil, err
	}
	r, err := f.roundTrip(ctx, opOpen, name, req(root, name))
	if err != nil {
		return nil, err
	}
	rd, err := posix.NewReader(r.file, name)
	if err != nil {
		r.release()
		return nil, err
	}
	return rd, nil
}

// Create opens (creating if needed) a file for writing with the account's
// rights; a new file belongs to the account. The returned *posix.Writer
// writes the passed descriptor directly and implements
// [dsi.RangeReaderFrom] with splice(2).
func (f *FS) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	return f.create(ctx, baseRoot, name, opts)
}

// The bits of a create request's flags byte.
const (
	createTruncate = 1 << iota
	createNoFollow
)

func (f *FS) create(ctx context.Context, root uint32, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	if err := checkName("create", name); err != nil {
		return nil, err
	}
	args := req(root, name)
	var flags byte
	if opts.Truncate {
		flags |= createTruncate
	}
	if opts.NoFollow {
		flags |= createNoFollow
	}
	args = appendU8(args, flags)
	args = appendI64(args, opts.Size)
	args = appendU32(args, uint32(opts.Perm))
	r, err := f.roundTrip(ctx, opCreate, name, args)
	if err != nil {
		return nil, err
	}
	w, err := posix.NewWriter(r.file, name)
	if err != nil {
		r.release()
		return nil, err
	}
	return w, nil
}

// Mkdir makes one directory as the account.
func (f *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return f.simple(ctx, opMkdir, name, appendU32(req(baseRoot, name), uint32(perm)))
}

// Remove deletes a file or symbolic link as the account.
func (f *FS) Remove(ctx context.Context, name string) error {
	return f.simple(ctx, opRemove, name, req(baseRoot, name))
}

// Rmdir deletes an empty directory as the account.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	return f.simple(ctx, opRmdir, name, req(baseRoot, name))
}

// Rename moves from to to as the account.
func (f *FS) Rename(ctx context.Context, from, to string) error {
	return f.rename(ctx, baseRoot, from, to)
}

func (f *FS) rename(ctx context.Context, root uint32, from, to string) error {
	if err := checkName("rename", to); err != nil {
		return err
	}
	return f.simple(ctx, opRename, from, appendString(req(root, from), to))
}

// Chmod sets the permission bits of name as the account.
func (f *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return f.simple(ctx, opChmod, name, appendU32(req(baseRoot, name), uint32(mode)))
}

// Chtimes sets the modification time of name as the account.
func (f *FS) Chtimes(ctx context.Context, name string, mtime time.Time) error {
	return f.simple(ctx, opChtimes, name, appendTime(req(baseRoot, name), mtime))
}

// subTimeout bounds a Sub request when ctx has no earlier deadline:
// [dsi.Sub] has no context of its own.
const subTimeout = 10 * time.Second

// Sub has the helper open the directory dir as a root of its own, and
// returns the storage it serves there: every name and every symbolic link
// resolves inside dir, as the account sees it ([dsi.Sub] uses it; call
// that instead). dir and the directories on the way to it must be real
// directories, not symbolic links. The helper keeps the directory open
// until the result is garbage collected or the helper ends.
func (f *FS) Sub(ctx context.Context, dir string) (dsi.Storage, error) {
	return f.sub(ctx, baseRoot, dir)
}

func (f *FS) sub(ctx context.Context, root uint32, dir string) (dsi.Storage, error) {
	if err := checkName("sub", dir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, subTimeout)
	defer cancel()
	r, err := f.roundTrip(ctx, opSub, dir, req(root, dir))
	if err != nil {
		return nil, err
	}
	d := decoder{b: r.body}
	id := d.u32("root")
	if err := d.end(); err != nil || id == baseRoot {
		f.protocolError(fmt.Errorf("%w: bad reply to sub", errMalformed))
		return nil, f.currentErr()
	}
	s := &subFS{f: f, id: id}
	runtime.AddCleanup(s, f.releaseLater, id)
	return s, nil
}

// releaseLater has the helper forget root id, without waiting: it runs
// where it must not block (a cleanup, the read loop).
func (f *FS) releaseLater(id uint32) { go f.release(id) }

// release has the helper forget root id. No call waits for the reply,
// which the read loop drops.
func (f *FS) release(id uint32) {
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return
	}
	f.nextID++
	p := appendHeader(nil, header{op: opRelease, id: f.nextID})
	f.mu.Unlock()
	f.conn.WriteMsgUnix(appendU32(p, id), nil, nil)
}

// subFS is a root the helper opened for Sub. Each method keeps the subFS
// reachable until it returns, so that the root is not released while a
// request names it.
type subFS struct {
	f  *FS
	id uint32 // the root number; released when the subFS is collected
}

func (s *subFS) Stat(ctx context.Context, name string) (dsi.FileInfo, error) {
	defer runtime.KeepAlive(s)
	return s.f.stat(ctx, s.id, name)
}

func (s *subFS) ReadDir(ctx context.Context, name string) ([]dsi.FileInfo, error) {
	defer runtime.KeepAlive(s)
	return s.f.readDir(ctx, s.id, name)
}

func (s *subFS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	defer runtime.KeepAlive(s)
	return s.f.open(ctx, s.id, name)
}

func (s *subFS) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	defer runtime.KeepAlive(s)
	return s.f.create(ctx, s.id, name, opts)
}

func (s *subFS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	defer runtime.KeepAlive(s)
	return s.f.simple(ctx, opMkdir, name, appendU32(req(s.id, name), uint32(perm)))
}

func (s *subFS) Remove(ctx context.Context, name string) error {
	defer runtime.KeepAlive(s)
	return s.f.simple(ctx, opRemove, name, req(s.id, name))
}

func (s *subFS) Rmdir(ctx context.Context, name string) error {
	defer runtime.KeepAlive(s)
	return s.f.simple(ctx, opRmdir, name, req(s.id, name))
}

func (s *subFS) Rename(ctx context.Context, from, to string) error {
	defer runtime.KeepAlive(s)
	return s.f.rename(ctx, s.id, from, to)
}

func (s *subFS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	defer runtime.KeepAlive(s)
	return s.f.simple(ctx, opChmod, name, appendU32(req(s.id, name), uint32(mode)))
}

func (s *subFS) Chtimes(ctx context.Context, name string, mtime time.Time) error {
	defer runtime.KeepAlive(s)
	return s.f.simple(ctx, opChtimes, name, appendTime(req(s.id, name), mtime))
}

// Sub opens a directory below this root as a root of its own.
func (s *subFS) Sub(ctx context.Context, dir string) (dsi.Storage, error) {
	defer runtime.KeepAlive(s)
	return s.f.sub(ctx, s.id, dir)
}

// Close ends the helper and waits for it: closing the socket makes it
// exit; one that has not exited after a few seconds is killed. Calls
// pending or made afterwards fail with [ErrClosed]. Close may be called
// more than once; later calls return the first result.
func (f *FS) Close() error {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		if f.err == nil {
			f.err = ErrClosed
		}
		f.mu.Unlock()
		f.conn.Close()
		if f.proc != nil {
			select {
			case <-f.exited:
			case <-time.After(5 * time.Second):
				f.proc.Process.Kill()
				<-f.exited
				f.closeErr = fmt.Errorf("privsep: helper for %q did not exit; killed", f.account)
			}
		}
		f.wg.Wait()
	})
	return f.closeErr
}

// Interface guards.
var (
	_ dsi.Storage   = (*FS)(nil)
	_ dsi.Chmoder   = (*FS)(nil)
	_ dsi.Chtimeser = (*FS)(nil)
	_ dsi.Subber    = (*FS)(nil)
	_ dsi.Storage   = (*subFS)(nil)
	_ dsi.Chmoder   = (*subFS)(nil)
	_ dsi.Chtimeser = (*subFS)(nil)
	_ dsi.Subber    = (*subFS)(nil)
)
