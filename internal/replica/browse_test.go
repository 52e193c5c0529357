package replica

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/postgres"
)

func TestChildrenSQLite(t *testing.T) {
	testChildren(t, filepath.Join(t.TempDir(), "history.db"))
}

func TestChildrenPostgres(t *testing.T) {
	testChildren(t, postgres.Launch(t).NewDatabase(t))
}

// childNames writes children as "name" for files, "name/" for
// directories, with a file's replica counts "name(ok/all)".
func childNames(cs []Child) string {
	var s []string
	for _, c := range cs {
		switch {
		case c.Dir:
			s = append(s, c.Name+"/")
		default:
			s = append(s, fmt.Sprintf("%s(%d/%d)", c.Name, c.OK, c.Replicas))
		}
	}
	return strings.Join(s, " ")
}

func testChildren(t *testing.T, dsn string) {
	ctx := t.Context()
	c, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// "/a" is a file and a directory; "/a.x" sorts between "/a" and
	// "/a/…" by bytes; "/B" before "/a".
	for _, lfn := range []string{"/a", "/a.x", "/a/b", "/a/c/d", "/a/c/e", `/b/<script>"q'`, "/B", "/z"} {
		if err := c.Add(ctx, lfn, "MD5", Replica{URL: "ftp://h1" + lfn, Size: 1, Sum: "aa"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Add(ctx, "/z", "", Replica{URL: "ftp://h2/z", Size: 1, Sum: "aa", Verified: time.Now()}); err != nil {
		t.Fatal(err)
	}
	all := func(dir string, limit int) string {
		t.Helper()
		var got []Child
		from := ""
		for i := 0; ; i++ {
			cs, next, err := c.Children(ctx, dir, from, limit)
			if err != nil {
				t.Fatalf("Children(%q, %q, %d): %v", dir, from, limit, err)
			}
			if len(cs) > limit {
				t.Fatalf("Children(%q, %q, %d): %d children", dir, from, limit, len(cs))
			}
			got = append(got, cs...)
			if next == "" {
				return childNames(got)
			}
			if i > 20 {
				t.Fatalf("Children(%q, %d): no end", dir, limit)
			}
			from = next
		}
	}
	for _, tc := range []struct{ dir, want string }{
		{"/", "B(0/1) a(0/1) a.x(0/1) a/ b/ z(1/2)"},
		{"/a", "b(0/1) c/"},
		{"/a/c", "d(0/1) e(0/1)"},
		{"/b", `<script>"q'(0/1)`},
		{"/nothing", ""},
		{"/a/b", ""},
	} {
		for _, limit := range []int{1, 2, 3, 1000} {
			if got := all(tc.dir, limit); got != tc.want {
				t.Errorf("%s by %d: %q, want %q", tc.dir, limit, got, tc.want)
			}
		}
	}
	if _, _, err := c.Children(ctx, "/a/", "", 10); err == nil {
		t.Error("Children(/a/): no error")
	}
	if _, _, err := c.Children(ctx, "/a", ">/b/x", 10); err == nil {
		t.Error("a cursor outside the directory: no error")
	}
	if _, _, err := c.Children(ctx, "/a", "/a/b", 10); err == nil {
		t.Error("a cursor without its sign: no error")
	}
}
