package dsitest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
)

// RunHomes is the confinement suite for back-ends over a host directory
// that may hold symbolic links (dsi/posix, dsi/privsep). For each step it
// builds a fresh tree in a new directory below os.TempDir (mode 0755, so
// that another account can reach it):
//
//	base/outside/secret.txt
//	base/srv/                  the root handed to newStorage
//	    alice/                 the home under test: dsi.Sub(storage, "/alice")
//	        mine.txt
//	        in -> mine.txt     stays inside: shown as is
//	        tobob -> ../bob    leaves the home
//	        absbob -> <base>/srv/bob
//	        up -> ../../outside
//	    bob/secret.txt, bob/empty/
//	    alicelink -> alice     a home that is a link: Sub must fail
//
// It then performs the attacks a user confined to alice's home can try
// through the links and checks that each fails with dsi.ErrPermission or
// dsi.ErrNotExist and leaves bob's home untouched, that the sub-storage
// refuses Chmod and Chtimes of its own root, and that FileInfo.Link never
// shows a target that is absolute or climbs out of the storage's root.
//
// newStorage serves the host directory root; a back-end acting as another
// account may change the owner of the tree first.
func RunHomes(t *testing.T, newStorage func(t *testing.T, root string) dsi.Storage) {
	steps := []struct {
		name string
		f    func(t *testing.T, h *homes)
	}{
		{"Stat", homeStat},
		{"ReadDir", homeReadDir},
		{"Open", homeOpen},
		{"Create", homeCreate},
		{"Mkdir", homeMkdir},
		{"Remove", homeRemove},
		{"Rmdir", homeRmdir},
		{"RenameOut", homeRenameOut},
		{"RenameIn", homeRenameIn},
		{"ChmodThroughLink", homeChmodThroughLink},
		{"ChmodRoot", homeChmodRoot},
		{"Links", homeLinks},
		{"RootLinks", homeRootLinks},
		{"SubRefused", homeSubRefused},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h := newHomes(t)
			h.s = newStorage(t, h.root)
			before := h.snapshot(t)
			st.f(t, h)
			if after := h.snapshot(t); !slices.Equal(before, after) {
				t.Errorf("bob's home changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// homes is one tree of RunHomes.
type homes struct {
	base, root string
	s          dsi.Storage // over root
}

// escapes are alice's links out of her home.
var escapes = []string{"/tobob", "/absbob"}

func newHomes(t *testing.T) *homes {
	t.Helper()
	base, err := os.MkdirTemp("", "dsitest-homes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	h := &homes{base: base, root: filepath.Join(base, "srv")}
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(os.Chmod(base, 0o755))
	for _, d := range []string{"outside", "srv", "srv/alice", "srv/bob", "srv/bob/empty"} {
		check(os.Mkdir(filepath.Join(base, d), 0o755))
		check(os.Chmod(filepath.Join(base, d), 0o755))
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	for f, data := range map[string]string{
		"outside/secret.txt": "outside",
		"srv/alice/mine.txt": "alice",
		"srv/bob/secret.txt": "bob",
	} {
		check(os.WriteFile(filepath.Join(base, f), []byte(data), 0o644))
		check(os.Chmod(filepath.Join(base, f), 0o644))
		check(os.Chtimes(filepath.Join(base, f), old, old))
	}
	for link, target := range map[string]string{
		"srv/alice/in":     "mine.txt",
		"srv/alice/tobob":  "../bob",
		"srv/alice/absbob": filepath.Join(h.root, "bob"),
		"srv/alice/up":     "../../outside",
		"srv/alicelink":    "alice",
	} {
		check(os.Symlink(target, filepath.Join(base, link)))
	}
	return h
}

// snapshot describes bob's home, the outside directory and the homes
// themselves: names, types, permissions, times and contents.
func (h *homes) snapshot(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{filepath.Join(h.root, "bob"), filepath.Join(h.base, "outside")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			line := fmt.Sprintf("%s %v %d", p, fi.Mode(), fi.ModTime().UnixNano())
			if fi.Mode().IsRegular() {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				line += " " + string(data)
			}
			out = append(out, line)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{h.root, filepath.Join(h.root, "alice")} {
		fi, err := os.Lstat(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %v", d, fi.Mode()))
	}
	return out
}

// home returns the sub-storage for alice.
func (h *homes) home(t *testing.T) dsi.Storage {
	t.Helper()
	s, err := dsi.Sub(h.s, "/alice")
	if err != nil {
		t.Fatalf("Sub(/alice): %v", err)
	}
	return s
}

// refused fails unless err is one of the errors a confined name may give.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, dsi.ErrPermission) && !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("%s: error %v; want a permission or not-exist error", what, err)
	}
}

func homeStat(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		for _, name := range []string{l, l + "/secret.txt", l + "/empty", l + "/missing"} {
			fi, err := s.Stat(t.Context(), name)
			refused(t, fmt.Sprintf("Stat(%q) = %+v", name, fi), err)
		}
	}
}

func homeReadDir(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		for _, name := range []string{l, l + "/empty"} {
			list, err := s.ReadDir(t.Context(), name)
			refused(t, fmt.Sprintf("ReadDir(%q) = %d entries", name, len(list)), err)
		}
	}
}

func homeOpen(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		r, err := s.Open(t.Context(), l+"/secret.txt")
		if err == nil {
			r.Close()
		}
		refused(t, fmt.Sprintf("Open(%q)", l+"/secret.txt"), err)
	}
}

func homeCreate(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		for _, name := range []string{l + "/new.txt", l + "/secret.txt"} {
			w, err := s.Create(t.Context(), name, dsi.CreateOptions{Truncate: true, Size: -1})
			if err == nil {
				w.WriteAt([]byte("planted"), 0)
				w.Close()
			}
			refused(t, fmt.Sprintf("Create(%q)", name), err)
		}
	}
}

func homeMkdir(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		refused(t, fmt.Sprintf("Mkdir(%q)", l+"/d"), s.Mkdir(t.Context(), l+"/d", 0o777))
	}
}

func homeRemove(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		refused(t, fmt.Sprintf("Remove(%q)", l+"/secret.txt"), s.Remove(t.Context(), l+"/secret.txt"))
	}
}

func homeRmdir(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		refused(t, fmt.Sprintf("Rmdir(%q)", l+"/empty"), s.Rmdir(t.Context(), l+"/empty"))
	}
}

// homeRenameOut tries to move bob's file (and directory) into alice's home.
func homeRenameOut(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		for _, from := range []string{l + "/secret.txt", l + "/empty"} {
			err := s.Rename(t.Context(), from, "/stolen")
			refused(t, fmt.Sprintf("Rename(%q, /stolen)", from), err)
			if _, err := os.Lstat(filepath.Join(h.root, "alice", "stolen")); err == nil {
				t.Errorf("Rename(%q, /stolen) moved bob's entry into alice's home", from)
				os.Rename(filepath.Join(h.root, "alice", "stolen"), filepath.Join(h.root, "bob", path.Base(from)))
			}
		}
	}
}

// homeRenameIn tries to move alice's file into bob's home, and to replace
// bob's file with it.
func homeRenameIn(t *testing.T, h *homes) {
	s := h.home(t)
	for _, l := range escapes {
		for _, to := range []string{l + "/planted.txt", l + "/secret.txt"} {
			refused(t, fmt.Sprintf("Rename(/mine.txt, %q)", to), s.Rename(t.Context(), "/mine.txt", to))
			if _, err := os.Stat(filepath.Join(h.root, "alice", "mine.txt")); err != nil {
				t.Fatalf("Rename(/mine.txt, %q) moved the file out of alice's home", to)
			}
		}
	}
}

func homeChmodThroughLink(t *testing.T, h *homes) {
	s := h.home(t)
	if c, ok := s.(dsi.Chmoder); ok {
		for _, l := range escapes {
			for _, name := range []string{l, l + "/secret.txt"} {
				refused(t, fmt.Sprintf("Chmod(%q)", name), c.Chmod(t.Context(), name, 0o777))
			}
		}
	}
	if c, ok := s.(dsi.Chtimeser); ok {
		for _, l := range escapes {
			for _, name := range []string{l, l + "/secret.txt"} {
				refused(t, fmt.Sprintf("Chtimes(%q)", name), c.Chtimes(t.Context(), name, time.Now()))
			}
		}
	}
}

// homeChmodRoot: the home directory itself belongs to the administrator;
// its user may change what is inside it, not it.
func homeChmodRoot(t *testing.T, h *homes) {
	s := h.home(t)
	ctx := t.Context()
	c, ok := s.(dsi.Chmoder)
	if !ok {
		t.Skip("no dsi.Chmoder")
	}
	for _, name := range []string{"/", "", "/.", "/.."} {
		if err := c.Chmod(ctx, name, 0o777); !errors.Is(err, dsi.ErrPermission) {
			t.Errorf("Chmod(%q, 0777) of the home: %v; want ErrPermission", name, err)
		}
	}
	if ct, ok := s.(dsi.Chtimeser); ok {
		if err := ct.Chtimes(ctx, "/", time.Now().Add(-time.Hour)); !errors.Is(err, dsi.ErrPermission) {
			t.Errorf("Chtimes(/) of the home: %v; want ErrPermission", err)
		}
		when := time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
		if err := ct.Chtimes(ctx, "/mine.txt", when); err != nil {
			t.Errorf("Chtimes(/mine.txt): %v", err)
		} else if fi, err := s.Stat(ctx, "/mine.txt"); err != nil || !fi.ModTime.Equal(when) {
			t.Errorf("after Chtimes(/mine.txt): %+v, %v", fi, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(h.root, "alice")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("home directory after Chmod: %v, %v; want 0755", fi.Mode(), err)
	}
	if err := c.Chmod(ctx, "/mine.txt", 0o600); err != nil {
		t.Errorf("Chmod(/mine.txt): %v", err)
	} else if fi, err := s.Stat(ctx, "/mine.txt"); err != nil || fi.Mode.Perm() != 0o600 {
		t.Errorf("after Chmod(/mine.txt): %+v, %v", fi, err)
	}
	if err := s.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Chmod(ctx, "/d", 0o700); err != nil {
		t.Errorf("Chmod(/d): %v", err)
	}
}

// linkOf returns the entry called name of list.
func linkOf(t *testing.T, list []dsi.FileInfo, name string) dsi.FileInfo {
	t.Helper()
	for _, fi := range list {
		if fi.Name == name {
			return fi
		}
	}
	t.Fatalf("no entry %q in %v", name, list)
	return dsi.FileInfo{}
}

// homeLinks: a listing of the home shows link targets that stay inside
// it, and hides the others.
func homeLinks(t *testing.T, h *homes) {
	s := h.home(t)
	list, err := s.ReadDir(t.Context(), "/")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"in": "mine.txt", "tobob": "", "absbob": "", "up": ""} {
		if fi := linkOf(t, list, name); fi.Link != want {
			t.Errorf("ReadDir(/): %s.Link = %q; want %q", name, fi.Link, want)
		}
	}
	if fi, err := s.Stat(t.Context(), "/in"); err != nil || fi.Link != "mine.txt" || !fi.Mode.IsRegular() {
		t.Errorf("Stat(/in) = %+v, %v; want the file, Link mine.txt", fi, err)
	}
}

// homeRootLinks: without Sub, a link inside the root is shown; an absolute
// one, or one climbing out of the root, is not (it would reveal paths of
// the server host).
func homeRootLinks(t *testing.T, h *homes) {
	list, err := h.s.ReadDir(t.Context(), "/alice")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"in": "mine.txt", "tobob": "../bob", "absbob": "", "up": ""} {
		if fi := linkOf(t, list, name); fi.Link != want {
			t.Errorf("ReadDir(/alice): %s.Link = %q; want %q", name, fi.Link, want)
		}
	}
	for name, want := range map[string]string{"/alice/tobob": "../bob", "/alicelink": "alice"} {
		if fi, err := h.s.Stat(t.Context(), name); err != nil || fi.Link != want {
			t.Errorf("Stat(%q) = %+v, %v; want Link %q", name, fi, err, want)
		}
	}
	// The back-end may refuse to follow an absolute link at all.
	for _, name := range []string{"/alice/absbob", "/alice/up"} {
		if fi, err := h.s.Stat(t.Context(), name); err == nil && fi.Link != "" {
			t.Errorf("Stat(%q) shows the target %q", name, fi.Link)
		}
	}
}

// homeSubRefused: a home that is missing, not a directory, or reached
// through a symbolic link cannot be confined, so Sub fails.
func homeSubRefused(t *testing.T, h *homes) {
	for _, dir := range []string{"/nohome", "/alice/mine.txt", "/alicelink", "/alice/tobob", "/alice/absbob", "/alice/in"} {
		if s, err := dsi.Sub(h.s, dir); err == nil {
			fi, _ := s.Stat(context.Background(), "/")
			t.Errorf("Sub(%q) succeeded (root %+v); want an error", dir, fi)
		}
	}
	// A home nested below another works, as does a Sub of a Sub.
	s := h.home(t)
	if err := s.Mkdir(t.Context(), "/inner", 0o755); err != nil {
		t.Fatal(err)
	}
	inner, err := dsi.Sub(s, "/inner")
	if err != nil {
		t.Fatalf("Sub(Sub(/alice), /inner): %v", err)
	}
	if _, err := dsi.Sub(s, "/tobob"); err == nil {
		t.Error("Sub(Sub(/alice), /tobob) succeeded")
	}
	if err := inner.Mkdir(t.Context(), "/x", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.root, "alice", "inner", "x")); err != nil {
		t.Errorf("Mkdir in the nested home: %v", err)
	}
	if nested, err := dsi.Sub(h.s, "/alice/inner"); err != nil {
		t.Errorf("Sub(/alice/inner): %v", err)
	} else if _, err := nested.Stat(t.Context(), "/x"); err != nil {
		t.Errorf("Stat(/x) in Sub(/alice/inner): %v", err)
	}
}
