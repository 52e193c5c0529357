package transfer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// confinedDirs makes a root with a symbolic link "in/y" to a directory
// outside it, a link "in/f" to a secret file outside it, and a file
// "in/ok" inside.
func confinedDirs(t *testing.T) (root *os.Root, dir, outside string) {
	t.Helper()
	dir, outside = t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "secret"), []byte("outside secret"))
	writeFile(t, filepath.Join(dir, "in", "ok"), []byte("inside"))
	if err := os.Symlink(outside, filepath.Join(dir, "in", "y")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "in", "f")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root, dir, outside
}

func confined(root *os.Root, p string) Location {
	l := LocalLocation(p)
	l.Root = root
	return l
}

// checkOutside fails unless outside holds only its secret, unchanged.
func checkOutside(t *testing.T, outside string) {
	t.Helper()
	es, _ := os.ReadDir(outside)
	if len(es) != 1 || es[0].Name() != "secret" {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("outside the root now holds %q", names)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "outside secret" {
		t.Errorf("the file outside now holds %q", b)
	}
}

// TestRootRefusesSymlinkSource: a confined source that is (by now) a
// symbolic link out of the root is refused at the open, in a local copy
// and in an upload, and nothing of it is read.
func TestRootRefusesSymlinkSource(t *testing.T) {
	root, dir, outside := confinedDirs(t)
	e := &Engine{}
	ctx := t.Context()
	out := filepath.Join(t.TempDir(), "copy")
	_, err := e.Copy(ctx, Request{Src: confined(root, filepath.Join(dir, "in", "f")), Dst: LocalLocation(out), Options: Options{Length: -1}}, nil)
	if !errors.Is(err, ErrEscape) {
		t.Errorf("local copy of a link out of the root: %v, want ErrEscape", err)
	}
	if b, err := os.ReadFile(out); err == nil {
		t.Errorf("the copy holds %q", b)
	}

	s := startServer(t)
	_, err = e.Copy(ctx, Request{Src: confined(root, filepath.Join(dir, "in", "f")), Dst: s.loc("up"), Options: Options{Length: -1}}, nil)
	if !errors.Is(err, ErrEscape) {
		t.Errorf("upload of a link out of the root: %v, want ErrEscape", err)
	}
	if b, err := os.ReadFile(filepath.Join(s.dir, "up")); err == nil {
		t.Errorf("the server got %q", b)
	}
	// Without Root the CLI follows the link, as before.
	if _, err := e.Copy(ctx, Request{Src: LocalLocation(filepath.Join(dir, "in", "f")), Dst: LocalLocation(out), Options: Options{Length: -1}}, nil); err != nil {
		t.Errorf("unconfined copy: %v", err)
	}
	checkOutside(t, outside)
}

// TestRootRefusesSymlinkDestDir: a confined destination whose directory
// is (by now) a symbolic link out of the root is refused, for a local
// copy, a whole download (temporary file) and a partial one (in place,
// with its .ferry-ranges), with and without CreateDirs; nothing is
// written outside.
func TestRootRefusesSymlinkDestDir(t *testing.T) {
	root, dir, outside := confinedDirs(t)
	e := &Engine{}
	ctx := t.Context()
	s := startServer(t)
	writeFile(t, filepath.Join(s.dir, "payload"), []byte("written-by-alice\n"))
	srcFile := filepath.Join(t.TempDir(), "payload")
	writeFile(t, srcFile, []byte("written-by-alice\n"))
	for _, tc := range []struct {
		name string
		src  Location
		o    Options
	}{
		{"local", LocalLocation(srcFile), Options{Length: -1}},
		{"download", s.loc("payload"), Options{Length: -1}},
		{"partial download", s.loc("payload"), Options{Length: 5}},
	} {
		for _, cd := range []bool{false, true} {
			for _, dst := range []string{"in/y/payload", "in/y/sub/payload", "in/f"} {
				_, err := e.Copy(ctx, Request{Src: tc.src, Dst: confined(root, filepath.Join(dir, dst)), Options: tc.o, CreateDirs: cd}, nil)
				if !errors.Is(err, ErrEscape) {
					t.Errorf("%s to %s (-cd %v): %v, want ErrEscape", tc.name, dst, cd, err)
				}
			}
		}
		// Inside the root the copy works, its part files included.
		got := filepath.Join(dir, "in", "new", tc.name)
		if _, err := e.Copy(ctx, Request{Src: tc.src, Dst: confined(root, got), Options: tc.o, CreateDirs: true}, nil); err != nil {
			t.Errorf("%s inside the root: %v", tc.name, err)
		} else if b, _ := os.ReadFile(got); !bytes.HasPrefix([]byte("written-by-alice\n"), b) || len(b) == 0 {
			t.Errorf("%s inside the root wrote %q", tc.name, b)
		}
		if _, err := os.Stat(got + RangesSuffix); err == nil {
			t.Errorf("%s left its %s", tc.name, RangesSuffix)
		}
	}
	checkOutside(t, outside)
}
