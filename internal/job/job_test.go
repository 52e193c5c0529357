package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// localWorker copies local files; it counts its copies.
type localWorker struct {
	copies atomic.Int64
	fail   func(Pair) error // nil: never
}

func (w *localWorker) Copy(ctx context.Context, p Pair, progress func(int64)) (int64, error) {
	if w.fail != nil {
		if err := w.fail(p); err != nil {
			return 0, err
		}
	}
	w.copies.Add(1)
	in, err := os.Open(p.Src.Path)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(p.Dst.Path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	progress(n)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func (w *localWorker) FS(end string) FS                { return Local{} }
func (w *localWorker) Close(ctx context.Context) error { return nil }

// batchWorker is a BatchCopier over localWorker; it records batch sizes.
type batchWorker struct {
	localWorker
	mu      sync.Mutex
	batches []int
}

func (w *batchWorker) CopyBatch(ctx context.Context, pairs []Pair, obs Observer) []Result {
	w.mu.Lock()
	w.batches = append(w.batches, len(pairs))
	w.mu.Unlock()
	out := make([]Result, len(pairs))
	for i, p := range pairs {
		if !p.sameEnds(pairs[0]) {
			panic("mixed endpoints in a batch")
		}
		obs.FileStarted(p, p.Size)
		n, err := w.Copy(ctx, p, func(int64) {})
		obs.FileDone(p, n, err)
		out[i] = Result{Pair: p, Bytes: n, Err: err}
	}
	return out
}

// countObserver counts the observer calls.
type countObserver struct {
	started, done, failed atomic.Int64
}

func (o *countObserver) FileStarted(Pair, int64)  { o.started.Add(1) }
func (o *countObserver) FileProgress(Pair, int64) {}
func (o *countObserver) FileDone(p Pair, n int64, err error) {
	o.done.Add(1)
	if err != nil {
		o.failed.Add(1)
	}
}

// tree builds a test tree under dir: nested and empty directories, names
// with spaces and non-ASCII letters, an empty file.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{
		"a.txt":                  "alpha",
		"with space.dat":         "space",
		"ñandú/ü.dat":            "umlaut",
		"sub/deeper/c.txt":       "c",
		"sub/zero":               "",
		"run-01/x.dat":           "x1",
		"run-02/x.dat":           "x2",
		"run-10/x.dat":           "x10",
		"sub/deeper/deepest/d.b": "d",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty", "emptier"), 0o755); err != nil {
		t.Fatal(err)
	}
	return files
}

func planFor(t *testing.T, o Options, src, dst string) *Plan {
	t.Helper()
	pl := &Planner{Src: Local{}, Dst: Local{}, Options: o}
	plan := &Plan{}
	if err := pl.Add(t.Context(), plan, src, dst); err != nil {
		t.Fatalf("plan %s -> %s: %v", src, dst, err)
	}
	return plan
}

func runPlan(t *testing.T, plan *Plan, w Worker, workers int) *Summary {
	t.Helper()
	r := &Runner{Workers: workers, NewWorker: func() Worker { return w }}
	return r.Run(t.Context(), plan, w)
}

func checkTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(b) != content {
			t.Errorf("%s: %q, %v; want %q", name, b, err, content)
		}
	}
}

func TestTreeCopy(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	files := tree(t, src)
	for _, tc := range []struct {
		name, src, dst, want string // want: where the tree lands, relative to root
		pre                  func(t *testing.T)
	}{
		{"new destination", "src", "new", "new", nil},
		{"into existing", "src", "have", "have/src", func(t *testing.T) { os.Mkdir(filepath.Join(root, "have"), 0o755) }},
		{"contents into existing", "src/", "have2", "have2", func(t *testing.T) { os.Mkdir(filepath.Join(root, "have2"), 0o755) }},
		{"slash destination", "src", "slash/", "slash/src", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.pre != nil {
				tc.pre(t)
			}
			plan := planFor(t, Options{Recursive: true, CreateDirs: true}, filepath.Join(root, tc.src)+suffix(tc.src), filepath.Join(root, tc.dst)+suffix(tc.dst))
			w := &localWorker{}
			sum := runPlan(t, plan, w, 3)
			if !sum.OK() || sum.Files != len(files) {
				t.Fatalf("summary %+v", sum)
			}
			checkTree(t, filepath.Join(root, tc.want), files)
			if fi, err := os.Stat(filepath.Join(root, tc.want, "empty", "emptier")); err != nil || !fi.IsDir() {
				t.Errorf("empty directory not copied: %v", err)
			}
		})
	}
}

func suffix(p string) string {
	if strings.HasSuffix(p, "/") {
		return "/"
	}
	return ""
}

func TestNoRecursionForDirectory(t *testing.T) {
	root := t.TempDir()
	tree(t, filepath.Join(root, "src"))
	pl := &Planner{Src: Local{}, Dst: Local{}}
	err := pl.Add(t.Context(), &Plan{}, filepath.Join(root, "src"), filepath.Join(root, "dst"))
	if err == nil || !strings.Contains(err.Error(), "-r") {
		t.Errorf("directory without -r: %v", err)
	}
}

func TestMissingDestinationNeedsCD(t *testing.T) {
	root := t.TempDir()
	tree(t, filepath.Join(root, "src"))
	pl := &Planner{Src: Local{}, Dst: Local{}}
	err := pl.Add(t.Context(), &Plan{}, filepath.Join(root, "src", "a.txt"), filepath.Join(root, "x", "y", "a.txt"))
	if err == nil || !strings.Contains(err.Error(), "-cd") {
		t.Fatalf("missing parents without -cd: %v", err)
	}
	plan := planFor(t, Options{CreateDirs: true}, filepath.Join(root, "src", "a.txt"), filepath.Join(root, "x", "y", "a.txt"))
	if len(plan.Dirs) != 2 || plan.Dirs[0].Dst.Path != filepath.Join(root, "x") {
		t.Fatalf("dirs %+v", plan.Dirs)
	}
	if sum := runPlan(t, plan, &localWorker{}, 1); !sum.OK() || sum.Dirs != 2 {
		t.Fatalf("summary %+v", sum)
	}
	checkTree(t, filepath.Join(root, "x", "y"), map[string]string{"a.txt": "alpha"})
}

func TestWildcards(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	tree(t, src)
	for _, tc := range []struct {
		pattern string
		want    []string // copied files, relative to the destination
		rec     bool
	}{
		{"*.txt", []string{"a.txt"}, false},
		{"[aw]*", []string{"a.txt", "with space.dat"}, false},
		{"run-0?/x.dat", nil, false}, // same names: both land on x.dat
		{"run-??/", []string{"run-01/x.dat", "run-02/x.dat", "run-10/x.dat"}, true},
		{"run-0*", []string{"run-01/x.dat", "run-02/x.dat"}, true},
		{"*/deeper/*.txt", []string{"c.txt"}, false},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			dst := t.TempDir()
			plan := planFor(t, Options{Recursive: tc.rec}, filepath.Join(src, tc.pattern), dst)
			var got []string
			for _, p := range plan.Pairs {
				rel, _ := filepath.Rel(dst, p.Dst.Path)
				got = append(got, filepath.ToSlash(rel))
			}
			if tc.want == nil {
				if len(got) != 2 || got[0] != "x.dat" || got[1] != "x.dat" {
					t.Errorf("got %+v", got)
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	pl := &Planner{Src: Local{}, Dst: Local{}}
	if err := pl.Add(t.Context(), &Plan{}, filepath.Join(src, "*.none"), root); !errors.Is(err, ErrNoMatch) {
		t.Errorf("no match: %v", err)
	}
	if err := pl.Add(t.Context(), &Plan{}, filepath.Join(src, "[a"), root); err == nil {
		t.Errorf("bad pattern accepted")
	}
}

func TestSyncLevels(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	files := tree(t, src)
	plan := planFor(t, Options{Recursive: true, CreateDirs: true, Sync: true, SyncLevel: SyncModTime}, src+"/", dst)
	if sum := runPlan(t, plan, &localWorker{}, 2); !sum.OK() || sum.Files != len(files) {
		t.Fatalf("first sync: %+v", sum)
	}
	old := time.Now().Add(-time.Hour)
	newer := time.Now().Add(time.Hour)
	// same size, destination older; different size; missing; different
	// content of the same size and a newer destination.
	os.Chtimes(filepath.Join(dst, "a.txt"), old, old)
	os.WriteFile(filepath.Join(dst, "sub", "zero"), []byte("grown"), 0o644)
	os.Remove(filepath.Join(dst, "with space.dat"))
	os.WriteFile(filepath.Join(dst, "run-01", "x.dat"), []byte("zz"), 0o644)
	os.Chtimes(filepath.Join(dst, "run-01", "x.dat"), newer, newer)
	want := map[int][]string{
		SyncExists:   {"with space.dat"},
		SyncSize:     {"sub/zero", "with space.dat"},
		SyncModTime:  {"a.txt", "sub/zero", "with space.dat"},
		SyncChecksum: {"run-01/x.dat", "sub/zero", "with space.dat"},
	}
	for level := SyncExists; level <= SyncChecksum; level++ {
		plan := planFor(t, Options{Recursive: true, Sync: true, SyncLevel: level}, src+"/", dst)
		var got []string
		for _, p := range plan.Pairs {
			rel, _ := filepath.Rel(dst, p.Dst.Path)
			got = append(got, filepath.ToSlash(rel))
		}
		slices.Sort(got)
		if !slices.Equal(got, want[level]) {
			t.Errorf("level %d: copies %q, want %q", level, got, want[level])
		}
	}
	// A sync at level 2 repairs all but the newer destination file of
	// the same size; level 3 that one; a second sync changes nothing.
	plan = planFor(t, Options{Recursive: true, Sync: true, SyncLevel: SyncModTime}, src+"/", dst)
	runPlan(t, plan, &localWorker{}, 2)
	plan = planFor(t, Options{Recursive: true, Sync: true, SyncLevel: SyncChecksum}, src+"/", dst)
	if len(plan.Pairs) != 1 {
		t.Errorf("level 3 after level 2: %d copies, want 1", len(plan.Pairs))
	}
	runPlan(t, plan, &localWorker{}, 2)
	checkTree(t, dst, files)
	plan = planFor(t, Options{Recursive: true, Sync: true, SyncLevel: SyncModTime}, src+"/", dst)
	if len(plan.Pairs) != 0 || len(plan.Dirs) == 0 || slices.ContainsFunc(plan.Dirs, func(d DirPair) bool { return d.Create }) {
		t.Errorf("second sync plans %d copies, dirs %+v", len(plan.Pairs), plan.Dirs)
	}
}

func TestDelete(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	files := tree(t, src)
	runPlan(t, planFor(t, Options{Recursive: true, CreateDirs: true}, src+"/", dst), &localWorker{}, 2)
	os.WriteFile(filepath.Join(dst, "extra.txt"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(dst, "extradir", "inner"), 0o755)
	os.WriteFile(filepath.Join(dst, "extradir", "inner", "f"), []byte("x"), 0o644)
	plan := planFor(t, Options{Recursive: true, Sync: true, Delete: true}, src+"/", dst)
	var got []string
	for _, d := range plan.Deletes {
		rel, _ := filepath.Rel(dst, d.Loc.Path)
		got = append(got, filepath.ToSlash(rel))
	}
	want := []string{"extra.txt", "extradir/inner/f", "extradir/inner", "extradir"}
	if !slices.Equal(got, want) || len(plan.Pairs) != 0 {
		t.Fatalf("deletes %q (want %q), pairs %d", got, want, len(plan.Pairs))
	}
	if _, err := os.Stat(filepath.Join(dst, "extra.txt")); err != nil {
		t.Fatal("planning deleted something")
	}
	sum := runPlan(t, plan, &localWorker{}, 1)
	if !sum.OK() || sum.Deleted != 4 {
		t.Fatalf("summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(dst, "extradir")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("extradir survives: %v", err)
	}
	checkTree(t, dst, files)
}

func TestLinkPolicies(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	tree(t, src)
	os.Symlink("a.txt", filepath.Join(src, "to-a"))
	os.Symlink("sub", filepath.Join(src, "to-sub"))
	os.Symlink("missing", filepath.Join(src, "dangling"))
	os.Symlink("..", filepath.Join(src, "sub", "up")) // a loop when followed
	for _, tc := range []struct {
		policy LinkPolicy
		check  func(t *testing.T, dst string, sum *Summary)
	}{
		{LinksIgnore, func(t *testing.T, dst string, sum *Summary) {
			if _, err := os.Lstat(filepath.Join(dst, "to-a")); !errors.Is(err, fs.ErrNotExist) || sum.Ignored != 4 || !sum.OK() {
				t.Errorf("ignore: %v, %+v", err, sum)
			}
		}},
		{LinksCopy, func(t *testing.T, dst string, sum *Summary) {
			if l, err := os.Readlink(filepath.Join(dst, "to-a")); l != "a.txt" || err != nil {
				t.Errorf("copy: link %q, %v", l, err)
			}
			if l, err := os.Readlink(filepath.Join(dst, "dangling")); l != "missing" || err != nil {
				t.Errorf("copy: dangling link %q, %v", l, err)
			}
			if !sum.OK() {
				t.Errorf("copy: %+v", sum.Failed)
			}
		}},
		{LinksFollow, func(t *testing.T, dst string, sum *Summary) {
			if b, err := os.ReadFile(filepath.Join(dst, "to-a")); string(b) != "alpha" {
				t.Errorf("follow: %q, %v", b, err)
			}
			if fi, err := os.Lstat(filepath.Join(dst, "to-sub", "deeper", "c.txt")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("follow: directory link not walked: %v", err)
			}
			var reasons []string
			for _, f := range sum.Failed {
				reasons = append(reasons, filepath.Base(f.Pair.Src.Path)+": "+f.Err.Error())
			}
			// The dangling link, and the loop through sub/up (twice:
			// under sub and under to-sub).
			if len(reasons) != 3 || !strings.Contains(strings.Join(reasons, "\n"), "dangling") || !strings.Contains(strings.Join(reasons, "\n"), "loop") {
				t.Errorf("follow: failures %q", reasons)
			}
		}},
	} {
		dst := filepath.Join(t.TempDir(), "dst")
		plan := planFor(t, Options{Recursive: true, CreateDirs: true, Links: tc.policy}, src, dst)
		tc.check(t, dst, runPlan(t, plan, &localWorker{}, 2))
	}
}

func TestPreserve(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	tree(t, src)
	mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chmod(filepath.Join(src, "a.txt"), 0o600)
	os.Chtimes(filepath.Join(src, "a.txt"), mt, mt)
	os.Chtimes(filepath.Join(src, "sub"), mt, mt)
	plan := planFor(t, Options{Recursive: true, CreateDirs: true}, src, dst)
	r := &Runner{Workers: 2, Preserve: true, NewWorker: func() Worker { return &localWorker{} }}
	if sum := r.Run(t.Context(), plan, &localWorker{}); !sum.OK() {
		t.Fatalf("%+v", sum.Failed)
	}
	fi, err := os.Stat(filepath.Join(dst, "a.txt"))
	if err != nil || fi.Mode().Perm() != 0o600 || !fi.ModTime().Equal(mt) {
		t.Errorf("a.txt: %v %v %v", fi.Mode(), fi.ModTime(), err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "sub")); err != nil || !fi.ModTime().Equal(mt) {
		t.Errorf("sub: time %v, %v", fi.ModTime(), err)
	}
}

func TestFailuresContinue(t *testing.T) {
	if os.Geteuid() == 0 {
		// root reads anything: make the source unreadable another way.
		t.Log("running as root: unreadable files are simulated by the worker")
	}
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	files := tree(t, src)
	os.WriteFile(filepath.Join(src, "bad\nname"), []byte("x"), 0o644)
	w := &localWorker{fail: func(p Pair) error {
		if filepath.Base(p.Src.Path) == "a.txt" {
			return fs.ErrPermission
		}
		return nil
	}}
	plan := planFor(t, Options{Recursive: true, CreateDirs: true}, src, dst)
	o := &countObserver{}
	r := &Runner{Workers: 3, Observer: o, NewWorker: func() Worker { return w }}
	sum := r.Run(t.Context(), plan, w)
	// Local to local, a line break in a name is fine.
	if len(sum.Failed) != 1 || !errors.Is(sum.Failed[0].Err, fs.ErrPermission) || sum.Files != len(files) {
		t.Fatalf("summary %+v", sum)
	}
	if o.done.Load() != int64(len(files)+1) || o.failed.Load() != 1 || o.started.Load() != int64(len(files)+1) {
		t.Errorf("observer: started %d done %d failed %d", o.started.Load(), o.done.Load(), o.failed.Load())
	}
	// A remote side cannot carry the name: it fails in planning.
	pl := &Planner{Src: Local{}, Dst: remoteLike{}, Options: Options{Recursive: true}}
	plan = &Plan{}
	if err := pl.Add(t.Context(), plan, src, filepath.Join(root, "dst2")); err != nil {
		t.Fatal(err)
	}
	if len(plan.Failed) != 1 || !errors.Is(plan.Failed[0].Err, ErrBadName) {
		t.Errorf("failed %+v", plan.Failed)
	}
}

// remoteLike is the local file system posing as a server.
type remoteLike struct{ Local }

func (remoteLike) Remote() bool { return true }

func TestCancelFailsTheRest(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	files := tree(t, src)
	ctx, cancel := context.WithCancel(t.Context())
	w := &localWorker{fail: func(Pair) error { cancel(); return context.Canceled }}
	plan := planFor(t, Options{Recursive: true, CreateDirs: true}, src, filepath.Join(root, "dst"))
	sum := (&Runner{Workers: 1}).Run(ctx, plan, w)
	if len(sum.Failed) != len(files) || sum.Files != 0 {
		t.Errorf("cancelled job: %d failed, %d copied", len(sum.Failed), sum.Files)
	}
}

func TestBatches(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	for i := range 200 {
		os.MkdirAll(src, 0o755)
		os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), []byte{byte(i)}, 0o644)
	}
	plan := planFor(t, Options{Recursive: true, CreateDirs: true}, src, filepath.Join(root, "dst"))
	var workers []*batchWorker
	var mu sync.Mutex
	newWorker := func() Worker {
		mu.Lock()
		defer mu.Unlock()
		w := &batchWorker{}
		workers = append(workers, w)
		return w
	}
	first := newWorker()
	o := &countObserver{}
	sum := (&Runner{Workers: 4, MaxBatch: 16, NewWorker: newWorker, Observer: o}).Run(t.Context(), plan, first)
	if !sum.OK() || sum.Files != 200 || o.done.Load() != 200 {
		t.Fatalf("summary %+v, observer done %d", sum, o.done.Load())
	}
	var total, multi, busy, copies int
	for _, w := range workers {
		copies += int(w.copies.Load())
		for _, b := range w.batches {
			total += b
			if b > 1 {
				multi++
			}
			if b > 16 {
				t.Errorf("batch of %d > MaxBatch", b)
			}
		}
		if w.copies.Load() > 0 {
			busy++
		}
	}
	if copies != 200 || total > 200 || multi == 0 || len(workers) != 4 || busy < 2 {
		t.Errorf("%d copies, batched %d files, %d multi-file batches, %d workers (%d busy)", copies, total, multi, len(workers), busy)
	}
}

func TestParseList(t *testing.T) {
	in := "# a comment\n\nftp://h/a file:///tmp/a\n  \"ftp://h/with space\"\t\"file:///tmp/with space\"  \r\n   # indented comment\n"
	got, err := ParseList(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []URLPair{{"ftp://h/a", "file:///tmp/a", 3}, {"ftp://h/with space", "file:///tmp/with space", 4}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// A dump file of globus-url-copy: ranges and facts after the pair,
	// directories commented out.
	gct := "\"ftp://h/t/g\" \"file:///tmp/g\" 0,-1 size=2;modify=1795812124;mode=0644;\n" +
		"#\"ftp://h/t/sub/\" \"file:///tmp/sub/\" 0,-1 modify=1795812124;mode=0755;\n" +
		"ftp://h/t/f file:///tmp/f 0,-1\n"
	got, err = ParseList(strings.NewReader(gct))
	want = []URLPair{{"ftp://h/t/g", "file:///tmp/g", 1}, {"ftp://h/t/f", "file:///tmp/f", 3}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("globus-url-copy's dump file: %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"one\n", "a b c\n", "a b 0,-1 c\n", "a b 0,-1 x=1; d\n", "\"a b\n", "\"a\"b c\n", "a\"b c\n", "00 0\"\n"} {
		if _, err := ParseList(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestWriteListRoundTrip(t *testing.T) {
	res := []Result{
		{Pair: Pair{Src: Loc{End: "ftp://u:p@h:21", Path: "/d/with space #1"}, Dst: Loc{Path: "/tmp/ü x"}}},
		{Pair: Pair{Src: Loc{End: "ftp://h:21", Path: "rel/f"}, Dst: Loc{End: "gsiftp://h:2811", Path: "/x"}}},
		{Pair: Pair{Dst: Loc{End: "ftp://h:21", Path: "/deleted"}}}, // no source: left out
	}
	var b strings.Builder
	if err := WriteList(&b, res); err != nil {
		t.Fatal(err)
	}
	got, err := ParseList(strings.NewReader(b.String()))
	if err != nil || len(got) != 2 {
		t.Fatalf("%q: %v, %v", b.String(), got, err)
	}
	if got[0].Src != "ftp://u:p@h:21/d/with%20space%20%231" || got[0].Dst != "file:///tmp/%C3%BC%20x" || got[1].Src != "ftp://h:21/~/rel/f" {
		t.Errorf("got %+v", got)
	}
}

func FuzzParseList(f *testing.F) {
	f.Add("a b\n# c\n\"d e\" f\n")
	f.Add("\"\" \"\"")
	f.Fuzz(func(t *testing.T, s string) {
		pairs, err := ParseList(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, p := range pairs {
			if strings.ContainsAny(p.Src+p.Dst, "\n\"") {
				t.Errorf("pair %+v holds a line break or quote", p)
			}
		}
	})
}
