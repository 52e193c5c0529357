package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGUCGlobusMappingAnonymous: GCT's client library's default user is
// ":globus-mapping:" (globus_ftp_client's default authorization); for a
// plain ftp:// URL globus-url-copy replaces it with "anonymous", but a
// GCT client that keeps the default, or names it in the URL as here
// (%3Aglobus-mapping%3A), sends "USER :globus-mapping:" on a channel with
// no certificate. GCT's server takes that as an anonymous name, and so
// does an anonymous Ferry server: the download works, and nothing more
// than an anonymous login allows (the read-only server refuses an
// upload). A server without anonymous logins refuses it. The server's
// debug log shows what arrived on the wire.
func TestGUCGlobusMappingAnonymous(t *testing.T) {
	root := t.TempDir()
	want := writeRandom(t, filepath.Join(root, "f.bin"), 1<<20, 18)
	srv := startFerry(t, root, "-anonymous", "-log-level", "debug")
	local := t.TempDir()
	mapped := "ftp://%3Aglobus-mapping%3A@" + srv.addr

	got := filepath.Join(local, "mapped.bin")
	mustRun(t, "", "", "globus-url-copy", mapped+"/f.bin", "file://"+got)
	sameFile(t, got, want)
	if l := srv.log.String(); !strings.Contains(l, `cmd="USER :globus-mapping:"`) || !strings.Contains(l, "user=anonymous") {
		t.Fatalf("the server did not log USER :globus-mapping: and an anonymous session:\n%s", l)
	}

	// globus-url-copy's own default for ftp:// is USER anonymous.
	before := strings.Count(srv.log.String(), `cmd="USER anonymous"`)
	plain := filepath.Join(local, "plain.bin")
	mustRun(t, "", "", "globus-url-copy", srv.url("/f.bin"), "file://"+plain)
	sameFile(t, plain, want)
	if after := strings.Count(srv.log.String(), `cmd="USER anonymous"`); after != before+1 {
		t.Errorf("a plain ftp:// URL: %d USER anonymous lines, want %d", after, before+1)
	}

	// Anonymous means read-only here, whatever the name.
	if r := run(t, "", "", "globus-url-copy", "file://"+got, mapped+"/up.bin"); r.err == nil {
		t.Errorf("an upload as :globus-mapping: to a read-only anonymous server succeeded: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "up.bin")); err == nil {
		t.Error("up.bin was written")
	}

	// No anonymous logins: refused, as before.
	file := filepath.Join(t.TempDir(), "passwd")
	mustRun(t, "", "secret\n", ferryBin, "passwd", file, "alice")
	closed := startFerry(t, root, "-passwd", file, "-log-level", "debug")
	out := filepath.Join(local, "refused.bin")
	if r := run(t, "", "", "globus-url-copy", "ftp://%3Aglobus-mapping%3A@"+closed.addr+"/f.bin", "file://"+out); r.err == nil {
		t.Errorf("a server without anonymous logins let :globus-mapping: download: %v", r)
	}
	if fi, err := os.Stat(out); err == nil && fi.Size() > 0 {
		// globus-url-copy creates the local file before it logs in.
		t.Errorf("%d bytes arrived from a server that refused the login", fi.Size())
	}
	if l := closed.log.String(); !strings.Contains(l, `cmd="USER :globus-mapping:"`) || strings.Contains(l, "logged in") {
		t.Errorf("the closed server's log:\n%s", l)
	}
}
