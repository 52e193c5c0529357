package main

// ferry cp -r -tar: a tree between a server and a local directory as one
// tar stream, through the server's tar processing module (ERET tar on
// the tree to download it, ESTO tar to upload one), instead of a
// transfer per file. With -p N the stream goes over MODE E: a download's
// blocks are put back in order (internal/reorder) while they are
// unpacked, an upload sends the archive laid out from the local walk
// (dpm.Layout), whose size MODE E needs up front. The local side packs and unpacks with the same code
// as the server's module (internal/dpm), confined to the local directory.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/posix"
	"github.com/ferrygrid/ferry/internal/dpm"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/reorder"
)

// cpTarHelp is the cp help about -tar.
const cpTarHelp = `
-r -tar copies one tree between a server and a local directory as a single
tar stream (one stream-mode data connection; with -p N, MODE E over N
connections), when the server's FEAT offers the tar module ("DPM
...,tar,..."): everything below SRC goes below DST, which is made when
missing. Only directories and regular files travel; the local
side refuses unsafe entries (links, devices, names leaving DST) as the
server does. A server without the tar module gets the usual copy file by
file, with a note. What was unpacked before a failure stays.
  ferry cp -r -tar ftp://host/data/run42 run42
  ferry cp -r -tar run42 ftp://host/data/run42
`

// offersModule reports whether a server's FEAT lists module on its DPM
// line.
func offersModule(feat map[string]string, module string) bool {
	line, found := feat["DPM"]
	if !found {
		return false
	}
	for n := range strings.SplitSeq(line, ",") {
		if strings.EqualFold(strings.TrimSpace(n), module) {
			return true
		}
	}
	return false
}

// copyTarTree runs ferry cp -r -tar for the one pair in reqs.
func copyTarTree(ctx context.Context, e *env, f cpFlags, jf jobFlags, reqs []job.URLPair) error {
	switch {
	case !jf.recursive:
		return usagef("-tar copies a tree: it needs -r")
	case len(reqs) != 1 || isPattern(reqs[0].Src) || jf.listFile != "":
		return usagef("-tar copies one tree: no -f or wildcards")
	case jf.sync || jf.del || jf.dryRun:
		return usagef("-tar does not go with -sync, -delete or -dry-run")
	case f.off > 0 || f.length > 0:
		return usagef("-tar copies whole trees: no -off or -len")
	}
	src, err := parseLocation(reqs[0].Src)
	if err != nil {
		return usagef("%v", err)
	}
	dst, err := parseLocation(reqs[0].Dst)
	if err != nil {
		return usagef("%v", err)
	}
	var remote location
	switch {
	case src.kind == locRemote && dst.kind == locLocal:
		remote = src
	case src.kind == locLocal && dst.kind == locRemote:
		remote = dst
		if fi, err := os.Stat(src.path); err != nil || !fi.IsDir() {
			return fmt.Errorf("-tar: %s is no directory", src)
		}
	default:
		return usagef("-tar copies a tree between a server and a local directory")
	}
	conn, err := connect(ctx, remote, clientOptions{active: f.active, gsi: f.gsi, log: e.ctlLog})
	if err != nil {
		return err
	}
	defer conn.Close()
	defer conn.Quit(ctx)
	if !offersModule(conn.Features(), "tar") {
		if !f.quiet {
			fmt.Fprintf(e.stderr, "ferry cp: %s does not offer the tar module (no tar in FEAT's DPM line); copying file by file\n", remote.addr)
		}
		conn.Quit(ctx)
		return runJob(ctx, e, f, jf, reqs)
	}
	chain, err := dpm.Resolve(dpm.Spec{Names: []string{"tar"}, Params: []string{""}}, []string{"tar"}, false)
	if err != nil {
		return err
	}
	start := time.Now()
	var n int64
	if src.kind == locRemote {
		n, err = tarDownload(ctx, conn, chain, f, src, dst)
	} else {
		n, err = tarUpload(ctx, conn, chain, f, src, dst)
	}
	if err != nil {
		return err
	}
	if f.verbose && !f.quiet {
		d := time.Since(start)
		over := "stream mode"
		if f.parallel > 1 {
			over = fmt.Sprintf("MODE E, %d connections", f.parallel)
		}
		fmt.Fprintf(e.stderr, "%s -> %s: %d bytes of tar in %v (%s/s, %s)\n", src, dst, n, d.Round(time.Millisecond), humanBytes(float64(n)/max(d.Seconds(), 1e-6)), over)
	}
	return nil
}

// tarDownload retrieves the tree src as a tar stream (ERET tar) and
// unpacks it into the local directory dst.
func tarDownload(ctx context.Context, conn *client.Conn, chain *dpm.Chain, f cpFlags, src, dst location) (n int64, err error) {
	_, statErr := os.Stat(dst.path)
	if err := os.MkdirAll(dst.path, 0o777); err != nil {
		return 0, err
	}
	if os.IsNotExist(statErr) {
		// A download that fails before anything arrived leaves no
		// directory it made (Remove takes only an empty one).
		defer func() {
			if err != nil {
				os.Remove(dst.path)
			}
		}()
	}
	var st dsi.Storage
	if st, err = posix.New(dst.path); err != nil {
		return 0, err
	}
	if os.IsNotExist(statErr) {
		st = freshDir{st}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The data arrives through a pipe (stream mode), or, with -p N, as
	// MODE E blocks in any order over N connections, put back in order
	// by a reassembly buffer that the unpacking reads while they come.
	var in io.Reader
	var fetch func() (int64, error)
	var endWrite func(error)
	var endRead func()
	opts := &client.RetrieveOptions{Module: "tar", TCPBuffer: int(f.tcpBuffer)}
	if f.parallel > 1 {
		buf := tarDownloadBuffer()
		opts.Parallel = f.parallel
		in = buf
		fetch = func() (int64, error) {
			n, err := conn.RetrieveAt(ctx, src.path, buf, opts)
			if err == nil {
				err = buf.CheckArrived(n)
			}
			return n, err
		}
		endWrite = func(err error) { buf.CloseWithError(err) }
		endRead = func() { buf.CloseRead(errors.New("unpacking ended")) }
	} else {
		pr, pw := io.Pipe()
		in = pr
		fetch = func() (int64, error) { return conn.Retrieve(ctx, src.path, pw, opts) }
		endWrite = func(err error) { pw.CloseWithError(err) }
		endRead = func() { pr.CloseWithError(errors.New("unpacking ended")) }
	}
	var rerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, rerr = fetch()
		endWrite(rerr)
	}()
	// Store runs the chain backwards: tar unpacks into "/" of st.
	uerr := chain.Store(ctx, dpm.Env{Storage: st, Path: "/"}, in)
	if uerr != nil {
		cancel(uerr)
	}
	endRead()
	<-done
	switch {
	case rerr != nil:
		return n, fmt.Errorf("download %s as tar: %w", src, rerr)
	case uerr != nil:
		return n, fmt.Errorf("unpack %s into %s: %w", src, dst, uerr)
	}
	return n, nil
}

// freshDir is the storage of a directory that the download itself made:
// no old file in it needs keeping until its replacement is whole, so the
// unpacking writes each file straight to its name (still refusing a
// symbolic link there) instead of to a hidden part file renamed into
// place after a Stat and an empty Create: on the 20 ms WAN that was
// about half the client's CPU time per file of ERET tar.
type freshDir struct{ dsi.Storage }

// WritesInPlace reports true: see freshDir.
func (freshDir) WritesInPlace() bool { return true }

// tarUpload packs the local directory src into a tar stream and stores
// it with ESTO tar, which unpacks it into dst on the server.
func tarUpload(ctx context.Context, conn *client.Conn, chain *dpm.Chain, f cpFlags, src, dst location) (int64, error) {
	st, err := posix.New(src.path)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	opts := &client.StoreOptions{Module: "tar", TCPBuffer: int(f.tcpBuffer)}
	if f.parallel > 1 {
		// The archive laid out from a walk of the tree, its bytes made as
		// the N connections read them: MODE E needs the size up front.
		l, _, err := chain.Open(ctx, dpm.Env{Storage: st, Path: "/"})
		if err != nil {
			return 0, fmt.Errorf("pack %s: %w", src, err)
		}
		opts.Parallel, opts.BlockSize = f.parallel, int(f.blockSize)
		n, err := conn.StoreAt(ctx, dst.path, l, l.Size(), opts)
		if changed := l.Changed(); changed != nil {
			return n, fmt.Errorf("pack %s: %w", src, changed)
		}
		if err != nil {
			return n, fmt.Errorf("upload %s as tar to %s: %w", src, dst, err)
		}
		return n, nil
	}
	pr, pw := io.Pipe()
	var perr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		perr = chain.Retrieve(ctx, dpm.Env{Storage: st, Path: "/"}, pw)
		pw.CloseWithError(perr)
	}()
	n, serr := conn.Store(ctx, dst.path, pr, opts)
	if serr != nil {
		cancel(serr)
	}
	pr.CloseWithError(fmt.Errorf("upload ended"))
	<-done
	switch {
	case perr != nil:
		return n, fmt.Errorf("pack %s: %w", src, perr)
	case serr != nil:
		return n, fmt.Errorf("upload %s as tar to %s: %w", src, dst, serr)
	}
	return n, nil
}

// tarDownloadBuffer is the reassembly buffer of a -tar -p N download.
// Blocks past the most the unpacking would write (dpm.DefaultMaxBytes)
// are refused: a server holding back the first block could otherwise
// have all it sends spilled to a local temporary file, without bound.
func tarDownloadBuffer() *reorder.Buffer {
	return reorder.New(reorder.Config{Limit: dpm.DefaultMaxBytes})
}
