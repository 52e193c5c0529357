package main

import (
	"path/filepath"
	"testing"

	hist "github.com/ferrygrid/ferry/internal/history"
)

// TestMixedPairDCAURecorded: of three third-party copies to a GCT
// gsiftp:// server (from another GCT server, from a plain ftp:// Ferry
// server, from the first again), the history records the mixed one with
// DCAU N, which it ran with, and the other two with DCAU A.
func TestMixedPairDCAURecorded(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	t.Setenv("FERRY_HISTORY", db)
	_, _, _, list, _ := mixedPairList(t, 16<<10)
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
