package interop

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCurl gets, puts and lists with curl against ferry serve. curl
// prefers EPSV and asks for SIZE, which globus-url-copy never does.
func TestCurl(t *testing.T) {
	root := t.TempDir()
	makeTree(t, filepath.Join(root, "dir"))
	srv := startFerry(t, root)
	local := t.TempDir()

	t.Run("get", func(t *testing.T) {
		for _, name := range []string{"top.txt", "sub/deeper/random.bin"} {
			got := filepath.Join(local, filepath.Base(name))
			mustRun(t, "", "", "curl", "-sS", "-o", got, srv.url("/dir/"+name))
			sameFile(t, got, fileSum(t, filepath.Join(root, "dir", name)))
		}
		// A name with a space, percent-encoded in the URL.
		out := mustRun(t, "", "", "curl", "-sS", srv.url("/dir/with%20space.txt"))
		if want := "a name with a space\n"; out != want {
			t.Errorf("curl with%%20space.txt = %q, want %q", out, want)
		}
	})

	t.Run("put", func(t *testing.T) {
		src := filepath.Join(local, "upload.bin")
		want := writeRandom(t, src, 5<<20+3, 7)
		mustRun(t, "", "", "curl", "-sS", "-T", src, srv.url("/dir/sub/uploaded.bin"))
		sameFile(t, filepath.Join(root, "dir", "sub", "uploaded.bin"), want)
		// Uploading again replaces the file.
		want = writeRandom(t, src, 1000, 8)
		mustRun(t, "", "", "curl", "-sS", "-T", src, srv.url("/dir/sub/uploaded.bin"))
		sameFile(t, filepath.Join(root, "dir", "sub", "uploaded.bin"), want)
		os.Remove(filepath.Join(root, "dir", "sub", "uploaded.bin"))
	})

	t.Run("list", func(t *testing.T) {
		got := lines(mustRun(t, "", "", "curl", "-sS", "--list-only", srv.url("/dir/")))
		slices.Sort(got)
		want := []string{"empty", "sub", "top.txt", "with space.txt"}
		if !slices.Equal(got, want) {
			t.Errorf("curl --list-only /dir/ = %q, want %q", got, want)
		}
		// Without --list-only curl sends LIST; each line ends with the name.
		long := lines(mustRun(t, "", "", "curl", "-sS", srv.url("/dir/sub/")))
		if len(long) != 2 {
			t.Errorf("curl LIST /dir/sub/ = %q, want 2 lines", long)
		}
	})

	t.Run("missing", func(t *testing.T) {
		// curl exit 78: "The resource referenced in the URL does not exist".
		if r := run(t, "", "", "curl", "-sS", srv.url("/dir/nothere")); r.code != 78 {
			t.Errorf("curl of a missing file: %v, want exit 78", r)
		}
	})
}
