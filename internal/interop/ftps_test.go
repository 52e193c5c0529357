package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// pki is a test CA made with "ferry cert", with a host certificate for
// 127.0.0.1 and a user certificate.
type pki struct {
	dir                string // the CA directory (cacert.pem, certificates/)
	hostCert, hostKey  string
	userCert, userKey  string
	userDN, gridmapRow string
	// asUser keeps ferry serve's default of acting as the mapped account
	// (run as root); otherwise gsiServer serves it as the server, which is
	// what tests whose trees belong to root need.
	asUser bool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	root := t.TempDir()
	p := &pki{dir: filepath.Join(root, "ca")}
	ferry(t, "cert", "ca", "-dir", p.dir, "-subject", "/O=Ferry Test/CN=Ferry Test CA", "-bits", "2048")
	hostDir := filepath.Join(root, "host")
	ferry(t, "cert", "host", "-ca", p.dir, "-name", "localhost", "-ip", "127.0.0.1", "-out", hostDir, "-bits", "2048")
	p.hostCert, p.hostKey = filepath.Join(hostDir, "hostcert.pem"), filepath.Join(hostDir, "hostkey.pem")
	userDir := filepath.Join(root, "user")
	p.gridmapRow = strings.TrimSpace(ferry(t, "cert", "user", "-ca", p.dir, "-cn", "Alice Tester", "-account", "alice", "-out", userDir, "-bits", "2048"))
	p.userCert, p.userKey = filepath.Join(userDir, "usercert.pem"), filepath.Join(userDir, "userkey.pem")
	// Run as root, ferry serve refuses mappings to accounts the host lacks.
	gsipki.EnsureAccount(t, "alice")
	if i := strings.LastIndex(p.gridmapRow, `"`); i > 0 {
		p.userDN = p.gridmapRow[1:i]
	}
	t.Setenv("X509_CERT_DIR", filepath.Join(p.dir, "certificates"))
	return p
}

// TestFTPS: curl and lftp log in with a password over AUTH TLS and move
// files with PROT P; a password over a plain control channel is refused
// once the server has a host credential.
func TestFTPS(t *testing.T) {
	p := newPKI(t)
	root := t.TempDir()
	pw := filepath.Join(t.TempDir(), "passwd")
	mustRun(t, "", "secret\n", ferryBin, "passwd", pw, "alice")
	srv := startFerry(t, root, "-passwd", pw, "-cert", p.hostCert, "-key", p.hostKey)
	want := writeRandom(t, filepath.Join(root, "f.bin"), 3<<20+5, 9)
	cacert := filepath.Join(p.dir, "cacert.pem")
	local := t.TempDir()

	got := filepath.Join(local, "curl.bin")
	mustRun(t, "", "", "curl", "-sS", "--ssl-reqd", "--cacert", cacert, "-u", "alice:secret", "-o", got, srv.url("/f.bin"))
	sameFile(t, got, want)
	mustRun(t, "", "", "curl", "-sS", "--ssl-reqd", "--cacert", cacert, "-u", "alice:secret", "-T", got, srv.url("/up-curl.bin"))
	sameFile(t, filepath.Join(root, "up-curl.bin"), want)
	if out := mustRun(t, "", "", "curl", "-sS", "--ssl-reqd", "--cacert", cacert, "-u", "alice:secret", "--list-only", srv.url("/")); !strings.Contains(out, "f.bin") {
		t.Errorf("curl --list-only over TLS: %q", out)
	}
	// Without TLS the password must not be accepted (curl exit 67: login denied).
	if r := run(t, "", "", "curl", "-sS", "-u", "alice:secret", "-o", filepath.Join(local, "x"), srv.url("/f.bin")); r.code != 67 {
		t.Errorf("plain-text password login: %v", r)
	}

	script := strings.Join([]string{
		"set ftp:ssl-force true", "set ftp:ssl-protect-data true", "set ssl:ca-file " + cacert,
		"set net:max-retries 1", "open -u alice,secret -p " + srv.port + " 127.0.0.1",
		"get f.bin -o " + filepath.Join(local, "lftp.bin"),
		"put " + filepath.Join(local, "lftp.bin") + " -o up-lftp.bin", "quit",
	}, "; ")
	mustRun(t, "", "", "lftp", "-c", script)
	sameFile(t, filepath.Join(local, "lftp.bin"), want)
	sameFile(t, filepath.Join(root, "up-lftp.bin"), want)
	if l := srv.log.String(); !strings.Contains(l, "TLS control channel") {
		t.Errorf("no TLS session in the server log:\n%s", l)
	}
	_ = os.Remove
}

// TestFTPSClientCertificate: over AUTH TLS a client certificate from a
// trusted CA stands in for the password, mapped through the grid-mapfile.
func TestFTPSClientCertificate(t *testing.T) {
	p := newPKI(t)
	root := t.TempDir()
	gridmap := filepath.Join(t.TempDir(), "grid-mapfile")
	os.WriteFile(gridmap, []byte(p.gridmapRow+"\n"), 0o644)
	srv := startFerry(t, root, "-cert", p.hostCert, "-key", p.hostKey, "-gridmap", gridmap, "-run-as-mapped-user=false")
	want := writeRandom(t, filepath.Join(root, "c.bin"), 100000, 4)
	got := filepath.Join(t.TempDir(), "c.bin")
	cacert := filepath.Join(p.dir, "cacert.pem")
	mustRun(t, "", "", "curl", "-sS", "--ssl-reqd", "--cacert", cacert, "--cert", p.userCert, "--key", p.userKey,
		"-u", "alice:", "-o", got, srv.url("/c.bin"))
	sameFile(t, got, want)
	// Without the certificate the same login is refused.
	if r := run(t, "", "", "curl", "-sS", "--ssl-reqd", "--cacert", cacert, "-u", "alice:", "-o", got+"2", srv.url("/c.bin")); r.code != 67 {
		t.Errorf("login without certificate or password: %v", r)
	}
}
