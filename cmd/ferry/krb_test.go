package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/krb5kdc"
)

// TestKerberosCp copies to and from ferry serve -keytab with ferry cp
// -krb, against a real MIT KDC, and checks that an unknown principal is
// refused.
func TestKerberosCp(t *testing.T) {
	k := krb5kdc.Start(t)
	for _, p := range []string{"ftp/localhost", "alice", "mallory"} {
		k.AddPrincipal(t, p)
	}
	kt := k.Keytab(t, "ftp.keytab", "ftp/localhost")
	kmap := filepath.Join(k.Dir, "krb-map")
	// The account must exist on the host: the server refuses others.
	if err := os.WriteFile(kmap, []byte("alice@"+krb5kdc.Realm+" nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("KRB5_CONFIG", k.Config)
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	_, addr := startServe(t, "-root", dir, "-keytab", kt, "-krb-map", kmap, "-run-as-mapped-user=false")
	port := regexp.MustCompile(`:(\d+)`).FindStringSubmatch(addr)
	if port == nil {
		t.Fatalf("no port in %q", addr)
	}
	base := "ftp://localhost:" + port[1]

	t.Setenv("KRB5CCNAME", "FILE:"+k.Kinit(t, "alice"))
	data := randomData(t, 3<<20)
	src := filepath.Join(t.TempDir(), "src.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, "cp", "-krb", src, base+"/up.bin")
	if got, _ := os.ReadFile(filepath.Join(dir, "up.bin")); !bytes.Equal(got, data) {
		t.Fatalf("upload: %d bytes, want %d", len(got), len(data))
	}
	dst := filepath.Join(t.TempDir(), "down.bin")
	ok(t, "cp", "-krb", "-krb-enc", base+"/up.bin", dst)
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Fatalf("download: %d bytes, want %d", len(got), len(data))
	}
	if r := ok(t, "ls", "-krb", base+"/"); !strings.Contains(r.stdout, "up.bin") {
		t.Fatalf("ls: %q", r.stdout)
	}

	// A principal the server does not map is refused at login.
	t.Setenv("KRB5CCNAME", "FILE:"+k.Kinit(t, "mallory"))
	r := ferry(t, nil, "cp", "-krb", base+"/up.bin", filepath.Join(t.TempDir(), "x"))
	if r.code == 0 || !strings.Contains(r.stderr, "530") {
		t.Fatalf("mallory: exit %d, stderr %q; want a 530 refusal", r.code, r.stderr)
	}
	// With a keytab instead of the credential cache.
	ukt := k.Keytab(t, "alice.keytab", "alice")
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "none"))
	ok(t, "cp", "-krb", "-krb-keytab", ukt, "-krb-principal", "alice", base+"/up.bin", filepath.Join(t.TempDir(), "y"))
}

// TestKerberosServeService: ferry serve -krb-service pins the service
// principal (a ticket for another ftp/ key of the keytab is refused), a
// keytab without its key is a start-up error, and -h says what happens
// without it.
func TestKerberosServeService(t *testing.T) {
	r := ferry(t, nil, "serve", "-h")
	if help := r.stdout + r.stderr; !strings.Contains(help, "-krb-service") || !strings.Contains(help, "any ftp/HOST key in the keytab is accepted") {
		t.Fatalf("serve -h does not document -krb-service and its default:\n%s", help)
	}
	k := krb5kdc.Start(t)
	for _, p := range []string{"ftp/localhost", "ftp/otherhost", "alice"} {
		k.AddPrincipal(t, p)
	}
	kt := k.Keytab(t, "ftp.keytab", "ftp/localhost", "ftp/otherhost")
	kmap := filepath.Join(k.Dir, "krb-map")
	if err := os.WriteFile(kmap, []byte("alice@"+krb5kdc.Realm+" nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KRB5_CONFIG", k.Config)
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "no-netrc"))
	t.Setenv("KRB5CCNAME", "FILE:"+k.Kinit(t, "alice"))

	if r := ferry(t, nil, "serve", "-listen", "127.0.0.1:0", "-root", t.TempDir(), "-keytab", kt, "-krb-service", "ftp/nohost"); r.code == 0 || !strings.Contains(r.stderr, "ftp/nohost") {
		t.Fatalf("serve -krb-service without its key: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, c := range []struct {
		service string
		ok      bool
	}{{"ftp/localhost", true}, {"ftp/otherhost", false}} {
		_, addr := startServe(t, "-root", t.TempDir(), "-keytab", kt, "-krb-map", kmap, "-krb-service", c.service, "-run-as-mapped-user=false")
		port := regexp.MustCompile(`:(\d+)`).FindStringSubmatch(addr)
		r := ferry(t, nil, "ls", "-krb", "ftp://localhost:"+port[1]+"/")
		if c.ok && r.code != 0 || !c.ok && (r.code == 0 || !strings.Contains(r.stderr, "535")) {
			t.Errorf("-krb-service %s, ticket for ftp/localhost: exit %d, stderr %q", c.service, r.code, r.stderr)
		}
	}
}
