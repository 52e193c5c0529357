package job

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// LinkPolicy says what a copy does with symbolic links in the source.
type LinkPolicy int

const (
	// LinksFollow copies what a link points to (globus-url-copy does
	// this: MLSD describes a link by its target). Links to directories
	// are walked, with loops detected.
	LinksFollow LinkPolicy = iota
	// LinksIgnore skips links.
	LinksIgnore
	// LinksCopy recreates the link at the destination, with the same
	// target text, where the destination can (locally, or with GCT's
	// SITE SYMLINKFROM/SYMLINKTO); elsewhere the link fails with the
	// reason.
	LinksCopy
)

// ParseLinkPolicy parses "follow", "ignore" or "copy".
func ParseLinkPolicy(s string) (LinkPolicy, error) {
	switch s {
	case "follow":
		return LinksFollow, nil
	case "ignore":
		return LinksIgnore, nil
	case "copy":
		return LinksCopy, nil
	}
	return 0, fmt.Errorf("bad link policy %q: want ignore, copy or follow", s)
}

// Sync levels, as globus-url-copy -sync-level defines them: a file is
// copied when the destination is missing (every level), its size differs
// (1 and up), it is older than the source (2), or its checksum differs
// (3; level 3 does not look at times).
const (
	SyncExists   = 0
	SyncSize     = 1
	SyncModTime  = 2
	SyncChecksum = 3
	// DefaultSyncLevel is globus-url-copy's default.
	DefaultSyncLevel = SyncModTime
)

// Options shape a plan.
type Options struct {
	// Recursive copies directories and everything below them (-r).
	Recursive bool
	// CreateDirs creates a missing destination directory and its parents
	// (-cd). Directories inside a copied tree are always created.
	CreateDirs bool
	// Links is the symbolic link policy.
	Links LinkPolicy
	// Sync copies only what differs at SyncLevel (-sync).
	Sync      bool
	SyncLevel int
	// ChecksumAlg is the algorithm of SyncChecksum; "" means MD5.
	ChecksumAlg string
	// Delete removes destination entries that the source does not have,
	// in the directories a recursive copy visits.
	Delete bool
	// Mirror makes a directory source become the destination itself,
	// existing or not, as if the source ended in "/" (ferry sync): a
	// second run then compares the same two trees.
	Mirror bool
}

// DirPair is a destination directory of a plan.
type DirPair struct {
	Src, Dst Loc
	// Create marks a directory the destination lacks.
	Create bool
	// ModTime and Mode are the source directory's (zero for the parents
	// -cd adds), for -preserve.
	ModTime time.Time
	Mode    fs.FileMode
}

// Removal is a destination entry that -delete removes.
type Removal struct {
	Loc Loc
	Dir bool
}

// Plan is what a job will do.
type Plan struct {
	// Dirs are the destination directories, parents before children.
	Dirs []DirPair
	// Pairs are the files and links to copy, in walk order.
	Pairs []Pair
	// Skipped are files the destination already has (sync).
	Skipped []Pair
	// Ignored are source links left out (-links ignore).
	Ignored []Loc
	// Deletes are the extras to remove (-delete), children first.
	Deletes []Removal
	// Failed are entries that cannot be copied, with the reason.
	Failed []Result
}

// Bytes is the total size of the Pairs whose size is known.
func (p *Plan) Bytes() int64 {
	var n int64
	for _, q := range p.Pairs {
		n += max(q.Size, 0)
	}
	return n
}

// ErrBadName is the reason a name that an endpoint cannot carry fails.
var ErrBadName = errors.New("the name contains a line break, which FTP commands cannot carry")

// ErrNoMatch is returned when a wildcard matches nothing.
var ErrNoMatch = errors.New("no match")

// maxDepth bounds the directory levels of a walk: links can loop, and a
// hostile server can list an endless tree.
const maxDepth = 128

// Planner walks sources and destinations and fills Plans.
type Planner struct {
	// Src and Dst are the two name spaces; SrcEnd and DstEnd their
	// endpoint names for the Locs of the plan.
	Src, Dst       FS
	SrcEnd, DstEnd string
	Options

	// Concurrent lets Add look at Src and Dst at the same time: true
	// when they do not share a connection. With two servers their
	// logins and first round trips then overlap.
	Concurrent bool

	// dstStat is the answer of Add's Stat of its destination, which
	// parents would otherwise ask for again (nothing is changed while
	// planning).
	dstStat *statResult
}

// statResult is the answer of one Stat.
type statResult struct {
	path string
	info Info
	err  error
}

// statDst is pl.Dst.Stat, answered from Add's own Stat of p when it has
// one.
func (pl *Planner) statDst(ctx context.Context, p string) (Info, error) {
	if r := pl.dstStat; r != nil && r.path == p {
		return r.info, r.err
	}
	return pl.Dst.Stat(ctx, p)
}

func (pl *Planner) srcLoc(p string) Loc { return Loc{End: pl.SrcEnd, Path: p} }
func (pl *Planner) dstLoc(p string) Loc { return Loc{End: pl.DstEnd, Path: p} }

// fail records an entry that cannot be copied.
func (pl *Planner) fail(plan *Plan, src, dst string, err error) {
	plan.Failed = append(plan.Failed, Result{Pair: Pair{Src: pl.srcLoc(src), Dst: pl.dstLoc(dst), Size: -1}, Err: err})
}

// hasSep reports whether p ends in a path separator of fsys.
func hasSep(fsys FS, p string) bool {
	return strings.HasSuffix(p, "/") || (!fsys.Remote() && strings.HasSuffix(p, string(filepath.Separator)))
}

// Add plans the copy of src (a file, a directory with Recursive, or a
// wildcard pattern in any of its path elements) to dst. A source path
// ending in "/" copies the directory's contents into dst; otherwise a
// directory dst (an existing one, one ending in "/", or any destination
// of several sources) receives the source under its own name. Errors of
// the whole request (no match, a missing source, a destination that is
// not a directory) are returned; problems of single entries go to
// plan.Failed.
func (pl *Planner) Add(ctx context.Context, plan *Plan, src, dst string) error {
	if pl.SyncLevel < SyncExists || pl.SyncLevel > SyncChecksum {
		return fmt.Errorf("sync level %d: want 0 to 3", pl.SyncLevel)
	}
	wild := hasMeta(src)
	srcs, srcStats, dres, err := pl.lookUp(ctx, src, dst)
	if err != nil {
		return err
	}
	if len(srcs) == 1 && srcs[0] == src {
		wild = false // a literal name with pattern characters
	}
	contents := !wild && (hasSep(pl.Src, src) || pl.Mirror)
	pl.dstStat = dres
	defer func() { pl.dstStat = nil }()
	dstInfo, err := dres.info, dres.err
	dstExists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", pl.dstLoc(dst), err)
	}
	dstIsDir := (dstExists && dstInfo.Type == TypeDir) || hasSep(pl.Dst, dst) || wild || len(srcs) > 1
	if dstIsDir && dstExists && dstInfo.Type != TypeDir {
		return fmt.Errorf("%s is not a directory", pl.dstLoc(dst))
	}
	todo, contents, err := pl.sources(ctx, plan, srcs, srcStats, dst, wild, contents)
	if err != nil {
		return err
	}
	// The destination directory, or the parent of a destination file.
	need := dst
	if !dstIsDir {
		need = parentOf(pl.Dst, dst)
	}
	if need != "" && (!dstIsDir || !dstExists) {
		if err := pl.parents(ctx, plan, need, contents && dstIsDir); err != nil {
			return err
		}
	}
	for _, s := range todo {
		pl.addSource(ctx, plan, s, dst, dstIsDir, contents)
	}
	return nil
}

// lookUp expands the source pattern src and stats the destination dst.
// With Concurrent the destination's Stat overlaps the source's expansion
// and Stats (returned in srcStats, one per match); without, the
// destination is looked at after the expansion, and not at all when the
// expansion fails, and srcStats is nil.
func (pl *Planner) lookUp(ctx context.Context, src, dst string) (srcs []string, srcStats []statResult, dres *statResult, err error) {
	dres = &statResult{path: dst}
	dstDone := make(chan struct{})
	statDst := func() {
		defer close(dstDone)
		dres.info, dres.err = pl.Dst.Stat(ctx, dst)
	}
	if pl.Concurrent {
		go statDst()
	}
	srcs, err = expand(ctx, pl.Src, src)
	if err == nil && pl.Concurrent {
		srcStats = make([]statResult, len(srcs))
		for i, s := range srcs {
			srcStats[i].info, srcStats[i].err = pl.Src.Stat(ctx, s)
		}
	}
	if pl.Concurrent {
		<-dstDone
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if !pl.Concurrent {
		statDst()
	}
	return srcs, srcStats, dres, nil
}

// source is one matched source path of Add and what it is.
type source struct {
	path string
	info Info
}

// sources looks at each matched source of Add (in srcStats when lookUp
// has, else with a Stat now) and keeps those to copy. With a wildcard a
// source that cannot be copied is recorded in plan and left out; a
// literal source fails the whole request. contents (the source's
// contents go into dst) is returned false when a Mirror source turns out
// to be a file.
func (pl *Planner) sources(ctx context.Context, plan *Plan, srcs []string, srcStats []statResult, dst string, wild, contents bool) ([]source, bool, error) {
	var todo []source
	for i, s := range srcs {
		var in Info
		var err error
		if srcStats != nil {
			in, err = srcStats[i].info, srcStats[i].err
		} else {
			in, err = pl.Src.Stat(ctx, s)
		}
		if err != nil {
			if !wild {
				return nil, contents, fmt.Errorf("%s: %w", pl.srcLoc(s), err)
			}
			pl.fail(plan, s, dst, err)
			continue
		}
		if in.Type == TypeDir && !pl.Recursive {
			if !wild {
				return nil, contents, fmt.Errorf("%s is a directory (copy it with -r)", pl.srcLoc(s))
			}
			plan.Ignored = append(plan.Ignored, pl.srcLoc(s))
			continue
		}
		if contents && in.Type != TypeDir {
			if !pl.Mirror {
				return nil, contents, fmt.Errorf("%s is not a directory", pl.srcLoc(s))
			}
			contents = false
		}
		todo = append(todo, source{s, in})
	}
	return todo, contents, nil
}

// addSource plans one source of Add into dst: a directory is walked, a
// file (or link) becomes an entry. Into a directory dst the source goes
// under its own name, unless its contents go there.
func (pl *Planner) addSource(ctx context.Context, plan *Plan, s source, dst string, dstIsDir, contents bool) {
	target := strings.TrimSuffix(dst, "/")
	if target == "" {
		target = "/"
	}
	if dstIsDir && !contents {
		target = pl.Dst.Join(target, baseName(s.path, pl.Src.Remote()))
	}
	if (pl.Src.Remote() || pl.Dst.Remote()) && strings.ContainsAny(target, "\r\n") {
		pl.fail(plan, s.path, target, ErrBadName)
		return
	}
	switch s.info.Type {
	case TypeDir:
		srcPath := s.path
		if contents {
			srcPath = strings.TrimSuffix(srcPath, "/")
			if srcPath == "" {
				srcPath = "/"
			}
		}
		pl.walk(ctx, plan, srcPath, s.info, target, target, 0, nil)
	default:
		var dinfo *Info
		if in, err := pl.statDst(ctx, target); err == nil {
			dinfo = &in
		}
		pl.entry(ctx, plan, s.path, s.info, target, dinfo)
	}
}

// parents plans the creation of the missing directories up to and
// including dir (-cd); with skipSelf dir itself is left to the walk of
// the tree that becomes it. Without CreateDirs a missing dir is an
// error.
func (pl *Planner) parents(ctx context.Context, plan *Plan, dir string, skipSelf bool) error {
	var missing []string
	for d := dir; d != "" && d != "/" && d != "." && d != "./"; d = parentOf(pl.Dst, d) {
		if plan.hasDir(pl.dstLoc(d)) {
			break
		}
		in, err := pl.statDst(ctx, d)
		if err == nil {
			if in.Type != TypeDir {
				return fmt.Errorf("%s is not a directory", pl.dstLoc(d))
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", pl.dstLoc(d), err)
		}
		missing = append(missing, d)
	}
	if len(missing) == 0 {
		return nil
	}
	if !pl.CreateDirs && !(skipSelf && len(missing) == 1) {
		return fmt.Errorf("%s does not exist (-cd creates it)", pl.dstLoc(missing[len(missing)-1]))
	}
	if skipSelf {
		missing = missing[1:]
	}
	for _, d := range slices.Backward(missing) {
		plan.Dirs = append(plan.Dirs, DirPair{Dst: pl.dstLoc(d), Create: true})
	}
	return nil
}

func (p *Plan) hasDir(l Loc) bool {
	for _, d := range p.Dirs {
		if d.Dst == l {
			return true
		}
	}
	return false
}

// parentOf returns the parent directory of p in fsys's syntax, or "".
func parentOf(fsys FS, p string) string {
	if fsys.Remote() {
		p = strings.TrimSuffix(p, "/")
		i := strings.LastIndexByte(p, '/')
		switch {
		case i < 0:
			return ""
		case i == 0:
			return "/"
		}
		return p[:i]
	}
	d := filepath.Dir(filepath.Clean(p))
	if d == "." && !strings.HasPrefix(p, ".") {
		return ""
	}
	return d
}

// walk plans the directory src (described by in) into dst, which is
// root or below it.
func (pl *Planner) walk(ctx context.Context, plan *Plan, src string, in Info, dst, root string, depth int, seen []string) {
	seen, ok := pl.mayEnter(ctx, plan, src, in, dst, depth, seen)
	if !ok {
		return
	}
	entries, have, ok := pl.listDir(ctx, plan, src, in, dst)
	if !ok {
		return
	}
	names := map[string]bool{}
	for _, e := range entries {
		pl.walkEntry(ctx, plan, src, e, dst, root, depth, seen, have, names)
	}
	if pl.Delete && have != nil {
		pl.planExtras(ctx, plan, dst, root, have, names)
	}
}

// mayEnter reports whether the walk may go into the directory src: not
// once ctx is done, nor deeper than maxDepth, nor into a directory it is
// already in (a link loop). It returns seen with src's identity added.
func (pl *Planner) mayEnter(ctx context.Context, plan *Plan, src string, in Info, dst string, depth int, seen []string) ([]string, bool) {
	if err := ctx.Err(); err != nil {
		pl.fail(plan, src, dst, err)
		return seen, false
	}
	if depth > maxDepth {
		pl.fail(plan, src, dst, fmt.Errorf("more than %d directory levels (a link loop?)", maxDepth))
		return seen, false
	}
	if in.id != "" {
		if slices.Contains(seen, in.id) {
			pl.fail(plan, src, dst, errors.New("symbolic link loop: the directory contains itself"))
			return seen, false
		}
		seen = append(seen, in.id)
	}
	return seen, true
}

// listDir lists the source directory src, sorted by name, and plans the
// destination directory dst: created when missing, else listed (with
// Sync or Delete) into have, by name. have is nil when dst is not
// listed: every entry then counts as missing. A failure is recorded in
// plan, and ok is false.
func (pl *Planner) listDir(ctx context.Context, plan *Plan, src string, in Info, dst string) (entries []Info, have map[string]Info, ok bool) {
	// The destination's Stat overlaps the listing when allowed.
	var dinfo Info
	var derr error
	dstDone := make(chan struct{})
	statDst := func() {
		defer close(dstDone)
		dinfo, derr = pl.statDst(ctx, dst)
	}
	if pl.Concurrent {
		go statDst()
	}
	entries, err := pl.Src.ReadDir(ctx, src)
	if pl.Concurrent {
		<-dstDone
	}
	if err != nil {
		pl.fail(plan, src, dst, fmt.Errorf("list: %w", err))
		return nil, nil, false
	}
	slices.SortFunc(entries, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	have = map[string]Info{}
	if !pl.Concurrent {
		statDst()
	}
	err = derr
	switch {
	case err == nil && dinfo.Type != TypeDir:
		pl.fail(plan, src, dst, errors.New("the destination exists and is not a directory"))
		return nil, nil, false
	case err == nil:
		plan.Dirs = append(plan.Dirs, DirPair{Src: pl.srcLoc(src), Dst: pl.dstLoc(dst), ModTime: in.ModTime, Mode: in.Mode})
		if pl.Sync || pl.Delete {
			des, err := pl.Dst.ReadDir(ctx, dst)
			if err != nil {
				pl.fail(plan, src, dst, fmt.Errorf("list the destination: %w", err))
				return nil, nil, false
			}
			for _, d := range des {
				if err := wire.CheckEntryName(d.Name); err != nil {
					pl.fail(plan, src, dst, fmt.Errorf("list the destination: %w", err))
					return nil, nil, false
				}
				have[d.Name] = d
			}
		} else {
			// Without a listing every entry counts as missing; copies
			// replace files, and existing directories are tolerated.
			have = nil
		}
	case errors.Is(err, fs.ErrNotExist):
		plan.Dirs = append(plan.Dirs, DirPair{Src: pl.srcLoc(src), Dst: pl.dstLoc(dst), Create: true, ModTime: in.ModTime, Mode: in.Mode})
	default:
		pl.fail(plan, src, dst, err)
		return nil, nil, false
	}
	return entries, have, true
}

// walkEntry plans the entry e of the source directory src into dst
// (below root): a directory (or a followed link to one) is walked, other
// entries are planned by entry, have giving the destination's entry.
// names collects the names seen, to refuse one listed twice.
func (pl *Planner) walkEntry(ctx context.Context, plan *Plan, src string, e Info, dst, root string, depth int, seen []string, have map[string]Info, names map[string]bool) {
	sp, dp := pl.Src.Join(src, e.Name), pl.Dst.Join(dst, e.Name)
	// The endpoints' listings refuse such names already; a name that
	// would leave the destination (or name an entry twice, which a
	// hostile listing can use to multiply the walk) is never planned.
	if err := wire.CheckEntryName(e.Name); err != nil {
		pl.fail(plan, src, dst, err)
		return
	}
	if !within(pl.Dst, root, dp) {
		pl.fail(plan, sp, dp, fmt.Errorf("%w: %q leaves the destination %s", wire.ErrUnsafeName, e.Name, root))
		return
	}
	if names[e.Name] {
		pl.fail(plan, sp, dp, fmt.Errorf("the source lists %q twice", e.Name))
		return
	}
	names[e.Name] = true
	if (pl.Src.Remote() || pl.Dst.Remote()) && strings.ContainsAny(e.Name, "\r\n") {
		pl.fail(plan, sp, dp, ErrBadName)
		return
	}
	var d *Info
	if di, ok := have[e.Name]; ok {
		d = &di
	}
	if e.Type == TypeDir && (e.Link == "" || pl.Links == LinksFollow) {
		if e.Link != "" && pl.Src.Remote() && linkLoops(src, e.Link) {
			pl.fail(plan, sp, dp, fmt.Errorf("symbolic link loop: %s points to %s", e.Name, e.Link))
			return
		}
		pl.walk(ctx, plan, sp, e, dp, root, depth+1, seen)
		return
	}
	pl.entry(ctx, plan, sp, e, dp, d)
}

// planExtras plans the removal (-delete) of the entries of the
// destination directory dst, listed in have, that the source lacks (not
// in names), in name order; none outside root.
func (pl *Planner) planExtras(ctx context.Context, plan *Plan, dst, root string, have map[string]Info, names map[string]bool) {
	extras := make([]string, 0)
	for name := range have {
		if !names[name] {
			extras = append(extras, name)
		}
	}
	slices.Sort(extras)
	for _, name := range extras {
		if p := pl.Dst.Join(dst, name); within(pl.Dst, root, p) {
			pl.removeTree(ctx, plan, p, have[name], 0)
		}
	}
}

// within reports whether p is root or inside it, in fsys's syntax.
func within(fsys FS, root, p string) bool {
	if !fsys.Remote() {
		rel, err := filepath.Rel(root, p)
		return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	root, p = path.Clean(root), path.Clean(p)
	switch {
	case p == root:
		return true
	case root == ".":
		return !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../")
	case root == "/":
		return path.IsAbs(p)
	}
	return strings.HasPrefix(p, root+"/")
}

// linkLoops reports whether a link in dir with the absolute target
// target points to dir or one of its ancestors.
func linkLoops(dir, target string) bool {
	if !strings.HasPrefix(target, "/") {
		target = path.Join(dir, target)
	}
	target = path.Clean(target)
	return target == "/" || dir == target || strings.HasPrefix(dir+"/", target+"/")
}

// entry plans one non-directory entry (or a link to a directory that is
// not followed). d describes the destination when it exists, nil when
// it does not or is not known.
func (pl *Planner) entry(ctx context.Context, plan *Plan, sp string, e Info, dp string, d *Info) {
	p := Pair{Src: pl.srcLoc(sp), Dst: pl.dstLoc(dp), Size: e.Size, ModTime: e.ModTime, Mode: e.Mode}
	if e.Link != "" {
		switch pl.Links {
		case LinksIgnore:
			plan.Ignored = append(plan.Ignored, p.Src)
			return
		case LinksCopy:
			p.Link, p.Size = e.Link, 0
			if pl.Sync && d != nil {
				plan.Skipped = append(plan.Skipped, p)
				return
			}
			plan.Pairs = append(plan.Pairs, p)
			return
		}
		if e.Type == TypeLink {
			pl.fail(plan, sp, dp, fmt.Errorf("dangling symbolic link to %s", e.Link))
			return
		}
	}
	switch e.Type {
	case TypeFile:
	case TypeDir:
		pl.fail(plan, sp, dp, errors.New("is a directory (copy it with -r)"))
		return
	default:
		pl.fail(plan, sp, dp, fmt.Errorf("not a regular file (%s)", e.Type))
		return
	}
	if pl.Sync && d != nil {
		copy, err := pl.differs(ctx, e, sp, *d, dp)
		if err != nil {
			pl.fail(plan, sp, dp, err)
			return
		}
		if !copy {
			plan.Skipped = append(plan.Skipped, p)
			return
		}
	}
	plan.Pairs = append(plan.Pairs, p)
}

// differs decides at the sync level whether the source file s must be
// copied over the existing destination d.
func (pl *Planner) differs(ctx context.Context, s Info, sp string, d Info, dp string) (bool, error) {
	if d.Type == TypeDir {
		return false, errors.New("the destination is a directory")
	}
	level := pl.SyncLevel
	if level == SyncExists {
		return false, nil
	}
	if s.Size < 0 || d.Size < 0 || s.Size != d.Size {
		return true, nil
	}
	switch level {
	case SyncModTime:
		if s.ModTime.IsZero() || d.ModTime.IsZero() {
			return true, nil
		}
		// MLSx times have whole seconds.
		return s.ModTime.Truncate(time.Second).After(d.ModTime.Truncate(time.Second)), nil
	case SyncChecksum:
		alg := pl.ChecksumAlg
		if alg == "" {
			alg = "MD5"
		}
		a, err := pl.Src.Checksum(ctx, alg, sp)
		if err != nil {
			return false, fmt.Errorf("checksum of the source: %w", err)
		}
		b, err := pl.Dst.Checksum(ctx, alg, dp)
		if err != nil {
			return true, nil // no checksum of the destination: copy
		}
		return !strings.EqualFold(a, b), nil
	}
	return false, nil
}

// removeTree plans the removal of the destination entry p (described by
// in), a directory's contents first.
func (pl *Planner) removeTree(ctx context.Context, plan *Plan, p string, in Info, depth int) {
	if in.Type == TypeDir && in.Link == "" {
		failed := func(err error) {
			plan.Failed = append(plan.Failed, Result{Pair: Pair{Dst: pl.dstLoc(p), Size: -1}, Err: fmt.Errorf("list for -delete: %w", err)})
		}
		if depth > maxDepth {
			failed(fmt.Errorf("more than %d directory levels", maxDepth))
			return
		}
		entries, err := pl.Dst.ReadDir(ctx, p)
		if err != nil {
			failed(err)
			return
		}
		for _, e := range entries {
			if err := wire.CheckEntryName(e.Name); err != nil {
				failed(err)
				return
			}
		}
		for _, e := range entries {
			pl.removeTree(ctx, plan, pl.Dst.Join(p, e.Name), e, depth+1)
		}
		plan.Deletes = append(plan.Deletes, Removal{Loc: pl.dstLoc(p), Dir: true})
		return
	}
	plan.Deletes = append(plan.Deletes, Removal{Loc: pl.dstLoc(p)})
}

// expand returns the paths a pattern matches, sorted; a path without
// wildcards is returned as is.
func expand(ctx context.Context, fsys FS, pattern string) ([]string, error) {
	if !hasMeta(pattern) {
		return []string{pattern}, nil
	}
	sep := "/"
	if !fsys.Remote() {
		sep = string(filepath.Separator)
	}
	dirOnly := hasSep(fsys, pattern)
	trimmed := strings.TrimSuffix(pattern, sep)
	parts := strings.Split(trimmed, sep)
	first := slices.IndexFunc(parts, hasMeta)
	prefix := strings.Join(parts[:first], sep)
	if first == 1 && parts[0] == "" {
		prefix = "/"
	}
	if prefix == "" && !fsys.Remote() {
		prefix = "."
	}
	cands := []string{prefix}
	for j := first; j < len(parts); j++ {
		last := j == len(parts)-1
		var next []string
		for _, c := range cands {
			join := func(name string) string {
				if c == "." && !fsys.Remote() && !strings.HasPrefix(pattern, ".") {
					return name
				}
				return fsys.Join(c, name)
			}
			if !hasMeta(parts[j]) {
				next = append(next, join(parts[j]))
				continue
			}
			if _, err := path.Match(parts[j], ""); err != nil {
				return nil, fmt.Errorf("bad pattern %q: %w", pattern, err)
			}
			entries, err := fsys.ReadDir(ctx, c)
			if err != nil {
				if len(cands) == 1 && j == first {
					return nil, fmt.Errorf("%s: %w", pattern, err)
				}
				continue
			}
			for _, e := range entries {
				if ok, _ := path.Match(parts[j], e.Name); !ok {
					continue
				}
				if (!last || dirOnly) && e.Type != TypeDir {
					continue
				}
				next = append(next, join(e.Name))
			}
		}
		cands = next
	}
	if len(cands) == 0 {
		// A name that merely looks like a pattern ("data[1].txt").
		if _, err := fsys.Stat(ctx, pattern); err == nil {
			return []string{pattern}, nil
		}
		return nil, fmt.Errorf("%s: %w", pattern, ErrNoMatch)
	}
	slices.Sort(cands)
	return cands, nil
}
