package dpm

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

func init() {
	Register(&Module{Name: "tar", Pack: tarPack, Unpack: tarUnpack})
	Register(&Module{Name: "cat", Pack: catPack})
}

// maxTarName bounds the length of an entry name ESTO accepts (the
// reader already bounds the PAX and GNU records that carry long names
// to 1 MiB).
const maxTarName = 4096

// tarPack writes env.Path as a tar stream (ERET): a directory with
// everything below it, names relative to it; a file as one entry.
// Symbolic links (and entries reached through them) and special files
// are left out.
func tarPack(ctx context.Context, env Env, dst io.Writer) error {
	tw := tar.NewWriter(dst)
	fi, err := env.Storage.Stat(ctx, env.Path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		err = tarDir(ctx, tw, env.Storage, env.Path, "")
	} else {
		err = tarFile(ctx, tw, env.Storage, env.Path, path.Base(env.Path), fi)
	}
	if err != nil {
		return err
	}
	return tw.Close()
}

func tarTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0)
	}
	return t
}

func tarDir(ctx context.Context, tw *tar.Writer, st dsi.Storage, dir, rel string) error {
	list, err := st.ReadDir(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Link != "" || e.Mode&fs.ModeSymlink != 0 {
			continue
		}
		name, full := path.Join(rel, e.Name), path.Join(dir, e.Name)
		switch {
		case e.IsDir():
			h := &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(e.Mode.Perm()), ModTime: tarTime(e.ModTime)}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if err := tarDir(ctx, tw, st, full, name); err != nil {
				return err
			}
		case e.Mode.IsRegular():
			if err := tarFile(ctx, tw, st, full, name, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func tarFile(ctx context.Context, tw *tar.Writer, st dsi.Storage, full, name string, fi dsi.FileInfo) error {
	r, err := st.Open(ctx, full)
	if err != nil {
		return err
	}
	defer r.Close()
	size := r.Size()
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: int64(fi.Mode.Perm()), ModTime: tarTime(fi.ModTime)}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, io.NewSectionReader(r, 0, size))
	return err
}

// tarName checks an entry name and returns it as a clean absolute path
// below the target ("/" for the target itself). It refuses absolute
// names, any ".." element, NUL and backslash, and overlong names.
func tarName(n string) (string, error) {
	switch {
	case n == "":
		return "", fmt.Errorf("%w: an empty name", ErrUnsafe)
	case len(n) > maxTarName:
		return "", fmt.Errorf("%w: a name of %d bytes (at most %d)", ErrUnsafe, len(n), maxTarName)
	case strings.HasPrefix(n, "/"):
		return "", fmt.Errorf("%w: %q is absolute", ErrUnsafe, n)
	case strings.ContainsAny(n, "\x00\\"):
		return "", fmt.Errorf("%w: %q holds NUL or a backslash", ErrUnsafe, n)
	}
	for _, el := range strings.Split(n, "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: %q climbs with ..", ErrUnsafe, n)
		}
	}
	return path.Clean("/" + n), nil
}

// tarUnpack stores a tar stream in the directory env.Path (ESTO), which
// is made when missing. Only directories and regular files are made,
// through a sub-tree of the storage rooted at the target (dsi.Sub), so
// that neither a name nor a symbolic link already there leads outside
// it, and a file is never written through a link (NoFollow). Any other
// entry (links, devices, FIFOs), an unsafe name, or a stream past the
// limits ends the unpack with an error; what was made before stays.
func tarUnpack(ctx context.Context, env Env, src io.Reader) error {
	st := env.Storage
	fi, err := st.Stat(ctx, env.Path)
	switch {
	case errors.Is(err, dsi.ErrNotExist):
		if err := st.Mkdir(ctx, env.Path, 0o755); err != nil {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("dpm: tar: %s: %w", env.Path, dsi.ErrNotDir)
	}
	root, err := dsi.Sub(st, env.Path)
	if err != nil {
		return err
	}
	tr := tar.NewReader(src)
	made := map[string]bool{"/": true}
	var total int64
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return corrupt("tar", err)
		}
		if entries >= env.Limits.maxEntries() {
			return fmt.Errorf("%w: more than %d entries", ErrLimit, env.Limits.maxEntries())
		}
		name, err := tarName(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := mkdirAll(ctx, root, name, made); err != nil {
				return err
			}
		case tar.TypeReg:
			if name == "/" {
				return fmt.Errorf("%w: a file named %q", ErrUnsafe, h.Name)
			}
			if h.Size < 0 || h.Size > env.Limits.maxBytes()-total {
				return fmt.Errorf("%w: %q of %d bytes passes the %d bytes allowed", ErrLimit, h.Name, h.Size, env.Limits.maxBytes())
			}
			total += h.Size
			if err := mkdirAll(ctx, root, path.Dir(name), made); err != nil {
				return err
			}
			if err := tarWrite(ctx, root, name, h, tr); err != nil {
				return err
			}
		case tar.TypeXGlobalHeader:
			// PAX defaults for later entries: nothing to make.
		default:
			return fmt.Errorf("%w: %q is %s, not a file or directory", ErrUnsafe, h.Name, tarType(h.Typeflag))
		}
	}
}

func tarType(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "a device"
	case tar.TypeFifo:
		return "a FIFO"
	}
	return fmt.Sprintf("of type %q", t)
}

// mkdirAll makes dir and its parents in root as needed.
func mkdirAll(ctx context.Context, root dsi.Storage, dir string, made map[string]bool) error {
	if made[dir] {
		return nil
	}
	if err := mkdirAll(ctx, root, path.Dir(dir), made); err != nil {
		return err
	}
	fi, err := root.Stat(ctx, dir)
	switch {
	case errors.Is(err, dsi.ErrNotExist):
		if err := root.Mkdir(ctx, dir, 0o755); err != nil && !errors.Is(err, dsi.ErrExist) {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("dpm: tar: %s: %w", dir, dsi.ErrNotDir)
	}
	made[dir] = true
	return nil
}

func tarWrite(ctx context.Context, root dsi.Storage, name string, h *tar.Header, r io.Reader) error {
	perm := fs.FileMode(h.Mode).Perm()
	if perm == 0 {
		perm = 0o644
	}
	w, err := root.Create(ctx, name, dsi.CreateOptions{Truncate: true, Size: h.Size, Perm: perm, NoFollow: true})
	if err != nil {
		return err
	}
	n, err := io.Copy(io.NewOffsetWriter(w, 0), r)
	if err == nil && n != h.Size || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w: tar: %q ends after %d of %d bytes", ErrCorrupt, h.Name, n, h.Size)
	}
	if err != nil {
		// A file cut short is not left behind.
		if a, ok := w.(aborter); ok {
			a.Abort()
		} else {
			w.Close()
			root.Remove(context.WithoutCancel(ctx), name)
		}
		return err
	}
	return w.Close()
}

// catPack writes the files named in env.Params (comma-separated, in
// that order, relative to the directory env.Path) one after the other
// (ERET); with no parameters, every regular file of the directory in
// name order, or the file env.Path itself.
func catPack(ctx context.Context, env Env, dst io.Writer) error {
	st := env.Storage
	var names []string
	if strings.TrimSpace(env.Params) != "" {
		for _, n := range strings.Split(env.Params, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				return fmt.Errorf("%w: an empty file name", ErrSyntax)
			}
			names = append(names, path.Join(env.Path, n))
		}
	} else if fi, err := st.Stat(ctx, env.Path); err != nil {
		return err
	} else if !fi.IsDir() {
		names = []string{env.Path}
	} else {
		list, err := st.ReadDir(ctx, env.Path)
		if err != nil {
			return err
		}
		for _, e := range list {
			if e.Mode.IsRegular() && e.Link == "" {
				names = append(names, path.Join(env.Path, e.Name))
			}
		}
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := st.Open(ctx, n)
		if err != nil {
			return err
		}
		_, err = io.Copy(dst, io.NewSectionReader(r, 0, r.Size()))
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
