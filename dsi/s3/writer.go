package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/ferrygrid/ferry/dsi"
)

// Writer is a file being written: WriteAt at any offsets, concurrently
// for disjoint ranges, mapped onto the parts of one multipart upload
// (see the package doc). Close completes the upload; Abort, an error, or
// the Create context's end discards it.
//
// What a peer can make a Writer hold is bounded whatever the writes look
// like: offsets end at the Writer's limit (the store's largest object,
// Config.MaxObjectSize, and the declared size of a truncating Create),
// memory is taken page by page (a one-byte write pins one page, not a
// part) within a Writer's share and the storage's Config.MaxMemory,
// and the bookkeeping of what arrived is a sorted set whose operations
// do not grow with its size, capped at maxExtents separate ranges.
type Writer struct {
	f     *FS
	name  string
	key   string
	ctx   context.Context // Create's: its end aborts the upload
	meta  map[string]string
	ps    int64 // part size
	limit int64 // no write may end past it

	// base is the size of the old content kept (Create without
	// Truncate), read back for what the writes do not cover; baseETag
	// pins it.
	base     int64
	baseETag string

	upMu     sync.Mutex // serialises the start of the upload
	uploadID string     // set once under upMu, then read-only

	// joined: a Writer of FS.Join, filling another's upload (shared.go).
	joined bool

	mu      sync.Mutex
	have    extentSet                    // the ranges written, file offsets; guarded by mu
	parts   map[int64]*part              // partial parts; guarded by mu
	done    map[int64]minio.CompletePart // uploaded parts; guarded by mu
	sent    map[int64]bool               // parts full and handed to upload; guarded by mu
	mem     int64                        // bytes of pages held in memory; guarded by mu
	spill   *os.File                     // pages not held in memory, at their file offsets; guarded by mu
	spilled int64                        // bytes of pages held in spill; guarded by mu
	end     int64                        // the end of the furthest write; guarded by mu
	err     error                        // the first failure; guarded by mu
	closed  bool                         // guarded by mu
	shared  bool                         // Share made this the owner of a shared upload; guarded by mu
	frags   []extent                     // shared: the joined Writers' fragments; guarded by mu
	writers sync.WaitGroup               // WriteAt calls in progress
}

// pageSize is the unit in which a part's buffer is allocated: a write
// pins the pages it touches, not the whole part.
const pageSize = 256 << 10

// maxExtents bounds the separate ranges a Writer keeps track of (16
// bytes each): a peer sending tiny blocks with gaps between them gets an
// error past it, not an ever larger set.
const maxExtents = 1 << 18

// part is a part being filled.
type part struct {
	pages   []page // pageSize each (the last maybe shorter); made on first write
	writing int    // WriteAt calls copying into it
}

// page is a piece of a part: in memory (buf), in the spill file (disk),
// or neither when nothing was written to it.
type page struct {
	buf  []byte
	disk bool
}

func newWriter(ctx context.Context, f *FS, name string, meta map[string]string) *Writer {
	return &Writer{f: f, name: name, key: f.key(name), ctx: ctx, meta: meta, ps: f.cfg.PartSize,
		limit: f.maxObject(),
		parts: map[int64]*part{}, done: map[int64]minio.CompletePart{}, sent: map[int64]bool{}}
}

func (w *Writer) failLocked(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// WriteAt implements io.WriterAt.
func (w *Writer) WriteAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("s3: write %s at %d: %w", w.name, off, dsi.ErrInvalid)
	}
	if off > w.limit || int64(len(b)) > w.limit-off {
		return 0, w.pastLimit(off, int64(len(b)))
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, fmt.Errorf("s3: write %s: %w", w.name, os.ErrClosed)
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	w.writers.Add(1)
	w.mu.Unlock()
	defer w.writers.Done()
	written := 0
	for written < len(b) {
		pos := off + int64(written)
		i := pos / w.ps
		rel := pos - i*w.ps
		n := min(int64(len(b)-written), w.ps-rel)
		if err := w.writePart(i, rel, b[written:written+int(n)]); err != nil {
			return written, err
		}
		written += int(n)
	}
	return written, nil
}

// pastLimit is the error of a write of n bytes at off that would end
// past the Writer's limit.
func (w *Writer) pastLimit(off, n int64) error {
	if w.limit < w.f.maxObject() {
		return fmt.Errorf("s3: write %s: %d bytes at %d end past the size declared for the file (%d bytes): %w",
			w.name, n, off, w.limit, dsi.ErrInvalid)
	}
	return fmt.Errorf("s3: write %s: %d bytes at %d end past the largest object this storage stores (%d bytes: %d parts of %d): %w",
		w.name, n, off, w.limit, maxParts, w.ps, dsi.ErrNoSpace)
}

// writePart copies b into part i at rel, and uploads the part when that
// completed it.
func (w *Writer) writePart(i, rel int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	w.mu.Lock()
	if w.sent[i] {
		w.mu.Unlock()
		// A full part was already sent: S3 cannot patch it.
		return fmt.Errorf("s3: write %s at %d: part %d was already uploaded, rewrites are not supported: %w",
			w.name, i*w.ps+rel, i+1, dsi.ErrNotSupported)
	}
	if w.have.n >= maxExtents && !w.have.covers(i*w.ps+rel, i*w.ps+rel+1) {
		err := w.failLocked(fmt.Errorf("s3: write %s: more than %d separate ranges written: %w", w.name, maxExtents, dsi.ErrInvalid))
		w.mu.Unlock()
		return err
	}
	p, err := w.pagesLocked(i, rel, int64(len(b)))
	if err != nil {
		w.mu.Unlock()
		return err
	}
	p.writing++
	spill := w.spill
	w.mu.Unlock()
	// Copy without the lock: ranges of concurrent writers are disjoint,
	// and the pages they touch exist.
	if err := w.copyIn(p, spill, i, rel, b); err != nil {
		w.mu.Lock()
		p.writing--
		err = w.failLocked(fmt.Errorf("s3: write %s: buffer: %w", w.name, err))
		w.mu.Unlock()
		return err
	}
	w.mu.Lock()
	p.writing--
	s, e := i*w.ps+rel, i*w.ps+rel+int64(len(b))
	w.end = max(w.end, e)
	w.have.add(s, e)
	full := p.writing == 0 && w.have.covers(i*w.ps, (i+1)*w.ps)
	if full {
		delete(w.parts, i)
		w.sent[i] = true
	}
	w.mu.Unlock()
	if !full {
		return nil
	}
	return w.upload(i, p, w.ps)
}

// pageLen is the length of page j of a part.
func (w *Writer) pageLen(j int64) int64 { return min(pageSize, w.ps-j*pageSize) }

// pagesLocked returns part i, making it if needed, with the pages that
// [rel, rel+n) touches made: in memory while the Writer's share
// (MaxMemParts parts) and the storage's MaxMemory allow, else in the
// spill file.
func (w *Writer) pagesLocked(i, rel, n int64) (*part, error) {
	p, ok := w.parts[i]
	if !ok {
		p = &part{pages: make([]page, (w.ps+pageSize-1)/pageSize)}
		w.parts[i] = p
	}
	for j := rel / pageSize; j <= (rel+n-1)/pageSize; j++ {
		pg := &p.pages[j]
		if pg.buf != nil || pg.disk {
			continue
		}
		size := w.pageLen(j)
		if w.mem+size <= int64(w.f.cfg.MaxMemParts)*w.ps && w.f.takeMem(size) {
			pg.buf = make([]byte, size)
			w.mem += size
			continue
		}
		// The spill holds at most what the declared size needs, and all
		// Writers' spills at most Config.MaxSpill.
		if w.limit < w.f.maxObject() && w.spilled+size > w.limit {
			return nil, w.failLocked(fmt.Errorf("s3: write %s: %d bytes buffered on disk pass the %d declared: %w", w.name, w.spilled+size, w.limit, dsi.ErrNoSpace))
		}
		if !w.f.takeSpill(size) {
			return nil, w.failLocked(fmt.Errorf("s3: write %s: the storage's spill space (%d bytes) is used up: %w", w.name, w.f.maxSpill(), dsi.ErrNoSpace))
		}
		w.spilled += size
		if w.spill == nil {
			f, err := os.CreateTemp(w.f.cfg.TempDir, "ferry-s3-*")
			if err != nil {
				return nil, w.failLocked(fmt.Errorf("s3: write %s: buffer: %w", w.name, err))
			}
			os.Remove(f.Name())
			w.spill = f
		}
		pg.disk = true
	}
	return p, nil
}

// copyIn copies b into part p (part i) at rel.
func (w *Writer) copyIn(p *part, spill *os.File, i, rel int64, b []byte) error {
	for len(b) > 0 {
		j := rel / pageSize
		in := rel - j*pageSize
		n := min(int64(len(b)), w.pageLen(j)-in)
		if pg := p.pages[j]; pg.buf != nil {
			copy(pg.buf[in:], b[:n])
		} else if _, err := spill.WriteAt(b[:n], i*w.ps+rel); err != nil {
			return err
		}
		b, rel = b[n:], rel+n
	}
	return nil
}

// freeLocked drops the pages of p (part i): memory, and the spill's
// disk blocks.
func (w *Writer) freeLocked(p *part, i int64) {
	for j := range p.pages {
		if b := p.pages[j].buf; b != nil {
			w.mem -= int64(len(b))
			w.f.giveMem(int64(len(b)))
			p.pages[j].buf = nil
		}
		if p.pages[j].disk {
			n := w.pageLen(int64(j))
			if w.spill != nil {
				punchHole(w.spill, i*w.ps+int64(j)*pageSize, n)
			}
			w.spilled -= n
			w.f.giveSpill(n)
			p.pages[j].disk = false
		}
	}
}

// partReaderAt reads part p (part i) from its pages; bytes of pages
// never written read as zeros.
type partReaderAt struct {
	w     *Writer
	p     *part
	i     int64
	spill *os.File
}

func (r partReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		if off >= r.w.ps {
			return n, io.EOF
		}
		j := off / pageSize
		in := off - j*pageSize
		k := int(min(int64(len(b)-n), r.w.pageLen(j)-in))
		pg := r.p.pages[j]
		switch {
		case pg.buf != nil:
			copy(b[n:n+k], pg.buf[in:])
		case pg.disk:
			if _, err := r.spill.ReadAt(b[n:n+k], r.i*r.w.ps+off); err != nil && !errors.Is(err, io.EOF) {
				return n, err
			}
		default:
			clear(b[n : n+k])
		}
		n += k
		off += int64(k)
	}
	return n, nil
}

// partReader returns the first n bytes of part p (part i).
func (w *Writer) partReader(i int64, p *part, n int64) io.ReadSeeker {
	w.mu.Lock()
	spill := w.spill
	w.mu.Unlock()
	return io.NewSectionReader(partReaderAt{w, p, i, spill}, 0, n)
}

// start begins the multipart upload once.
func (w *Writer) start() (string, error) {
	w.upMu.Lock()
	defer w.upMu.Unlock()
	if w.uploadID != "" {
		return w.uploadID, nil
	}
	id, err := w.f.core.NewMultipartUpload(w.ctx, w.f.bucket, w.key, minio.PutObjectOptions{UserMetadata: w.meta})
	if err != nil {
		return "", fmt.Errorf("s3: write %s: start upload: %w", w.name, mapErr(err))
	}
	w.uploadID = id
	return id, nil
}

// upload sends the first n bytes of part i and releases its buffer.
func (w *Writer) upload(i int64, p *part, n int64) error {
	err := w.sendPart(i, w.partReader(i, p, n), n)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeLocked(p, i)
	if err != nil {
		return w.failLocked(err)
	}
	return nil
}

func (w *Writer) sendPart(i int64, r io.Reader, n int64) error {
	id, err := w.start()
	if err != nil {
		return err
	}
	op, err := w.f.core.PutObjectPart(w.ctx, w.f.bucket, w.key, id, int(i+1), r, n,
		minio.PutObjectPartOptions{DisableContentSha256: true})
	if err != nil {
		return fmt.Errorf("s3: write %s: part %d: %w", w.name, i+1, mapErr(err))
	}
	w.mu.Lock()
	w.done[i] = minio.CompletePart{PartNumber: op.PartNumber, ETag: op.ETag}
	w.mu.Unlock()
	return nil
}

// fillBase reads the old content into the unwritten ranges of b, which
// holds bytes [off, off+len(b)) of the file.
func (w *Writer) fillBase(ctx context.Context, b []byte, off int64, gaps []extent) error {
	for _, g := range gaps {
		s, e := off+g.start, min(off+g.end, w.base)
		if s >= e {
			continue
		}
		var opts minio.GetObjectOptions
		opts.SetRange(s, e-1)
		if w.baseETag != "" {
			opts.SetMatchETag(w.baseETag)
		}
		body, _, _, err := w.f.core.GetObject(ctx, w.f.bucket, w.key, opts)
		if err != nil {
			return fmt.Errorf("s3: write %s: read old content: %w", w.name, mapErr(err))
		}
		_, err = io.ReadFull(body, b[g.start:g.start+(e-s)])
		body.Close()
		if err != nil {
			return fmt.Errorf("s3: write %s: read old content: %w", w.name, err)
		}
	}
	return nil
}

// material returns the n bytes of part i as they are to be stored: what
// was written, the old content under what was not, zeros elsewhere.
func (w *Writer) material(ctx context.Context, i int64, p *part, n int64) ([]byte, error) {
	b := make([]byte, n)
	if p != nil {
		if _, err := io.ReadFull(w.partReader(i, p, n), b); err != nil {
			return nil, fmt.Errorf("s3: write %s: buffer: %w", w.name, err)
		}
	}
	if err := w.fillFrags(ctx, b, i*w.ps); err != nil {
		return nil, err
	}
	w.mu.Lock()
	gaps := w.have.gaps(i*w.ps, i*w.ps+n)
	w.mu.Unlock()
	for k := range gaps {
		gaps[k].start -= i * w.ps
		gaps[k].end -= i * w.ps
	}
	if err := w.fillBase(ctx, b, i*w.ps, gaps); err != nil {
		return nil, err
	}
	return b, nil
}

// checkHoles fails when the file would have holes (ranges past the old
// content that no write covered) of more than MaxZeroFill bytes: such a
// file is not stored, rather than stored with zeros the client never
// sent (see Config.MaxZeroFill).
func (w *Writer) checkHoles(size int64) error {
	w.mu.Lock()
	gaps := w.have.gaps(w.base, size)
	w.mu.Unlock()
	var total int64
	for _, g := range gaps {
		total += g.len()
	}
	if total == 0 || total <= w.f.cfg.MaxZeroFill {
		return nil
	}
	g := gaps[0]
	return fmt.Errorf("s3: write %s: %d bytes of the file never arrived (%d ranges, the first %d-%d); a file with holes is not stored: %w",
		w.name, total, len(gaps), g.start, g.end, dsi.ErrInvalid)
}

// Abort discards the upload: nothing is stored, the old content (if any)
// stays. It is safe to call after Close, then a no-op.
func (w *Writer) Abort() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	w.writers.Wait()
	return w.abort()
}

func (w *Writer) abort() error {
	w.release()
	if w.joined {
		return nil // the owner aborts (shared.go)
	}
	w.upMu.Lock()
	id := w.uploadID
	w.upMu.Unlock()
	if id == "" {
		return nil
	}
	err := w.f.core.AbortMultipartUpload(context.WithoutCancel(w.ctx), w.f.bucket, w.key, id)
	if err != nil {
		err = fmt.Errorf("s3: abort upload of %s: %w", w.name, mapErr(err))
	}
	w.mu.Lock()
	shared := w.shared
	w.mu.Unlock()
	if shared {
		err = errors.Join(err, w.dropFragments(id))
	}
	return err
}

// release drops the buffers.
func (w *Writer) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range w.parts {
		w.freeLocked(p, i)
	}
	w.parts = map[int64]*part{}
	if w.spill != nil {
		w.spill.Close()
		w.spill = nil
	}
}

// Close implements io.Closer: it uploads what is left and completes the
// upload, so that the object appears whole; or, after a failure or the
// end of the Create context, aborts it and reports why.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("s3: close %s: %w", w.name, os.ErrClosed)
	}
	w.closed = true
	w.mu.Unlock()
	w.writers.Wait()
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err == nil && w.ctx.Err() != nil {
		err = fmt.Errorf("s3: write %s: %w", w.name, context.Cause(w.ctx))
	}
	if err == nil && w.joined {
		err = w.storeFragments()
	} else if err == nil {
		err = w.commit()
	}
	if err != nil {
		if aerr := w.abort(); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return err
	}
	w.release()
	return nil
}

// commit stores the object.
func (w *Writer) commit() error {
	ctx := context.WithoutCancel(w.ctx)
	w.mu.Lock()
	shared := w.shared
	w.mu.Unlock()
	if shared {
		if err := w.gatherShared(ctx); err != nil {
			return err
		}
	}
	w.mu.Lock()
	size := max(w.end, w.base)
	w.mu.Unlock()
	if err := w.checkHoles(size); err != nil {
		return err
	}
	w.upMu.Lock()
	started := w.uploadID != ""
	w.upMu.Unlock()
	if !started && size <= w.ps {
		// One piece: a plain PUT.
		b, err := w.material(ctx, 0, w.parts[0], size)
		if err != nil {
			return err
		}
		_, err = w.f.c.PutObject(ctx, w.f.bucket, w.key, bytes.NewReader(b), size,
			minio.PutObjectOptions{UserMetadata: w.meta, DisableMultipart: true})
		if err != nil {
			return fmt.Errorf("s3: write %s: %w", w.name, mapErr(err))
		}
		return nil
	}
	nparts := (size + w.ps - 1) / w.ps
	if nparts > maxParts {
		return w.pastLimit(0, size)
	}
	if nparts == 0 {
		// An empty file (a shared upload nobody wrote): S3 completes
		// no upload without parts.
		if err := w.abort(); err != nil {
			return err
		}
		w.upMu.Lock()
		w.uploadID = "" // aborted: nothing more to abort
		w.upMu.Unlock()
		_, err := w.f.c.PutObject(ctx, w.f.bucket, w.key, bytes.NewReader(nil), 0,
			minio.PutObjectOptions{UserMetadata: w.meta, DisableMultipart: true})
		if err != nil {
			return fmt.Errorf("s3: write %s: %w", w.name, mapErr(err))
		}
		return nil
	}
	w.mu.Lock()
	todo := map[int64]*part{}
	for i := range nparts {
		if _, ok := w.done[i]; !ok {
			todo[i] = w.parts[i]
		}
	}
	w.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, p := range todo {
		n := min(w.ps, size-i*w.ps)
		g.Go(func() error {
			b, err := w.material(gctx, i, p, n)
			if err != nil {
				return err
			}
			return w.sendPart(i, bytes.NewReader(b), n)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	parts := make([]minio.CompletePart, 0, nparts)
	w.mu.Lock()
	for i := range nparts {
		parts = append(parts, w.done[i])
	}
	w.mu.Unlock()
	id, err := w.start()
	if err != nil {
		return err
	}
	if _, err := w.f.core.CompleteMultipartUpload(ctx, w.f.bucket, w.key, id, parts, minio.PutObjectOptions{UserMetadata: w.meta}); err != nil {
		return fmt.Errorf("s3: write %s: complete upload: %w", w.name, mapErr(err))
	}
	w.upMu.Lock()
	w.uploadID = ""
	w.upMu.Unlock()
	if shared {
		// The object is stored: a fragment left behind is a hidden
		// object of no file, not a failure of this one.
		_ = w.dropFragments(id)
	}
	return nil
}

var _ dsi.Writer = (*Writer)(nil)
