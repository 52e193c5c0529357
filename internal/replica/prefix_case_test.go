package replica

import (
	"path/filepath"
	"testing"
)

// TestListPrefixCase: SQLite's LIKE ignores ASCII case, so the
// tree lfn:/Data also holds lfn:/data/x on SQLite (not on PostgreSQL):
// ferry replica ls/verify and cp -r of lfn:/Data take another tree's
// files (found by the outside review). Prefixes compare exactly.
func TestListPrefixCase(t *testing.T) {
	c, err := Open(t.Context(), filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if err := c.Add(ctx, "/data/x", "md5", Replica{URL: "ftp://a/x", Size: 1, Sum: "aa"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, "/Data/y", "md5", Replica{URL: "ftp://a/y", Size: 1, Sum: "bb"}); err != nil {
		t.Fatal(err)
	}
	es, err := c.List(ctx, "/Data")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.LFN != "/Data/y" {
			t.Errorf("List(/Data) holds %s", e.LFN)
		}
	}
}
