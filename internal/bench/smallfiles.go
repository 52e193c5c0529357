package bench

// The smallfiles workloads (issue 7): a flat tree of many 16 KiB files
// downloaded (smallfiles), uploaded (smallfiles-up), or copied between two
// servers of the same implementation (smallfiles-3pt, third party) over P
// sessions, each client as its own process with its defaults for many
// files: GCT runs "globus-url-copy -r -cd -cc P -pp -fast" against its
// server(s), Ferry "ferry cp -r -cc P" (pipelined batches over cached
// MODE E data connections are its default) against ferry serve. Wall time
// is the client process's, logins and listing included.
//
// With Config.WANDelay the servers run in the server namespace of an
// emulated WAN (internal/wan) and the clients in the client namespace,
// so that every command and file pays the link's round trip. For
// smallfiles-3pt both servers are on the server side: the client steers
// them from afar while the data moves between them over the server
// namespace's loopback, as a transfer service drives two sites' servers.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/internal/wan"
)

// The many-small-files workloads.
const (
	SmallFiles    Workload = "smallfiles"     // download the tree
	SmallFilesUp  Workload = "smallfiles-up"  // upload it
	SmallFiles3PT Workload = "smallfiles-3pt" // copy it between two servers

	// smallFiles3PTDest names the destination server of smallfiles-3pt.
	smallFiles3PTDest Workload = "smallfiles-3pt-destination"
)

// Defaults of the smallfiles workload.
const (
	DefaultSmallFiles    = 10000
	DefaultSmallFileSize = 16 << 10
	smallDir             = "small"
)

// writeTree writes the smallfiles source tree once: Files files of
// FileSize random bytes, world-readable, read back into the page cache.
func (r *runner) writeTree(ctx context.Context) error {
	dir := filepath.Join(r.served, smallDir)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	n, size := r.cfg.smallFiles(), r.cfg.smallFileSize()
	fmt.Fprintf(r.progress, "bench: writing %d files of %s under %s\n", n, progress.Size(size), dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	var seed [32]byte
	copy(seed[:], "ferry bench smallfiles")
	rnd := rand.NewChaCha8(seed)
	buf := make([]byte, size)
	for i := range n {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		rnd.Read(buf)
		name := filepath.Join(dir, smallName(i))
		if err := os.WriteFile(name, buf, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if err := os.Chmod(name, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

func smallName(i int) string { return fmt.Sprintf("f%05d", i) }

func (c *Config) smallFiles() int {
	if c.Files > 0 {
		return c.Files
	}
	return DefaultSmallFiles
}

func (c *Config) smallFileSize() int64 {
	if c.FileSize > 0 {
		return c.FileSize
	}
	return DefaultSmallFileSize
}

// small reports whether w is a smallfiles workload.
func (w Workload) small() bool {
	return w == SmallFiles || w == SmallFilesUp || w == SmallFiles3PT || w == smallFiles3PTDest
}

// runSmall makes one run of the smallfiles workload w with impl and p
// sessions.
func (r *runner) runSmall(ctx context.Context, w Workload, impl Impl, p int) (Sample, error) {
	n, size := r.cfg.smallFiles(), r.cfg.smallFileSize()
	s := Sample{Workload: w, Impl: impl, P: p, Bytes: int64(n) * size}
	srv, err := r.server(ctx, impl, w)
	if err != nil {
		return s, err
	}
	if err := srv.alive(); err != nil {
		return s, err
	}
	tree := filepath.Join(r.served, smallDir)
	url := "ftp://" + net.JoinHostPort(r.host(), itoa(srv.port))
	var src, dest, check string
	switch w {
	case SmallFiles3PT:
		// The destination is a second server of the same kind, serving
		// the same directory.
		dsrv, err := r.server(ctx, impl, smallFiles3PTDest)
		if err != nil {
			return s, err
		}
		if err := dsrv.alive(); err != nil {
			return s, err
		}
		name := fmt.Sprintf("3pt-%s-p%d", impl, p)
		check = filepath.Join(r.served, name)
		src = url + tree + "/"
		dest = "ftp://" + net.JoinHostPort(r.host(), itoa(dsrv.port)) + check + "/"
		if impl == Ferry {
			src = url + "/" + smallDir + "/"
			dest = "ftp://" + net.JoinHostPort(r.host(), itoa(dsrv.port)) + "/" + name + "/"
		}
	case SmallFiles:
		dest = filepath.Join(r.dest, fmt.Sprintf("small-%s-p%d", impl, p))
		check = dest
		src = url + tree + "/"
		if impl == Ferry || impl == FerryTar {
			// ferry serve's root is the served directory.
			src = url + "/" + smallDir + "/"
		}
		dest = "file://" + dest + "/"
	default:
		name := fmt.Sprintf("up-%s-p%d", impl, p)
		check = filepath.Join(r.served, name)
		src = "file://" + tree + "/"
		dest = url + check + "/"
		if impl == Ferry || impl == FerryTar {
			dest = url + "/" + name + "/"
		}
	}
	defer os.RemoveAll(check)
	var path string
	var args []string
	switch impl {
	case GCT:
		path, args = r.gctClient, []string{"-r", "-cd", "-cc", itoa(p), "-pp", "-fast", src, dest}
	case Ferry:
		path, args = r.cfg.Ferry, []string{"cp", "-q", "-auto=false", "-r", "-cc", itoa(p), src, dest}
	case FerryTar:
		// One tar stream, over p MODE E connections (one stream-mode
		// connection at p = 1). -v reports the tar's size, which shows
		// that the server took the tar module (without it ferry cp
		// falls back to file by file).
		path, args = r.cfg.Ferry, []string{"cp", "-v", "-auto=false", "-r", "-tar", "-p", itoa(p), src, dest}
	default:
		return s, fmt.Errorf("bench: %s has no smallfiles run", impl)
	}
	path, args = r.in(wan.Client, path, args)
	m, err := startMeter(srv, impl == GCT)
	if err != nil {
		return s, err
	}
	u, _, stderr, cerr := runClientStderr(ctx, r.cfg.Timeout, nil, path, args...)
	s.ServerCPU, s.ServerRSS, err = m.end(ctx)
	if cerr != nil {
		return s, errors.Join(cerr, srv.alive())
	}
	if err != nil {
		return s, err
	}
	if impl == FerryTar && !strings.Contains(stderr, "bytes of tar in") {
		return s, fmt.Errorf("bench: %s did not copy as one tar stream:\n%s", commandLine(path, args), strings.TrimSpace(stderr))
	}
	s.Wall, s.ClientCPU, s.ClientRSS, s.Machine = u.wall, u.cpu, u.rss, u.machine
	s.Gbps = bitRate(s.Bytes, s.Wall) / 1e9
	return s, checkTree(check, n, size)
}

// checkTree checks that dir holds n files of size bytes.
func checkTree(dir string, n int, size int64) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("bench: the copy: %w", err)
	}
	if len(ents) != n {
		return fmt.Errorf("bench: the copy %s has %d entries, want %d", dir, len(ents), n)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
			return fmt.Errorf("bench: the copy of %s is not a %d-byte file (%v)", e.Name(), size, err)
		}
	}
	return nil
}

// netnsHosts gives each namespace of the link an /etc/hosts of its own
// ("ip netns exec" mounts /etc/netns/NS/hosts over /etc/hosts) that
// names both ends and maps this machine's host name to the side's
// address: GCT's server and client look up their own addresses and fail
// when they cannot, and no DNS server is reachable there. The returned
// function removes the files.
func netnsHosts(l *wan.Link) (func(), error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	for _, s := range []wan.Side{wan.Client, wan.Server} {
		dir := filepath.Join("/etc/netns", l.Namespace(s))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cleanup()
			return nil, fmt.Errorf("bench: %w", err)
		}
		dirs = append(dirs, dir)
		hosts := fmt.Sprintf("127.0.0.1 localhost\n%s ferry-wan-client\n%s ferry-wan-server\n%s %s\n",
			l.Addr(wan.Client), l.Addr(wan.Server), l.Addr(s), host)
		if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(hosts), 0o644); err != nil {
			cleanup()
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	return cleanup, nil
}

// congestionControl reads the TCP congestion control of the link's client
// namespace, for the report.
func congestionControl(l *wan.Link) string {
	cc := "?"
	l.Do(wan.Client, func() error {
		if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control"); err == nil {
			cc = strings.TrimSpace(string(b))
		}
		return nil
	})
	return cc
}
