// Package memory is an in-memory DSI back-end for tests and demonstrations.
//
// It keeps a tree of directories and files under one mutex and follows the
// error semantics of the posix back-end. It has no symbolic links, no owners
// (Owner and Group are "", UID and GID -1) and does not enforce permissions,
// although Chmod records them.
package memory

import (
	"context"
	"errors"
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
	mu     sync.RWMutex
	root   *node  // guarded by mu
	nextID uint64 // guarded by mu
}

// node is a file or a directory; all fields are guarded by FS.mu.
type node struct {
	dir      bool
	mode     fs.FileMode // permission bits only
	mtime    time.Time
	id       uint64
	children map[string]*node // directories
	data     []byte           // files
}

// New returns an empty file system holding only "/".
func New() *FS {
	fsys := &FS{}
	fsys.root = fsys.newNodeLocked(true, 0o755)
	return fsys
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
	fsys.mu.RLock()
	defer fsys.mu.RUnlock()
	n, err := fsys.lookupLocked("open", name, parts)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, pathError("open", name, dsi.ErrIsDir)
	}
	return &reader{fsys: fsys, n: n, name: name, size: int64(len(n.data))}, nil
}

// Create opens name for writing, creating it with opts.Perm (0 means 0644)
// and emptying it when opts.Truncate is set.
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
	switch {
	case !ok:
		perm := opts.Perm.Perm()
		if perm == 0 {
			perm = 0o644
		}
		n = fsys.newNodeLocked(false, perm)
		dir.children[base] = n
		dir.mtime = n.mtime
	case n.dir:
		return nil, pathError("create", name, dsi.ErrIsDir)
	case opts.Truncate:
		n.data = nil
		n.mtime = time.Now()
	}
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
	if perm.Perm() == 0 {
		perm = 0o755
	}
	n := fsys.newNodeLocked(true, perm)
	dir.children[base] = n
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
	if old, ok := tdir.children[tbase]; ok {
		switch {
		case old.dir && !n.dir:
			return pathError("rename", to, dsi.ErrIsDir)
		case !old.dir && n.dir:
			return pathError("rename", to, dsi.ErrNotDir)
		case old.dir && len(old.children) > 0:
			return pathError("rename", to, dsi.ErrNotEmpty)
		}
	}
	delete(fdir.children, fbase)
	tdir.children[tbase] = n
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
	if r.closed.Swap(true) {
		return pathError("close", r.name, fs.ErrClosed)
	}
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
	end := off + int64(len(p))
	if end < off || end > maxFileSize {
		return 0, pathError("write", w.name, dsi.ErrNoSpace)
	}
	w.fsys.mu.Lock()
	defer w.fsys.mu.Unlock()
	n := w.n
	if old := int64(len(n.data)); end > old {
		n.data = slices.Grow(n.data, int(end-old))[:end]
		// Capacity may hold bytes from before a truncation: zero the gap.
		clear(n.data[old:min(off, end)])
	}
	copy(n.data[off:], p)
	n.mtime = time.Now()
	return len(p), nil
}

// maxFileSize bounds a file so that a stray offset cannot exhaust memory.
const maxFileSize = 1 << 40

func (w *writer) Close() error {
	if w.closed.Swap(true) {
		return pathError("close", w.name, fs.ErrClosed)
	}
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
