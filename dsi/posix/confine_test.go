package posix_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// confined builds parent/{secret, outside/, root/} and returns a back-end on
// root whose links point inside and outside it.
func confined(t *testing.T) (fsys *posix.FS, root, parent string) {
	t.Helper()
	parent = t.TempDir()
	root = filepath.Join(parent, "root")
	must(t, os.Mkdir(root, 0o755))
	must(t, os.Mkdir(filepath.Join(parent, "outside"), 0o755))
	must(t, os.WriteFile(filepath.Join(parent, "secret"), []byte("secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "data.txt"), []byte("inside"), 0o644))
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o755))
	for link, target := range map[string]string{
		"etc":      "/etc",
		"up":       "../..",
		"out":      "../secret",
		"abs":      filepath.Join(parent, "secret"),
		"outdir":   "../outside",
		"in":       "data.txt",
		"sub/back": "../data.txt",
		"indir":    "sub",
		"dangling": "nothing-here",
	} {
		must(t, os.Symlink(target, filepath.Join(root, link)))
	}
	fsys, err := posix.New(root)
	must(t, err)
	t.Cleanup(func() { fsys.Close() })
	return fsys, root, parent
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// refused reports whether err is one of the errors a confined name may give.
func refused(err error) bool {
	return errors.Is(err, dsi.ErrPermission) || errors.Is(err, dsi.ErrNotExist)
}

func TestConfinementRefused(t *testing.T) {
	fsys, _, parent := confined(t)
	ctx := t.Context()
	names := []string{
		path.Clean("/../../etc/passwd"), // "/etc/passwd": absent from the root
		"/../secret",
		"/etc",
		"/etc/passwd",
		"/up",
		"/up/secret",
		"/out",
		"/abs",
		"/outdir",
		"/outdir/x",
		"/indir/../../secret",
	}
	for _, name := range names {
		if _, err := fsys.Stat(ctx, name); !refused(err) {
			t.Errorf("Stat(%q) error %v; want permission or not-exist", name, err)
		}
		if r, err := fsys.Open(ctx, name); !refused(err) {
			t.Errorf("Open(%q) error %v", name, err)
			if err == nil {
				r.Close()
			}
		}
		if _, err := fsys.ReadDir(ctx, name); !refused(err) {
			t.Errorf("ReadDir(%q) error %v", name, err)
		}
		if err := fsys.Chmod(ctx, name, 0o777); !refused(err) {
			t.Errorf("Chmod(%q) error %v", name, err)
		}
		if err := fsys.Chtimes(ctx, name, time.Unix(0, 0)); !refused(err) {
			t.Errorf("Chtimes(%q) error %v", name, err)
		}
	}
	// Writes through links leading out must not create anything outside.
	for _, name := range []string{"/outdir/new", "/up/new", "/out", "/abs"} {
		if w, err := fsys.Create(ctx, name, dsi.CreateOptions{Truncate: true, Size: -1}); !refused(err) {
			t.Errorf("Create(%q) error %v", name, err)
			if err == nil {
				w.Close()
			}
		}
	}
	if err := fsys.Mkdir(ctx, "/outdir/newdir", 0o755); !refused(err) {
		t.Errorf("Mkdir through link error %v", err)
	}
	if err := fsys.Rename(ctx, "/data.txt", "/outdir/moved"); !refused(err) {
		t.Errorf("Rename through link error %v", err)
	}
	if err := fsys.Remove(ctx, "/outdir/x"); !refused(err) {
		t.Errorf("Remove through link error %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(parent, "outside")); len(ents) != 0 {
		t.Errorf("entries appeared outside the root: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(parent, "secret")); string(b) != "secret" {
		t.Errorf("secret changed: %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(parent, "secret")); fi.Mode().Perm() != 0o644 {
		t.Errorf("secret mode changed: %v", fi.Mode())
	}
}

func TestLinkInside(t *testing.T) {
	fsys, _, parent := confined(t)
	ctx := t.Context()
	for _, name := range []string{"/in", "/sub/back", "/indir/back"} {
		fi, err := fsys.Stat(ctx, name)
		if err != nil {
			t.Fatalf("Stat(%q): %v", name, err)
		}
		if !fi.Mode.IsRegular() || fi.Size != 6 || fi.Link == "" || fi.Name != path.Base(name) {
			t.Errorf("Stat(%q) = %+v; want regular file of 6 bytes with Link", name, fi)
		}
		r, err := fsys.Open(ctx, name)
		if err != nil {
			t.Fatalf("Open(%q): %v", name, err)
		}
		b, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
		r.Close()
		if err != nil || string(b) != "inside" {
			t.Errorf("read %q = %q, %v", name, b, err)
		}
	}
	if fi, err := fsys.Stat(ctx, "/in"); err != nil || fi.Link != "data.txt" {
		t.Errorf("Stat(/in).Link = %q, %v; want data.txt", fi.Link, err)
	}
	if fi, err := fsys.Stat(ctx, "/indir"); err != nil || !fi.IsDir() || fi.Link != "sub" {
		t.Errorf("Stat(/indir) = %+v, %v; want directory with Link sub", fi, err)
	}
	// Removing a link removes the link, never its target.
	must(t, fsys.Remove(ctx, "/out"))
	must(t, fsys.Remove(ctx, "/in"))
	if _, err := os.Stat(filepath.Join(parent, "secret")); err != nil {
		t.Errorf("link target outside removed: %v", err)
	}
	if _, err := fsys.Stat(ctx, "/data.txt"); err != nil {
		t.Errorf("link target inside removed: %v", err)
	}
}

func TestReadDirLinks(t *testing.T) {
	fsys, _, _ := confined(t)
	list, err := fsys.ReadDir(t.Context(), "/")
	must(t, err)
	got := make(map[string]dsi.FileInfo)
	var names []string
	for _, fi := range list {
		got[fi.Name] = fi
		names = append(names, fi.Name)
	}
	want := []string{"abs", "dangling", "data.txt", "etc", "in", "indir", "out", "outdir", "sub", "up"}
	if len(names) != len(want) {
		t.Fatalf("names = %q; want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names = %q; want %q", names, want)
		}
	}
	// Links inside describe their target.
	if fi := got["in"]; !fi.Mode.IsRegular() || fi.Size != 6 || fi.Link != "data.txt" {
		t.Errorf("in = %+v", fi)
	}
	if fi := got["indir"]; !fi.IsDir() || fi.Link != "sub" {
		t.Errorf("indir = %+v", fi)
	}
	// Dangling and escaping links describe themselves; the target of an
	// escaping one is not shown (it would tell paths of the host).
	for _, n := range []string{"dangling", "etc", "up", "out", "abs", "outdir"} {
		fi := got[n]
		if fi.Mode&fs.ModeSymlink == 0 {
			t.Errorf("%s = %+v; want a symlink entry", n, fi)
		}
	}
	if fi := got["dangling"]; fi.Link != "nothing-here" {
		t.Errorf("dangling.Link = %q; want nothing-here", fi.Link)
	}
	for _, n := range []string{"etc", "up", "out", "abs", "outdir"} {
		if fi := got[n]; fi.Link != "" {
			t.Errorf("%s.Link = %q; want it hidden", n, fi.Link)
		}
	}
	if fi, err := fsys.Stat(t.Context(), "/sub/back"); err != nil || fi.Link != "../data.txt" {
		t.Errorf("Stat(/sub/back) = %+v, %v; want Link ../data.txt", fi, err)
	}
}

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("abc"), 0o640))
	fsys, err := posix.New(dir)
	must(t, err)
	defer fsys.Close()
	fi, err := fsys.Stat(t.Context(), "/f")
	must(t, err)
	if fi.UID != os.Getuid() || fi.GID < 0 || fi.Owner == "" || fi.Group == "" {
		t.Errorf("ownership = %q/%q %d/%d", fi.Owner, fi.Group, fi.UID, fi.GID)
	}
	if fi.Unique == "" || fi.Mode.Perm() != 0o640 {
		t.Errorf("Stat = %+v", fi)
	}
	root, err := fsys.Stat(t.Context(), "/")
	must(t, err)
	if root.Name != "/" || !root.IsDir() || root.Unique == fi.Unique {
		t.Errorf("Stat(/) = %+v", root)
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	if _, err := posix.New(filepath.Join(dir, "missing")); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("New(missing) error %v", err)
	}
	f := filepath.Join(dir, "file")
	must(t, os.WriteFile(f, nil, 0o644))
	if _, err := posix.New(f); !errors.Is(err, dsi.ErrNotDir) {
		t.Errorf("New(file) error %v", err)
	}
}

func TestOpenSpecial(t *testing.T) {
	dir := t.TempDir()
	fsys, err := posix.New(dir)
	must(t, err)
	defer fsys.Close()
	sock := filepath.Join(dir, "fifo")
	if err := mkfifo(sock); err != nil {
		t.Skip("mkfifo:", err)
	}
	// Must fail at once rather than block waiting for a FIFO writer.
	if _, err := fsys.Open(t.Context(), "/fifo"); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("Open(fifo) error %v; want ErrInvalid", err)
	}
	if _, err := fsys.Create(t.Context(), "/fifo", dsi.CreateOptions{}); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("Create(fifo) error %v; want ErrInvalid", err)
	}
}
