package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// memFS is an in-memory name space for planner tests: entries by path
// ("/s/a" a file, "/s/d/" a directory), errors to return for a path, and
// a log of the calls, in order.
type memFS struct {
	remote   bool
	infos    map[string]Info
	errs     map[string]error // Stat and ReadDir of the path fail so
	listErrs map[string]error // ReadDir of the path fails so

	mu    sync.Mutex
	calls []string
}

func newMemFS(remote bool, entries ...string) *memFS {
	m := &memFS{remote: remote, infos: map[string]Info{}, errs: map[string]error{}, listErrs: map[string]error{}}
	m.infos["/"] = Info{Name: "/", Type: TypeDir, Size: -1}
	for _, e := range entries {
		p, typ := strings.TrimSuffix(e, "/"), TypeFile
		if strings.HasSuffix(e, "/") {
			typ = TypeDir
		}
		m.infos[p] = Info{Name: path.Base(p), Type: typ, Size: int64(len(p)), ModTime: time.Unix(1e9, 0)}
	}
	return m
}

func (m *memFS) log(op, p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, op+" "+p)
}

func (m *memFS) Stat(ctx context.Context, p string) (Info, error) {
	m.log("stat", p)
	if err := m.errs[p]; err != nil {
		return Info{}, err
	}
	key := strings.TrimSuffix(p, "/")
	if p == "/" {
		key = p
	}
	if in, ok := m.infos[key]; ok {
		return in, nil
	}
	return Info{}, fs.ErrNotExist
}

func (m *memFS) ReadDir(ctx context.Context, p string) ([]Info, error) {
	m.log("list", p)
	if err := cmp.Or(m.errs[p], m.listErrs[p]); err != nil {
		return nil, err
	}
	dir := strings.TrimSuffix(p, "/")
	if dir == "" {
		dir = "/"
	}
	var out []Info
	for q, in := range m.infos {
		if q != "/" && path.Dir(q) == dir {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(b.Name, a.Name) }) // the planner sorts
	return out, nil
}

func (m *memFS) Mkdir(ctx context.Context, p string) error                   { return ErrNotSupported }
func (m *memFS) Remove(ctx context.Context, p string, dir bool) error        { return ErrNotSupported }
func (m *memFS) SetModTime(ctx context.Context, p string, t time.Time) error { return ErrNotSupported }
func (m *memFS) Chmod(ctx context.Context, p string, mode fs.FileMode) error { return ErrNotSupported }
func (m *memFS) Symlink(ctx context.Context, target, p string) error         { return ErrNotSupported }
func (m *memFS) Checksum(ctx context.Context, alg, p string) (string, error) {
	return "", ErrNotSupported
}
func (m *memFS) Join(dir, name string) string { return Remote{}.Join(dir, name) }
func (m *memFS) Remote() bool                 { return m.remote }

// renderPlan writes a plan one line per item, for comparison.
func renderPlan(p *Plan) string {
	var b strings.Builder
	for _, d := range p.Dirs {
		fmt.Fprintf(&b, "dir %s create=%v\n", d.Dst.Path, d.Create)
	}
	for _, q := range p.Pairs {
		fmt.Fprintf(&b, "copy %s -> %s\n", q.Src.Path, q.Dst.Path)
	}
	for _, q := range p.Skipped {
		fmt.Fprintf(&b, "skip %s\n", q.Src.Path)
	}
	for _, l := range p.Ignored {
		fmt.Fprintf(&b, "ignore %s\n", l.Path)
	}
	for _, r := range p.Deletes {
		fmt.Fprintf(&b, "delete %s dir=%v\n", r.Loc.Path, r.Dir)
	}
	for _, r := range p.Failed {
		fmt.Fprintf(&b, "fail %s -> %s: %v\n", r.Pair.Src.Path, r.Pair.Dst.Path, r.Err)
	}
	return b.String()
}

var errBoom = errors.New("boom")

// TestPlannerPaths plans requests that reach the refusals and corner
// cases of Add and walk, each without and with Concurrent: the plans,
// the errors and what each side was asked must not depend on it.
func TestPlannerPaths(t *testing.T) {
	cases := []struct {
		name     string
		src, dst *memFS
		opts     Options
		from, to string
		err      string // the error of Add; "" for none
		plan     string
		dstCalls string // the destination's calls, in order
		// concCalls, if set, are the destination's calls with Concurrent.
		concCalls string
	}{
		{
			name: "bad sync level",
			src:  newMemFS(true, "/s/a"), dst: newMemFS(true),
			opts: Options{SyncLevel: 4}, from: "/s/a", to: "/d/a",
			err: "sync level 4: want 0 to 3",
		},
		{
			name: "failed expansion",
			src:  func() *memFS { m := newMemFS(true, "/s/a"); m.errs["/s"] = errBoom; return m }(),
			dst:  newMemFS(true, "/d/"),
			from: "/s/*", to: "/d/",
			err: "/s/*: boom", concCalls: "stat /d/",
		},
		{
			name: "destination unreadable",
			src:  newMemFS(true, "/s/a"),
			dst:  func() *memFS { m := newMemFS(true, "/d/"); m.errs["/d/a"] = errBoom; return m }(),
			from: "/s/a", to: "/d/a",
			err: "/d/a: boom", dstCalls: "stat /d/a",
		},
		{
			name: "destination file named as a directory",
			src:  newMemFS(true, "/s/a"), dst: newMemFS(true, "/d/f"),
			from: "/s/a", to: "/d/f/",
			err: "/d/f/ is not a directory", dstCalls: "stat /d/f/",
		},
		{
			name: "wildcard: a source fails, a directory is left out",
			src: func() *memFS {
				m := newMemFS(true, "/s/a", "/s/b", "/s/c/", "/s/c/x")
				m.errs["/s/b"] = errBoom
				return m
			}(),
			dst:  newMemFS(true, "/d/"),
			from: "/s/*", to: "/d",
			plan:     "copy /s/a -> /d/a\nignore /s/c\nfail /s/b -> /d: boom\n",
			dstCalls: "stat /d|stat /d/a",
		},
		{
			name: "literal source fails",
			src:  func() *memFS { m := newMemFS(true, "/s/a"); m.errs["/s/a"] = errBoom; return m }(),
			dst:  newMemFS(true, "/d/"),
			from: "/s/a", to: "/d/",
			err: "/s/a: boom", dstCalls: "stat /d/",
		},
		{
			name: "contents of a file",
			src:  newMemFS(true, "/s/a"), dst: newMemFS(true, "/d/"),
			opts: Options{Recursive: true}, from: "/s/a/", to: "/d/",
			err: "/s/a/ is not a directory", dstCalls: "stat /d/",
		},
		{
			name: "mirror of a file",
			src:  newMemFS(true, "/s/a"), dst: newMemFS(true, "/d/"),
			opts: Options{Recursive: true, Mirror: true}, from: "/s/a", to: "/d/b",
			plan:     "copy /s/a -> /d/b\n",
			dstCalls: "stat /d/b|stat /d",
		},
		{
			name: "line break in a remote name",
			src:  newMemFS(true, "/s/a\nb"), dst: newMemFS(true, "/d/"),
			from: "/s/a\nb", to: "/d/",
			plan:     "fail /s/a\nb -> /d/a\nb: " + ErrBadName.Error() + "\n",
			dstCalls: "stat /d/",
		},
		{
			name: "contents of the root",
			src:  newMemFS(true, "/a"), dst: newMemFS(true, "/d/"),
			opts: Options{Recursive: true}, from: "/", to: "/d/",
			plan:     "dir /d create=false\ncopy /a -> /d/a\n",
			dstCalls: "stat /d/|stat /d",
		},
		{
			name: "walk: source listing fails",
			src:  func() *memFS { m := newMemFS(true, "/s/t/", "/s/t/x"); m.listErrs["/s/t"] = errBoom; return m }(),
			dst:  newMemFS(true, "/d/"),
			opts: Options{Recursive: true}, from: "/s/t", to: "/d/",
			plan:     "fail /s/t -> /d/t: list: boom\n",
			dstCalls: "stat /d/", concCalls: "stat /d/|stat /d/t",
		},
		{
			name: "walk: destination is a file",
			src:  newMemFS(true, "/s/t/", "/s/t/x"), dst: newMemFS(true, "/d/", "/d/t"),
			opts: Options{Recursive: true}, from: "/s/t", to: "/d/",
			plan:     "fail /s/t -> /d/t: the destination exists and is not a directory\n",
			dstCalls: "stat /d/|stat /d/t",
		},
		{
			name: "walk: destination listing fails",
			src:  newMemFS(true, "/s/t/", "/s/t/x"),
			dst: func() *memFS {
				m := newMemFS(true, "/d/", "/d/t/")
				m.listErrs["/d/t"] = errBoom
				return m
			}(),
			opts: Options{Recursive: true, Delete: true}, from: "/s/t", to: "/d/",
			plan:     "dir /d/t create=false\nfail /s/t -> /d/t: list the destination: boom\n",
			dstCalls: "stat /d/|stat /d/t|list /d/t",
		},
		{
			name: "into the root, over a file",
			src:  newMemFS(true, "/s/a"), dst: newMemFS(true, "/a"),
			opts: Options{Sync: true, SyncLevel: SyncExists}, from: "/s/a", to: "/",
			plan:     "skip /s/a\n",
			dstCalls: "stat /|stat /a",
		},
		{
			name: "walk: destination lists a bad name",
			src:  newMemFS(true, "/s/t/", "/s/t/x"),
			dst: func() *memFS {
				m := newMemFS(true, "/d/", "/d/t/")
				m.infos["/d/t/evil"] = Info{Name: "../x", Type: TypeFile}
				return m
			}(),
			opts: Options{Recursive: true, Delete: true}, from: "/s/t", to: "/d/",
			plan:     "dir /d/t create=false\nfail /s/t -> /d/t: list the destination: " + wire.ErrUnsafeName.Error() + ": \"../x\"\n",
			dstCalls: "stat /d/|stat /d/t|list /d/t",
		},
		{
			name: "walk: destination unreadable",
			src:  newMemFS(true, "/s/t/", "/s/t/x"),
			dst:  func() *memFS { m := newMemFS(true, "/d/"); m.errs["/d/t"] = errBoom; return m }(),
			opts: Options{Recursive: true}, from: "/s/t", to: "/d/",
			plan:     "fail /s/t -> /d/t: boom\n",
			dstCalls: "stat /d/|stat /d/t",
		},
		{
			name: "walk: a remote link to an ancestor",
			src: func() *memFS {
				m := newMemFS(true, "/s/t/", "/s/t/up/")
				in := m.infos["/s/t/up"]
				in.Link = "/s"
				m.infos["/s/t/up"] = in
				return m
			}(),
			dst:  newMemFS(true, "/d/"),
			opts: Options{Recursive: true}, from: "/s/t", to: "/d/",
			plan:     "dir /d/t create=true\nfail /s/t/up -> /d/t/up: symbolic link loop: up points to /s\n",
			dstCalls: "stat /d/|stat /d/t",
		},
		{
			name: "walk: cancelled",
			src:  newMemFS(true, "/s/t/", "/s/t/x"), dst: newMemFS(true, "/d/"),
			opts: Options{Recursive: true}, from: "/s/t", to: "/d/",
			plan:     "fail /s/t -> /d/t: context canceled\n",
			dstCalls: "stat /d/",
		},
	}
	for _, tc := range cases {
		for _, concurrent := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/concurrent=%v", tc.name, concurrent), func(t *testing.T) {
				src := &memFS{remote: tc.src.remote, infos: tc.src.infos, errs: tc.src.errs, listErrs: tc.src.listErrs}
				dst := &memFS{remote: tc.dst.remote, infos: tc.dst.infos, errs: tc.dst.errs, listErrs: tc.dst.listErrs}
				pl := &Planner{Src: src, Dst: dst, Options: tc.opts, Concurrent: concurrent}
				ctx := t.Context()
				if strings.HasSuffix(tc.name, "cancelled") {
					c, cancel := context.WithCancel(ctx)
					cancel()
					ctx = c
				}
				plan := &Plan{}
				err := pl.Add(ctx, plan, tc.from, tc.to)
				if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
					t.Fatalf("Add: %v, want %q", err, tc.err)
				}
				if got := renderPlan(plan); got != tc.plan {
					t.Errorf("plan:\n%s\nwant:\n%s", got, tc.plan)
				}
				want := tc.dstCalls
				if concurrent && tc.concCalls != "" {
					want = tc.concCalls
				}
				if got := strings.Join(dst.calls, "|"); got != want {
					t.Errorf("destination calls %q, want %q", got, want)
				}
			})
		}
	}
}
