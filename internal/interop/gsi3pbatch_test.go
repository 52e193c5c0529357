package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// TestThirdPartyBatchGSI: ferry cp -r between two Ferry GSI servers
// (gsiftp://, the default DCAU A, with one and two data connections)
// copies a tree of small files in pipelined third-party batches, every
// byte of every file, and each session sets the authenticated data
// channel up once: later batches reuse it (at most one PASV per worker
// on the destination, for many batches).
func TestThirdPartyBatchGSI(t *testing.T) {
	pki := gsipki.New(t, "")
	t.Setenv("X509_CERT_DIR", pki.TrustDir)
	proxy := pki.Proxy(t, gsi.ProxyOptions{})
	start := func() (*server, string) {
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		s := startFerry(t, dir, "-cert", pki.HostCert, "-key", pki.HostKey, "-gridmap", pki.GridMap,
			"-run-as-mapped-user=false", "-log-level", "debug")
		return s, dir
	}
	src, sdir := start()
	dst, ddir := start()
	const n = 120
	want := make([]string, n)
	os.MkdirAll(filepath.Join(sdir, "tree"), 0o755)
	for i := range n {
		want[i] = writeRandom(t, filepath.Join(sdir, "tree", fmt.Sprintf("f%03d", i)), int64(i*331%20000), uint64(i))
	}
	pasv := regexp.MustCompile(`msg=command .*cmd=PASV`)
	for _, p := range []string{"1", "2"} {
		t.Run("p"+p, func(t *testing.T) {
			before := len(pasv.FindAllString(dst.log.String(), -1))
			out := "out" + p
			ferry(t, "cp", "-q", "-r", "-cc", "2", "-p", p, "-cert", proxy,
				"gsiftp://"+src.addr+"/tree/", "gsiftp://"+dst.addr+"/"+out+"/")
			for i := range n {
				sameFile(t, filepath.Join(ddir, out, fmt.Sprintf("f%03d", i)), want[i])
			}
			if k := len(pasv.FindAllString(dst.log.String(), -1)) - before; k < 1 || k > 2 {
				t.Errorf("%d PASV on the destination for %d files over two sessions, want 1 or 2", k, n)
			}
		})
	}
}
