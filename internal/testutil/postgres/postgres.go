// Package postgres starts a private PostgreSQL server for tests that need
// a real one.
//
// Each Launch makes a new cluster in a temporary directory (initdb, user
// "ferry", trust authentication), starts it on 127.0.0.1 and a free
// port, and stops and removes it when the test ends. initdb refuses to
// run as root: when the tests do, the cluster belongs to, and runs as,
// the "postgres" user of Debian's package (through runuser). A missing
// PostgreSQL fails the test rather than skipping it: "make deps"
// installs it, so a skip would hide a broken setup.
package postgres

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// User is the cluster's superuser; it needs no password.
const User = "ferry"

// Server is a running private PostgreSQL server.
type Server struct {
	// Addr is where it listens, "127.0.0.1:PORT".
	Addr string

	bin    string   // the directory of initdb, pg_ctl, createdb
	asUser []string // the command prefix that runs the server's programs

	mu sync.Mutex
	n  int // databases made by NewDatabase; guarded by mu
}

// Start starts a server and returns the DSN of a new, empty database on
// it, for a test that needs one database.
func Start(t testing.TB) (dsn string) {
	t.Helper()
	return Launch(t).NewDatabase(t)
}

// debianInitdb is where Debian's packages put initdb, one directory per
// major version.
const debianInitdb = "/usr/lib/postgresql/*/bin/initdb"

// binDir finds the PostgreSQL server programs: the newest directory of
// the glob pattern (debianInitdb), else initdb on $PATH.
func binDir(pattern string) (string, error) {
	found, _ := filepath.Glob(pattern)
	if len(found) > 0 {
		version := func(p string) int {
			v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
			return v
		}
		slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
		return filepath.Dir(found[len(found)-1]), nil
	}
	p, err := exec.LookPath("initdb")
	if err != nil {
		return "", fmt.Errorf("PostgreSQL is required: no initdb in /usr/lib/postgresql/*/bin or $PATH; run make deps (it installs Debian's postgresql package)")
	}
	return filepath.Dir(p), nil
}

// Launch starts a new server, stopped and removed when the test ends.
func Launch(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir(debianInitdb)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	s := &Server{bin: bin}
	dir, err := os.MkdirTemp("", "ferry-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("postgres: remove %s: %v", dir, err)
		}
	})
	if os.Geteuid() == 0 {
		s.asUser = runAsPostgres(t, dir)
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run(filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--auth=trust",
		"--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		t.Fatalf("postgres: initdb: %v\n%s", err, out)
	}
	logFile := filepath.Join(dir, "log")
	// Another process may take the free port before the server does:
	// try a few.
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		opts := fmt.Sprintf("-k %s -p %d -c listen_addresses=127.0.0.1 -c fsync=off", dir, port)
		out, err := s.run(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", logFile, "-w", "-t", "60", "start")
		if err == nil {
			s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			break
		}
		log, _ := os.ReadFile(logFile)
		if attempt < 5 && bytes.Contains(log, []byte("could not bind")) {
			continue
		}
		t.Fatalf("postgres: pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		if out, err := s.run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"); err != nil {
			t.Errorf("postgres: pg_ctl stop: %v\n%s", err, out)
		}
	})
	return s
}

// runAsPostgres gives dir to the postgres user and returns the command
// prefix that runs a program as that user.
func runAsPostgres(t testing.TB, dir string) []string {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("postgres: running as root needs the postgres user to run the server: %v; run make deps (it installs Debian's postgresql package)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		for _, p := range []string{"/usr/sbin/runuser", "/sbin/runuser"} {
			if _, err := os.Stat(p); err == nil {
				runuser = p
				break
			}
		}
	}
	if runuser == "" {
		t.Fatalf("postgres: running as root needs runuser (util-linux) to run the server as postgres")
	}
	return []string{runuser, "-u", "postgres", "--"}
}

// run runs a server program (as the postgres user when the tests run as
// root) and returns its output.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	argv := append(slices.Clone(s.asUser), name)
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	// The server must not inherit the test's PG* settings.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd.CombinedOutput()
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// DSN returns the URL of database on the server, as user User without
// TLS.
func (s *Server) DSN(database string) string {
	return "postgres://" + User + "@" + s.Addr + "/" + database + "?sslmode=disable"
}

// NewDatabase creates a new, empty database on the server and returns
// its DSN. The database goes with the server when the test ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.n++
	name := "t" + strconv.Itoa(s.n)
	s.mu.Unlock()
	host, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(filepath.Join(s.bin, "createdb"), "-h", host, "-p", port, "-U", User, name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("postgres: createdb %s: %v\n%s", name, err, out)
	}
	return s.DSN(name)
}
