package dsi

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"time"
)

// Sub returns a Storage that shows only the tree below dir of s: name "/x"
// of the result is dir+"/x" of s. dir must be a clean absolute path. Because
// names handed to a Storage are clean absolute paths, a name can never climb
// above dir; symbolic links are still confined by s itself.
func Sub(s Storage, dir string) Storage {
	dir = path.Clean("/" + dir)
	if dir == "/" {
		return s
	}
	return &subFS{s: s, dir: dir}
}

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
	c, ok := f.s.(Chmoder)
	if !ok {
		return fmt.Errorf("chmod %s: %w", name, ErrNotSupported)
	}
	return c.Chmod(ctx, f.full(name), mode)
}
func (f *subFS) Chtimes(ctx context.Context, name string, mtime time.Time) error {
	c, ok := f.s.(Chtimeser)
	if !ok {
		return fmt.Errorf("chtimes %s: %w", name, ErrNotSupported)
	}
	return c.Chtimes(ctx, f.full(name), mtime)
}

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

var (
	_ Storage   = (*subFS)(nil)
	_ Chmoder   = (*subFS)(nil)
	_ Chtimeser = (*subFS)(nil)
	_ Storage   = readOnlyFS{}
)
