// Package dpm holds Ferry's data processing modules: named transforms
// that ERET and ESTO apply to the bytes of a transfer on the server
// (GFD.020 §3.6, the "data processing module" box of the Globus striped
// server). A module compresses what ERET sends (gzip, zstd) and
// decompresses what ESTO receives, packs a directory into one tar stream
// and unpacks one safely, concatenates files (cat), or appends and
// checks a trailing checksum (cksum).
//
// On the wire a module is named as GCT's server and client name it
// (globus_gridftp_server_control_commands.c, globus-url-copy -smn/-smp
// and -dmn/-dmp):
//
//	ERET NAME="PARAMS" PATH
//	ESTO NAME="PARAMS" PATH
//
// PARAMS is opaque to the server and may not hold a double quote. Ferry
// chains modules: NAME may list several, separated by commas, and PARAMS
// then holds each one's parameters separated by "|", in the same order
// ("tar,zstd" with "|3": a tar of the directory, compressed at level 3).
// On ERET the chain runs left to right; on ESTO it is undone right to
// left, so both sides name it alike. Only the first module of a chain
// may be a source or sink of its own (tar, cat); the others are filters.
//
// Modules register by name in init (Register) and a server enables
// them with an allow-list (Resolve's allowed); the zero list enables
// none.
package dpm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// Errors. A module's failure wraps one of these, or a dsi sentinel.
var (
	// ErrSyntax: the module argument is not NAME="PARAMS" PATH, or a
	// module's parameters are malformed.
	ErrSyntax = errors.New("dpm: bad module argument")
	// ErrUnknown: no module has the name.
	ErrUnknown = errors.New("dpm: unknown module")
	// ErrNotAllowed: the module exists but the server does not allow it.
	ErrNotAllowed = errors.New("dpm: module not allowed on this server")
	// ErrDirection: the module does not work in this direction (cat on
	// ESTO), or not at this place of a chain.
	ErrDirection = errors.New("dpm: module cannot be used here")
	// ErrUnsafe: an archive entry would escape its target or is not a
	// plain file or directory.
	ErrUnsafe = errors.New("dpm: unsafe archive entry")
	// ErrLimit: the data exceeds a Limits bound.
	ErrLimit = errors.New("dpm: limit exceeded")
	// ErrCorrupt: the data is not what the module expects (a bad gzip
	// stream, a checksum that does not match).
	ErrCorrupt = errors.New("dpm: corrupt data")
)

// ModuleError is an error about one module of a chain.
type ModuleError struct {
	Name string
	Err  error
}

func (e *ModuleError) Error() string { return fmt.Sprintf("module %s: %v", e.Name, e.Err) }
func (e *ModuleError) Unwrap() error { return e.Err }

// Limits bound what an ESTO's modules write. The zero value of each
// field means its default.
type Limits struct {
	// MaxBytes is the most bytes a chain writes to storage (after
	// decompression, unpacking), and the most an ERET chain produces;
	// 0 means DefaultMaxBytes.
	MaxBytes int64
	// MaxEntries is the most entries a tar unpack makes; 0 means
	// DefaultMaxEntries.
	MaxEntries int
}

// Default limits.
const (
	DefaultMaxBytes   = 64 << 30
	DefaultMaxEntries = 1 << 20
)

// MaxChain is the most modules a chain may name.
const MaxChain = 4

func (l Limits) maxBytes() int64 {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return DefaultMaxBytes
}

func (l Limits) maxEntries() int {
	if l.MaxEntries > 0 {
		return l.MaxEntries
	}
	return DefaultMaxEntries
}

// Env is what a module works on.
type Env struct {
	// Storage is the session's storage, and Path the file or directory
	// the command names in it (clean and absolute).
	Storage dsi.Storage
	Path    string
	// Params are this module's parameters, as the client sent them.
	Params string
	// Limits bound what ESTO writes.
	Limits Limits
	// Commit, when set, is asked on ESTO just before a file the chain
	// made is put in place (its part file renamed over its name, or a
	// file written in place closed), after everything the chain had to
	// check about it; n is the file's size. An error refuses the file:
	// it is removed, and the store fails with the error. The caller
	// thus decides last whether a result may appear as complete (its
	// control connection still there, its data channel's end in order).
	// For a sink (tar) it is asked once per file.
	Commit func(n int64) error
}

// Module is a named processing module. A filter has Encode and Decode;
// a source has Pack (it reads the storage itself, first in an ERET
// chain), a sink Unpack (it writes the storage itself, first in an ESTO
// chain).
type Module struct {
	// Name is how clients name it; lower case.
	Name string
	// Encode transforms src into dst (ERET).
	Encode func(ctx context.Context, env Env, dst io.Writer, src io.Reader) error
	// Decode undoes Encode (ESTO).
	Decode func(ctx context.Context, env Env, dst io.Writer, src io.Reader) error
	// Pack writes the bytes that stand for env.Path (ERET).
	Pack func(ctx context.Context, env Env, dst io.Writer) error
	// Unpack stores src at env.Path (ESTO).
	Unpack func(ctx context.Context, env Env, src io.Reader) error
	// Layout, when set beside Pack, lays out the bytes Pack would write
	// without writing them (ERET of the module alone, Chain.Open): the
	// same bytes, made on demand at any offset.
	Layout func(ctx context.Context, env Env) (*Layout, error)
}

var registry = map[string]*Module{}

// Register makes m known by its name. It is called from init functions
// and panics on an empty or duplicate name.
func Register(m *Module) {
	if m.Name == "" || m.Name != strings.ToLower(m.Name) || strings.ContainsAny(m.Name, ",|=\" ") {
		panic("dpm: bad module name " + m.Name)
	}
	if _, dup := registry[m.Name]; dup {
		panic("dpm: module registered twice: " + m.Name)
	}
	registry[m.Name] = m
}

// Lookup returns the module named name (case-insensitive).
func Lookup(name string) (*Module, bool) {
	m, ok := registry[strings.ToLower(name)]
	return m, ok
}

// Names lists the registered modules, sorted.
func Names() []string {
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Spec is a parsed module argument of ERET or ESTO.
type Spec struct {
	Names  []string // the chain, in ERET order
	Params []string // each module's parameters ("" when not given)
	Path   string   // the path argument, as sent
}

// IsSpec reports whether an ERET or ESTO argument names modules
// (NAME="PARAMS" PATH) rather than a P or A form.
func IsSpec(arg string) bool {
	name, _, ok := strings.Cut(arg, `="`)
	return ok && name != "" && !strings.ContainsAny(name, " \t")
}

// ParseSpec parses NAME="PARAMS" PATH.
func ParseSpec(arg string) (Spec, error) {
	name, rest, ok := strings.Cut(arg, `="`)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return Spec{}, fmt.Errorf("%w: want NAME=\"PARAMS\" PATH", ErrSyntax)
	}
	params, p, ok := strings.Cut(rest, `"`)
	if !ok {
		return Spec{}, fmt.Errorf("%w: parameters without a closing quote", ErrSyntax)
	}
	if !strings.HasPrefix(p, " ") || strings.TrimSpace(p) == "" {
		return Spec{}, fmt.Errorf("%w: no path after the parameters", ErrSyntax)
	}
	sp := Spec{Names: strings.Split(name, ","), Path: p[1:]}
	if slices.Contains(sp.Names, "") {
		return Spec{}, fmt.Errorf("%w: empty module name in %q", ErrSyntax, name)
	}
	sp.Params = strings.Split(params, "|")
	if len(sp.Params) > len(sp.Names) {
		return Spec{}, fmt.Errorf("%w: %d parameter sets for %d modules", ErrSyntax, len(sp.Params), len(sp.Names))
	}
	for len(sp.Params) < len(sp.Names) {
		sp.Params = append(sp.Params, "")
	}
	return sp, nil
}

// FormatSpec is the module argument for a chain and a path (the inverse
// of ParseSpec).
func FormatSpec(names, params []string, p string) string {
	return fmt.Sprintf("%s=\"%s\" %s", strings.Join(names, ","), strings.Join(params, "|"), p)
}

// step is one module of a chain with its parameters.
type step struct {
	m      *Module
	params string
}

// Chain is a resolved chain of modules.
type Chain struct {
	steps []step
}

// Resolve checks a chain against the registry and the allow-list and
// its direction (store: ESTO). A module that is unknown, not in allowed,
// or unfit for its place fails with a *ModuleError naming it.
func Resolve(sp Spec, allowed []string, store bool) (*Chain, error) {
	if len(sp.Names) > MaxChain {
		return nil, fmt.Errorf("%w: a chain of %d modules (at most %d)", ErrSyntax, len(sp.Names), MaxChain)
	}
	c := &Chain{}
	for i, n := range sp.Names {
		if slices.ContainsFunc(sp.Names[:i], func(a string) bool { return strings.EqualFold(a, n) }) {
			return nil, &ModuleError{Name: n, Err: fmt.Errorf("%w: named twice in one chain", ErrDirection)}
		}
		m, ok := Lookup(n)
		if !ok {
			return nil, &ModuleError{Name: n, Err: ErrUnknown}
		}
		if !slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, m.Name) }) {
			return nil, &ModuleError{Name: n, Err: ErrNotAllowed}
		}
		fits := m.Encode != nil
		if store {
			fits = m.Decode != nil
		}
		if i == 0 && (!store && m.Pack != nil || store && m.Unpack != nil) {
			fits = true
		}
		if !fits {
			return nil, &ModuleError{Name: n, Err: ErrDirection}
		}
		c.steps = append(c.steps, step{m, sp.Params[i]})
	}
	return c, nil
}

// Names lists the chain's modules.
func (c *Chain) Names() []string {
	var n []string
	for _, s := range c.steps {
		n = append(n, s.m.Name)
	}
	return n
}

// pipeline runs stages connected by pipes; each stage closes its input
// when it ends, so a failure anywhere unblocks the stages before it.
type pipeline struct {
	g *errgroup.Group
}

var errStageDone = errors.New("dpm: stage ended")

// stage runs fn(w, in) in its own goroutine and returns what it writes;
// fn's reads and writes fail once ctx is done.
func (p *pipeline) stage(ctx context.Context, name string, in io.Reader, fn func(w io.Writer, r io.Reader) error) io.Reader {
	pr, pw := io.Pipe()
	p.g.Go(func() error {
		err := fn(ctxWriter{ctx, pw}, ctxReader{ctx, in})
		if err != nil {
			err = &ModuleError{Name: name, Err: err}
		}
		pw.CloseWithError(err)
		if c, ok := in.(*io.PipeReader); ok {
			c.CloseWithError(errOr(err, errStageDone))
		}
		return err
	})
	return pr
}

func errOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// Retrieve writes the chain's output for env.Path to dst (ERET).
func (c *Chain) Retrieve(ctx context.Context, env Env, dst io.Writer) error {
	g, gctx := errgroup.WithContext(ctx)
	p := &pipeline{g: g}
	var src io.Reader
	steps := c.steps
	if first := steps[0]; first.m.Pack != nil {
		e := env
		e.Params = first.params
		pr, pw := io.Pipe()
		g.Go(func() error {
			err := first.m.Pack(gctx, e, ctxWriter{gctx, pw})
			if err != nil {
				err = &ModuleError{Name: first.m.Name, Err: err}
			}
			pw.CloseWithError(err)
			return err
		})
		src = pr
		steps = steps[1:]
	} else {
		r, err := env.Storage.Open(ctx, env.Path)
		if err != nil {
			return err
		}
		defer r.Close()
		src = io.NewSectionReader(r, 0, r.Size())
	}
	for _, st := range steps {
		e := env
		e.Params = st.params
		src = p.stage(gctx, st.m.Name, src, func(w io.Writer, r io.Reader) error { return st.m.Encode(gctx, e, w, r) })
	}
	_, err := io.Copy(&limitWriter{w: dst, limit: env.Limits.maxBytes()}, ctxReader{ctx, src})
	if err == nil {
		err = ctx.Err()
	}
	if pr, ok := src.(*io.PipeReader); ok {
		pr.CloseWithError(errOr(err, errStageDone))
	}
	return errors.Join(err, g.Wait())
}

// Open returns the chain's output (ERET) as a reader of exact size whose
// bytes are made on demand, when the chain is one source module that can
// lay its output out ahead (tar, cat); ok is false for any other chain,
// whose output only Retrieve makes. Its bytes are those Retrieve writes;
// a file changed since Open makes a read fail (ErrChanged).
func (c *Chain) Open(ctx context.Context, env Env) (l *Layout, ok bool, err error) {
	first := c.steps[0]
	if len(c.steps) != 1 || first.m.Pack == nil || first.m.Layout == nil {
		return nil, false, nil
	}
	env.Params = first.params
	l, err = first.m.Layout(ctx, env)
	if err == nil && l.Size() > env.Limits.maxBytes() {
		err = fmt.Errorf("%w: the output is %d bytes, more than %d", ErrLimit, l.Size(), env.Limits.maxBytes())
	}
	if err != nil {
		return nil, true, &ModuleError{Name: first.m.Name, Err: err}
	}
	return l, true, nil
}

// aborter is a dsi.Writer that can discard what it was given (dsi/s3).
type aborter interface{ Abort() error }

// Store runs the chain backwards over src and stores the result at
// env.Path: a file (created or truncated), or what a sink makes of it
// (ESTO). A file is removed again when the chain fails.
func (c *Chain) Store(ctx context.Context, env Env, src io.Reader) (err error) {
	g, gctx := errgroup.WithContext(ctx)
	p := &pipeline{g: g}
	steps := c.steps
	sink := steps[0].m.Unpack
	if sink != nil {
		steps = steps[1:]
	}
	for i := len(steps) - 1; i >= 0; i-- {
		st := steps[i]
		e := env
		e.Params = st.params
		src = p.stage(gctx, st.m.Name, src, func(w io.Writer, r io.Reader) error { return st.m.Decode(gctx, e, w, r) })
	}
	limited := &limitReader{r: ctxReader{ctx, src}, limit: env.Limits.maxBytes()}
	defer func() {
		if pr, ok := src.(*io.PipeReader); ok {
			pr.CloseWithError(errOr(err, errStageDone))
		}
		err = errors.Join(err, g.Wait())
		if err == nil {
			// A cancelled store never reports success.
			err = ctx.Err()
		}
	}()
	if sink != nil {
		e := env
		e.Params = c.steps[0].params
		if err := sink(ctx, e, limited); err != nil {
			return &ModuleError{Name: c.steps[0].m.Name, Err: err}
		}
		// What follows the archive's end (a tar's padding) is read, so
		// that the stages before end cleanly; only a little of it.
		n, err := io.Copy(io.Discard, io.LimitReader(limited, maxTrailer+1))
		if err == nil && n > maxTrailer {
			err = fmt.Errorf("%w: more than %d bytes follow the archive's end", ErrCorrupt, maxTrailer)
		}
		return err
	}
	return writeFile(ctx, env.Storage, env.Path, limited, env.Commit)
}

// Unpacks reports whether the chain ends in a sink (tar) on ESTO: what it
// stores is a tree of files, not one file of the chain's output.
func (c *Chain) Unpacks() bool { return c.steps[0].m.Unpack != nil }

// maxTrailer bounds what ESTO reads after an archive's end.
const maxTrailer = 1 << 20

// writeFile stores r as the file name. On a storage that renames, it
// writes a private part file beside name (one FTP commands refuse, see
// xfer.IsPartName) and renames it over name only on success, so that a
// refused ESTO leaves an old file as it was. commit (Env.Commit), when
// given, has the last word.
func writeFile(ctx context.Context, st dsi.Storage, name string, r io.Reader, commit func(int64) error) error {
	return writeAtomic(ctx, st, name, dsi.CreateOptions{Truncate: true, Size: -1}, ctxReader{ctx, r}, nil, commit)
}

// writeAtomic writes r to name (through a part file unless st writes in
// place); check, when given, vets what was copied before it is kept, and
// then commit (Env.Commit), when given, whether it may be put in place.
func writeAtomic(ctx context.Context, st dsi.Storage, name string, opts dsi.CreateOptions, r io.Reader, check func(n int64, err error) error, commit func(int64) error) error {
	tmp := name
	if !dsi.WritesInPlace(st) {
		var rnd [8]byte
		rand.Read(rnd[:])
		tmp = xfer.PartName(name + ".esto-" + hex.EncodeToString(rnd[:]))
		opts.Truncate = true
		opts.NoFollow = true
	}
	w, err := st.Create(ctx, tmp, opts)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.NewOffsetWriter(w, 0), r)
	if check != nil {
		err = check(n, err)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && commit != nil {
		// Before Close: closing a file written in place (an S3
		// object) is what makes it appear.
		err = commit(n)
	}
	if err != nil {
		if a, ok := w.(aborter); ok {
			a.Abort()
		} else {
			w.Close()
			st.Remove(context.WithoutCancel(ctx), tmp)
		}
		return err
	}
	if err := w.Close(); err != nil {
		if tmp != name {
			st.Remove(context.WithoutCancel(ctx), tmp)
		}
		return err
	}
	if tmp != name {
		if err := st.Rename(ctx, tmp, name); err != nil {
			st.Remove(context.WithoutCancel(ctx), tmp)
			return err
		}
	}
	return nil
}

// ctxReader and ctxWriter fail once ctx is done, checked per call.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(b)
}

// limitWriter fails with ErrLimit once more than limit bytes were written.
type limitWriter struct {
	w     io.Writer
	n     int64
	limit int64
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > l.limit-l.n {
		return 0, fmt.Errorf("%w: the output grows past %d bytes", ErrLimit, l.limit)
	}
	n, err := l.w.Write(b)
	l.n += int64(n)
	return n, err
}

// limitReader fails with ErrLimit once more than limit bytes were read.
type limitReader struct {
	r     io.Reader
	n     int64 // read so far
	limit int64
}

func (l *limitReader) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	l.n += int64(n)
	if l.n > l.limit {
		return 0, fmt.Errorf("%w: the data grows past %d bytes", ErrLimit, l.limit)
	}
	return n, err
}
