package transfer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ferrygrid/ferry/internal/atomicfile"
)

// ErrEscape is the error of a local path that leaves the Root of its
// Location, by ".." or through a symbolic link.
var ErrEscape = errors.New("transfer: path escapes the location's root")

// localFS is where the local files of a copy are opened: by name, or,
// when root is set, through an *os.Root that refuses any path leaving
// it (by ".." or by a symbolic link, whenever it is looked up).
type localFS struct {
	root *os.Root // nil: by name
}

// fsOf is the localFS of the Location l.
func fsOf(l Location) localFS { return localFS{root: l.Root} }

// name is p as the root takes it: relative to the root's directory. An
// absolute p must lie under it.
func (f localFS) name(p string) (string, error) {
	if f.root == nil {
		return p, nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.root.Name(), p)
	}
	rel, err := filepath.Rel(f.root.Name(), filepath.Clean(p))
	if err != nil || rel == ".." || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) || filepath.IsAbs(rel) {
		return "", &os.PathError{Op: "open", Path: p, Err: ErrEscape}
	}
	return rel, nil
}

// confine turns os.Root's refusal of a path that escapes into ErrEscape
// (os.Root exports no sentinel for it).
func (f localFS) confine(p string, err error) error {
	if f.root == nil || err == nil {
		return err
	}
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Err != nil && !errors.Is(pe.Err, ErrEscape) && strings.Contains(pe.Err.Error(), "escapes") {
		return &os.PathError{Op: pe.Op, Path: p, Err: ErrEscape}
	}
	return err
}

func (f localFS) Open(p string) (*os.File, error) {
	return f.OpenFile(p, os.O_RDONLY, 0)
}

func (f localFS) OpenFile(p string, flag int, perm os.FileMode) (*os.File, error) {
	if f.root == nil {
		return os.OpenFile(p, flag, perm)
	}
	n, err := f.name(p)
	if err != nil {
		return nil, err
	}
	h, err := f.root.OpenFile(n, flag, perm)
	return h, f.confine(p, err)
}

func (f localFS) Stat(p string) (os.FileInfo, error) {
	if f.root == nil {
		return os.Stat(p)
	}
	n, err := f.name(p)
	if err != nil {
		return nil, err
	}
	fi, err := f.root.Stat(n)
	return fi, f.confine(p, err)
}

func (f localFS) MkdirAll(p string, perm os.FileMode) error {
	if f.root == nil {
		return os.MkdirAll(p, perm)
	}
	n, err := f.name(p)
	if err != nil {
		return err
	}
	if n == "." {
		return nil
	}
	return f.confine(p, f.root.MkdirAll(n, perm))
}

func (f localFS) Remove(p string) error {
	if f.root == nil {
		return os.Remove(p)
	}
	n, err := f.name(p)
	if err != nil {
		return err
	}
	return f.confine(p, f.root.Remove(n))
}

// rename renames old to new; unlike os.Rename it does not first lstat
// new (rename(2) refuses to replace a directory anyway, EISDIR).
func (f localFS) rename(old, new string) error {
	if f.root == nil {
		// Not os.Rename: its lstat of the destination only turns
		// renaming onto a directory into EEXIST, and rename(2)
		// refuses that anyway (EISDIR).
		if err := syscall.Rename(old, new); err != nil {
			return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
		}
		return nil
	}
	o, err := f.name(old)
	if err != nil {
		return err
	}
	n, err := f.name(new)
	if err != nil {
		return err
	}
	return f.confine(new, f.root.Rename(o, n))
}

// dirOf returns a localFS of the directory of p, opened now through
// f's root, and the function that closes it. Names under it are resolved
// from that open directory: what is created there is later renamed or
// removed there, even if the directory's path is swapped for a symbolic
// link meanwhile (it can neither be left behind nor have a namesake
// elsewhere removed instead). Without a root it is f itself (by name),
// and done does nothing.
func (f localFS) dirOf(p string) (d localFS, done func(), err error) {
	if f.root == nil {
		return f, func() {}, nil
	}
	n, err := f.name(filepath.Dir(p))
	if err != nil {
		return localFS{}, nil, err
	}
	r, err := f.root.OpenRoot(n)
	if err != nil {
		return localFS{}, nil, f.confine(p, err)
	}
	return localFS{root: r}, func() { r.Close() }, nil
}

// createExcl creates the file p for writing; it fails if p exists.
func (f localFS) createExcl(p string) (*os.File, error) {
	if f.root == nil {
		return createExcl(p)
	}
	return f.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
}

// readState reads the resume state file p.
func (f localFS) readState(p string) (ResumeState, error) {
	if f.root == nil {
		return ReadResumeState(p)
	}
	n, err := f.name(p)
	if err != nil {
		return ResumeState{}, err
	}
	b, err := f.root.ReadFile(n)
	if err != nil {
		return ResumeState{}, f.confine(p, err)
	}
	return parseState(b)
}

// writeState replaces the resume state file p atomically (mode 0600).
func (f localFS) writeState(p string, st ResumeState) error {
	if f.root == nil {
		return atomicfile.Write(p, st.marshal())
	}
	// The temporary file is created, renamed and removed in one open
	// directory (dirOf).
	f, done, err := f.dirOf(p)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	defer done()
	dir, base := filepath.Split(p)
	var (
		h    *os.File
		tmp  string
		data = st.marshal()
	)
	for range 10 {
		tmp = filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64()&0xffffffffff, 36))
		h, err = f.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = h.Write(data)
	if err == nil {
		err = h.Sync()
	}
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.rename(tmp, p)
	}
	if err != nil {
		f.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
