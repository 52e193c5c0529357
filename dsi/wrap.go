package dsi

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"time"
)

// Sub returns a Storage that shows only the tree below the directory dir
// of s: name "/x" of the result is dir+"/x" of s. dir is cleaned and taken
// as absolute; for "/" (or "") Sub returns s itself.
//
// When s implements [Subber] (a back-end with symbolic links), the result
// serves the back-end's own sub-storage, so that every name and every link
// resolves inside dir; Sub fails when the back-end cannot set that up (dir
// is missing, not a directory, or a symbolic link). Other storages have no
// links: they are confined by rewriting names, and Sub fails unless dir is
// a directory.
//
// Either way the result refuses Chmod and Chtimes of its own root with
// ErrPermission: dir belongs to whoever set up the sub-tree, not to the
// user it confines (a home made world-writable lets other local users
// plant links in it).
func Sub(s Storage, dir string) (Storage, error) {
	return sub(context.Background(), s, dir)
}

func sub(ctx context.Context, s Storage, dir string) (Storage, error) {
	dir = path.Clean("/" + dir)
	if dir == "/" {
		return s, nil
	}
	if sb, ok := s.(Subber); ok {
		c, err := sb.Sub(ctx, dir)
		if err != nil {
			return nil, err
		}
		return &subFS{s: c, dir: "/"}, nil
	}
	fi, err := s.Stat(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("dsi: sub %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("dsi: sub %s: %w", dir, ErrNotDir)
	}
	return &subFS{s: s, dir: dir}, nil
}

// subFS is the result of Sub: s below dir, where dir is "/" when s is
// already confined by its back-end.
type subFS struct {
	s   Storage
	dir string
}

func (f *subFS) full(name string) string { return path.Join(f.dir, path.Clean("/"+name)) }

func (f *subFS) Stat(ctx context.Context, name string) (FileInfo, error) {
	fi, err := f.s.Stat(ctx, f.full(name))
	if err == nil && path.Clean("/"+name) == "/" {
		fi.Name = "/"
	}
	return fi, err
}
func (f *subFS) ReadDir(ctx context.Context, name string) ([]FileInfo, error) {
	return f.s.ReadDir(ctx, f.full(name))
}
func (f *subFS) Open(ctx context.Context, name string) (Reader, error) {
	return f.s.Open(ctx, f.full(name))
}
func (f *subFS) Create(ctx context.Context, name string, o CreateOptions) (Writer, error) {
	return f.s.Create(ctx, f.full(name), o)
}
func (f *subFS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return f.s.Mkdir(ctx, f.full(name), perm)
}
func (f *subFS) Remove(ctx context.Context, name string) error { return f.s.Remove(ctx, f.full(name)) }
func (f *subFS) Rmdir(ctx context.Context, name string) error  { return f.s.Rmdir(ctx, f.full(name)) }
func (f *subFS) Rename(ctx context.Context, from, to string) error {
	return f.s.Rename(ctx, f.full(from), f.full(to))
}
func (f *subFS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	if isRoot(name) {
		return fmt.Errorf("dsi: chmod %s: the root of a sub-tree: %w", name, ErrPermission)
	}
	c, ok := f.s.(Chmoder)
	if !ok {
		return fmt.Errorf("chmod %s: %w", name, ErrNotSupported)
	}
	return c.Chmod(ctx, f.full(name), mode)
}
func (f *subFS) Chtimes(ctx context.Context, name string, mtime time.Time) error {
	if isRoot(name) {
		return fmt.Errorf("dsi: chtimes %s: the root of a sub-tree: %w", name, ErrPermission)
	}
	c, ok := f.s.(Chtimeser)
	if !ok {
		return fmt.Errorf("chtimes %s: %w", name, ErrNotSupported)
	}
	return c.Chtimes(ctx, f.full(name), mtime)
}

// Sub makes a sub-tree of the sub-tree, as confined as f itself.
func (f *subFS) Sub(ctx context.Context, dir string) (Storage, error) {
	if isRoot(dir) {
		return f, nil
	}
	return sub(ctx, f.s, f.full(dir))
}

func (f *subFS) WritesInPlace() bool { return WritesInPlace(f.s) }

func isRoot(name string) bool { return path.Clean("/"+name) == "/" }

func (f readOnlyFS) WritesInPlace() bool { return WritesInPlace(f.s) }

// ReadOnly returns a Storage that refuses every change with ErrReadOnly.
func ReadOnly(s Storage) Storage { return readOnlyFS{s} }

type readOnlyFS struct{ s Storage }

func refuse(op, name string) error { return fmt.Errorf("%s %s: %w", op, name, ErrReadOnly) }

func (f readOnlyFS) Stat(ctx context.Context, name string) (FileInfo, error) {
	return f.s.Stat(ctx, name)
}
func (f readOnlyFS) ReadDir(ctx context.Context, name string) ([]FileInfo, error) {
	return f.s.ReadDir(ctx, name)
}
func (f readOnlyFS) Open(ctx context.Context, name string) (Reader, error) {
	return f.s.Open(ctx, name)
}
func (f readOnlyFS) Create(ctx context.Context, name string, _ CreateOptions) (Writer, error) {
	return nil, refuse("create", name)
}
func (f readOnlyFS) Mkdir(ctx context.Context, name string, _ fs.FileMode) error {
	return refuse("mkdir", name)
}
func (f readOnlyFS) Remove(ctx context.Context, name string) error { return refuse("remove", name) }
func (f readOnlyFS) Rmdir(ctx context.Context, name string) error  { return refuse("rmdir", name) }
func (f readOnlyFS) Rename(ctx context.Context, from, _ string) error {
	return refuse("rename", from)
}

// Sub makes a read-only view of a sub-tree, confined as [Sub] confines it.
func (f readOnlyFS) Sub(ctx context.Context, dir string) (Storage, error) {
	s, err := sub(ctx, f.s, dir)
	if err != nil {
		return nil, err
	}
	return ReadOnly(s), nil
}

var (
	_ Storage   = (*subFS)(nil)
	_ Chmoder   = (*subFS)(nil)
	_ Chtimeser = (*subFS)(nil)
	_ Subber    = (*subFS)(nil)
	_ Storage   = readOnlyFS{}
	_ Subber    = readOnlyFS{}
)
