package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
)

// TestGUCDataCred: the drop-in's -data-cred becomes ferry cp's, which
// loads the credential into the GSI configuration (auto: a generated
// one; a path: the file's), and refuses it with -nodcau, a missing file
// or a credential no server could use.
func TestGUCDataCred(t *testing.T) {
	load := func(args ...string) (*cpFlags, error) {
		t.Helper()
		c, err := parseGUC(append(args, "gsiftp://h/a", "file:///tmp/b"))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		cp, err := c.cpArgs(func(string) string { return "" })
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		f, j, err := parseCpJobArgs(t, cp)
		if err != nil {
			t.Fatalf("%q: %v", cp, err)
		}
		return f, checkCopyFlags(f, j)
	}
	f, err := load("-data-cred", "AUTO")
	if err != nil || f.gsi.dataCred != "AUTO" {
		t.Fatalf("-data-cred AUTO: %v, %q", err, f.gsi.dataCred)
	}
	if _, err := load("-data-cred", "auto", "-nodcau"); err == nil || !strings.Contains(err.Error(), "-nodcau") {
		t.Errorf("-data-cred with -nodcau: %v", err)
	}

	// Loading needs a user credential and a trust directory.
	dir := t.TempDir()
	ca, err := gsi.NewCA("/O=Ferry Test/CN=DCSC Test CA", gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user, err := ca.Issue(gsi.UserCert, "/O=Ferry Test/CN=DCSC User", gsi.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(dir, "proxy.pem")
	if err := gsi.WriteProxyFile(proxy, user); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteTrustDir(dir); err != nil {
		t.Fatal(err)
	}
	t.Setenv("X509_CERT_DIR", dir)
	g := &gsiFlags{cert: proxy, dataCred: "auto"}
	cfg, err := g.config()
	if err != nil {
		t.Fatal(err)
	}
	if dc := cfg.DataCredential; dc == nil || dc.Identity() != dcsec.AutoDataCredentialSubject || dc.Leaf().NotAfter.Before(time.Now().Add(24*time.Hour)) {
		t.Fatalf("-data-cred auto: %+v", cfg.DataCredential)
	}
	g = &gsiFlags{cert: proxy, dataCred: proxy}
	if cfg, err = g.config(); err != nil || cfg.DataCredential == nil || !cfg.DataCredential.Leaf().Equal(user.Leaf()) {
		t.Fatalf("-data-cred FILE: %v", err)
	}
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(bad, []byte("not a credential"), 0o600)
	for _, path := range []string{bad, filepath.Join(dir, "missing.pem")} {
		g = &gsiFlags{cert: proxy, dataCred: path}
		if _, err := g.config(); err == nil || !strings.Contains(err.Error(), "-data-cred") {
			t.Errorf("-data-cred %s: %v", path, err)
		}
	}
}

// TestDataCredNeedsGSI: ferry cp -data-cred refuses a copy with a server
// that is not gsiftp:// rather than run it without the credential.
func TestDataCredNeedsGSI(t *testing.T) {
	local := filepath.Join(t.TempDir(), "f")
	os.WriteFile(local, []byte("x"), 0o644)
	var out strings.Builder
	code := runMain(t.Context(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{"cp", "-data-cred", "auto", local, "ftp://127.0.0.1:1/f"})
	if code == 0 || !strings.Contains(out.String(), "-data-cred is for gsiftp://") {
		t.Fatalf("ferry cp -data-cred to ftp://: %d\n%s", code, out.String())
	}
}
