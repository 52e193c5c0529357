package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCpBatchUploadDrainGSI: ferry cp -r uploads a tree over gsiftp://
// to ferry serve, which offers STOR-DRAIN, so each file's blocks go right
// behind its STOR, through data connections secured as a GSI session's
// are by default (DCAU A: each one starts with a handshake). One
// destination is a directory on the server: its STOR is refused in the
// middle of a batch and its blocks drained. The job names that file
// alone, and every other file arrives intact.
func TestCpBatchUploadDrainGSI(t *testing.T) {
	const n = 60
	const bad = "d1/f005"
	p := newPKI(t)
	base := t.TempDir()
	openDirs(t, base)
	src := filepath.Join(base, "src")
	batchTree(t, src, n)
	root := filepath.Join(base, "root")
	// The tree goes to /up/src, as /up exists.
	if err := os.MkdirAll(filepath.Join(root, "up", "src", bad), 0o777); err != nil {
		t.Fatal(err)
	}
	openDirs(t, root)
	srv := gsiServer(t, p, root, "-log-level", "debug")
	df := filepath.Join(base, "failed.txt")
	r := run(t, "", "", "env", "X509_USER_PROXY="+p.ferryProxy(t), "X509_CERT_DIR="+filepath.Join(p.dir, "certificates"),
		ferryBin, "cp", "-r", "-cc", "2", "-df", df, src, "gsiftp://"+srv.addr+"/up")
	checkBatchFailure(t, r, df, bad, n)
	sameExcept(t, filepath.Join(root, "up", "src"), src, bad)
	log := srv.log.String()
	if k := strings.Count(log, "OPTS PIPE STOR-DRAIN=ON"); k < 1 || k > 2 {
		t.Errorf("OPTS PIPE STOR-DRAIN=ON seen %d times in the server log; want once per session (-cc 2)", k)
	}
	if !strings.Contains(log, "drained a refused upload") {
		t.Errorf("the server did not drain the refused upload:\n%s", log)
	}
}
