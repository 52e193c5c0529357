package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// mover is a running "ferry mover" on its own loopback address.
type mover struct {
	addr string
	log  *syncBuffer
	cmd  *exec.Cmd
	done chan struct{}
}

var moverListening = regexp.MustCompile(`^Mover listening at (\S+)\n`)

// startMover runs "ferry mover" on listen (host:port, port 0 picks one)
// serving root with the shared secret in secretFile, with extra flags.
// It is killed when the test ends.
func startMover(t *testing.T, listen, root, secretFile string, extra ...string) *mover {
	t.Helper()
	cmd := exec.Command(ferryBin, append([]string{"mover", "-listen", listen, "-root", root, "-secret", secretFile,
		"-heartbeat", "100ms", "-timeout", "2s"}, extra...)...)
	out := &lineWatcher{first: make(chan string, 1)}
	m := &mover{log: &syncBuffer{}, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, m.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		m.signal(syscall.SIGCONT)
		m.signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			m.signal(syscall.SIGKILL)
			<-m.done
		}
		if l := m.log.String(); strings.Contains(l, "panic") || strings.Contains(l, "DATA RACE") {
			t.Errorf("ferry mover log shows a panic or race:\n%s", l)
		}
		if t.Failed() {
			t.Logf("ferry mover %s log:\n%s", m.addr, m.log)
		}
	})
	select {
	case line := <-out.first:
		mm := moverListening.FindStringSubmatch(line)
		if mm == nil {
			t.Fatalf("ferry mover: first line %q", line)
		}
		m.addr = mm[1]
	case <-m.done:
		t.Fatalf("ferry mover exited early:\n%s", m.log)
	case <-time.After(30 * time.Second):
		t.Fatal("ferry mover did not start within 30s")
	}
	return m
}

func (m *mover) signal(sig syscall.Signal) {
	if m.cmd.Process != nil {
		m.cmd.Process.Signal(sig)
	}
}

// kill ends the mover abruptly (SIGKILL) and waits for it.
func (m *mover) kill() {
	m.signal(syscall.SIGKILL)
	<-m.done
}

// striped is a striped Ferry: a frontend and its movers over one root.
type striped struct {
	*server
	movers []*mover
	secret string
}

func secretFile(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(f, []byte("interop-stripe-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// startStriped runs n movers on 127.0.0.2, 127.0.0.3, ... and a frontend
// driving them, all serving root; extra flags go to the frontend.
func startStriped(t *testing.T, root string, n int, extra ...string) *striped {
	t.Helper()
	s := &striped{secret: secretFile(t)}
	var addrs []string
	for i := range n {
		m := startMover(t, fmt.Sprintf("127.0.0.%d:0", 2+i), root, s.secret)
		s.movers = append(s.movers, m)
		addrs = append(addrs, m.addr)
	}
	flags := []string{"-anonymous-write", "-allow-foreign-data", "-movers", strings.Join(addrs, ","),
		"-mover-secret", s.secret, "-mover-heartbeat", "100ms", "-mover-timeout", "2s", "-log-level", "debug"}
	s.server = startFerry(t, root, append(flags, extra...)...)
	s.waitUp(t, n)
	if !slices.Contains(extra, "-cert") && strings.Contains(s.server.log.String(), "grid-mapped") {
		// Without a host credential there are no grid-mapped accounts.
		t.Errorf("a striped server without GSI warns about grid-mapped accounts:\n%s", s.server.log.String())
	}
	if os.Getenv("X509_CERT_DIR") == "" {
		for _, m := range s.movers {
			// Nothing needs a credential on a mover without GSI.
			if strings.Contains(m.log.String(), "level=INFO msg=\"no host credential") {
				t.Errorf("mover %s warns about its missing host credential:\n%s", m.addr, m.log.String())
			}
		}
	}
	return s
}

// waitUp waits until the frontend reports n movers up (SITE STRIPES).
func (s *striped) waitUp(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := greeted(t, s.addr)
		c.login()
		_, text := c.cmd("SITE STRIPES")
		c.cmd("QUIT")
		if strings.Count(text, " up since") == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("movers not up within 20s: %s", text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// moved reports how many bytes each mover logged for path since mark[i]
// (the log length at an earlier point).
func (s *striped) moved(op, path string, mark []int) []int64 {
	re := regexp.MustCompile(`msg=transfer .*op=` + op + ` path=` + regexp.QuoteMeta(path) + ` bytes=(\d+)`)
	got := make([]int64, len(s.movers))
	for i, m := range s.movers {
		l := m.log.String()[mark[i]:]
		for _, mm := range re.FindAllStringSubmatch(l, -1) {
			var n int64
			fmt.Sscan(mm[1], &n)
			got[i] += n
		}
	}
	return got
}

func (s *striped) marks() []int {
	mk := make([]int, len(s.movers))
	for i, m := range s.movers {
		mk[i] = len(m.log.String())
	}
	return mk
}

// TestStripedGlobusURLCopy: globus-url-copy against a striped Ferry
// (frontend and three movers on distinct addresses). Uploads with
// -stripe get SPAS (three addresses); downloads send PORT and every mover
// sends its stripes.
//
// globus-url-copy -stripe -sbs N uploads are left out: they hang in
// globus-url-copy whatever the server. Uploading 10,000,003 bytes with
// -sbs 65536 to two stripes, guc (-dbg) reads its last buffer (offset
// 9,437,184, 562,819 bytes, eof) but sends only one 64 KiB block of it to
// each stripe before the EOFs, so each stripe ends after 4,784,128 bytes
// (9,568,256 in all), and then it waits forever for the rest of that
// buffer to be written. A striped GCT server (globus-gridftp-server -r
// with two -dn data nodes) gets exactly the same 9,568,256 bytes and
// even answers 226; a striped Ferry refuses the short file (426: the
// stripes ended before the bytes announced with ALLO). guc hangs after
// either reply. Without -sbs (1 MiB blocks) the uploads are complete.
func TestStripedGlobusURLCopy(t *testing.T) {
	root := t.TempDir()
	s := startStriped(t, root, 3)
	const size = 12<<20 + 3
	want := writeRandom(t, filepath.Join(root, "src.bin"), size, 11)
	local := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"stripe", []string{"-stripe"}},
		{"stripe-p2", []string{"-stripe", "-p", "2"}},
		{"stripe-sbs", []string{"-stripe", "-sbs", "65536"}},
		{"stripe-p2-sbs", []string{"-stripe", "-p", "2", "-sbs", "262144"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := filepath.Join(local, tc.name)
			mark := s.marks()
			mustRun(t, "", "", "globus-url-copy", append(append([]string{}, tc.flags...), s.url("/src.bin"), "file://"+got)...)
			sameFile(t, got, want)
			s.checkShares(t, "send", "/src.bin", mark, size)
			if strings.Contains(strings.Join(tc.flags, " "), "-sbs") {
				return // see the test's comment
			}
			up := "/up-" + tc.name
			mustRun(t, "", "", "globus-url-copy", append(append([]string{}, tc.flags...), "file://"+got, s.url(up))...)
			sameFile(t, filepath.Join(root, up), want)
		})
	}
	// ferry cp -stripe: downloads accept the movers' connections; uploads
	// send to every SPAS address, each mover receives its stripes.
	got := filepath.Join(local, "ferry-cp")
	mark := s.marks()
	ferry(t, "cp", "-q", "-stripe", "-p", "2", s.url("/src.bin"), got)
	sameFile(t, got, want)
	s.checkShares(t, "send", "/src.bin", mark, size)
	for _, sbs := range []string{"0", "65536"} {
		mark = s.marks()
		up := "/up-ferry-cp-" + sbs
		ferry(t, "cp", "-q", "-stripe", "-sbs", sbs, "-p", "2", got, s.url(up))
		sameFile(t, filepath.Join(root, up), want)
		s.checkShares(t, "receive", partOf(up), mark, size)
	}
}

// partOf is the hidden file an upload to p is written to until it is
// complete (the movers write there; the frontend renames it).
func partOf(p string) string {
	dir, base := path.Split(p)
	return dir + "." + base + ".ferry-part"
}

// checkShares checks that every mover moved part of path (op: send or
// receive) since mark, size bytes in all. Their logs reach us through a
// pipe: wait a little for the lines.
func (s *striped) checkShares(t *testing.T, op, path string, mark []int, size int64) {
	t.Helper()
	var moved []int64
	var sum int64
	for range 50 {
		moved = s.moved(op, path, mark)
		sum = 0
		for _, n := range moved {
			sum += n
		}
		if sum == size {
			break
		}
		time.Sleep(40 * time.Millisecond)
	}
	for i, n := range moved {
		if n == 0 {
			t.Errorf("%s %s: mover %d moved nothing", op, path, i)
		}
	}
	if sum != size {
		t.Errorf("%s %s: movers moved %d bytes in all, want %d", op, path, sum, size)
	}
}

// TestStripedThirdParty: third-party copies between a striped Ferry and
// a plain one, both ways, steered by globus-url-copy -stripe and by ferry
// cp -stripe. From the striped side every mover connects to the plain
// server, which therefore allows foreign data connections.
func TestStripedThirdParty(t *testing.T) {
	sroot := t.TempDir()
	s := startStriped(t, sroot, 2)
	proot := t.TempDir()
	plain := startFerry(t, proot, "-anonymous-write", "-allow-foreign-data")
	const size = 9<<20 + 1
	want := writeRandom(t, filepath.Join(sroot, "src.bin"), size, 5)
	writeRandom(t, filepath.Join(proot, "src.bin"), size, 5)
	for _, tc := range []struct {
		name     string
		tool     []string
		src, dst string
		file     string
	}{
		{"guc-striped-plain", []string{"globus-url-copy", "-stripe", "-p", "2"}, s.url("/src.bin"), plain.url("/a.bin"), filepath.Join(proot, "a.bin")},
		{"guc-plain-striped", []string{"globus-url-copy", "-stripe", "-p", "2"}, plain.url("/src.bin"), s.url("/b.bin"), filepath.Join(sroot, "b.bin")},
		{"ferry-striped-plain", []string{ferryBin, "cp", "-q", "-stripe", "-p", "2"}, s.url("/src.bin"), plain.url("/c.bin"), filepath.Join(proot, "c.bin")},
		{"ferry-plain-striped", []string{ferryBin, "cp", "-q", "-stripe", "-p", "2"}, plain.url("/src.bin"), s.url("/d.bin"), filepath.Join(sroot, "d.bin")},
		{"ferry-striped-plain-sbs", []string{ferryBin, "cp", "-q", "-stripe", "-sbs", "65536"}, s.url("/src.bin"), plain.url("/e.bin"), filepath.Join(proot, "e.bin")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustRun(t, "", "", tc.tool[0], append(append([]string{}, tc.tool[1:]...), tc.src, tc.dst)...)
			sameFile(t, tc.file, want)
		})
	}
}

// TestStripedFaults: a mover that hangs (SIGSTOP) or dies (SIGKILL)
// fails the transfer with an error naming it within the heartbeat
// timeout, and the frontend reports it down; once it is back (SIGCONT,
// or started again on its address) the copy works again.
func TestStripedFaults(t *testing.T) {
	root := t.TempDir()
	// With -movers-min 2 a transfer needs both movers: one the frontend
	// already knows is down fails it (425) as surely as one that dies
	// during it (426); either reply names the mover.
	s := startStriped(t, root, 2, "-movers-min", "2")
	want := writeRandom(t, filepath.Join(root, "src.bin"), 4<<20, 3)
	got := filepath.Join(t.TempDir(), "got")
	m := s.movers[1]
	for _, fault := range []string{"hang", "kill"} {
		t.Run(fault, func(t *testing.T) {
			switch fault {
			case "hang":
				m.signal(syscall.SIGSTOP)
			case "kill":
				m.kill()
			}
			start := time.Now()
			r := run(t, "", "", ferryBin, "cp", "-stripe", "-p", "2", s.url("/src.bin"), got)
			took := time.Since(start)
			if r.code == 0 || !strings.Contains(r.stderr, m.addr) {
				t.Errorf("copy with a %s mover: want a failure naming %s: %v", fault, m.addr, r)
			}
			if took > 20*time.Second {
				t.Errorf("the failure took %v", took)
			}
			c := greeted(t, s.addr)
			c.login()
			// Anonymous users see each stripe's health, not its address.
			if _, text := c.cmd("SITE STRIPES"); !strings.Contains(text, "stripe 1 down") || strings.Contains(text, m.addr) {
				t.Errorf("SITE STRIPES does not show stripe 1 (%s) down, without its address:\n%s", m.addr, text)
			}
			c.cmd("QUIT")
			switch fault {
			case "hang":
				m.signal(syscall.SIGCONT)
			case "kill":
				// Go listens with SO_REUSEADDR: the address is free at once.
				s.movers[1] = startMover(t, m.addr, root, s.secret)
				m = s.movers[1]
			}
			s.waitUp(t, 2)
			ferry(t, "cp", "-q", "-stripe", "-p", "2", s.url("/src.bin"), got)
			sameFile(t, got, want)
		})
	}
	if !strings.Contains(s.log.String(), "mover down") || !strings.Contains(s.log.String(), "mover up") {
		t.Errorf("the frontend's log has no mover health changes:\n%s", s.log)
	}
}

// TestStripedGCT: third-party copies between a striped Ferry (two movers)
// and a striped GCT server (a frontend with -r and two data nodes with
// -dn on their own data addresses), both ways: SPAS on the destination
// answers two addresses and the source gets SPOR with both, so each
// sending node feeds the receiving nodes directly.
func TestStripedGCT(t *testing.T) {
	sroot := t.TempDir()
	s := startStriped(t, sroot, 2)
	groot := gct.Dir(t)
	p1, p2 := gct.FreePort(t), gct.FreePort(t)
	gct.Launch(t, groot, p1, "-dn", "-data-interface", "127.0.0.4")
	gct.Launch(t, groot, p2, "-dn", "-data-interface", "127.0.0.5")
	g := gct.Launch(t, groot, gct.FreePort(t), "-r", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", p1, p2))
	gurl := func(name string) string { return "ftp://" + g.Addr + filepath.Join(groot, name) }
	const size = 9<<20 + 7
	want := writeRandom(t, filepath.Join(sroot, "src.bin"), size, 9)
	writeRandom(t, filepath.Join(groot, "src.bin"), size, 9)
	for _, tc := range []struct {
		name     string
		tool     []string
		src, dst string
		file     string
	}{
		{"guc-ferry-gct", []string{"globus-url-copy", "-stripe", "-dbg"}, s.url("/src.bin"), gurl("a.bin"), filepath.Join(groot, "a.bin")},
		{"guc-gct-ferry", []string{"globus-url-copy", "-stripe", "-dbg"}, gurl("src.bin"), s.url("/b.bin"), filepath.Join(sroot, "b.bin")},
		{"ferry-ferry-gct", []string{ferryBin, "cp", "-q", "-stripe", "-p", "2"}, s.url("/src.bin"), gurl("c.bin"), filepath.Join(groot, "c.bin")},
		{"ferry-gct-ferry", []string{ferryBin, "cp", "-q", "-stripe", "-p", "2"}, gurl("src.bin"), s.url("/d.bin"), filepath.Join(sroot, "d.bin")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", "", tc.tool[0], append(append([]string{}, tc.tool[1:]...), tc.src, tc.dst)...)
			if r.code != 0 {
				t.Fatalf("%s: %v", tc.name, r)
			}
			sameFile(t, tc.file, want)
			if tc.tool[0] == "globus-url-copy" {
				if !regexp.MustCompile(`SPOR \S+ \S+`).MatchString(r.stdout + r.stderr) {
					t.Errorf("the source did not get SPOR with two addresses")
				}
			}
		})
	}
}

// TestStripedGSI: globus-url-copy -stripe over gsiftp:// against a striped
// GSI Ferry with the default DCAU (A: every mover presents the session's
// delegated proxy and accepts only the user's own identity), with PROT P,
// and with DCAU N, and ferry cp -stripe with DCAU A both ways; every mover
// moves its part (of a download; and of ferry cp's upload).
func TestStripedGSI(t *testing.T) {
	p := newPKI(t) // sets X509_CERT_DIR, which the movers inherit
	root := t.TempDir()
	os.Chmod(root, 0o755)
	s := &striped{secret: secretFile(t)}
	var addrs []string
	for i := range 2 {
		// The host credential serves sessions without a delegated proxy.
		m := startMover(t, fmt.Sprintf("127.0.0.%d:0", 2+i), root, s.secret, "-cert", p.hostCert, "-key", p.hostKey)
		s.movers = append(s.movers, m)
		addrs = append(addrs, m.addr)
	}
	s.server = gsiServer(t, p, root, "-allow-foreign-data", "-movers", strings.Join(addrs, ","),
		"-mover-secret", s.secret, "-mover-heartbeat", "100ms", "-mover-timeout", "2s")
	const size = 6<<20 + 9
	want := writeRandom(t, filepath.Join(root, "g.bin"), size, 17)
	local := t.TempDir()
	proxy := p.ferryProxy(t)
	url := "gsiftp://" + s.addr
	for _, flags := range [][]string{{"-stripe"}, {"-stripe", "-p", "2", "-dcpriv"}, {"-stripe", "-nodcau"}} {
		name := strings.Join(flags, "")
		t.Run(name, func(t *testing.T) {
			guc := func(args ...string) {
				t.Helper()
				all := append([]string{"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=" + filepath.Join(p.dir, "certificates"), "globus-url-copy"}, flags...)
				mustRun(t, "", "", "env", append(all, args...)...)
			}
			got := filepath.Join(local, name)
			mark := s.marks()
			guc(url+"/g.bin", "file://"+got)
			sameFile(t, got, want)
			s.checkShares(t, "send", "/g.bin", mark, size)
			// Uploads go where globus-url-copy sends them (here all to the
			// first SPAS address, as without GSI).
			up := "/up" + name
			guc("file://"+got, url+up)
			sameFile(t, filepath.Join(root, up), want)
		})
	}
	// ferry cp -stripe with its default DCAU A: the movers connect to it
	// for downloads; uploads go to every SPAS address.
	env := []string{"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=" + filepath.Join(p.dir, "certificates")}
	got := filepath.Join(local, "ferry-cp")
	mark := s.marks()
	mustRun(t, "", "", "env", append(env, ferryBin, "cp", "-q", "-stripe", "-p", "2", url+"/g.bin", got)...)
	sameFile(t, got, want)
	s.checkShares(t, "send", "/g.bin", mark, size)
	mark = s.marks()
	mustRun(t, "", "", "env", append(env, ferryBin, "cp", "-q", "-stripe", "-sbs", "65536", got, url+"/up-ferry-cp")...)
	sameFile(t, filepath.Join(root, "up-ferry-cp"), want)
	s.checkShares(t, "receive", partOf("/up-ferry-cp"), mark, size)
}

// TestStripedFTPS: curl over explicit TLS (AUTH TLS, PROT P) against a
// striped Ferry with a password user: the data connections of the first
// mover are TLS with the server's certificate, both ways. curl is told to
// use PASV and its address: EPSV has no address, and the mover listens on
// another than the frontend's.
func TestStripedFTPS(t *testing.T) {
	p := newPKI(t)
	root := t.TempDir()
	pw := filepath.Join(t.TempDir(), "passwd")
	mustRun(t, "", "secret\n", ferryBin, "passwd", pw, "alice")
	sec := secretFile(t)
	var addrs []string
	for i := range 2 {
		// FTPS data channels use each mover's own certificate.
		addrs = append(addrs, startMover(t, fmt.Sprintf("127.0.0.%d:0", 2+i), root, sec, "-cert", p.hostCert, "-key", p.hostKey).addr)
	}
	srv := startFerry(t, root, "-passwd", pw, "-cert", p.hostCert, "-key", p.hostKey, "-movers", strings.Join(addrs, ","),
		"-mover-secret", sec, "-mover-heartbeat", "100ms", "-mover-timeout", "2s", "-log-level", "debug")
	want := writeRandom(t, filepath.Join(root, "f.bin"), 3<<20+5, 19)
	cacert := filepath.Join(p.dir, "cacert.pem")
	got := filepath.Join(t.TempDir(), "curl.bin")
	mustRun(t, "", "", "curl", "-sS", "--disable-epsv", "--no-ftp-skip-pasv-ip", "--ssl-reqd", "--cacert", cacert, "-u", "alice:secret", "-o", got, srv.url("/f.bin"))
	sameFile(t, got, want)
	mustRun(t, "", "", "curl", "-sS", "--disable-epsv", "--no-ftp-skip-pasv-ip", "--ssl-reqd", "--cacert", cacert, "-u", "alice:secret", "-T", got, srv.url("/up.bin"))
	sameFile(t, filepath.Join(root, "up.bin"), want)
	if !strings.Contains(srv.log.String(), "cmd=\"PROT P\"") {
		t.Errorf("curl did not ask for PROT P:\n%s", srv.log)
	}
}

// TestStripedMoversReload: a striped ferry serve whose movers are listed in
// its -config file takes a new list on SIGHUP: a mover joins and carries
// its stripes of the next globus-url-copy -stripe download, another
// leaves and gets none; a bad list is refused and the movers stay.
func TestStripedMoversReload(t *testing.T) {
	root := t.TempDir()
	secret := secretFile(t)
	m1 := startMover(t, "127.0.0.2:0", root, secret)
	m2 := startMover(t, "127.0.0.3:0", root, secret)
	m3 := startMover(t, "127.0.0.4:0", root, secret)
	conf := filepath.Join(t.TempDir(), "ferry.conf")
	writeConf := func(movers string) {
		t.Helper()
		body := "movers " + movers + "\nmover-secret " + secret + "\nmover-heartbeat 100ms\nmover-timeout 2s\n"
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConf(m1.addr)
	srv := startFerry(t, root, "-config", conf, "-anonymous-write", "-allow-foreign-data", "-log-level", "debug")
	s := &striped{server: srv, movers: []*mover{m1}, secret: secret}
	s.waitUp(t, 1)
	const size = 6<<20 + 9
	want := writeRandom(t, filepath.Join(root, "src.bin"), size, 21)
	local := t.TempDir()
	download := func(name string) {
		t.Helper()
		mark := s.marks()
		got := filepath.Join(local, name)
		mustRun(t, "", "", "globus-url-copy", "-stripe", s.url("/src.bin"), "file://"+got)
		sameFile(t, got, want)
		s.checkShares(t, "send", "/src.bin", mark, size)
	}
	download("one")

	writeConf(m1.addr + "," + m2.addr)
	srv.proc.Signal(syscall.SIGHUP)
	s.waitUp(t, 2)
	s.movers = []*mover{m1, m2}
	download("two")

	writeConf(m2.addr + "," + m3.addr)
	srv.proc.Signal(syscall.SIGHUP)
	waitLog(t, srv.log, "left="+m1.addr)
	s.waitUp(t, 2)
	mark1 := len(m1.log.String())
	s.movers = []*mover{m2, m3}
	download("swapped")
	if strings.Contains(m1.log.String()[mark1:], "op=send path=/src.bin") {
		t.Error("the mover that left still sent stripes")
	}

	writeConf("no-port")
	srv.proc.Signal(syscall.SIGHUP)
	waitLog(t, srv.log, "movers not reloaded")
	s.waitUp(t, 2)
	download("kept")
}

// waitLog waits (bounded) until log contains text.
func waitLog(t *testing.T, log *syncBuffer, text string) {
	t.Helper()
	for range 200 {
		if strings.Contains(log.String(), text) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("log never showed %q", text)
}
