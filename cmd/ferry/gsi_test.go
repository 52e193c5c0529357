package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// gsiServer is a GCT GSI server for the client subcommands, with the
// environment pointing at its PKI: X509_CERT_DIR, and X509_USER_PROXY at
// a proxy made with the gsi package.
type gsiServer struct {
	pki   *gsipki.PKI
	dir   string // served directory, owned by the mapped account
	url   string // gsiftp:// URL of dir
	proxy string
}

func startGSI(t *testing.T, pki *gsipki.PKI, opt *gctgsi.Options) gsiServer {
	t.Helper()
	if pki == nil {
		pki = gsipki.New(t, "")
	}
	srv := gctgsi.Start(t, pki, opt)
	dir := gctgsi.Dir(t, pki)
	s := gsiServer{pki: pki, dir: dir, url: "gsiftp://" + srv.Addr + dir, proxy: pki.Proxy(t, gsi.ProxyOptions{})}
	t.Setenv("X509_CERT_DIR", pki.TrustDir)
	t.Setenv("X509_USER_PROXY", s.proxy)
	return s
}

func TestGSICpGCT(t *testing.T) {
	s := startGSI(t, nil, nil)
	local := t.TempDir()
	for _, size := range []int{0, 1, 10 << 20} {
		data := randomData(t, size)
		src := filepath.Join(local, fmt.Sprintf("src-%d", size))
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, sec := range [][]string{nil, {"-nodcau"}, {"-dcsafe"}, {"-dcpriv"}} {
			for _, par := range [][]string{nil, {"-p", "4"}} {
				flags := append(append([]string{}, sec...), par...)
				name := fmt.Sprintf("%d%s", size, strings.ReplaceAll(strings.Join(flags, ""), " ", ""))
				remote := s.url + "/" + name
				start := time.Now()
				ok(t, append(append([]string{"cp"}, flags...), src, remote)...)
				if got := mustRead(t, filepath.Join(s.dir, name)); !bytes.Equal(got, data) {
					t.Fatalf("cp %v upload %s: server file has %d bytes, want %d", flags, name, len(got), len(data))
				}
				dst := filepath.Join(local, "dst-"+name)
				ok(t, append(append([]string{"cp"}, flags...), remote, dst)...)
				if got := mustRead(t, dst); !bytes.Equal(got, data) {
					t.Fatalf("cp %v download %s: got %d bytes, want %d", flags, name, len(got), len(data))
				}
				if size > 1 {
					t.Logf("cp %v: %d bytes up and down in %v (two GSI logins)", flags, size, time.Since(start).Round(time.Millisecond))
				}
			}
		}
	}
}

func TestGSIProxiesTLSGCT(t *testing.T) {
	pki := gsipki.New(t, "")
	s13 := startGSI(t, pki, nil)
	s12 := startGSI(t, pki, &gctgsi.Options{MaxTLS12: true})
	gctProxy := pki.GCTProxy(t)
	data := randomData(t, 1<<20+3)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		srv  gsiServer
	}{{"tls13", s13}, {"tls12", s12}} {
		for _, cred := range []struct{ name, file string }{{"ferry-proxy", s.srv.proxy}, {"grid-proxy-init", gctProxy}} {
			for _, sec := range [][]string{nil, {"-dcpriv", "-p", "4"}} {
				flags := append([]string{"-cert", cred.file}, sec...)
				name := s.name + "-" + cred.name + strings.Join(sec, "")
				ok(t, append(append([]string{"cp"}, flags...), src, s.srv.url+"/"+name)...)
				dst := filepath.Join(t.TempDir(), name)
				ok(t, append(append([]string{"cp"}, flags...), s.srv.url+"/"+name, dst)...)
				if got := mustRead(t, dst); !bytes.Equal(got, data) {
					t.Fatalf("%s: contents differ", name)
				}
			}
		}
	}
	// The proxy from the environment: X509_USER_PROXY names a GCT proxy.
	t.Setenv("X509_USER_PROXY", gctProxy)
	r := ok(t, "ls", s12.url+"/")
	if !strings.Contains(r.stdout, "tls12-grid-proxy-init\n") {
		t.Errorf("ls: %q", r.stdout)
	}
}

func TestGSIFileOpsGCT(t *testing.T) {
	s := startGSI(t, nil, nil)
	data := randomData(t, 123457)
	gctgsi.WriteFile(t, s.pki, filepath.Join(s.dir, "f.bin"), data)

	r := ok(t, "ls", "-l", s.url+"/")
	if !strings.Contains(r.stdout, "123457") || !strings.Contains(r.stdout, "f.bin") {
		t.Errorf("ls -l: %q", r.stdout)
	}
	r = ok(t, "ls", "-nodcau", "-active", s.url)
	if r.stdout != "f.bin\n" {
		t.Errorf("ls -nodcau -active: %q", r.stdout)
	}
	r = ok(t, "cksum", s.url+"/f.bin")
	sum := md5.Sum(data)
	if !strings.HasPrefix(r.stdout, hex.EncodeToString(sum[:])+"  ") {
		t.Errorf("cksum: %q, want %x", r.stdout, sum)
	}
	ok(t, "mkdir", "-p", s.url+"/a/b")
	ok(t, "mv", s.url+"/f.bin", "a/b/g.bin")
	if got := mustRead(t, filepath.Join(s.dir, "a", "b", "g.bin")); !bytes.Equal(got, data) {
		t.Fatal("mv: contents differ")
	}
	ok(t, "rm", s.url+"/a/b/g.bin")
	ok(t, "rm", "-d", s.url+"/a/b")
	if _, err := os.Stat(filepath.Join(s.dir, "a", "b")); !os.IsNotExist(err) {
		t.Errorf("rm -d: %v", err)
	}
	// The user in the URL asks for that account; -nodelegate works with
	// plain data channels.
	gctgsi.WriteFile(t, s.pki, filepath.Join(s.dir, "h"), data)
	dst := filepath.Join(t.TempDir(), "h")
	ok(t, "cp", "-nodelegate", "-nodcau", "gsiftp://"+s.pki.Account+"@"+strings.TrimPrefix(s.url, "gsiftp://")+"/h", dst)
	if got := mustRead(t, dst); !bytes.Equal(got, data) {
		t.Fatal("cp -nodelegate: contents differ")
	}
}

// fails runs a subcommand that must fail soon with an error containing
// all of want.
func fails(t *testing.T, want []string, args ...string) {
	t.Helper()
	start := time.Now()
	r := ferry(t, nil, args...)
	if r.code == 0 {
		t.Fatalf("ferry %s succeeded", strings.Join(args, " "))
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("ferry %s: stderr %q lacks %q", strings.Join(args, " "), r.stderr, w)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("ferry %s took %v to fail", strings.Join(args, " "), d)
	}
	t.Logf("ferry %s: %s", args[0], strings.TrimSpace(r.stderr))
}

func TestGSIBadInputCLI(t *testing.T) {
	s := startGSI(t, nil, nil)
	local := filepath.Join(t.TempDir(), "x")
	gctgsi.WriteFile(t, s.pki, filepath.Join(s.dir, "f"), []byte("x"))

	fails(t, []string{"expired"}, "cp", "-cert", s.pki.ExpiredProxy(t), s.url+"/f", local)
	t.Setenv("X509_USER_PROXY", s.pki.ExpiredProxy(t))
	fails(t, []string{"expired", "X509_USER_PROXY"}, "ls", s.url)

	// No credential anywhere: the message says where ferry looked.
	t.Setenv("X509_USER_PROXY", "")
	t.Setenv("X509_USER_CERT", "")
	t.Setenv("X509_USER_KEY", "")
	t.Setenv("HOME", t.TempDir())
	if _, err := os.Stat(gsi.DefaultProxyPath()); err == nil {
		t.Logf("%s exists; skipping the no-credential case", gsi.DefaultProxyPath())
	} else {
		fails(t, []string{"no credential found", gsi.DefaultProxyPath(), "usercert.pem"}, "cp", s.url+"/f", local)
	}

	// A trust directory without the server's CA.
	other := gsipki.New(t, "")
	t.Setenv("X509_CERT_DIR", other.TrustDir)
	fails(t, []string{"server certificate", "trust directory"}, "cp", "-cert", s.proxy, s.url+"/f", local)
	t.Setenv("X509_CERT_DIR", s.pki.TrustDir)

	// A wrong expected subject; then the host name "localhost", which the
	// certificate names too, works.
	fails(t, []string{"expected subject", gsipki.HostDN}, "cp", "-cert", s.proxy, "-ss", gsipki.Org+"/CN=other", s.url+"/f", local)
	ok(t, "cp", "-cert", s.proxy, strings.Replace(s.url, "127.0.0.1", "localhost", 1)+"/f", local)

	// Flag combinations that make no sense.
	fails(t, []string{"-nodcau"}, "cp", "-nodcau", "-dcpriv", s.url+"/f", local)
	fails(t, []string{"-key needs -cert"}, "cp", "-key", s.proxy, s.url+"/f", local)
}
