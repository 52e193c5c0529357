package interop

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// endpoint is a server of a third-party test: its URL prefix and where a
// file name lives on disk and on the server.
type endpoint struct {
	name   string
	url    string // scheme://host:port
	dir    string
	remote func(name string) string // path on the server
}

func (e endpoint) file(name string) string { return filepath.Join(e.dir, name) }
func (e endpoint) at(name string) string   { return e.url + e.remote(name) }

func ferryEndpoint(t *testing.T) endpoint {
	root := t.TempDir()
	s := startFerry(t, root)
	return endpoint{name: "ferry", url: "ftp://" + s.addr, dir: root, remote: func(n string) string { return "/" + n }}
}

func gctEndpoint(t *testing.T) endpoint {
	dir := gct.Dir(t)
	addr := gct.Start(t, dir)
	// GCT's anonymous sessions see the whole file system.
	return endpoint{name: "gct", url: "ftp://" + addr, dir: dir, remote: func(n string) string { return filepath.Join(dir, n) }}
}

// TestThirdPartyFTP: ferry cp between two servers moves the bytes
// directly between them (protocol.md §14), Ferry→GCT, GCT→Ferry and
// Ferry→Ferry, in stream mode and with -p 4; also a partial copy,
// -verify-checksum, -stripe and -notpt.
func TestThirdPartyFTP(t *testing.T) {
	ferryA, ferryB, gctS := ferryEndpoint(t), ferryEndpoint(t), gctEndpoint(t)
	const size = 24<<20 + 7
	wants := map[string]string{}
	for _, e := range []endpoint{ferryA, ferryB, gctS} {
		wants[e.dir] = writeRandom(t, e.file("src.bin"), size, 42)
	}
	pairs := []struct {
		name     string
		src, dst endpoint
	}{
		{"ferry-gct", ferryA, gctS},
		{"gct-ferry", gctS, ferryA},
		{"ferry-ferry", ferryA, ferryB},
	}
	modes := []struct {
		name  string
		flags []string
	}{
		{"stream", nil},
		{"p4", []string{"-p", "4"}},
		{"p4-verify", []string{"-p", "4", "-verify-checksum"}},
		{"stripe", []string{"-stripe"}},
		{"notpt", []string{"-notpt"}},
	}
	for _, pr := range pairs {
		for _, m := range modes {
			t.Run(pr.name+"/"+m.name, func(t *testing.T) {
				name := fmt.Sprintf("tp-%s-%s.bin", pr.name, m.name)
				start := time.Now()
				ferry(t, append(append([]string{"cp", "-q"}, m.flags...), pr.src.at("src.bin"), pr.dst.at(name))...)
				t.Logf("%d bytes in %v", size, time.Since(start).Round(time.Millisecond))
				sameFile(t, pr.dst.file(name), wants[pr.src.dir])
				os.Remove(pr.dst.file(name))
			})
		}
	}
	// Partial (-off/-len): ERET P on the source, ESTO A on the
	// destination; the bytes land at the same offset.
	for _, pr := range pairs {
		for _, m := range []struct {
			name  string
			flags []string
		}{{"stream", nil}, {"p4", []string{"-p", "4"}}} {
			t.Run(pr.name+"/partial-"+m.name, func(t *testing.T) {
				name := "part-" + m.name + ".bin"
				ferry(t, append(append([]string{"cp", "-q", "-off", "1000", "-len", "5000000"}, m.flags...), pr.src.at("src.bin"), pr.dst.at(name))...)
				want, err := os.ReadFile(pr.src.file("src.bin"))
				if err != nil {
					t.Fatal(err)
				}
				checkRange(t, pr.dst.file(name), want, 1000, 5000000)
				os.Remove(pr.dst.file(name))
			})
		}
	}
	// A missing source: a clear error, nothing hangs.
	r := run(t, "", "", ferryBin, "cp", "-p", "4", ferryA.at("missing"), gctS.at("never"))
	if r.code != 1 || !strings.Contains(r.stderr, "third-party copy") || !strings.Contains(r.stderr, "missing") {
		t.Errorf("missing source: %v", r)
	}
}

// TestThirdPartyGSI: gsiftp:// third-party copies between Ferry's GSI
// server and GCT's, both ways, with data channel authentication (DCAU
// A: each server presents the proxy the client delegated to it) and with
// -dcpriv, in stream mode and with -p 4.
func TestThirdPartyGSI(t *testing.T) {
	pki := gsipki.New(t, "")
	t.Setenv("X509_CERT_DIR", pki.TrustDir)
	proxy := pki.Proxy(t, gsi.ProxyOptions{})

	fdir := t.TempDir()
	os.Chmod(fdir, 0o755)
	// The grid-mapfile names a real local account; acting as it is
	// TestGSIRunsAsMappedUser's subject, not this test's.
	fsrv := startFerry(t, fdir, "-cert", pki.HostCert, "-key", pki.HostKey, "-gridmap", pki.GridMap, "-run-as-mapped-user=false")
	fe := endpoint{name: "ferry", url: "gsiftp://" + fsrv.addr, dir: fdir, remote: func(n string) string { return "/" + n }}
	gdir := gctgsi.Dir(t, pki)
	gsrv := gctgsi.Start(t, pki, nil)
	ge := endpoint{name: "gct", url: "gsiftp://" + gsrv.Addr, dir: gdir, remote: func(n string) string { return filepath.Join(gdir, n) }}

	const size = 9<<20 + 5
	want := writeRandom(t, fe.file("src.bin"), size, 7)
	data, err := os.ReadFile(fe.file("src.bin"))
	if err != nil {
		t.Fatal(err)
	}
	gctgsi.WriteFile(t, pki, ge.file("src.bin"), data)

	for _, pr := range []struct {
		name     string
		src, dst endpoint
	}{{"ferry-gct", fe, ge}, {"gct-ferry", ge, fe}} {
		for _, m := range []struct {
			name  string
			flags []string
		}{
			{"dcau", nil},
			{"dcau-p4", []string{"-p", "4"}},
			{"dcpriv", []string{"-dcpriv"}},
			{"dcpriv-p4", []string{"-p", "4", "-dcpriv"}},
		} {
			t.Run(pr.name+"/"+m.name, func(t *testing.T) {
				name := "gsi-" + m.name + ".bin"
				args := append(append([]string{"cp", "-q", "-cert", proxy}, m.flags...), pr.src.at("src.bin"), pr.dst.at(name))
				start := time.Now()
				ferry(t, args...)
				t.Logf("%d bytes in %v", size, time.Since(start).Round(time.Millisecond))
				sameFile(t, pr.dst.file(name), want)
			})
		}
	}
}

// killable is a "ferry serve" that a test kills with SIGKILL (a crash)
// and starts again on the same address.
type killable struct {
	t     *testing.T
	root  string
	addr  string
	flags []string
	cmd   *exec.Cmd
	logs  []*syncBuffer // one per incarnation
}

var listeningAt = regexp.MustCompile(`^Server listening at \S+:(\d+)\n`)

// startKillable starts ferry serve on 127.0.0.1:0 with debug logging.
func startKillable(t *testing.T, root string) *killable {
	k := &killable{t: t, root: root, addr: "127.0.0.1:0", flags: []string{"-anonymous-write", "-log-level", "debug"}}
	k.start()
	t.Cleanup(k.kill)
	return k
}

func (k *killable) start() {
	t := k.t
	t.Helper()
	args := append([]string{"serve", "-listen", k.addr, "-root", k.root}, k.flags...)
	cmd := exec.Command(ferryBin, args...)
	out := &lineWatcher{first: make(chan string, 1)}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k.cmd = cmd
	k.logs = append(k.logs, log)
	select {
	case line := <-out.first:
		m := listeningAt.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("ferry serve: unexpected first line %q", line)
		}
		k.addr = net.JoinHostPort("127.0.0.1", m[1])
	case <-time.After(30 * time.Second):
		t.Fatalf("ferry serve did not start; log:\n%s", log)
	}
}

// kill kills the running incarnation with SIGKILL and waits for it.
func (k *killable) kill() {
	if k.cmd == nil {
		return
	}
	_ = k.cmd.Process.Kill()
	_ = k.cmd.Wait()
	k.cmd = nil
}

// restart starts a new incarnation on the same address.
func (k *killable) restart() { k.start() }

// commands returns the commands the incarnation i logged.
func (k *killable) commands(i int) []string {
	var out []string
	re := regexp.MustCompile(`msg=command .* cmd=("(?:[^"\\]|\\.)*"|\S+)`)
	for _, l := range strings.Split(k.logs[i].String(), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			out = append(out, strings.Trim(m[1], `"`))
		}
	}
	return out
}

// TestThirdPartyRestart: a Ferry→Ferry copy with -p 4 -rst whose source
// (then, in a second run, destination) server is killed mid-transfer and
// started again on the same port completes with identical contents, and
// the retry sent the same REST (the destination's 111 ranges) to both
// servers, the destination before STOR and the source before RETR
// (protocol.md §8.3).
func TestThirdPartyRestart(t *testing.T) {
	for _, victim := range []string{"source", "destination"} {
		t.Run(victim, func(t *testing.T) {
			src, dst := startKillable(t, t.TempDir()), startKillable(t, t.TempDir())
			const size = 300 << 20
			want := writeRandom(t, filepath.Join(src.root, "big"), size, 99)
			// Small socket buffers slow loopback down to some 70 MB/s, so
			// that the copy is still running after its first markers.
			args := []string{"cp", "-q", "-p", "4", "-tcp-bs", "4K", "-rst", "-rst-interval", "300ms", "-rst-retries", "20",
				"ftp://" + src.addr + "/big", "ftp://" + dst.addr + "/big"}
			ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
			defer cancel()
			cp := exec.CommandContext(ctx, ferryBin, args...)
			var stderr syncBuffer
			cp.Stderr = &stderr
			start := time.Now()
			if err := cp.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cp.Wait() }()
			k := src
			if victim == "destination" {
				k = dst
			}
			// Kill once the destination has confirmed some ranges: its
			// file has grown past a few markers' worth.
			deadline := time.Now().Add(30 * time.Second)
			for {
				// Until it is complete, the upload is a hidden part file.
				fi, err := os.Stat(filepath.Join(dst.root, ".big.ferry-part"))
				if err == nil && fi.Size() > 60<<20 && time.Since(start) > 1500*time.Millisecond {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("the copy ended before the kill (%v): make it slower; stderr %s", err, stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("the copy did not get going")
				}
			}
			k.kill()
			killedAt := time.Since(start)
			time.Sleep(200 * time.Millisecond)
			k.restart()
			if err := <-done; err != nil {
				t.Fatalf("ferry cp: %v; stderr %s", err, stderr.String())
			}
			t.Logf("killed the %s after %v; done after %v", victim, killedAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			sameFile(t, filepath.Join(dst.root, "big"), want)

			// The retry's commands: the last incarnation of each server.
			scmds, dcmds := src.commands(len(src.logs)-1), dst.commands(len(dst.logs)-1)
			srest, drest := restBefore(scmds, "RETR"), restBefore(dcmds, "STOR")
			if srest == "" || srest != drest || !strings.HasPrefix(srest, "REST 0-") {
				t.Errorf("retry: source got %q before RETR, destination %q before STOR; want the same REST 0-n\nsource: %q\ndestination: %q",
					srest, drest, scmds, dcmds)
			}
		})
	}
}

// restBefore returns the REST command right before the last transfer
// command verb in cmds, or "".
func restBefore(cmds []string, verb string) string {
	for i := len(cmds) - 1; i > 0; i-- {
		if strings.HasPrefix(cmds[i], verb+" ") {
			if strings.HasPrefix(cmds[i-1], "REST ") {
				return cmds[i-1]
			}
			return ""
		}
	}
	return ""
}
