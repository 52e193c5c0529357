package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lftpSettings make lftp fail fast instead of retrying forever.
const lftpSettings = "set cmd:fail-exit yes; set net:max-retries 2; set net:reconnect-interval-base 1; set net:timeout 30; "

// lftp runs the lftp commands script against srv in dir.
func lftp(t *testing.T, srv *server, dir, script string) string {
	t.Helper()
	return mustRun(t, dir, "", "lftp", "-e", lftpSettings+script+"; quit", "-p", srv.port, "127.0.0.1")
}

// TestLFTP gets, puts and mirrors a tree both ways with lftp, which lists
// with MLSD, and compares contents.
func TestLFTP(t *testing.T) {
	root := t.TempDir()
	makeTree(t, filepath.Join(root, "tree"))
	srv := startFerry(t, root)
	local := t.TempDir()

	t.Run("get", func(t *testing.T) {
		lftp(t, srv, local, `get tree/top.txt; get "tree/with space.txt"`)
		sameFile(t, filepath.Join(local, "top.txt"), fileSum(t, filepath.Join(root, "tree", "top.txt")))
		sameFile(t, filepath.Join(local, "with space.txt"), fileSum(t, filepath.Join(root, "tree", "with space.txt")))
	})

	t.Run("put", func(t *testing.T) {
		want := writeRandom(t, filepath.Join(local, "put me.bin"), 2<<20+1, 3)
		lftp(t, srv, local, `put "put me.bin"; put -O tree/sub "put me.bin"`)
		sameFile(t, filepath.Join(root, "put me.bin"), want)
		sameFile(t, filepath.Join(root, "tree", "sub", "put me.bin"), want)
		os.Remove(filepath.Join(root, "tree", "sub", "put me.bin"))
	})

	t.Run("mirror", func(t *testing.T) {
		lftp(t, srv, local, "mirror tree mirrored")
		sameTree(t, filepath.Join(local, "mirrored"), filepath.Join(root, "tree"))
	})

	t.Run("mirror -R", func(t *testing.T) {
		src := filepath.Join(local, "src")
		makeTree(t, src)
		writeFile(t, filepath.Join(src, "sub", "deeper", "extra.txt"), strings.Repeat("extra ", 100))
		lftp(t, srv, local, "mirror -R src uploaded")
		sameTree(t, filepath.Join(root, "uploaded"), src)
	})
}
