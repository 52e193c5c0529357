package posix

import (
	"os"

	"github.com/ferrygrid/ferry/dsi"
)

// NewReader returns a Reader over f, a regular file open for reading that
// was opened elsewhere (for example by another process and passed over a
// Unix socket). name is the DSI name used in error messages. The Reader
// gets the same zero-copy paths as one returned by [FS.Open]. On success
// the Reader owns f; on error the caller keeps it. A file that is not a
// regular file gives [dsi.ErrIsDir] or [dsi.ErrInvalid].
func NewReader(f *os.File, name string) (*Reader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, mapErr("open", name, err)
	}
	if err := checkRegular("open", name, fi); err != nil {
		return nil, err
	}
	return &Reader{f: f, name: name, size: fi.Size()}, nil
}

// NewWriter returns a Writer over f, a regular file open for writing that
// was opened elsewhere. name is the DSI name used in error messages. The
// Writer gets the same zero-copy paths as one returned by [FS.Create]. On
// success the Writer owns f; on error the caller keeps it. A file that is
// not a regular file gives [dsi.ErrIsDir] or [dsi.ErrInvalid]. It writes
// through the page cache ([DirectIOOff]).
func NewWriter(f *os.File, name string) (*Writer, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, mapErr("create", name, err)
	}
	if err := checkRegular("create", name, fi); err != nil {
		return nil, err
	}
	return &Writer{f: f, name: name, dio: newDirect(DirectIOOff, -1)}, nil
}

// File returns the open file underneath r, for handing its descriptor to
// another process. It stays owned by r: Close r, not the file.
func (r *Reader) File() *os.File { return r.f }

// File returns the open file underneath w, for handing its descriptor to
// another process. It stays owned by w: Close w, not the file.
func (w *Writer) File() *os.File { return w.f }

var (
	_ dsi.Reader = (*Reader)(nil)
	_ dsi.Writer = (*Writer)(nil)
)
