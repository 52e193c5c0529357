package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCpThirdPartyBatch copies a tree of small files (empty ones
// included) between two servers with ferry cp -r -cc 2, which pipelines
// them in third-party batches: Ferry to Ferry, Ferry to GCT, GCT to
// Ferry and GCT to GCT. In the middle of the tree a destination path is a
// directory (refused) and, from a GCT server, a source file is
// unreadable (refused); exactly those fail, every other file arrives
// byte for byte, and every file is reported once.
func TestCpThirdPartyBatch(t *testing.T) {
	type end struct{ dir, url string }
	ferryEnd := func(t *testing.T) end { f := startFerrySrv(t); return end{f.dir, f.url} }
	gctEnd := func(t *testing.T) end { g := startGCT(t); return end{g.dir, g.url} }
	for _, tc := range []struct {
		name       string
		src, dst   func(t *testing.T) end
		unreadable bool // the source runs as nobody: a root-only file is refused
	}{
		{"ferry-ferry", ferryEnd, ferryEnd, false},
		{"ferry-gct", ferryEnd, gctEnd, false},
		{"gct-ferry", gctEnd, ferryEnd, true},
		{"gct-gct", gctEnd, gctEnd, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := tc.src(t), tc.dst(t)
			const n = 60
			name := func(i int) string {
				if i%2 == 1 {
					return fmt.Sprintf("sub/f%02d", i)
				}
				return fmt.Sprintf("f%02d", i)
			}
			data := func(i int) []byte {
				if i%5 == 0 {
					return nil
				}
				return seededData(i*997%20000, byte(i))
			}
			for _, d := range []string{"tree", "tree/sub"} {
				if err := os.MkdirAll(filepath.Join(src.dir, d), 0o777); err != nil {
					t.Fatal(err)
				}
				os.Chmod(filepath.Join(src.dir, d), 0o777)
			}
			os.MkdirAll(filepath.Join(dst.dir, "out/sub/f07"), 0o777)
			os.Chmod(filepath.Join(dst.dir, "out"), 0o777)
			os.Chmod(filepath.Join(dst.dir, "out/sub"), 0o777)
			for i := range n {
				writeServed(t, filepath.Join(src.dir, "tree", name(i)), data(i))
			}
			bad := map[string]string{"sub/f07": "destination is a directory"}
			if tc.unreadable {
				os.Chmod(filepath.Join(src.dir, "tree", name(22)), 0o600)
				bad[name(22)] = "unreadable source"
			}
			r := ferry(t, nil, "cp", "-r", "-cc", "2", "-json", src.url+"/tree/", dst.url+"/out/")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
			}
			seen := map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var rec struct {
					Type, Src, Error string
					OK               bool
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("bad JSON %q: %v", line, err)
				}
				if rec.Type != "file" {
					continue
				}
				rel := rec.Src[strings.Index(rec.Src, "/tree/")+len("/tree/"):]
				seen[rel]++
				if _, want := bad[rel]; rec.OK == want {
					t.Errorf("%s: ok %v (%s), want failed %v", rel, rec.OK, rec.Error, want)
				}
			}
			for i := range n {
				if seen[name(i)] != 1 {
					t.Errorf("%s reported %d times", name(i), seen[name(i)])
				}
				if _, ok := bad[name(i)]; ok {
					continue
				}
				got, err := os.ReadFile(filepath.Join(dst.dir, "out", name(i)))
				if err != nil || !bytes.Equal(got, data(i)) {
					t.Errorf("%s: %d bytes (%v), want %d", name(i), len(got), err, len(data(i)))
				}
			}
		})
	}
}
