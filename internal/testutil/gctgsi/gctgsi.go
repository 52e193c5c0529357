// Package gctgsi starts the Grid Community Toolkit GridFTP server
// (globus-gridftp-server) with GSI, for tests of gsiftp:// clients
// against the reference peer.
//
// The server runs as root on 127.0.0.1 with a kernel-chosen port, with
// the host credential, trust directory and grid-mapfile of a gsipki.PKI
// (X509_USER_CERT, X509_USER_KEY, X509_CERT_DIR, GRIDMAP) and no
// configuration file (-c /dev/null). Each session process switches to
// the account the grid-mapfile names. The server and its session
// processes are killed when the test ends; its log is printed if the test
// failed. A missing binary fails the test.
package gctgsi

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// startTimeout bounds how long Start waits for the server to listen.
const startTimeout = 30 * time.Second

// Options modify Start. The zero value serves with the PKI's host
// credential and GCT's default TLS versions.
type Options struct {
	// HostCert and HostKey replace the PKI's host credential.
	HostCert, HostKey string
	// TrustDir and GridMap replace the PKI's.
	TrustDir, GridMap string
	// MaxTLS12 caps the server at TLS 1.2
	// (GLOBUS_GSSAPI_MAX_TLS_PROTOCOL=TLS1_2_VERSION).
	MaxTLS12 bool
	// Env holds more environment variables ("NAME=value").
	Env []string
	// Args holds more server options.
	Args []string
}

// Server is a running GCT GSI server.
type Server struct {
	// Addr is the control address, "127.0.0.1:PORT".
	Addr string
	// Log is the server's log file (-log-level ALL).
	Log string

	pid  int
	once sync.Once
	kill func()
}

// Dir returns a new directory for the server's sessions, owned by the
// PKI's mapped account (so that uploads work) and readable by everyone,
// removed when the test ends.
func Dir(t testing.TB, pki *gsipki.PKI) string {
	t.Helper()
	uid, gid := gsipki.EnsureAccount(t, pki.Account)
	dir, err := os.MkdirTemp("", "ferry-gctgsi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteFile writes a file into a Dir, owned by the mapped account.
func WriteFile(t testing.TB, pki *gsipki.PKI, name string, data []byte) {
	t.Helper()
	uid, gid := gsipki.EnsureAccount(t, pki.Account)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(name, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// Start starts a GSI GCT server for pki and returns it.
func Start(t testing.TB, pki *gsipki.PKI, opt *Options) *Server {
	t.Helper()
	var o Options
	if opt != nil {
		o = *opt
	}
	if _, err := os.Stat(gct.Binary); err != nil {
		t.Fatalf("gctgsi: the GCT GridFTP server is required: %v", err)
	}
	if o.HostCert == "" {
		o.HostCert, o.HostKey = pki.HostCert, pki.HostKey
	}
	if o.TrustDir == "" {
		o.TrustDir = pki.TrustDir
	}
	if o.GridMap == "" {
		o.GridMap = pki.GridMap
	}
	logDir, err := os.MkdirTemp("", "ferry-gctgsi-log-")
	if err != nil {
		t.Fatal(err)
	}
	// Session processes run as the mapped account and log there too.
	if err := os.Chmod(logDir, 0o777); err != nil {
		t.Fatal(err)
	}
	s := &Server{Log: filepath.Join(logDir, "gridftp.log")}
	args := []string{
		"-c", "/dev/null",
		"-p", "0",
		"-control-interface", "127.0.0.1",
		"-data-interface", "127.0.0.1",
		"-disable-usage-stats",
		"-log-level", "ALL",
		"-logfile", s.Log,
	}
	cmd := exec.Command(gct.Binary, append(args, o.Args...)...)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/root"}
	env = append(env,
		"X509_USER_CERT="+o.HostCert,
		"X509_USER_KEY="+o.HostKey,
		"X509_CERT_DIR="+o.TrustDir,
		"GRIDMAP="+o.GridMap,
	)
	if o.MaxTLS12 {
		env = append(env, "GLOBUS_GSSAPI_MAX_TLS_PROTOCOL=TLS1_2_VERSION")
	}
	cmd.Env = append(env, o.Env...)
	out := gct.NewWatcher()
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	gct.AdoptOrphans()
	if err := cmd.Start(); err != nil {
		t.Fatalf("gctgsi: %v", err)
	}
	s.pid = cmd.Process.Pid
	s.kill = func() {
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		_ = cmd.Wait()
		gct.ReapGroup(s.pid)
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			if b, err := os.ReadFile(s.Log); err == nil {
				if len(b) > 20000 {
					b = b[len(b)-20000:]
				}
				t.Logf("gctgsi: server log (tail):\n%s", b)
			}
		}
		os.RemoveAll(logDir)
	})
	select {
	case p := <-out.Found():
		s.Addr = "127.0.0.1:" + p
		return s
	case <-time.After(startTimeout):
		s.Kill()
		t.Fatalf("gctgsi: server did not report its port within %v; output %q", startTimeout, out.String())
	}
	return nil
}

// Port returns the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Kill kills the server and its session processes and waits for them.
// Later calls do nothing.
func (s *Server) Kill() { s.once.Do(s.kill) }
