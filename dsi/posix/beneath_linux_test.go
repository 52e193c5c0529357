package posix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ferrygrid/ferry/dsi"
)

// beneathTree builds parent/{secret, outside/, root/} with links inside
// root pointing in and out, and returns a back-end on root.
func beneathTree(t *testing.T) (fsys *FS, root, parent string) {
	t.Helper()
	parent = t.TempDir()
	root = filepath.Join(parent, "root")
	for _, d := range []string{root, filepath.Join(parent, "outside"), filepath.Join(root, "sub"), filepath.Join(root, "sub", "deep")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		filepath.Join(parent, "secret"):            "secret",
		filepath.Join(parent, "outside", "x"):      "outside",
		filepath.Join(root, "data.txt"):            "inside",
		filepath.Join(root, "sub", "deep", "file"): "deep",
	} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		// Absolute links lead to the test's own directory, never to the
		// host's: a broken confinement must not write into /etc.
		"etc":          filepath.Join(parent, "outside"),
		"up":           "../..",
		"out":          "../secret",
		"abs":          filepath.Join(parent, "secret"),
		"absin":        filepath.Join(root, "data.txt"), // absolute, yet inside
		"outdir":       "../outside",
		"in":           "data.txt",
		"sub/back":     "../data.txt",
		"sub/deep/up2": "../../../secret",
		"indir":        "sub",
		"dangling":     "nothing-here",
		"danglingout":  "../outside/new",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if f.dir == nil {
		t.Skip("no openat2 on this kernel")
	}
	return f, root, parent
}

// TestBeneathFastPathTaken: plain names take the openat2 paths, so that
// the tests below compare two different paths.
func TestBeneathFastPathTaken(t *testing.T) {
	fsys, root, _ := beneathTree(t)
	f, size, ok := fsys.openFast("sub/deep/file")
	if !ok {
		t.Fatal("openFast(sub/deep/file) fell back")
	}
	b, err := io.ReadAll(f)
	f.Close()
	if string(b) != "deep" || size != 4 || err != nil {
		t.Errorf("openFast read %q (size %d), %v", b, size, err)
	}
	w, ok := fsys.createFast("sub/deep/new", os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if !ok {
		t.Fatal("createFast(sub/deep/new) fell back")
	}
	w.WriteString("new")
	w.Close()
	fi, err := os.Stat(filepath.Join(root, "sub", "deep", "new"))
	if err != nil || fi.Mode().Perm()&^0o600 != 0 {
		t.Errorf("created file: %v, %v", fi, err)
	}
	if !fsys.renameFast("sub/deep/new", "sub/deep/renamed") {
		t.Fatal("renameFast fell back")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "sub", "deep", "renamed")); string(b) != "new" {
		t.Errorf("renamed file holds %q", b)
	}
}

// TestBeneathNoLinks: a name with a symbolic link anywhere on the way,
// or a FIFO, never takes a fast path, whether the link stays inside the
// root or not; nothing appears outside.
func TestBeneathNoLinks(t *testing.T) {
	fsys, _, parent := beneathTree(t)
	names := []string{"etc", "etc/x", "up", "up/secret", "out", "abs", "absin",
		"outdir", "outdir/x", "outdir/new", "in", "sub/back", "sub/deep/up2", "indir/deep/file",
		"indir/back", "dangling", "danglingout", "fifo", "."}
	for _, r := range names {
		if f, _, ok := fsys.openFast(r); ok {
			f.Close()
			t.Errorf("openFast(%q) took the fast path", r)
		}
		for _, flag := range []int{os.O_WRONLY | os.O_CREATE, os.O_WRONLY | os.O_CREATE | os.O_TRUNC | syscall.O_NOFOLLOW} {
			if f, ok := fsys.createFast(r, flag, 0o644); ok {
				f.Close()
				t.Errorf("createFast(%q, %#x) took the fast path", r, flag)
			}
		}
	}
	// A rename handles the link itself when it is the last element (as
	// the os.Root does); a link among the directories on the way falls
	// back.
	for _, r := range []string{"etc/x", "up/secret", "outdir/x", "outdir/new", "indir/back", "indir/deep/file"} {
		dir, _ := splitRel(r)
		if fsys.renameFast(r, dir+"/moved") || fsys.renameFast(dir+"/moved", r) {
			t.Errorf("renameFast with %q took the fast path", r)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(parent, "outside")); len(ents) != 1 {
		t.Errorf("entries appeared outside the root: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(parent, "secret")); string(b) != "secret" {
		t.Errorf("secret changed: %q", b)
	}
}

// TestBeneathSameAnswers: every Open, Create and Rename answers the same,
// content and error alike, with and without the fast paths.
func TestBeneathSameAnswers(t *testing.T) {
	ctx := context.Background()
	names := []string{"/data.txt", "/sub/deep/file", "/sub", "/missing", "/sub/missing/x", "/data.txt/x",
		"/etc", "/etc/x", "/etc/new", "/up/secret", "/out", "/abs", "/absin", "/outdir/x", "/outdir/new", "/in",
		"/sub/back", "/sub/deep/up2", "/indir/deep/file", "/dangling", "/danglingout", "/fifo", "/",
		"/sub/deep", "/sub/deep/missing", "/sub/deep/file/x", "/sub/back/x", "/sub/deep/up2/x"}
	type answer struct {
		content string
		err     string
		kind    error
	}
	kindOf := func(err error) error {
		for _, k := range []error{dsi.ErrNotExist, dsi.ErrPermission, dsi.ErrIsDir, dsi.ErrNotDir, dsi.ErrInvalid, dsi.ErrExist, dsi.ErrNotSupported} {
			if errors.Is(err, k) {
				return k
			}
		}
		return nil
	}
	run := func(fast bool) (map[string]answer, map[string]string) {
		fsys, root, parent := beneathTree(t)
		if !fast {
			fsys.dir.Close()
			fsys.dir = nil
		}
		got := map[string]answer{}
		for _, name := range names {
			var a answer
			r, err := fsys.Open(ctx, name)
			if err == nil {
				b, _ := io.ReadAll(io.NewSectionReader(r, 0, 1<<20))
				a.content = string(b)
				r.Close()
			}
			if err != nil {
				a.err, a.kind = err.Error(), kindOf(err)
			}
			got["open "+name] = a
			info, err := fsys.Stat(ctx, name)
			// The two trees differ in inodes and times only.
			a = answer{content: fmt.Sprintf("%s %d %v %d %d %s %s %q", info.Name, info.Size, info.Mode,
				info.UID, info.GID, info.Owner, info.Group, info.Link)}
			if err != nil {
				a.err, a.kind = err.Error(), kindOf(err)
			}
			got["stat "+name] = a
			for _, nofollow := range []bool{false, true} {
				w, err := fsys.Create(ctx, name, dsi.CreateOptions{Size: -1, NoFollow: nofollow})
				a := answer{}
				if err == nil {
					_, err = w.WriteAt([]byte("w"), 0)
					w.Close()
				}
				if err != nil {
					a.err, a.kind = err.Error(), kindOf(err)
				}
				got["create "+name+map[bool]string{true: " nofollow"}[nofollow]] = a
			}
		}
		for _, dir := range []string{"/", "/sub", "/sub/deep", "/indir", "/outdir", "/missing"} {
			list, err := fsys.ReadDir(ctx, dir)
			var a answer
			for _, e := range list {
				a.content += fmt.Sprintf("%s %d %v %d %d %q;", e.Name, e.Size, e.Mode, e.UID, e.GID, e.Link)
			}
			if err != nil {
				a.err, a.kind = err.Error(), kindOf(err)
			}
			got["readdir "+dir] = a
		}
		for _, mv := range [][2]string{{"/data.txt", "/renamed"}, {"/renamed", "/sub"}, {"/in", "/in2"},
			{"/sub/deep/file", "/sub/deep/f2"}, {"/missing", "/x"}, {"/sub/deep/f2", "/sub/missing/y"}} {
			err := fsys.Rename(ctx, mv[0], mv[1])
			a := answer{}
			if err != nil {
				a.err, a.kind = err.Error(), kindOf(err)
			}
			got["rename "+mv[0]+" "+mv[1]] = a
		}
		// The resulting trees, with the paths made relative.
		trees := map[string]string{}
		for _, top := range []string{root, parent} {
			filepath.Walk(top, func(p string, fi os.FileInfo, err error) error {
				if err != nil {
					return nil
				}
				rp, _ := filepath.Rel(parent, p)
				desc := fi.Mode().String()
				if fi.Mode().IsRegular() {
					b, _ := os.ReadFile(p)
					desc += " " + string(b)
				}
				trees[rp] = desc
				return nil
			})
		}
		return got, trees
	}
	slow, slowTree := run(false)
	fast, fastTree := run(true)
	for k, s := range slow {
		f := fast[k]
		// Error texts name the temporary root only in New; compare
		// kinds and the rest of the text.
		if f.content != s.content || f.kind != s.kind || f.err != s.err {
			t.Errorf("%s: fast %+v, slow %+v", k, f, s)
		}
	}
	for p, s := range slowTree {
		if fastTree[p] != s {
			t.Errorf("tree %s: fast %q, slow %q", p, fastTree[p], s)
		}
	}
	if len(fastTree) != len(slowTree) {
		t.Errorf("trees differ: fast %v, slow %v", fastTree, slowTree)
	}
}

// TestLstatFast: the fast Lstat describes entries of every kind as os
// does, and answers a missing entry with ENOENT.
func TestLstatFast(t *testing.T) {
	fsys, root, _ := beneathTree(t)
	sub := filepath.Join(root, "sub", "deep")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(sub, "suid"), []byte("12345"), 0o644))
	must(os.Chmod(filepath.Join(sub, "suid"), 0o4755|os.ModeSetuid|os.ModeSetgid))
	must(os.Mkdir(filepath.Join(sub, "sticky"), 0o755))
	must(os.Chmod(filepath.Join(sub, "sticky"), 0o777|os.ModeSticky))
	must(syscall.Mkfifo(filepath.Join(sub, "fifo"), 0o600))
	for _, r := range []string{"sub/deep/file", "sub/deep/suid", "sub/deep/sticky", "sub/deep/fifo", "sub/deep/up2", "sub/back", "sub/deep"} {
		fi, err, ok := fsys.lstatFast(r)
		if !ok || err != nil {
			t.Errorf("lstatFast(%q): ok %v, %v", r, ok, err)
			continue
		}
		want, err := os.Lstat(filepath.Join(root, r))
		must(err)
		if fi.Name() != want.Name() || fi.Size() != want.Size() || fi.Mode() != want.Mode() ||
			!fi.ModTime().Equal(want.ModTime()) || fi.IsDir() != want.IsDir() ||
			!sameIDs(fi.Sys().(*unix.Stat_t), want.Sys().(*syscall.Stat_t)) {
			t.Errorf("lstatFast(%q) = %v %d %v %v; os.Lstat %v %d %v %v", r,
				fi.Name(), fi.Size(), fi.Mode(), fi.ModTime(), want.Name(), want.Size(), want.Mode(), want.ModTime())
		}
	}
	// lstatIn: the entries of an open directory, as os.Lstat sees them.
	d, err := os.Open(sub)
	must(err)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	must(err)
	if len(names) < 5 {
		t.Fatalf("entries %v", names)
	}
	for _, n := range append(names, "missing") {
		fi, err, ok := lstatIn(d, n)
		want, werr := os.Lstat(filepath.Join(sub, n))
		switch {
		case !ok:
			t.Errorf("lstatIn(%q) fell back", n)
		case werr != nil || err != nil:
			if !errors.Is(err, syscall.ENOENT) || !errors.Is(werr, syscall.ENOENT) {
				t.Errorf("lstatIn(%q): %v; os.Lstat: %v", n, err, werr)
			}
		case fi.Name() != want.Name() || fi.Size() != want.Size() || fi.Mode() != want.Mode() ||
			!fi.ModTime().Equal(want.ModTime()) || !sameIDs(fi.Sys().(*unix.Stat_t), want.Sys().(*syscall.Stat_t)):
			t.Errorf("lstatIn(%q) = %v %v; os.Lstat %v %v", n, fi.Mode(), fi.Size(), want.Mode(), want.Size())
		}
	}
	for _, n := range []string{"..", ".", "", "a/b"} {
		if _, _, ok := lstatIn(d, n); ok {
			t.Errorf("lstatIn(%q) did not fall back", n)
		}
	}
	for _, r := range []string{"sub/missing", "sub/deep/file/x", "missing/x"} {
		if _, err, ok := fsys.lstatFast(r); !ok || !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("lstatFast(%q): ok %v, %v", r, ok, err)
		}
	}
	for _, r := range []string{"indir/deep", "outdir/x", "up/secret", "etc/x", "data.txt"} {
		if _, _, ok := fsys.lstatFast(r); ok {
			t.Errorf("lstatFast(%q) took the fast path", r)
		}
	}
}

func sameIDs(a *unix.Stat_t, b *syscall.Stat_t) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Uid == b.Uid && a.Gid == b.Gid && a.Nlink == b.Nlink
}
