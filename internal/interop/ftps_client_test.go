package interop

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFTPSFerryClient: ferry's own client speaks explicit FTPS (ftps://)
// to "ferry serve" with a host credential, in stream mode and with -p 4,
// and what it stores curl --ssl-reqd reads back, and the other way round.
// The trust directory is the one "ferry cert" made. (Client certificates
// are tested in-process, in cmd/ferry and client: mapped here, as root,
// the session would run as a local user who cannot enter the test's
// temporary directory.)
func TestFTPSFerryClient(t *testing.T) {
	p := newPKI(t)
	root := t.TempDir()
	pw := filepath.Join(t.TempDir(), "passwd")
	mustRun(t, "", "secret\n", ferryBin, "passwd", pw, "alice")
	srv := startFerry(t, root, "-passwd", pw, "-cert", p.hostCert, "-key", p.hostKey)
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	url := func(path string) string { return "ftps://alice:secret@" + srv.addr + path }
	cacert := filepath.Join(p.dir, "cacert.pem")
	local := t.TempDir()
	src := filepath.Join(local, "src.bin")
	want := writeRandom(t, src, 4<<20+9, 13) // its SHA-256

	for _, par := range []string{"1", "4"} {
		up := "/up" + par + ".bin"
		ferry(t, "cp", "-p", par, src, url(up))
		sameFile(t, filepath.Join(root, up), want)
		got := filepath.Join(local, "curl"+par+".bin")
		mustRun(t, "", "", "curl", "-sS", "--ssl-reqd", "--cacert", cacert, "-u", "alice:secret", "-o", got, srv.url(up))
		sameFile(t, got, want)
	}
	mustRun(t, "", "", "curl", "-sS", "--ssl-reqd", "--cacert", cacert, "-u", "alice:secret", "-T", src, srv.url("/by-curl.bin"))
	for _, par := range []string{"1", "4"} {
		got := filepath.Join(local, "down"+par+".bin")
		ferry(t, "cp", "-p", par, url("/by-curl.bin"), got)
		sameFile(t, got, want)
	}
	if out := ferry(t, "ls", url("/")); !strings.Contains(out, "by-curl.bin") || !strings.Contains(out, "up4.bin") {
		t.Errorf("ferry ls ftps://: %q", out)
	}
	ferry(t, "mkdir", url("/d"))
	ferry(t, "rm", "-d", url("/d"))

	// The same server over plain ftp:// refuses the password (it has a
	// host credential), and ftps:// to a plain server fails: no clear
	// text either way.
	if r := run(t, "", "", ferryBin, "ls", "ftp://alice:secret@"+srv.addr+"/"); r.code == 0 {
		t.Errorf("ferry ls ftp:// with a password on a TLS server: %v", r)
	}
	plain := startFerry(t, t.TempDir(), "-passwd", pw)
	r := run(t, "", "", ferryBin, "ls", "ftps://alice:secret@"+plain.addr+"/")
	if r.code == 0 || !strings.Contains(r.stderr, "AUTH TLS") {
		t.Errorf("ferry ls ftps:// on a server without TLS: %v", r)
	}
	if l := plain.log.String(); strings.Contains(l, "PASS") || strings.Contains(l, "alice") {
		t.Errorf("the plain server saw a login:\n%s", l)
	}
}
