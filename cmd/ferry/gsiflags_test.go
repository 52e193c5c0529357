package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
)

// TestR9MixedPairDropsDCAUForAllPairs: one ftp:// <-> gsiftp:// pair in
// a list file must not turn data channel authentication off (DCAU N) for
// every gsiftp:// session of the run, the gsiftp:// <-> gsiftp:// pairs
// included, which globus-url-copy would protect with DCAU A (review r9).
// Only the mixed pair's transfers run with DCAU N.
func TestR9MixedPairDropsDCAUForAllPairs(t *testing.T) {
	g := &gsiFlags{}
	pairs := []job.URLPair{
		{Src: "gsiftp://a.example/secret", Dst: "gsiftp://b.example/secret", Line: 1},
		{Src: "ftp://c.example/public", Dst: "gsiftp://b.example/public", Line: 2},
	}
	var note bytes.Buffer
	if err := g.mixedThirdParty(&note, pairs, false); err != nil {
		t.Fatal(err)
	}
	if g.noDCAU {
		t.Errorf("a mixed pair on line 2 turned DCAU off for the gsiftp:// to gsiftp:// copy of line 1 too")
	}
	if !g.plainPeer {
		t.Errorf("the mixed pair of line 2 does not get DCAU N for its own transfers")
	}
	if !strings.Contains(note.String(), "c.example") || !strings.Contains(note.String(), "the other copies keep DCAU") {
		t.Errorf("note %q", note.String())
	}

	// Without a mixed pair nothing changes; -dcpriv with one is refused.
	g = &gsiFlags{}
	if err := g.mixedThirdParty(io.Discard, pairs[:1], false); err != nil || g.plainPeer || g.noDCAU {
		t.Errorf("gsiftp:// pairs only: err %v, plainPeer %v, noDCAU %v", err, g.plainPeer, g.noDCAU)
	}
	g = &gsiFlags{dcPriv: true}
	if err := g.mixedThirdParty(io.Discard, pairs, false); err == nil {
		t.Errorf("-dcpriv with a mixed pair: accepted")
	}
}

// TestMixedPairDCAUPerTransferGCT runs a list of three third-party
// copies to one GCT gsiftp:// server: from another GCT server, from a
// plain ftp:// Ferry server, and from the first again. In the control
// channel exchange (-dbg) the destination gets DCAU N before the mixed
// copy's STOR and DCAU A before the other two, whatever order they run in.
func TestMixedPairDCAUPerTransferGCT(t *testing.T) {
	t.Setenv("FERRY_HISTORY", "")
	_, s2, _, list, data := mixedPairList(t, 64<<10)
	code, _, stderr := runGUCOut(t, "-dbg", "-f", list)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, n := range []string{"a", "p", "a2"} {
		if got := mustRead(t, filepath.Join(s2.dir, n)); !bytes.Equal(got, data) {
			t.Errorf("%s: contents differ", n)
		}
	}
	// The destination's address, and the DCAU in force at each STOR.
	dst := strings.TrimPrefix(s2.url, "gsiftp://")
	dst = dst[:strings.IndexByte(dst, '/')]
	dcau := "A"
	got := map[string]string{}
	ls := strings.Split(stderr, "\n")
	for i := 0; i+1 < len(ls); i++ {
		// The server is named by its URL (or its address).
		to, ok := strings.CutPrefix(ls[i], "debug: sending command to ")
		if !ok || !strings.HasPrefix(strings.TrimPrefix(to, "gsiftp://"), dst) {
			continue
		}
		cmd := strings.TrimSuffix(ls[i+1], "\r")
		switch {
		case strings.HasPrefix(cmd, "DCAU "):
			dcau = strings.TrimPrefix(cmd, "DCAU ")
		case strings.HasPrefix(cmd, "STOR "):
			got[filepath.Base(strings.TrimPrefix(cmd, "STOR "))] = dcau
		}
	}
	want := map[string]string{"a": "A", "p": "N", "a2": "A"}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("STOR %s under DCAU %q, want %s (all: %v)", n, got[n], w, got)
		}
	}
}

// mixedPairList starts two GCT GSI servers of one PKI and a plain Ferry
// server, gives the first GCT server "a" and the Ferry server "p" (size
// bytes each), and writes a -f list of three third-party copies to the
// second GCT server: a GSI pair, the mixed pair (plain source), and a GSI
// pair again; data is the contents of both files.
func mixedPairList(t *testing.T, size int) (s1, s2 gsiServer, f *ferrySrv, list string, data []byte) {
	t.Helper()
	s1 = startGSI(t, nil, nil)
	s2 = startGSI(t, s1.pki, nil)
	f = startFerrySrv(t)
	data = randomData(t, size)
	gctgsi.WriteFile(t, s1.pki, filepath.Join(s1.dir, "a"), data)
	if err := os.WriteFile(filepath.Join(f.dir, "p"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	list = filepath.Join(t.TempDir(), "list")
	lines := fmt.Sprintf("%s/a %s/a\n%s/p %s/p\n%s/a %s/a2\n", s1.url, s2.url, f.url, s2.url, s1.url, s2.url)
	if err := os.WriteFile(list, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return s1, s2, f, list, data
}
