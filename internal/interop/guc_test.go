package interop

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// transferSizes are the file sizes the transfer tests move.
var transferSizes = []int64{0, 1, 10 << 20, 300 << 20}

// gucModes are the globus-url-copy data modes the tests run: stream mode,
// and extended block mode (MODE E) over parallel connections.
var gucModes = []struct {
	name  string
	flags []string
}{
	{"stream", nil},
	{"modeE-p4", []string{"-p", "4"}},
}

// TestGlobusURLCopy downloads each size from ferry serve with the GCT
// client, uploads the copy back under a new name, and compares the SHA-256
// of all three files.
func TestGlobusURLCopy(t *testing.T) {
	srv := startFerry(t, t.TempDir())
	if err := os.Mkdir(filepath.Join(srv.root, "up"), 0o755); err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	for _, mode := range gucModes {
		for i, size := range transferSizes {
			t.Run(fmt.Sprintf("%s/%d", mode.name, size), func(t *testing.T) {
				name := fmt.Sprintf("guc-%s-%d.bin", mode.name, size)
				want := writeRandom(t, filepath.Join(srv.root, name), size, uint64(i))
				got := filepath.Join(local, name)
				mustRun(t, "", "", "globus-url-copy", append(slices.Clone(mode.flags), srv.url("/"+name), "file://"+got)...)
				sameFile(t, got, want)
				os.Remove(filepath.Join(srv.root, name))

				mustRun(t, "", "", "globus-url-copy", append(slices.Clone(mode.flags), "file://"+got, srv.url("/up/"+name))...)
				sameFile(t, filepath.Join(srv.root, "up", name), want)
				os.Remove(got)
				os.Remove(filepath.Join(srv.root, "up", name))
			})
		}
	}
}

// TestGlobusURLCopyRecursive copies a tree down and up with -r -cd: one
// data connection per file and listing, and with -fast -p 2, where all
// files reuse the cached MODE E connections.
func TestGlobusURLCopyRecursive(t *testing.T) {
	root := t.TempDir()
	makeTree(t, filepath.Join(root, "tree"))
	srv := startFerry(t, root)
	local := t.TempDir()
	for _, flags := range [][]string{{"-r", "-cd"}, {"-fast", "-p", "2", "-r", "-cd"}} {
		name := fmt.Sprint(flags)
		t.Run(name, func(t *testing.T) {
			dir := fmt.Sprintf("copy%d", len(flags))
			down := filepath.Join(local, dir)
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(flags), srv.url("/tree/"), "file://"+down+"/")...)
			sameTree(t, down, filepath.Join(root, "tree"))
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(flags), "file://"+down+"/", srv.url("/"+dir+"/"))...)
			sameTree(t, filepath.Join(root, dir), filepath.Join(root, "tree"))
		})
	}
}

// TestGlobusURLCopyPartial moves byte ranges with -off and -len (ERET and
// ESTO), which land at the same offset of the destination.
func TestGlobusURLCopyPartial(t *testing.T) {
	srv := startFerry(t, t.TempDir())
	writeRandom(t, filepath.Join(srv.root, "whole.bin"), 1<<20, 41)
	whole, err := os.ReadFile(filepath.Join(srv.root, "whole.bin"))
	if err != nil {
		t.Fatal(err)
	}
	const off, n = 1000, 300000
	local := t.TempDir()
	for _, mode := range gucModes {
		t.Run(mode.name, func(t *testing.T) {
			got := filepath.Join(local, mode.name)
			args := append(slices.Clone(mode.flags), "-off", fmt.Sprint(off), "-len", fmt.Sprint(n))
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(args), srv.url("/whole.bin"), "file://"+got)...)
			checkRange(t, got, whole, off, n)

			up := "/part-" + mode.name
			src := filepath.Join(local, "whole.bin")
			if err := os.WriteFile(src, whole, 0o644); err != nil {
				t.Fatal(err)
			}
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(args), "file://"+src, srv.url(up))...)
			checkRange(t, filepath.Join(srv.root, up), whole, off, n)
		})
	}
}

// checkRange fails the test unless file holds want[off:off+n] at off.
func checkRange(t *testing.T, file string, want []byte, off, n int) {
	t.Helper()
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < off+n {
		t.Fatalf("%s: %d bytes, want at least %d", file, len(got), off+n)
	}
	if !bytes.Equal(got[off:off+n], want[off:off+n]) {
		t.Errorf("%s: bytes [%d,%d) differ from the source", file, off, off+n)
	}
}

// TestGlobusURLCopyList lists a directory with globus-url-copy -list,
// which uses MLSD and marks directories with a trailing slash.
func TestGlobusURLCopyList(t *testing.T) {
	root := t.TempDir()
	makeTree(t, filepath.Join(root, "dir"))
	srv := startFerry(t, root)
	out := mustRun(t, "", "", "globus-url-copy", "-list", srv.url("/dir/"))
	got := lines(out)
	if len(got) == 0 || got[0] != srv.url("/dir/") {
		t.Fatalf("globus-url-copy -list: first line is not the URL:\n%s", out)
	}
	got = got[1:]
	slices.Sort(got)
	want := []string{"empty/", "sub/", "top.txt", "with space.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("globus-url-copy -list %s = %q, want %q", srv.url("/dir/"), got, want)
	}
}
