package job

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestRunBytesOfFailedFiles: a file that fails after moving bytes (an
// interrupted copy, whose partial file is removed) does not count in the
// Summary's bytes; the files copied do.
func TestRunBytesOfFailedFiles(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	files := tree(t, src)
	var want int64
	for name, content := range files {
		if name != "a.txt" {
			want += int64(len(content))
		}
	}
	w := &partialFailWorker{fail: "a.txt", moved: 1 << 20}
	plan := planFor(t, Options{Recursive: true}, src+"/", dst)
	sum := (&Runner{Workers: 1, NewWorker: func() Worker { return w }}).Run(t.Context(), plan, w)
	if len(sum.Failed) != 1 {
		t.Fatalf("failures %v, want the one of a.txt", sum.Failed)
	}
	if sum.Failed[0].Bytes != 1<<20 {
		t.Errorf("the failure's own Result has %d bytes, want %d (what it moved)", sum.Failed[0].Bytes, 1<<20)
	}
	if sum.Bytes != want {
		t.Errorf("summary counts %d bytes, want %d: those of the files copied", sum.Bytes, want)
	}
}

// partialFailWorker is a localWorker whose copy of the file named fail
// moves some bytes and then fails.
type partialFailWorker struct {
	localWorker
	fail  string
	moved int64
}

func (w *partialFailWorker) Copy(ctx context.Context, p Pair, progress func(int64)) (int64, error) {
	if filepath.Base(p.Dst.Path) == w.fail {
		progress(w.moved)
		return w.moved, errors.New("interrupted")
	}
	return w.localWorker.Copy(ctx, p, progress)
}

// TestRunUnmakeableDirOnce: when a destination directory cannot be
// created, that failure is reported once with its cause; the directories
// below it are not tried (no cascade of "no such file or directory"),
// and the files below fail with a DirError naming it.
func TestRunUnmakeableDirOnce(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	tree(t, src)
	plan := planFor(t, Options{Recursive: true}, src+"/", dst)
	bad := filepath.Join(dst, "sub")
	w := &mkdirFailWorker{bad: bad}
	sum := (&Runner{Workers: 2, NewWorker: func() Worker { return w }}).Run(t.Context(), plan, w)
	var root []Result
	var below int
	for _, f := range sum.Failed {
		var de *DirError
		switch {
		case errors.As(f.Err, &de):
			if de.Dir.Path != bad {
				t.Errorf("%s fails under %s, want %s", f.Pair.Dst, de.Dir, bad)
			}
			below++
		default:
			root = append(root, f)
		}
	}
	if len(root) != 1 || root[0].Pair.Dst.Path != bad || !errors.Is(root[0].Err, syscall.EACCES) {
		t.Fatalf("failures other than below the bad directory: %v; want one, for %s (permission denied)", root, bad)
	}
	if below != 3 { // sub/zero, sub/deeper/c.txt, sub/deeper/deepest/d.b
		t.Errorf("%d files failed below %s, want 3", below, bad)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.tried {
		if strings.HasPrefix(p, bad+string(filepath.Separator)) {
			t.Errorf("Mkdir %s was tried, below %s which could not be made", p, bad)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "a.txt")); err != nil {
		t.Errorf("the files elsewhere were not copied: %v", err)
	}
}

// mkdirFailWorker is a localWorker whose Mkdir refuses bad (permission
// denied) and records the directories it was asked for.
type mkdirFailWorker struct {
	localWorker
	bad   string
	mu    sync.Mutex
	tried []string
}

func (w *mkdirFailWorker) FS(end string) FS { return mkdirFailFS{Local{}, w} }

type mkdirFailFS struct {
	Local
	w *mkdirFailWorker
}

func (f mkdirFailFS) Mkdir(ctx context.Context, p string) error {
	f.w.mu.Lock()
	f.w.tried = append(f.w.tried, p)
	f.w.mu.Unlock()
	if p == f.w.bad {
		return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.EACCES}
	}
	if _, err := os.Stat(filepath.Dir(p)); err != nil {
		return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOENT}
	}
	return f.Local.Mkdir(ctx, p)
}

// TestMkdirAll creates missing levels, accepts an existing directory and
// refuses a file in the way.
func TestMkdirAll(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c")
	for range 2 {
		if err := MkdirAll(t.Context(), Local{}, deep); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(deep); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v", deep, err)
		}
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(t.Context(), Local{}, filepath.Join(file, "x")); err == nil {
		t.Error("MkdirAll below a file succeeded")
	}
}
