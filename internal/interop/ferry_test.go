package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFerryClientServer runs the ferry client subcommands against ferry
// serve; cp in stream mode, passive and active, and in MODE E.
func TestFerryClientServer(t *testing.T) {
	root := t.TempDir()
	makeTree(t, filepath.Join(root, "tree"))
	srv := startFerry(t, root)
	local := t.TempDir()
	src := filepath.Join(local, "src.bin")
	want := writeRandom(t, src, 20<<20+5, 21)

	for name, mode := range map[string][]string{"passive": nil, "active": {"-active"}, "modeE-p4": {"-p", "4"}} {
		t.Run("cp/"+name, func(t *testing.T) {
			ferry(t, append(append([]string{"cp", "-q"}, mode...), src, srv.url("/cp-"+name+".bin"))...)
			sameFile(t, filepath.Join(root, "cp-"+name+".bin"), want)
			got := filepath.Join(local, "got-"+name+".bin")
			ferry(t, append(append([]string{"cp", "-q"}, mode...), srv.url("/cp-"+name+".bin"), got)...)
			sameFile(t, got, want)
		})
	}

	t.Run("ls", func(t *testing.T) {
		got := lines(ferry(t, "ls", srv.url("/tree/")))
		slices.Sort(got)
		if w := []string{"empty/", "sub/", "top.txt", "with space.txt"}; !slices.Equal(got, w) {
			t.Errorf("ferry ls = %q, want %q", got, w)
		}
	})

	t.Run("cksum", func(t *testing.T) {
		out := ferry(t, "cksum", "-a", "SHA256", srv.url("/cp-passive.bin"))
		if f := strings.Fields(out); len(f) == 0 || f[0] != want {
			t.Errorf("ferry cksum -a SHA256 = %q, want %s", out, want)
		}
	})

	t.Run("mkdir mv rm", func(t *testing.T) {
		ferry(t, "mkdir", "-p", srv.url("/made/a/b"))
		ferry(t, "mv", srv.url("/cp-active.bin"), "/made/a/moved.bin")
		sameFile(t, filepath.Join(root, "made", "a", "moved.bin"), want)
		ferry(t, "rm", srv.url("/made/a/moved.bin"))
		ferry(t, "rm", "-d", srv.url("/made/a/b"))
		if _, err := os.Stat(filepath.Join(root, "made", "a", "b")); !os.IsNotExist(err) {
			t.Errorf("after rm -d: %v", err)
		}
	})
}

// TestStorageBackends serves the memory and null back-ends and moves
// bytes through them with ferry cp.
func TestStorageBackends(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		srv := startFerry(t, t.TempDir(), "-storage", "memory", "-anonymous-write")
		src := filepath.Join(t.TempDir(), "src.bin")
		want := writeRandom(t, src, 3<<20, 31)
		ferry(t, "mkdir", srv.url("/d"))
		ferry(t, "cp", "-q", src, srv.url("/d/f.bin"))
		got := filepath.Join(t.TempDir(), "got.bin")
		ferry(t, "cp", "-q", srv.url("/d/f.bin"), got)
		sameFile(t, got, want)
	})
	t.Run("null", func(t *testing.T) {
		srv := startFerry(t, t.TempDir(), "-storage", "null", "-anonymous-write")
		out := ferry(t, "cp", "-q", srv.url("/1M"), "-")
		zeros := sha256.Sum256(make([]byte, 1<<20))
		if sum := sha256.Sum256([]byte(out)); len(out) != 1<<20 || sum != zeros {
			t.Errorf("null /1M: %d bytes, SHA-256 %x; want 1 MiB of zeros (%s)", len(out), sum, hex.EncodeToString(zeros[:]))
		}
		src := filepath.Join(t.TempDir(), "src.bin")
		writeRandom(t, src, 1<<20, 32)
		ferry(t, "cp", "-q", src, srv.url("/discarded"))
	})
}

// TestHelp checks that "ferry help COMMAND" and "ferry COMMAND -h" both
// describe every command with the same flags, as "ferry help" promises.
func TestHelp(t *testing.T) {
	out := ferry(t, "help")
	// The command list: indented lines after "commands:" up to a blank line.
	var cmds []string
	_, list, _ := strings.Cut(out, "commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	for _, l := range strings.Split(list, "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(l, "  ") {
			cmds = append(cmds, f[0])
		}
	}
	for _, want := range []string{"cksum", "cp", "ls", "mkdir", "mv", "passwd", "rm", "serve", "version"} {
		if !slices.Contains(cmds, want) {
			t.Errorf("ferry help does not list %s:\n%s", want, out)
		}
	}
	for _, c := range cmds {
		dashH := run(t, "", "", ferryBin, c, "-h")
		help := run(t, "", "", ferryBin, "help", c)
		if dashH.code != 0 || help.code != 0 {
			t.Errorf("ferry %s -h: exit %d; ferry help %s: exit %d", c, dashH.code, c, help.code)
		}
		if h, d := help.stdout+help.stderr, dashH.stdout+dashH.stderr; h != d {
			t.Errorf("ferry help %s differs from ferry %s -h:\n--- help:\n%s--- -h:\n%s", c, c, h, d)
		}
	}
}
