package interop

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// TestFerryCpGCT uploads files of each size to the GCT server with ferry
// cp, downloads them back, in stream mode with passive and active data
// connections and in MODE E over 4 connections, and compares contents.
func TestFerryCpGCT(t *testing.T) {
	root := gct.Dir(t)
	addr := gct.Start(t, root)
	local := t.TempDir()
	modes := []struct {
		name  string
		flags []string
		max   int64 // the largest size to move
	}{
		{"passive", nil, 1 << 40},
		{"active", []string{"-active"}, 10 << 20},
		{"modeE-p4", []string{"-p", "4"}, 1 << 40},
	}
	for _, mode := range modes {
		for i, size := range transferSizes {
			if size > mode.max {
				continue // the passive run covers the large file
			}
			t.Run(fmt.Sprintf("%s/%d", mode.name, size), func(t *testing.T) {
				src := filepath.Join(local, "src.bin")
				want := writeRandom(t, src, size, uint64(100+i))
				// GCT's anonymous sessions see the whole file system;
				// root is an absolute path there.
				remote := "ftp://" + addr + filepath.Join(root, fmt.Sprintf("up-%s-%d.bin", mode.name, size))
				ferry(t, append(append([]string{"cp", "-q"}, mode.flags...), src, remote)...)
				onServer := filepath.Join(root, filepath.Base(remote))
				sameFile(t, onServer, want)

				got := filepath.Join(local, "got.bin")
				ferry(t, append(append([]string{"cp", "-q"}, mode.flags...), remote, got)...)
				sameFile(t, got, want)
				os.Remove(got)
				os.Remove(onServer)
				os.Remove(src)
			})
		}
	}
}

// TestFerryClientGCT runs ferry ls, mkdir, mv, rm and cksum against the
// GCT server.
func TestFerryClientGCT(t *testing.T) {
	root := gct.Dir(t)
	makeTree(t, filepath.Join(root, "tree"))
	// The GCT sessions run as nobody and must be able to change the tree.
	filepath.Walk(filepath.Join(root, "tree"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			os.Chmod(p, 0o777)
		}
		return nil
	})
	addr := gct.Start(t, root)
	url := func(p string) string { return "ftp://" + addr + filepath.Join(root, p) }

	t.Run("ls", func(t *testing.T) {
		got := lines(ferry(t, "ls", url("tree")+"/"))
		slices.Sort(got)
		want := []string{"empty/", "sub/", "top.txt", "with space.txt"}
		if !slices.Equal(got, want) {
			t.Errorf("ferry ls = %q, want %q", got, want)
		}
		long := lines(ferry(t, "ls", "-l", url("tree/sub")+"/"))
		if len(long) != 2 || !strings.HasSuffix(long[0], " deeper/") || !strings.HasSuffix(long[1], " mid.bin") {
			t.Errorf("ferry ls -l tree/sub/ = %q", long)
		}
		if !strings.Contains(long[1], " 50000 ") {
			t.Errorf("ferry ls -l: mid.bin's line %q lacks its size 50000", long[1])
		}
	})

	t.Run("cksum", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(root, "tree", "sub", "mid.bin"))
		if err != nil {
			t.Fatal(err)
		}
		sum := md5.Sum(data)
		out := ferry(t, "cksum", url("tree/sub/mid.bin"))
		if f := strings.Fields(out); len(f) == 0 || f[0] != hex.EncodeToString(sum[:]) {
			t.Errorf("ferry cksum = %q, want MD5 %x", out, sum)
		}
	})

	t.Run("mkdir mv rm", func(t *testing.T) {
		ferry(t, "mkdir", "-p", url("made/a/b"))
		if fi, err := os.Stat(filepath.Join(root, "made", "a", "b")); err != nil || !fi.IsDir() {
			t.Fatalf("after ferry mkdir -p: %v", err)
		}
		ferry(t, "mv", url("tree/top.txt"), filepath.Join(root, "made", "moved.txt"))
		if _, err := os.Stat(filepath.Join(root, "made", "moved.txt")); err != nil {
			t.Errorf("after ferry mv: %v", err)
		}
		ferry(t, "rm", url("made/moved.txt"))
		ferry(t, "rm", "-d", url("made/a/b"))
		if _, err := os.Stat(filepath.Join(root, "made", "a", "b")); !os.IsNotExist(err) {
			t.Errorf("after ferry rm -d: %v", err)
		}
		if _, err := os.Stat(filepath.Join(root, "made", "moved.txt")); !os.IsNotExist(err) {
			t.Errorf("after ferry rm: %v", err)
		}
		if r := run(t, "", "", ferryBin, "rm", url("made/nothere")); r.code != 1 {
			t.Errorf("ferry rm of a missing file: %v, want exit 1", r)
		}
	})
}
