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
	"github.com/ferrygrid/ferry/internal/xfer"
)

func init() {
	Register(&Module{Name: "tar", Pack: tarPack, Unpack: tarUnpack, Layout: tarLayout})
	Register(&Module{Name: "cat", Pack: catPack, Layout: catLayout})
}

// maxTarName bounds the length of an entry name ESTO accepts (the
// reader already bounds the PAX and GNU records that carry long names
// to 1 MiB).
const maxTarName = 4096

// maxTarDepth bounds how many elements an entry name has.
const maxTarDepth = 64

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
	case strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("%w: %q holds a control character", ErrUnsafe, n)
	}
	els := strings.Split(strings.Trim(n, "/"), "/")
	if len(els) > maxTarDepth {
		return "", fmt.Errorf("%w: a name %d levels deep (at most %d)", ErrUnsafe, len(els), maxTarDepth)
	}
	for _, el := range els {
		if el == ".." {
			return "", fmt.Errorf("%w: %q climbs with ..", ErrUnsafe, n)
		}
		if xfer.IsPartName(el) {
			return "", fmt.Errorf("%w: %q is named like an upload's part file (*%s)", ErrUnsafe, n, xfer.PartSuffix)
		}
	}
	return path.Clean("/" + n), nil
}

// tarBlock is tar's block size.
const tarBlock = 512

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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
	// The archive must end with its end-of-archive block(s): archive/tar
	// also reports io.EOF for a stream that stops between two entries,
	// which a sender cut short (killed, or its connection dropped) sends.
	cr := &countingReader{r: src}
	tr := tar.NewReader(cr)
	made := map[string]bool{"/": true}
	var total int64
	var entryEnd int64 // where the last entry's padded data ends in the stream
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			if cr.n-entryEnd < tarBlock {
				return corrupt("tar", errors.New("the archive ends without its end-of-archive block: cut short"))
			}
			return nil
		}
		if err != nil {
			return corrupt("tar", err)
		}
		entryEnd = cr.n + (h.Size+tarBlock-1)/tarBlock*tarBlock
		if entries >= env.Limits.maxEntries() {
			return fmt.Errorf("%w: more than %d entries", ErrLimit, env.Limits.maxEntries())
		}
		name, err := tarName(h.Name)
		if err != nil {
			return err
		}
		for k := range h.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				return fmt.Errorf("%w: %q is a sparse file", ErrUnsafe, h.Name)
			}
		}
		// Directories made count as entries too.
		mk := func(dir string) error {
			before := len(made)
			err := mkdirAll(ctx, root, dir, made)
			entries += len(made) - before
			if err == nil && entries > env.Limits.maxEntries() {
				err = fmt.Errorf("%w: more than %d entries", ErrLimit, env.Limits.maxEntries())
			}
			return err
		}
		switch h.Typeflag {
		case tar.TypeGNUSparse:
			return fmt.Errorf("%w: %q is a sparse file", ErrUnsafe, h.Name)
		case tar.TypeDir:
			if err := mk(name); err != nil {
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
			if err := mk(path.Dir(name)); err != nil {
				return err
			}
			if err := tarWrite(ctx, root, name, h, tr, env.Commit); err != nil {
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

func tarWrite(ctx context.Context, root dsi.Storage, name string, h *tar.Header, r io.Reader, commit func(int64) error) error {
	perm := fs.FileMode(h.Mode).Perm()
	if perm == 0 {
		perm = 0o644
	}
	// An entry is not written over a symbolic link: opening the target
	// with NoFollow (and without truncating) refuses a link, dangling
	// or not. Done once the entry's data is all there, just before its
	// part file is renamed over the name: the data may take long to
	// arrive (ESTO unpacks while it comes), and meanwhile nothing must
	// be under the name, not even an empty file a reader would take for
	// the whole one (or a crash leave behind). A file this makes is
	// removed again if the entry fails.
	var madeEmpty bool
	put := func(n int64) error {
		if !dsi.WritesInPlace(root) {
			_, serr := root.Stat(ctx, name)
			w, err := root.Create(ctx, name, dsi.CreateOptions{Size: -1, Perm: perm, NoFollow: true})
			if err != nil {
				return err
			}
			madeEmpty = errors.Is(serr, dsi.ErrNotExist)
			if err := w.Close(); err != nil {
				return err
			}
		}
		if commit != nil {
			return commit(n)
		}
		return nil
	}
	// A file cut short is not left behind, and an old one it would
	// replace is kept.
	err := writeAtomic(ctx, root, name, dsi.CreateOptions{Truncate: true, Size: h.Size, Perm: perm, NoFollow: true}, ctxReader{ctx, r},
		func(n int64, err error) error {
			if err == nil && n != h.Size || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: tar: %q ends after %d of %d bytes", ErrCorrupt, h.Name, n, h.Size)
			}
			return err
		}, put)
	if err != nil && madeEmpty {
		root.Remove(context.WithoutCancel(ctx), name)
	}
	return err
}

// maxCatNames bounds how many files cat's parameters name.
const maxCatNames = 1024

// catPack writes the files named in env.Params (comma-separated, in
// that order, relative to the directory env.Path) one after the other
// (ERET); with no parameters, every regular file of the directory in
// name order, or the file env.Path itself.
func catPack(ctx context.Context, env Env, dst io.Writer) error {
	st := env.Storage
	list, err := catNames(ctx, env)
	if err != nil {
		return err
	}
	names := make([]string, len(list))
	for i, n := range list {
		names[i] = n.name
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

// catFile is a file cat sends, with what a directory listing said of it
// (nil: named in the parameters, not listed).
type catFile struct {
	name string
	fi   *dsi.FileInfo
}

// catNames lists the files cat sends for env, in order.
func catNames(ctx context.Context, env Env) ([]catFile, error) {
	st := env.Storage
	var names []catFile
	if strings.TrimSpace(env.Params) != "" {
		list := strings.Split(env.Params, ",")
		if len(list) > maxCatNames {
			return nil, fmt.Errorf("%w: %d file names (at most %d)", ErrSyntax, len(list), maxCatNames)
		}
		seen := map[string]bool{}
		for _, n := range list {
			n = strings.TrimSpace(n)
			if n == "" {
				return nil, fmt.Errorf("%w: an empty file name", ErrSyntax)
			}
			full := path.Join(env.Path, n)
			if seen[full] {
				return nil, fmt.Errorf("%w: %q named twice", ErrSyntax, n)
			}
			seen[full] = true
			names = append(names, catFile{name: full})
		}
	} else if fi, err := st.Stat(ctx, env.Path); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		names = []catFile{{name: env.Path, fi: &fi}}
	} else {
		list, err := st.ReadDir(ctx, env.Path)
		if err != nil {
			return nil, err
		}
		for _, e := range list {
			if e.Mode.IsRegular() && e.Link == "" {
				names = append(names, catFile{name: path.Join(env.Path, e.Name), fi: &e})
			}
		}
	}
	return names, nil
}
