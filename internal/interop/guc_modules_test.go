package interop

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGlobusURLCopyModules drives Ferry's server with globus-url-copy's
// processing module options (-smn/-smp, -dmn/-dmp, -mn), which send
// ERET NAME="PARAMS" PATH and ESTO NAME="PARAMS" PATH: gzip both ways in
// stream mode and MODE E, a tree as one tar and unpacked again, a
// third-party copy with a module on each side (GCT announces the
// source's SIZE with ALLO to the destination, which the ESTO must not
// hold against the compressed data), and a module the server does not
// allow.
func TestGlobusURLCopyModules(t *testing.T) {
	root := t.TempDir()
	makeTree(t, filepath.Join(root, "tree"))
	data := strings.Repeat("ferry moves bytes, gzip shrinks them\n", 30_000)
	writeFile(t, filepath.Join(root, "data.txt"), data)
	srv := startFerry(t, root, "-anonymous-write", "-allowed-modules", "gzip,tar")
	local := t.TempDir()

	for _, mode := range gucModes {
		t.Run(mode.name, func(t *testing.T) {
			gz := filepath.Join(local, "data-"+mode.name+".gz")
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(mode.flags), "-smn", "gzip", "-smp", "9", srv.url("/data.txt"), "file://"+gz)...)
			got := gunzipFile(t, gz)
			if got != data {
				t.Errorf("-smn gzip: the download is not the file compressed (%d bytes after gunzip, want %d)", len(got), len(data))
			}
			if fi, err := os.Stat(gz); err != nil || fi.Size() >= int64(len(data)) {
				t.Errorf("-smn gzip: %v, %v: not compressed", fi, err)
			}
			back := "back-" + mode.name + ".txt"
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(mode.flags), "-dmn", "gzip", "file://"+gz, srv.url("/"+back))...)
			if b, err := os.ReadFile(filepath.Join(root, back)); err != nil || string(b) != data {
				t.Errorf("-dmn gzip: the server stored %d bytes (%v), want the file", len(b), err)
			}
		})
	}

	tarFile := filepath.Join(local, "tree.tar")
	mustRun(t, "", "", "globus-url-copy", "-smn", "tar", srv.url("/tree"), "file://"+tarFile)
	mustRun(t, "", "", "globus-url-copy", "-dmn", "tar", "file://"+tarFile, srv.url("/untarred"))
	sameTree(t, filepath.Join(root, "untarred"), filepath.Join(root, "tree"))

	// Third party, one module name for both sides (-mn), and a module
	// on each side.
	for i, flags := range [][]string{{"-mn", "gzip"}, {"-smn", "gzip", "-smp", "1", "-dmn", "gzip"}, {"-p", "2", "-smn", "tar", "-dmn", "tar"}} {
		src, dst := "/data.txt", fmt.Sprintf("/tp-%d", i)
		if flags[len(flags)-1] == "tar" {
			src = "/tree"
		}
		mustRun(t, "", "", "globus-url-copy", append(slices.Clone(flags), srv.url(src), srv.url(dst))...)
		if src == "/tree" {
			sameTree(t, filepath.Join(root, dst), filepath.Join(root, "tree"))
		} else if b, err := os.ReadFile(filepath.Join(root, dst)); err != nil || string(b) != data {
			t.Errorf("third party %v: the destination has %d bytes (%v), want the file", flags, len(b), err)
		}
	}

	// Not allowed: an error naming the module, and no data.
	refused := filepath.Join(local, "refused")
	r := run(t, "", "", "globus-url-copy", "-smn", "zstd", srv.url("/data.txt"), "file://"+refused)
	if r.code == 0 || !strings.Contains(r.stderr, "zstd is not allowed") {
		t.Errorf("-smn zstd on a server without it: %v", r)
	}
	// GCT's globus-url-copy creates the local file before the server
	// answers, and leaves it empty; Ferry's drop-in leaves none.
	if fi, err := os.Stat(refused); gucIsFerry() && err == nil || err == nil && fi.Size() != 0 {
		t.Errorf("a refused download left %s (%v)", refused, fi.Size())
	}
	r = run(t, "", "", "globus-url-copy", "-dmn", "zstd", "file://"+tarFile, srv.url("/refused"))
	if r.code == 0 || !strings.Contains(r.stderr, "zstd is not allowed") {
		t.Errorf("-dmn zstd on a server without it: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "refused")); err == nil {
		t.Errorf("a refused upload left a file on the server")
	}
}

// gunzipFile is the decompressed content of a gzip file.
func gunzipFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(out)
}
