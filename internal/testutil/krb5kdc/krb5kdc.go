// Package krb5kdc starts a private MIT Kerberos KDC for tests that need a
// real one.
//
// Start makes a new realm in a temporary directory (kdb5_util create),
// runs krb5kdc in the foreground on 127.0.0.1 and a free port (UDP and
// TCP), and stops it when the test ends. Principals, keytabs and
// credential caches are made with kadmin.local and kinit, with
// KRB5_CONFIG and KRB5_KDC_PROFILE pointing at the temporary files, so
// the machine's own Kerberos configuration is never read or changed. Only
// AES enctypes are enabled (RFC 4121 tokens). A missing KDC fails the
// test rather than skipping it: "make deps" installs krb5-kdc,
// krb5-admin-server and krb5-user.
package krb5kdc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// Realm is the test realm.
const Realm = "FERRY.TEST"

// KDC is a running private KDC.
type KDC struct {
	// Realm is the realm's name (Realm).
	Realm string
	// Dir holds the database, the configuration files and the keytabs.
	Dir string
	// Config is the krb5.conf for clients and servers of the realm.
	Config string
	// Addr is where the KDC listens, "127.0.0.1:PORT".
	Addr string

	env []string
}

const enctypes = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96"

// Start creates a realm and starts its KDC.
func Start(t testing.TB) *KDC {
	t.Helper()
	for _, p := range []string{"krb5kdc", "kdb5_util", "kadmin.local", "kinit"} {
		if _, err := lookPath(p); err != nil {
			t.Fatalf("krb5kdc: %s not found (run make deps: krb5-kdc, krb5-admin-server, krb5-user): %v", p, err)
		}
	}
	dir := t.TempDir()
	port := gct.FreePort(t)
	k := &KDC{Realm: Realm, Dir: dir, Config: filepath.Join(dir, "krb5.conf"), Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	kdcConf := filepath.Join(dir, "kdc.conf")
	write(t, kdcConf, fmt.Sprintf(`[kdcdefaults]
 kdc_listen = 127.0.0.1:%[2]d
 kdc_tcp_listen = 127.0.0.1:%[2]d
[realms]
 %[1]s = {
  database_name = %[3]s/principal
  key_stash_file = %[3]s/stash
  acl_file = %[3]s/kadm5.acl
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  max_life = 1h
 }
[logging]
 kdc = FILE:%[3]s/kdc.log
 admin_server = FILE:%[3]s/kadmin.log
 default = FILE:%[3]s/krb5.log
`, Realm, port, dir))
	write(t, k.Config, fmt.Sprintf(`[libdefaults]
 default_realm = %[1]s
 dns_lookup_kdc = false
 dns_lookup_realm = false
 rdns = false
 dns_canonicalize_hostname = false
 udp_preference_limit = 1
 default_tkt_enctypes = %[4]s
 default_tgs_enctypes = %[4]s
 permitted_enctypes = %[4]s
 default_ccache_name = FILE:%[3]s/ccache
 kdc_timesync = 0
[realms]
 %[1]s = {
  kdc = 127.0.0.1:%[2]d
 }
[domain_realm]
 localhost = %[1]s
 127.0.0.1 = %[1]s
`, Realm, port, dir, enctypes))
	write(t, filepath.Join(dir, "kadm5.acl"), "")
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.Config, "KRB5_KDC_PROFILE="+kdcConf, "KRB5CCNAME=FILE:"+filepath.Join(dir, "ccache"))
	k.run(t, "kdb5_util", "create", "-s", "-P", "ferry-master-pw", "-r", Realm)
	kdc, _ := lookPath("krb5kdc")
	cmd := exec.Command(kdc, "-n", "-r", Realm)
	cmd.Env = k.env
	logf, err := os.Create(filepath.Join(dir, "krb5kdc.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("krb5kdc: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", k.Addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(filepath.Join(dir, "krb5kdc.out"))
			log, _ := os.ReadFile(filepath.Join(dir, "kdc.log"))
			t.Fatalf("krb5kdc exited: %s %s", out, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("krb5kdc: not listening on %s: %v", k.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return k
}

// Env is the environment for Kerberos programs using this realm:
// KRB5_CONFIG, KRB5_KDC_PROFILE and a KRB5CCNAME in Dir.
func (k *KDC) Env() []string { return append([]string(nil), k.env...) }

// AddPrincipal adds a principal with a random key ("alice",
// "ftp/localhost").
func (k *KDC) AddPrincipal(t testing.TB, name string) {
	t.Helper()
	k.run(t, "kadmin.local", "-r", Realm, "-q", "addprinc -randkey "+name)
}

// Keytab writes the keys of the named principals into a new keytab file
// and returns its path.
func (k *KDC) Keytab(t testing.TB, name string, principals ...string) string {
	t.Helper()
	path := filepath.Join(k.Dir, name)
	for _, p := range principals {
		k.run(t, "kadmin.local", "-r", Realm, "-q", fmt.Sprintf("ktadd -k %s -norandkey %s", path, p))
	}
	return path
}

// Kinit gets a TGT for principal (from a keytab made for it) into a new
// credential cache and returns the cache's path.
func (k *KDC) Kinit(t testing.TB, principal string) string {
	t.Helper()
	kt := k.Keytab(t, strings.ReplaceAll(principal, "/", "_")+".keytab", principal)
	cc := filepath.Join(k.Dir, "cc_"+strings.ReplaceAll(principal, "/", "_"))
	k.run(t, "kinit", "-k", "-t", kt, "-c", "FILE:"+cc, principal)
	return cc
}

func (k *KDC) run(t testing.TB, prog string, args ...string) {
	t.Helper()
	p, err := lookPath(prog)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p, args...)
	cmd.Env = k.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("krb5kdc: %s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
}

// lookPath finds prog on $PATH or in /usr/sbin, where Debian puts the KDC
// programs.
func lookPath(prog string) (string, error) {
	if p, err := exec.LookPath(prog); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", prog)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not on $PATH nor in /usr/sbin", prog)
	}
	return p, nil
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
