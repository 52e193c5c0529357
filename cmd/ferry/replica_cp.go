package main

// lfn:/path sources of ferry cp and ferry sync, and ferry replicate:
// the replicas of a logical file name ranked by predicted rate, tried in
// turn, the copy checked against the catalogue's checksum.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/job"
	"github.com/ferrygrid/ferry/internal/lfncopy"
	"github.com/ferrygrid/ferry/internal/probe"
	"github.com/ferrygrid/ferry/internal/replica"
	"github.com/ferrygrid/ferry/transfer"
)

func init() {
	register(&command{
		name:    "replicate",
		summary: "copy a logical file (lfn:/path) from its best replica to a server and register the copy",
		usage:   "[flags] lfn:/PATH DEST-URL",
		help: `
The replicas of lfn:/PATH are ranked by the rate the advisor predicts from
the history (past transfers and probes) and tried in turn: server to
server (third party), as ferry cp. The copy's checksum (CKSM on the
destination) must match the catalogue's; then the destination is
registered as a new replica (state ok). A copy whose checksum differs is
removed, its source marked bad, and the next replica tried. DEST-URL
ending in "/" is a directory: the name's base name is appended.
`,
		run: runReplicate,
	})
}

// lfnCopy is the copy of logical files for one command: the catalogue,
// the engine and the evidence that ranks replicas.
type lfnCopy struct {
	e    *env
	name string // the command: cp, sync, replicate
	f    cpFlags
	cat  *replica.Catalogue
	eng  *transfer.Engine
	ev   replica.Evidence
	cp   *lfncopy.Copier // the copy from one replica at a time
}

// newLFNCopy opens the catalogue and the engine, and reads the evidence
// (the history's records and probes, the kernel's limits). The caller
// ends it with close.
func newLFNCopy(ctx context.Context, e *env, name string, f cpFlags) (*lfnCopy, error) {
	cat, err := openCatalogue(ctx, f.history)
	if err != nil {
		return nil, err
	}
	lc := &lfnCopy{e: e, name: name, f: f, cat: cat, eng: newEngine(e, f, f.stripe, name)}
	lc.ev.Kernel = probe.KernelLimits()
	lc.ev.ClientHost, _ = os.Hostname()
	if h := lc.eng.History; h != nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lc.ev.Records, _ = h.Records(hctx, hist.Filter{Limit: 1000})
		lc.ev.Probes, _ = h.Probes(hctx, hist.Filter{Limit: 200})
		cancel()
	}
	lc.cp = &lfncopy.Copier{Catalogue: cat, Engine: lc.eng, Evidence: lc.ev, TrustRemoteSums: true,
		Dial: func(ctx context.Context, l transfer.Location) (*client.Conn, error) {
			return connect(ctx, importLocation(l), clientOptions{active: f.active, gsi: f.gsi})
		}}
	return lc, nil
}

func (lc *lfnCopy) close() {
	closeEngine(lc.eng)
	lc.cat.Close()
}

// copyLFN is ferry cp and ferry sync of a lfn: source, req (the hook of
// runCopy): one name, or with -r (and sync) every name below it into
// the directory req.Dst.
func copyLFN(ctx context.Context, e *env, name string, f cpFlags, jf jobFlags, req job.URLPair) error {
	if replica.IsLFN(req.Dst) {
		return usagef("%s: a logical file name is no destination; use ferry replicate lfn:/PATH URL, or ferry replica add", req.Dst)
	}
	lfn, err := replica.ParseLFN(req.Src)
	if err != nil {
		return usagef("%v", err)
	}
	if f.off > 0 || f.length > 0 {
		return usagef("-off and -len do not go with lfn: sources (the whole file's checksum is checked)")
	}
	if f.sources < 0 || f.sources > 16 { // 0: not set (the shell)
		return usagef("-sources must be 1 to 16")
	}
	dst, err := parseLocation(req.Dst)
	if err != nil {
		return usagef("%v", err)
	}
	if dst.kind == locStdio {
		return usagef("an lfn: source is copied to a file (its checksum is checked), not to standard output")
	}
	lc, err := newLFNCopy(ctx, e, name, f)
	if err != nil {
		return err
	}
	defer lc.close()
	if !jf.recursive {
		en, err := lc.cat.Lookup(ctx, lfn)
		if errors.Is(err, replica.ErrNotFound) {
			if below, _ := lc.cat.List(ctx, lfn); len(below) > 0 {
				return fmt.Errorf("%s holds %d names, no file of its own (copy them with -r)", replica.Format(lfn), len(below))
			}
			return fmt.Errorf("unknown LFN %s", replica.Format(lfn))
		}
		if err != nil {
			return err
		}
		if err := resolveDestination(location{kind: locRemote, path: lfn}, &dst); err != nil {
			return err
		}
		if f.sources > 1 {
			return lc.copyMulti(ctx, en, dst, jf, f.sources)
		}
		return lc.copyEntry(ctx, en, dst, jf, false)
	}
	es, err := lc.cat.List(ctx, lfn)
	if err != nil {
		return err
	}
	if len(es) == 0 {
		return fmt.Errorf("unknown LFN %s", replica.Format(lfn))
	}
	failed := 0
	for _, en := range es {
		d := dst
		rel := strings.TrimPrefix(strings.TrimPrefix(en.LFN, lfn), "/")
		if rel == "" {
			rel = path.Base(en.LFN)
		}
		switch d.kind {
		case locLocal:
			d.path = filepath.Join(d.path, filepath.FromSlash(rel))
		case locRemote:
			d.path = strings.TrimSuffix(d.path, "/") + "/" + rel
		}
		d.display = strings.TrimSuffix(d.display, "/") + "/" + rel
		if err := lc.copyEntry(ctx, en, d, jf, true); err != nil {
			fmt.Fprintf(e.stderr, "ferry %s: %s\n", name, reason(err))
			failed++
			if ctx.Err() != nil {
				break
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files failed", failed, len(es))
	}
	return nil
}

// candidates are the source locations of en's usable replicas, best
// first, for a copy to dst (lfncopy.Copier.Candidates).
// urls maps each location's Display to the replica's URL in the
// catalogue.
func (lc *lfnCopy) candidates(en replica.Entry, dst location) (srcs []transfer.Location, urls map[string]string, err error) {
	return lc.cp.Candidates(en, dst.export())
}

// upToDate reports whether dst already holds en at the sync level.
func (lc *lfnCopy) upToDate(ctx context.Context, en replica.Entry, dst location, level int) bool {
	switch dst.kind {
	case locLocal:
		fi, err := os.Stat(dst.path)
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
		if level == job.SyncExists {
			return true
		}
		if fi.Size() != en.Size {
			return false
		}
		if level < job.SyncChecksum {
			return true
		}
		sum, err := localSum(ctx, dst.path, en.Alg)
		return err == nil && sum == en.Sum
	case locRemote:
		conn, err := connect(ctx, dst, clientOptions{active: lc.f.active, gsi: lc.f.gsi})
		if err != nil {
			return false
		}
		defer hangUp(ctx, conn)
		size, err := conn.Size(ctx, dst.path)
		if err != nil {
			return false
		}
		if level == job.SyncExists {
			return true
		}
		if size != en.Size {
			return false
		}
		if level < job.SyncChecksum {
			return true
		}
		sum, err := conn.Checksum(ctx, en.Alg, dst.path, 0, -1)
		return err == nil && sum == en.Sum
	}
	return false
}

// localSum is the alg checksum of the local file name.
func localSum(ctx context.Context, name, alg string) (string, error) {
	return lfncopy.LocalSum(ctx, transfer.LocalLocation(name), alg)
}

// copyEntry copies en to dst from the first of its ranked replicas that
// works and whose copy has the catalogue's checksum; a replica whose copy
// differs is marked bad. The copy is written under a temporary name
// beside dst and renamed onto it once verified (lfncopy.Copier): an
// existing dst is replaced by verified bytes or left as it was. With sync, a destination already up to date (at
// the -sync-level of jf) is left alone. It returns the URL copied from.
// With -sources N (N > 1) a local destination is read from N replicas
// at once (copyMulti).
func (lc *lfnCopy) copyEntry(ctx context.Context, en replica.Entry, dst location, jf jobFlags, sync bool) error {
	if lc.f.sources > 1 && dst.kind == locLocal {
		if sync && jf.sync && lc.upToDate(ctx, en, dst, jf.syncLevel) {
			if lc.f.verbose && !lc.f.quiet {
				fmt.Fprintf(lc.e.stderr, "%s -> %s: up to date\n", replica.Format(en.LFN), dst)
			}
			return nil
		}
		return lc.copyMulti(ctx, en, dst, jf, lc.f.sources)
	}
	_, _, err := lc.copyFrom(ctx, en, dst, jf, sync)
	return err
}

// copyFrom is copyEntry from one replica at a time. It returns the URL
// copied from and the destination (a remote directory's dst completed by
// the name's base name).
func (lc *lfnCopy) copyFrom(ctx context.Context, en replica.Entry, dst location, jf jobFlags, sync bool) (string, location, error) {
	e, f := lc.e, lc.f
	if sync && jf.sync && lc.upToDate(ctx, en, dst, jf.syncLevel) {
		if f.verbose && !f.quiet {
			fmt.Fprintf(e.stderr, "%s -> %s: up to date\n", replica.Format(en.LFN), dst)
		}
		return "", dst, nil
	}
	var pp *progressPrinter
	tty, _ := terminal(e.stderr)
	on := func(ev transfer.Event) {
		switch ev.Kind {
		case transfer.EventAuto:
			if !f.quiet && (f.verbose || f.progress || tty) {
				fmt.Fprintln(e.stderr, ev.Note)
			}
		case transfer.EventStart:
			if pp != nil {
				pp.done()
			}
			pp = startProgress(e, f, importLocation(ev.Src), en.Size)
		case transfer.EventProgress:
			if pp != nil {
				pp.updateETA(ev.Progress, ev.ETA)
			}
		case transfer.EventNote:
			if pp != nil {
				pp.done()
				pp = nil
			}
			if !f.quiet {
				fmt.Fprintf(e.stderr, "ferry %s: %s\n", lc.name, ev.Note)
			}
		}
	}
	res, err := lc.cp.Copy(ctx, lfncopy.Request{Entry: en, Dst: dst.export(), Options: f.options(), CreateDirs: jf.createDirs}, on)
	if pp != nil {
		pp.done()
	}
	if err != nil {
		return "", dst, err
	}
	if f.verbose && !f.quiet {
		n, d := res.Bytes, res.Duration
		fmt.Fprintf(e.stderr, "%s (%s) -> %s: %d bytes in %v (%s/s), %s verified\n", replica.Format(en.LFN), res.Src, res.Dst, n,
			d.Round(time.Millisecond), humanBytes(float64(n)/max(d.Seconds(), 1e-6)), en.Alg)
	}
	return res.URL, importLocation(res.Dst), nil
}

// runReplicate is ferry replicate.
func runReplicate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["replicate"], e)
	f := cpFlags{parallel: 1, length: -1, auto: true, retries: defaultRetries, interval: client.DefaultRetryInterval,
		stallTimeout: defaultStallTimeout, checksumAlg: "MD5", gsi: &gsiFlags{}}
	var jf jobFlags
	fs.StringVar(&f.history, "history", "", historyFlagUsage+" (it holds the replica catalogue)")
	fs.IntVar(&f.parallel, "p", 1, "`N` parallel data connections (MODE E above 1); without -p the advisor chooses")
	fs.BoolVar(&f.verbose, "v", false, "say which replica was copied, the bytes and the rate")
	fs.BoolVar(&f.quiet, "q", false, "print nothing but errors")
	fs.BoolVar(&f.restart, "rst", false, "retry a failed transfer from the same replica, resuming, before trying the next")
	fs.BoolVar(&jf.createDirs, "cd", false, "create missing directories above DEST-URL")
	fs.BoolVar(&f.noTPT, "notpt", false, "route the bytes through this client instead of a third-party transfer")
	f.gsi.register(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "p" {
			f.explicit = true
		}
	})
	if err := f.gsi.check(); err != nil {
		return err
	}
	if f.parallel < 1 || f.parallel > 64 {
		return usagef("-p must be 1 to 64")
	}
	if fs.NArg() != 2 {
		return usagef("want lfn:/PATH DEST-URL")
	}
	lfn, err := replica.ParseLFN(fs.Arg(0))
	if err != nil {
		return usagef("%v", err)
	}
	dst, err := parseLocation(fs.Arg(1))
	if err != nil {
		return usagef("%v", err)
	}
	if dst.kind != locRemote {
		return usagef("%s: a replica is made on a server (ftp://, gsiftp://, ftps://); to fetch a copy here use ferry cp", fs.Arg(1))
	}
	if err := resolveDestination(location{kind: locRemote, path: lfn}, &dst); err != nil {
		return err
	}
	lc, err := newLFNCopy(ctx, e, "replicate", f)
	if err != nil {
		return err
	}
	defer lc.close()
	en, err := lc.cat.Lookup(ctx, lfn)
	if errors.Is(err, replica.ErrNotFound) {
		return fmt.Errorf("unknown LFN %s", replica.Format(lfn))
	}
	if err != nil {
		return err
	}
	for _, r := range en.Replicas {
		if r.URL == dst.display && r.State != replica.Bad && r.State != replica.Missing {
			return fmt.Errorf("%s is a replica of %s already", dst, replica.Format(lfn))
		}
	}
	// The destination is no candidate source of its own copy.
	rest := en
	rest.Replicas = nil
	for _, r := range en.Replicas {
		if r.URL != dst.display {
			rest.Replicas = append(rest.Replicas, r)
		}
	}
	from, dst, err := lc.copyFrom(ctx, rest, dst, jf, false)
	if err != nil {
		return err
	}
	if err := lc.cat.Add(ctx, lfn, en.Alg, replica.Replica{URL: dst.display, Size: en.Size, Sum: en.Sum, Verified: time.Now()}); err != nil {
		return fmt.Errorf("copied %s to %s, but: %w", replica.Format(lfn), dst, err)
	}
	if !f.quiet {
		fmt.Fprintf(e.stdout, "%s %s (from %s)\n", replica.Format(lfn), dst, from)
	}
	return nil
}
