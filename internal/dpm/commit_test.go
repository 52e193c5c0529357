package dpm

// Env.Commit: the caller of an ESTO has the last word before a result is
// put in place (findings 2 and 3 of the outside review of 2026-11-27: a
// compressed stream cut at a member's end decodes cleanly, and a client
// gone away must not leave a result that looks complete).

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
)

var errRefusedByCaller = errors.New("refused by the caller")

// noPartFiles fails if a hidden file is left in dir of st.
func noPartFiles(t *testing.T, st dsi.Storage, dir string) {
	t.Helper()
	list, _ := st.ReadDir(t.Context(), dir)
	for _, e := range list {
		if strings.HasPrefix(e.Name, ".") {
			t.Errorf("%s: %s left behind", dir, e.Name)
		}
	}
}

// gzipMembers is a gzip stream of one member per part.
func gzipMembers(t *testing.T, parts ...[]byte) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		zw := gzip.NewWriter(&b)
		zw.Write(p)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// zstdFrames is a zstd stream of one frame per part.
func zstdFrames(t *testing.T, parts ...[]byte) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		zw, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(p)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestStoreCommitLastWord: a stream cut right after a complete gzip
// member or zstd frame decodes cleanly (the decoder cannot tell), so
// Store asks Env.Commit, with the size of what it decoded, before it puts
// the file in place; a refusal leaves the old file as it was and no part
// file. Commit is not asked when the data is refused anyway.
func TestStoreCommitLastWord(t *testing.T) {
	one, two := data(70_000, 1), data(30_000, 2)
	for _, c := range []struct {
		spec  string
		whole []byte
		cut   []byte // cut after the first member or frame
	}{
		{`gzip=""`, gzipMembers(t, one, two), gzipMembers(t, one)},
		{`zstd=""`, zstdFrames(t, one, two), zstdFrames(t, one)},
	} {
		st := memory.New()
		put(t, st, "/f", []byte("the old file"))
		var asked []int64
		commit := func(refuse bool) func(int64) error {
			return func(n int64) error {
				asked = append(asked, n)
				if refuse {
					return errRefusedByCaller
				}
				return nil
			}
		}
		// Cut: the decoder sees a clean end, the caller refuses.
		err := chain(t, c.spec+` /x`, true).Store(t.Context(), Env{Storage: st, Path: "/f", Commit: commit(true)}, bytes.NewReader(c.cut))
		if !errors.Is(err, errRefusedByCaller) {
			t.Errorf("%s cut after one member: %v; want the caller's refusal", c.spec, err)
		}
		if len(asked) != 1 || asked[0] != int64(len(one)) {
			t.Errorf("%s cut: Commit asked with %v; want once with %d", c.spec, asked, len(one))
		}
		if got := get(t, st, "/f"); string(got) != "the old file" {
			t.Errorf("%s: a refused commit changed /f to %d bytes", c.spec, len(got))
		}
		noPartFiles(t, st, "/")

		// Cut inside a member: refused before Commit is asked.
		asked = nil
		err = chain(t, c.spec+` /x`, true).Store(t.Context(), Env{Storage: st, Path: "/f", Commit: commit(false)}, bytes.NewReader(c.whole[:len(c.whole)-10]))
		if !errors.Is(err, ErrCorrupt) || len(asked) != 0 {
			t.Errorf("%s cut inside a member: %v, Commit asked %v; want ErrCorrupt, not asked", c.spec, err, asked)
		}

		// Whole, accepted: stored.
		asked = nil
		err = chain(t, c.spec+` /x`, true).Store(t.Context(), Env{Storage: st, Path: "/f", Commit: commit(false)}, bytes.NewReader(c.whole))
		if err != nil || len(asked) != 1 || asked[0] != int64(len(one)+len(two)) {
			t.Errorf("%s whole: %v, Commit asked %v", c.spec, err, asked)
		}
		if got := get(t, st, "/f"); !bytes.Equal(got, append(append([]byte{}, one...), two...)) {
			t.Errorf("%s whole: stored %d bytes", c.spec, len(got))
		}
		noPartFiles(t, st, "/")
	}
}

// TestStoreCommitTar: a tar sink asks Commit before each file it puts in
// place; a refusal ends the unpack there, and the refused file is not
// made (nor an old one replaced).
func TestStoreCommitTar(t *testing.T) {
	st := memory.New()
	st.Mkdir(t.Context(), "/d", 0o755)
	put(t, st, "/d/b", []byte("old b"))
	archive := mkTar(t, []entry{{name: "a", body: "first"}, {name: "b", body: "second!"}, {name: "c", body: "third"}})
	var asked []int64
	commit := func(n int64) error {
		asked = append(asked, n)
		if len(asked) == 2 {
			return errRefusedByCaller
		}
		return nil
	}
	err := chain(t, `tar="" /x`, true).Store(t.Context(), Env{Storage: st, Path: "/d", Commit: commit}, bytes.NewReader(archive))
	if !errors.Is(err, errRefusedByCaller) {
		t.Fatalf("ESTO tar with the second file refused: %v", err)
	}
	if len(asked) != 2 || asked[0] != 5 || asked[1] != 7 {
		t.Errorf("Commit asked with %v; want [5 7]", asked)
	}
	if got := get(t, st, "/d/a"); string(got) != "first" {
		t.Errorf("/d/a = %q", got)
	}
	if got := get(t, st, "/d/b"); string(got) != "old b" {
		t.Errorf("a refused commit changed /d/b to %q", got)
	}
	if _, err := st.Stat(t.Context(), "/d/c"); !errors.Is(err, dsi.ErrNotExist) {
		t.Errorf("/d/c made after the refusal (%v)", err)
	}
	noPartFiles(t, st, "/d")
}

// TestZstdEmptyRefused: an empty stream is no zstd data (the decoder
// reads it as zero frames, a clean end), as it is no gzip data; a frame
// of no data is an empty file.
func TestZstdEmptyRefused(t *testing.T) {
	for _, spec := range []string{`zstd=""`, `gzip=""`} {
		st := memory.New()
		err := chain(t, spec+` /x`, true).Store(t.Context(), Env{Storage: st, Path: "/f"}, bytes.NewReader(nil))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("ESTO %s of nothing: %v; want ErrCorrupt", spec, err)
		}
		if _, serr := st.Stat(t.Context(), "/f"); !errors.Is(serr, dsi.ErrNotExist) {
			t.Errorf("ESTO %s of nothing made /f (%v)", spec, serr)
		}
	}
	st := memory.New()
	if err := chain(t, `zstd="" /x`, true).Store(t.Context(), Env{Storage: st, Path: "/f"}, bytes.NewReader(zstdFrames(t, nil))); err != nil {
		t.Fatalf("ESTO zstd of an empty frame: %v", err)
	}
	if got := get(t, st, "/f"); len(got) != 0 {
		t.Errorf("/f = %q", got)
	}
}
