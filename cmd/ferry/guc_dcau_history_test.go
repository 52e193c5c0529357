package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	hist "github.com/ferrygrid/ferry/internal/history"
)

// TestMixedPairDCAURecorded: of three third-party copies to a GCT
// gsiftp:// server (from another GCT server, from a plain ftp:// Ferry
// server, from the first again), the history records the mixed one with
// DCAU N, which it ran with, and the other two with DCAU A.
func TestMixedPairDCAURecorded(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	t.Setenv("FERRY_HISTORY", db)
	s1 := startGSI(t, nil, nil)
	s2 := startGSI(t, s1.pki, nil)
	f := startFerrySrv(t)
	data := randomData(t, 16<<10)
	gctgsi.WriteFile(t, s1.pki, filepath.Join(s1.dir, "a"), data)
	if err := os.WriteFile(filepath.Join(f.dir, "p"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(t.TempDir(), "list")
	lines := fmt.Sprintf("%s/a %s/a\n%s/p %s/p\n%s/a %s/a2\n", s1.url, s2.url, f.url, s2.url, s1.url, s2.url)
	if err := os.WriteFile(list, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runGUCOut(t, "-f", list); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	st, err := hist.Open(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.Records(t.Context(), hist.Filter{})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[filepath.Base(r.DstPath)] = r.Params.DCAU
	}
	want := map[string]string{"a": "A", "p": "N", "a2": "A"}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s recorded with DCAU %q, want %s (all: %v)", n, got[n], w, got)
		}
	}
}
