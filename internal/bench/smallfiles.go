package bench

// The smallfiles workload (issue 7): a flat tree of many 16 KiB files
// downloaded over P control connections. GCT runs
// "globus-url-copy -r -cd -cc P -pp -fast" against its server; Ferry runs
// client.GetFiles batches over P sessions (pipelined commands, cached
// MODE E data connections) against ferry serve, in this process: ferry cp
// does not drive GetFiles yet. So Ferry's client CPU is this process's
// (getrusage) and its peak RSS is unknown. Wall time starts before the
// first dial and includes the logins, as globus-url-copy's does.
//
// Emulated WAN: with internal/wan, both servers and globus-url-copy would
// run through link.Command(...). The in-process Ferry client cannot join
// the client namespace, so that needs the ferry client as a process
// (ferry cp -r -cc P, once it calls GetFiles): then runSmallFerry becomes
// one runClient call like runSmallGCT's.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/ferrygrid/ferry/client"
)

// SmallFiles is the many-small-files workload.
const SmallFiles Workload = "smallfiles"

// Defaults of the smallfiles workload.
const (
	DefaultSmallFiles    = 10000
	DefaultSmallFileSize = 16 << 10
	smallDir             = "small"
	smallBatch           = 250 // files a Ferry session takes from the queue at a time
)

// writeTree writes the smallfiles source tree once: Files files of
// FileSize random bytes, world-readable, read back into the page cache.
func (r *runner) writeTree(ctx context.Context) error {
	dir := filepath.Join(r.served, smallDir)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	n, size := r.cfg.smallFiles(), r.cfg.smallFileSize()
	fmt.Fprintf(r.progress, "bench: writing %d files of %s under %s\n", n, FormatSize(size), dir)
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

// runSmall makes one smallfiles run of impl with p sessions.
func (r *runner) runSmall(ctx context.Context, impl Impl, p int) (Sample, error) {
	n, size := r.cfg.smallFiles(), r.cfg.smallFileSize()
	s := Sample{Workload: SmallFiles, Impl: impl, P: p, Bytes: int64(n) * size}
	srv, err := r.server(ctx, impl, SmallFiles)
	if err != nil {
		return s, err
	}
	if err := srv.alive(); err != nil {
		return s, err
	}
	dest := filepath.Join(r.dest, fmt.Sprintf("small-%s-p%d", impl, p))
	defer os.RemoveAll(dest)
	m, err := startMeter(srv, impl == GCT)
	if err != nil {
		return s, err
	}
	var cerr error
	switch impl {
	case GCT:
		cerr = r.runSmallGCT(ctx, srv, p, dest, &s)
	case Ferry:
		cerr = r.runSmallFerry(ctx, srv, p, dest, &s)
	default:
		cerr = fmt.Errorf("bench: %s has no smallfiles run", impl)
	}
	s.ServerCPU, s.ServerRSS, err = m.end(ctx)
	if cerr != nil {
		return s, cerr
	}
	if err != nil {
		return s, err
	}
	s.Gbps = gbps(s.Bytes, s.Wall)
	return s, checkTree(dest, n, size)
}

func (r *runner) runSmallGCT(ctx context.Context, srv *server, p int, dest string, s *Sample) error {
	src := "ftp://" + net.JoinHostPort("127.0.0.1", itoa(srv.port)) + filepath.Join(r.served, smallDir) + "/"
	u, _, err := runClient(ctx, r.cfg.Timeout, nil, r.gctClient, "-r", "-cd", "-cc", itoa(p), "-pp", "-fast", src, "file://"+dest+"/")
	if err != nil {
		return err
	}
	s.Wall, s.ClientCPU, s.ClientRSS = u.wall, u.cpu, u.rss
	return nil
}

// runSmallFerry downloads the tree with p sessions that take batches of
// files from a shared queue, each batch one GetFiles call.
func (r *runner) runSmallFerry(ctx context.Context, srv *server, p int, dest string, s *Sample) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if err := os.Mkdir(dest, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	n := r.cfg.smallFiles()
	queue := make(chan []client.Get, n/smallBatch+1)
	var batch []client.Get
	for i := range n {
		name := smallName(i)
		batch = append(batch, client.Get{Path: "/" + smallDir + "/" + name, Open: func() (io.WriterAt, error) {
			return os.Create(filepath.Join(dest, name))
		}})
		if len(batch) == smallBatch || i == n-1 {
			queue <- batch
			batch = nil
		}
	}
	close(queue)
	addr := net.JoinHostPort("127.0.0.1", itoa(srv.port))
	cpu0 := selfCPU()
	start := time.Now()
	errs := make([]error, p)
	var wg sync.WaitGroup
	for k := range p {
		wg.Go(func() { errs[k] = smallSession(ctx, addr, queue) })
	}
	wg.Wait()
	s.Wall = time.Since(start)
	s.ClientCPU, s.ClientRSS = selfCPU()-cpu0, rssUnknown
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// smallSession is one Ferry session of a smallfiles run.
func smallSession(ctx context.Context, addr string, queue <-chan []client.Get) error {
	c, err := client.Dial(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Login(ctx, "anonymous", "bench@"); err != nil {
		return err
	}
	for b := range queue {
		for i, err := range c.GetFiles(ctx, b, nil) {
			if err != nil {
				return fmt.Errorf("bench: %s: %w", b[i].Path, err)
			}
		}
	}
	return nil
}

// selfCPU is this process's user + system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
