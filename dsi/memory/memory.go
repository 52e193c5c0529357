// Package memory is an in-memory DSI back-end for tests and demonstrations.
//
// It keeps a tree of directories and files under one mutex and follows the
// error semantics of the posix back-end. It has no symbolic links, no owners
// (Owner and Group are "", UID and GID -1) and does not enforce permissions,
// although Chmod records them.
//
// Because a remote client chooses the offsets it writes at, file content is
// bounded by [Limits]: a write that would take a file or the whole tree past
// them fails with [dsi.ErrNoSpace] (reply 452) before anything is allocated.
// Holes are not sparse, so a write far past the end of a file is charged for
// the whole gap.
package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// FS is an in-memory [dsi.Storage]. It is safe for concurrent use.
type FS struct {
	limits Limits // immutable, defaults filled in

	mu     sync.RWMutex
	root   *node  // guarded by mu
	nextID uint64 // guarded by mu
	// used is the sum of the sizes of the live files: those in the tree
	// and those removed but still open. Guarded by mu; at most
	// limits.MaxTotal.
	used int64
	// meta is what the directory entries cost (entryOverhead and the
	// name each). Guarded by mu; at most metaLimit().
	meta int64
}

// metaLimit bounds what names and directories may take: a sixteenth of
// the data budget, and at least 1 MiB.
func (fsys *FS) metaLimit() int64 { return max(fsys.limits.MaxTotal/16, 1<<20) }

// node is a file or a directory; all fields are guarded by FS.mu.
type node struct {
	dir      bool
	mode     fs.FileMode // permission bits only
	mtime    time.Time
	id       uint64
	children map[string]*node // directories
	data     []byte           // files; len(data) is charged to FS.used while the file is live
	linked   bool             // in the tree
	open     int              // readers and writers not yet closed
	entry    int64            // what its entry in a directory costs FS.meta (entryCost)
}

// entryOverhead is what a directory entry costs the budget besides its
// name: names and directories take memory too, and a flood of them must
// not grow the server past its budget.
const entryOverhead = 256

// maxName bounds one path element, as most file systems do.
const maxName = 255

// entryCost checks that an entry called base fits within the limits and
// returns what it costs.
func (fsys *FS) entryCost(op, name, base string, held int64) (int64, error) {
	if len(base) > maxName {
		return 0, pathError(op, name, fmt.Errorf("%w: name longer than %d bytes", dsi.ErrInvalid, maxName))
	}
	cost := entryOverhead + int64(len(base))
	if cost > held && cost-held > fsys.metaLimit()-fsys.meta {
		return 0, pathError(op, name, fmt.Errorf("%w: memory storage limit of %d bytes for names reached", dsi.ErrNoSpace, fsys.metaLimit()))
	}
	return cost, nil
}

// New returns an empty file system holding only "/", with [DefaultLimits].
func New() *FS { return NewWithLimits(Limits{}) }

// NewWithLimits returns an empty file system holding only "/" whose files
// are bounded by l; zero fields take their defaults (see [Limits]).
func NewWithLimits(l Limits) *FS {
	fsys := &FS{limits: l.normalize()}
	fsys.root = fsys.newNodeLocked(true, 0o755)
	fsys.root.linked = true
	return fsys
}

// Limits returns the limits fsys enforces, defaults filled in.
func (fsys *FS) Limits() Limits { return fsys.limits }

// roomLocked checks that a file now holding held bytes may become size
// bytes long. It allocates nothing.
func (fsys *FS) roomLocked(op, name string, held, size int64) error {
	if size > fsys.limits.MaxFileSize {
		return pathError(op, name, fmt.Errorf("%w: file size limit is %d bytes", dsi.ErrNoSpace, fsys.limits.MaxFileSize))
	}
	if size > held && size-held > fsys.limits.MaxTotal-fsys.used {
		return pathError(op, name, fmt.Errorf("%w: memory storage limit of %d bytes reached", dsi.ErrNoSpace, fsys.limits.MaxTotal))
	}
	return nil
}

// releaseLocked gives a file's bytes back to the budget once it is neither
// in the tree nor open.
func (fsys *FS) releaseLocked(n *node) {
	if n.dir || n.linked || n.open > 0 {
		return
	}
	fsys.used -= int64(len(n.data))
	n.data = nil
}

// unlinkLocked takes n out of the tree (its parent's map entry is the
// caller's business).
func (fsys *FS) unlinkLocked(n *node) {
	n.linked = false
	fsys.meta -= n.entry
	n.entry = 0
	fsys.releaseLocked(n)
}

// linkLocked puts n in dir as base, charging its entry.
func (fsys *FS) linkLocked(dir *node, base string, n *node, cost int64) {
	n.linked = true
	n.entry = cost
	fsys.meta += cost
	dir.children[base] = n
}

func (fsys *FS) newNodeLocked(dir bool, perm fs.FileMode) *node {
	fsys.nextID++
	n := &node{dir: dir, mode: perm.Perm(), mtime: time.Now(), id: fsys.nextID}
	if dir {
		n.children = make(map[string]*node)
	}
	return n
}

// pathError wraps a sentinel with the operation and name.
func pathError(op, name string, kind error) error {
	return &fs.PathError{Op: "memory: " + op, Path: name, Err: kind}
}

// split cleans name and returns its components ("/" has none).
func split(name string) []string {
	name = path.Clean("/" + name)
	if name == "/" {
		return nil
	}
	return strings.Split(name[1:], "/")
}

// lookupLocked returns the node at the components parts.
func (fsys *FS) lookupLocked(op, name string, parts []string) (*node, error) {
	n := fsys.root
	for _, p := range parts {
		if !n.dir {
			return nil, pathError(op, name, dsi.ErrNotDir)
		}
		c, ok := n.children[p]
		if !ok {
			return nil, pathError(op, name, dsi.ErrNotExist)
		}
		n = c
	}
	return n, nil
}

// parentLocked returns the directory holding name and name's base; name
// must not be the root.
func (fsys *FS) parentLocked(op, name string, parts []string) (*node, string, error) {
	dir, err := fsys.lookupLocked(op, name, parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.dir {
		return nil, "", pathError(op, name, dsi.ErrNotDir)
	}
	return dir, parts[len(parts)-1], nil
}

func (n *node) infoLocked(name string) dsi.FileInfo {
	fi := dsi.FileInfo{
		Name:    name,
		Mode:    n.mode,
		ModTime: n.mtime,
		UID:     -1,
		GID:     -1,
		Unique:  "mem-" + strconv.FormatUint(n.id, 10),
	}
	if n.dir {
		fi.Mode |= fs.ModeDir
		fi.Size = int64(len(n.children))
	} else {
		fi.Size = int64(len(n.data))
	}
	return fi
}

// Stat describes the entry at name.
func (fsys *FS) Stat(ctx context.Context, name string) (dsi.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return dsi.FileInfo{}, err
	}
	parts := split(name)
	fsys.mu.RLock()
	defer fsys.mu.RUnlock()
	n, err := fsys.lookupLocked("stat", name, parts)
	if err != nil {
		return dsi.FileInfo{}, err
	}
	base := "/"
	if len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	return n.infoLocked(base), nil
}

// ReadDir lists the directory at name, sorted by name.
func (fsys *FS) ReadDir(ctx context.Context, name string) ([]dsi.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	parts := split(name)
	fsys.mu.RLock()
	defer fsys.mu.RUnlock()
	n, err := fsys.lookupLocked("readdir", name, parts)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, pathError("readdir", name, dsi.ErrNotDir)
	}
	out := make([]dsi.FileInfo, 0, len(n.children))
	for k, c := range n.children {
		out = append(out, c.infoLocked(k))
	}
	slices.SortFunc(out, func(a, b dsi.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Open opens a file for reading; a directory gives [dsi.ErrIsDir].
func (fsys *FS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	parts := split(name)
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	n, err := fsys.lookupLocked("open", name, parts)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, pathError("open", name, dsi.ErrIsDir)
	}
	n.open++
	return &reader{fsys: fsys, n: n, name: name, size: int64(len(n.data))}, nil
}

// Create opens name for writing, creating it with opts.Perm (0 means 0644)
// and emptying it when opts.Truncate is set. An opts.Size that could not fit
// within the limits fails with [dsi.ErrNoSpace], leaving name untouched.
func (fsys *FS) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	parts := split(name)
	if len(parts) == 0 {
		return nil, pathError("create", name, dsi.ErrIsDir)
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	dir, base, err := fsys.parentLocked("create", name, parts)
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[base]
	if ok && n.dir {
		return nil, pathError("create", name, dsi.ErrIsDir)
	}
	if opts.Size > 0 {
		var held int64
		if ok {
			held = int64(len(n.data))
		}
		if err := fsys.roomLocked("create", name, held, opts.Size); err != nil {
			return nil, err
		}
	}
	switch {
	case !ok:
		cost, err := fsys.entryCost("create", name, base, 0)
		if err != nil {
			return nil, err
		}
		perm := opts.Perm.Perm()
		if perm == 0 {
			perm = 0o644
		}
		n = fsys.newNodeLocked(false, perm)
		fsys.linkLocked(dir, base, n, cost)
		dir.mtime = n.mtime
	case opts.Truncate:
		fsys.used -= int64(len(n.data))
		n.data = nil
		n.mtime = time.Now()
	}
	n.open++
	return &writer{fsys: fsys, n: n, name: name}, nil
}

// Mkdir makes one directory (perm 0 means 0755).
func (fsys *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	parts := split(name)
	if len(parts) == 0 {
		return pathError("mkdir", name, dsi.ErrExist)
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	dir, base, err := fsys.parentLocked("mkdir", name, parts)
	if err != nil {
		return err
	}
	if _, ok := dir.children[base]; ok {
		return pathError("mkdir", name, dsi.ErrExist)
	}
	cost, err := fsys.entryCost("mkdir", name, base, 0)
	if err != nil {
		return err
	}
	if perm.Perm() == 0 {
		perm = 0o755
	}
	n := fsys.newNodeLocked(true, perm)
	fsys.linkLocked(dir, base, n, cost)
	dir.mtime = n.mtime
	return nil
}

// Remove deletes a file; a directory gives [dsi.ErrIsDir]. Open readers and
// writers of the file keep working on the detached data.
func (fsys *FS) Remove(ctx context.Context, name string) error {
	return fsys.remove(ctx, "remove", name, false)
}

// Rmdir deletes an empty directory.
func (fsys *FS) Rmdir(ctx context.Context, name string) error {
	return fsys.remove(ctx, "rmdir", name, true)
}

func (fsys *FS) remove(ctx context.Context, op, name string, wantDir bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	parts := split(name)
	if len(parts) == 0 {
		if wantDir {
			return pathError(op, name, dsi.ErrPermission)
		}
		return pathError(op, name, dsi.ErrIsDir)
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	dir, base, err := fsys.parentLocked(op, name, parts)
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	switch {
	case !ok:
		return pathError(op, name, dsi.ErrNotExist)
	case wantDir && !n.dir:
		return pathError(op, name, dsi.ErrNotDir)
	case !wantDir && n.dir:
		return pathError(op, name, dsi.ErrIsDir)
	case n.dir && len(n.children) > 0:
		return pathError(op, name, dsi.ErrNotEmpty)
	}
	delete(dir.children, base)
	fsys.unlinkLocked(n)
	dir.mtime = time.Now()
	return nil
}

// Rename moves from to to with rename(2) semantics: a file replaces a file,
// a directory replaces an empty directory, and a directory cannot move into
// itself.
func (fsys *FS) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fp, tp := split(from), split(to)
	if len(fp) == 0 || len(tp) == 0 {
		return pathError("rename", from, dsi.ErrPermission)
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	fdir, fbase, err := fsys.parentLocked("rename", from, fp)
	if err != nil {
		return err
	}
	n, ok := fdir.children[fbase]
	if !ok {
		return pathError("rename", from, dsi.ErrNotExist)
	}
	tdir, tbase, err := fsys.parentLocked("rename", to, tp)
	if err != nil {
		return err
	}
	if slices.Equal(fp, tp) {
		return nil
	}
	if n.dir && len(tp) > len(fp) && slices.Equal(tp[:len(fp)], fp) {
		return pathError("rename", from, dsi.ErrInvalid)
	}
	old, replace := tdir.children[tbase]
	if replace {
		switch {
		case old.dir && !n.dir:
			return pathError("rename", to, dsi.ErrIsDir)
		case !old.dir && n.dir:
			return pathError("rename", to, dsi.ErrNotDir)
		case old.dir && len(old.children) > 0:
			return pathError("rename", to, dsi.ErrNotEmpty)
		}
	}
	var freed int64 // what the replaced entry gives back
	if replace {
		freed = old.entry
	}
	cost, err := fsys.entryCost("rename", to, tbase, n.entry+freed)
	if err != nil {
		return err
	}
	delete(fdir.children, fbase)
	if replace {
		fsys.unlinkLocked(old)
	}
	fsys.meta -= n.entry
	fsys.linkLocked(tdir, tbase, n, cost)
	now := time.Now()
	fdir.mtime, tdir.mtime = now, now
	return nil
}

// Chmod records the permission bits of name.
func (fsys *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return fsys.update(ctx, "chmod", name, func(n *node) { n.mode = mode.Perm() })
}

// Chtimes sets the modification time of name.
func (fsys *FS) Chtimes(ctx context.Context, name string, mtime time.Time) error {
	return fsys.update(ctx, "chtimes", name, func(n *node) { n.mtime = mtime })
}

func (fsys *FS) update(ctx context.Context, op, name string, f func(*node)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	parts := split(name)
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	n, err := fsys.lookupLocked(op, name, parts)
	if err != nil {
		return err
	}
	f(n)
	return nil
}

// errNegativeOffset is the cause for a negative offset.
var errNegativeOffset = errors.New("negative offset")

// reader reads a file node; the data it sees is live, as with a real file.
type reader struct {
	fsys   *FS
	n      *node
	name   string
	size   int64
	closed atomic.Bool
}

func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if r.closed.Load() {
		return 0, pathError("read", r.name, fs.ErrClosed)
	}
	if off < 0 {
		return 0, pathError("read", r.name, errors.Join(dsi.ErrInvalid, errNegativeOffset))
	}
	r.fsys.mu.RLock()
	defer r.fsys.mu.RUnlock()
	if off >= int64(len(r.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, r.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *reader) Size() int64 { return r.size }

func (r *reader) Close() error {
	r.fsys.mu.Lock()
	defer r.fsys.mu.Unlock()
	if r.closed.Swap(true) {
		return pathError("close", r.name, fs.ErrClosed)
	}
	r.n.open--
	r.fsys.releaseLocked(r.n)
	return nil
}

// writer writes a file node.
type writer struct {
	fsys   *FS
	n      *node
	name   string
	closed atomic.Bool
}

func (w *writer) WriteAt(p []byte, off int64) (int, error) {
	if w.closed.Load() {
		return 0, pathError("write", w.name, fs.ErrClosed)
	}
	if off < 0 {
		return 0, pathError("write", w.name, errors.Join(dsi.ErrInvalid, errNegativeOffset))
	}
	if len(p) == 0 {
		// As pwrite(2): writing nothing does not extend the file.
		return 0, nil
	}
	end := off + int64(len(p))
	if end < off {
		return 0, pathError("write", w.name, fmt.Errorf("%w: offset overflows", dsi.ErrNoSpace))
	}
	fsys := w.fsys
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if w.closed.Load() {
		// Closed while this call waited for the lock.
		return 0, pathError("write", w.name, fs.ErrClosed)
	}
	n := w.n
	if old := int64(len(n.data)); end > old {
		if err := fsys.roomLocked("write", w.name, old, end); err != nil {
			return 0, err
		}
		n.data = grow(n.data, end, fsys.limits.MaxFileSize)
		// The gap before off reads as zeros, whatever the capacity held.
		// A write that starts inside the file and runs past its end
		// (off < old) leaves no gap.
		if off > old {
			clear(n.data[old:off])
		}
		fsys.used += end - old
	}
	copy(n.data[off:], p)
	n.mtime = time.Now()
	return len(p), nil
}

// grow returns b lengthened to end bytes. When it must reallocate it adds a
// quarter of headroom, never past limit, so that a file written in order
// is copied a bounded number of times and never holds much more than its
// size. end must not exceed limit.
func grow(b []byte, end, limit int64) []byte {
	c := int64(cap(b))
	if end <= c {
		return b[:end]
	}
	nb := make([]byte, end, max(end, min(c+c/4, limit)))
	copy(nb, b)
	return nb
}

func (w *writer) Close() error {
	w.fsys.mu.Lock()
	defer w.fsys.mu.Unlock()
	if w.closed.Swap(true) {
		return pathError("close", w.name, fs.ErrClosed)
	}
	w.n.open--
	w.fsys.releaseLocked(w.n)
	return nil
}

// Interface guards.
var (
	_ dsi.Storage   = (*FS)(nil)
	_ dsi.Chmoder   = (*FS)(nil)
	_ dsi.Chtimeser = (*FS)(nil)
	_ dsi.Reader    = (*reader)(nil)
	_ dsi.Writer    = (*writer)(nil)
)
