package gsi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests use real peers: PKIs built with the openssl command, as the
// GSI lab did (reference/gsi-lab/gsi-lab.sh), and GCT's own proxy tools
// (grid-proxy-init, grid-proxy-info), installed when missing.

var (
	gctOnce sync.Once
	gctErr  error
)

// needGCTProxyTools makes sure grid-proxy-init and grid-proxy-info exist,
// installing the Debian packages if needed. It fails the test (never
// skips) when they cannot be installed: the test command installs them.
func needGCTProxyTools(t testing.TB) {
	t.Helper()
	gctOnce.Do(func() {
		if have("grid-proxy-init") && have("grid-proxy-info") {
			return
		}
		out, err := exec.Command("apt-get", "install", "-y", "globus-proxy-utils", "globus-gsi-cert-utils-progs").CombinedOutput()
		if err != nil {
			gctErr = fmt.Errorf("installing GCT proxy tools: %v\n%s", err, out)
			return
		}
		if !have("grid-proxy-init") {
			gctErr = fmt.Errorf("grid-proxy-init still missing after apt-get install")
		}
	})
	if gctErr != nil {
		t.Fatal(gctErr)
	}
}

func have(prog string) bool {
	_, err := exec.LookPath(prog)
	return err == nil
}

// sh runs a command and fails the test if it fails.
func sh(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := shErr(dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func shErr(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const (
	labCADN   = "/C=US/O=GridLab/CN=GridLab Test CA"
	labUserDN = "/C=US/O=GridLab/OU=users/CN=Lab User"
)

// lab is a PKI made with openssl: a CA, a trust directory, an openssl
// CA database for revocation, and a helper to issue variants.
type lab struct {
	dir, certDir string
	serial       int
	mu           sync.Mutex
}

var (
	labOnce sync.Once
	theLab  *lab
	labErr  error
	labRoot string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if labRoot != "" {
		os.RemoveAll(labRoot)
	}
	os.Exit(code)
}

// getLab returns the shared openssl PKI, building it on first use.
func getLab(t testing.TB) *lab {
	t.Helper()
	labOnce.Do(func() {
		labRoot, labErr = os.MkdirTemp("", "gsi-lab-")
		if labErr != nil {
			return
		}
		theLab, labErr = buildLab(labRoot)
	})
	if labErr != nil {
		t.Fatal(labErr)
	}
	return theLab
}

func buildLab(dir string) (*lab, error) {
	l := &lab{dir: dir, certDir: filepath.Join(dir, "certificates"), serial: 5000}
	run := func(args ...string) error {
		out, err := shErr(dir, nil, "openssl", args...)
		if err != nil {
			return fmt.Errorf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, "newcerts"), 0o755); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"genrsa", "-out", "cakey.pem", "2048"},
		{"req", "-new", "-x509", "-sha256", "-days", "30", "-key", "cakey.pem", "-subj", labCADN, "-out", "cacert.pem",
			"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
			"-addext", "subjectKeyIdentifier=hash"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return nil, err
		}
	}
	cnf := fmt.Sprintf(`[ ca ]
default_ca = labca
[ labca ]
dir              = %s
database         = $dir/index.txt
new_certs_dir    = $dir/newcerts
certificate      = $dir/cacert.pem
private_key      = $dir/cakey.pem
serial           = $dir/serialfile
crlnumber        = $dir/crlnumber
default_md       = sha256
default_days     = 30
default_crl_days = 30
policy           = anything
unique_subject   = no
[ anything ]
commonName = supplied
`, dir)
	for name, data := range map[string]string{"openssl.cnf": cnf, "index.txt": "", "serialfile": "1000\n", "crlnumber": "1000\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return nil, err
		}
	}
	if err := run("ca", "-gencrl", "-config", "openssl.cnf", "-out", "empty.crl"); err != nil {
		return nil, err
	}
	if err := l.makeTrustDir(l.certDir, true, true, `"/C=US/O=GridLab/*"`); err != nil {
		return nil, err
	}
	return l, nil
}

// makeTrustDir writes a trust directory for the lab CA.
func (l *lab) makeTrustDir(dir string, policy, crl bool, subjects string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := shErr(l.dir, nil, "openssl", "x509", "-in", "cacert.pem", "-noout", "-subject_hash")
	if err != nil {
		return fmt.Errorf("subject_hash: %v %s", err, out)
	}
	h := strings.TrimSpace(out)
	ca, err := os.ReadFile(filepath.Join(l.dir, "cacert.pem"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, h+".0"), ca, 0o644); err != nil {
		return err
	}
	if policy {
		p := fmt.Sprintf("# EACL for the lab CA\naccess_id_CA   X509  '%s'\npos_rights     globus CA:sign\ncond_subjects  globus '%s'\n", labCADN, subjects)
		if err := os.WriteFile(filepath.Join(dir, h+".signing_policy"), []byte(p), 0o644); err != nil {
			return err
		}
	}
	if crl {
		c, err := os.ReadFile(filepath.Join(l.dir, "empty.crl"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, h+".r0"), c, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cert issues a certificate from the lab CA with openssl x509 -req and
// returns the paths of its cert and key (mode 0600). ext lines go into
// the extension section.
func (l *lab) cert(t testing.TB, name, dn string, bits int, md string, ext ...string) (certFile, keyFile string) {
	t.Helper()
	l.mu.Lock()
	l.serial++
	serial := l.serial
	l.mu.Unlock()
	d := filepath.Join(l.dir, "v")
	os.MkdirAll(d, 0o755)
	keyFile = filepath.Join(d, name+".key")
	certFile = filepath.Join(d, name+".pem")
	if _, err := os.Stat(certFile); err == nil {
		return certFile, keyFile
	}
	sh(t, d, nil, "openssl", "genrsa", "-out", keyFile, fmt.Sprint(bits))
	os.Chmod(keyFile, 0o600)
	sh(t, d, nil, "openssl", "req", "-new", "-key", keyFile, "-subj", dn, "-out", name+".csr")
	extFile := filepath.Join(d, name+".ext")
	os.WriteFile(extFile, []byte("[e]\n"+strings.Join(ext, "\n")+"\n"), 0o644)
	sh(t, d, nil, "openssl", "x509", "-req", "-in", name+".csr", "-CA", filepath.Join(l.dir, "cacert.pem"),
		"-CAkey", filepath.Join(l.dir, "cakey.pem"), "-set_serial", fmt.Sprint(serial), "-days", "20", "-"+md,
		"-extfile", extFile, "-extensions", "e", "-out", certFile)
	return certFile, keyFile
}

// user returns the lab's standard user certificate.
func (l *lab) user(t testing.TB) (certFile, keyFile string) {
	return l.cert(t, "user", labUserDN, 2048, "sha256", "basicConstraints=critical,CA:FALSE",
		"keyUsage=critical,digitalSignature,keyEncipherment,dataEncipherment", "extendedKeyUsage=clientAuth")
}

// craft makes a hand-made proxy with openssl, as validation-tests.sh did.
func (l *lab) craft(t testing.TB, name, subject, issuerCert, issuerKey, pci string, serial int) (certFile, keyFile string) {
	t.Helper()
	d := filepath.Join(l.dir, "v")
	os.MkdirAll(d, 0o755)
	keyFile = filepath.Join(d, name+".key")
	certFile = filepath.Join(d, name+".pem")
	sh(t, d, nil, "openssl", "genrsa", "-out", keyFile, "2048")
	os.Chmod(keyFile, 0o600)
	sh(t, d, nil, "openssl", "req", "-new", "-key", keyFile, "-subj", subject, "-out", name+".csr")
	ext := fmt.Sprintf("[e]\nkeyUsage=critical,digitalSignature,keyEncipherment\nproxyCertInfo=%s\n", pci)
	os.WriteFile(filepath.Join(d, name+".ext"), []byte(ext), 0o644)
	sh(t, d, nil, "openssl", "x509", "-req", "-in", name+".csr", "-CA", issuerCert, "-CAkey", issuerKey,
		"-set_serial", fmt.Sprint(serial), "-days", "1", "-sha256", "-extfile", name+".ext", "-extensions", "e", "-out", certFile)
	return certFile, keyFile
}

// gridProxyInit runs GCT's grid-proxy-init against the lab trust dir.
func (l *lab) gridProxyInit(t testing.TB, certFile, keyFile, out string, args ...string) (string, error) {
	t.Helper()
	needGCTProxyTools(t)
	a := append([]string{"-q"}, args...)
	a = append(a, "-cert", certFile, "-key", keyFile, "-certdir", l.certDir, "-out", out)
	return shErr(l.dir, []string{"X509_CERT_DIR=" + l.certDir, "X509_USER_PROXY=", "X509_USER_CERT=", "X509_USER_KEY="}, "grid-proxy-init", a...)
}

func (l *lab) store(t testing.TB) *TrustStore {
	t.Helper()
	ts, err := LoadTrustDir(l.certDir)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func loadCred(t testing.TB, certFile, keyFile string) *Credential {
	t.Helper()
	c, err := LoadCredential(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func loadChain(t testing.TB, files ...string) *Credential {
	t.Helper()
	var data []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	c, err := ParseCredentialPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func timeNow() time.Time { return time.Now() }
